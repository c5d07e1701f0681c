/**
 * The extensions module's domain shapes: the spec's schemas in domain form (camelCase,
 * `Camelize`). The stored rows map to them through `schemaRows` (infra/db/rows.ts) beside each
 * query (repo.ts, review.ts, access.ts, runtime.ts), which reads the columns and their conversions
 * from the same schemas, so no member is written by hand.
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];
export type Extension = Camelize<Schemas['Extension']>;
export type PublicExtension = Camelize<Schemas['PublicExtension']>;
export type ExtensionVersion = Camelize<Schemas['ExtensionVersion']>;
export type ExtensionReview = Camelize<Schemas['ExtensionReview']>;
export type ExtensionScreenshot = Camelize<Schemas['ExtensionScreenshot']>;
export type ExtensionTester = Camelize<Schemas['ExtensionTester']>;
export type ExtensionPurchase = Camelize<Schemas['ExtensionPurchase']>;
export type ExtensionInstall = Camelize<Schemas['ExtensionInstall']>;
export type Manifest = Camelize<Schemas['ExtensionManifest']>;
export type InstallConfig = Camelize<Schemas['ExtensionInstallConfig']>;
export type LimitRequest = Camelize<Schemas['LimitRequest']>;
export type LimitRequestEvent = Camelize<Schemas['LimitRequestEvent']>;
export type RequestedLimits = Camelize<Schemas['RequestedLimits']>;
export type AccessGrant = Camelize<Schemas['ExtensionAccessGrant']>;
export type ExtensionLog = Camelize<Schemas['ExtensionLog']>;
