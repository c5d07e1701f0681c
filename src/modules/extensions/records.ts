/**
 * The extensions module's domain shapes and the one mapping of its stored rows to them. The shapes
 * are the spec's schemas in domain form (camelCase, `Camelize`); each row maps through
 * `schemaRows` (infra/db/rows.ts), which reads its columns and their conversions from the same
 * schema (timestamps to RFC 3339, counts to numbers, json parsed once), so no member is written by
 * hand. Only what is computed (an average rating, whether
 * a version has a bundle, scopes) is added on top of the generic mapping.
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { schemaRows, type RowMapping } from '../../infra/db/rows';

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

/** A stored row (a row interface names the columns a service reads) to its mapping's domain value. */
const mapped =
  <Out>(mapping: RowMapping<Out>) =>
  (row: object): Out =>
    mapping.map(row as Record<string, unknown>);

/** The average rating, from the stored sum and count (null before the first rating). */
const rated = (row: object) => {
  const { rating_sum: sum, rating_count: count } = row as { rating_sum: number | string; rating_count: number };
  return { ratingAvg: count > 0 ? Number(sum) / count : null };
};
const extensionMapping = mapped(schemaRows('Extension', { omit: ['rating_avg'] }));
const publicExtensionMapping = mapped(schemaRows('PublicExtension', { omit: ['rating_avg'] }));
export const extensionOf = (row: object): Extension => ({ ...extensionMapping(row), ...rated(row) });
export const publicExtensionOf = (row: object): PublicExtension => ({ ...publicExtensionMapping(row), ...rated(row) });

/** The stored manifest is NULL until the bundle is uploaded (the wire leaves the member out then). */
const versionMapping = mapped(schemaRows('ExtensionVersion', { omit: ['has_bundle', 'manifest'], extra: { manifest: { type: 'json', nullable: true } } }));
/** A version: `hasBundle` once code is uploaded; `manifest` only when there is one. */
export const versionOf = (row: { handler_code: string | null }): ExtensionVersion => {
  const { manifest, ...version } = versionMapping(row);
  return { ...version, hasBundle: row.handler_code !== null, ...(manifest ? { manifest: manifest as Manifest } : {}) };
};

export const reviewOf = mapped(schemaRows('ExtensionReview'));
export const limitRequestOf = mapped(schemaRows('LimitRequest'));
export const limitEventOf = mapped(schemaRows('LimitRequestEvent'));
export const screenshotOf = mapped(schemaRows('ExtensionScreenshot'));
export const testerOf = mapped(schemaRows('ExtensionTester'));
export const purchaseOf = mapped(schemaRows('ExtensionPurchase'));
export const installOf = mapped(schemaRows('ExtensionInstall'));
export const grantOf = mapped(schemaRows('ExtensionAccessGrant'));
export const logOf = mapped(schemaRows('ExtensionLog'));
