/**
 * The extensions module's domain shapes and the one mapping of its stored rows to them. The shapes
 * are the spec's schemas in domain form (camelCase, `Camelize`); each row maps through
 * infra/db/rows.ts by its columns' SQL types (timestamps to RFC 3339, counts to numbers, json
 * parsed once), so no member is written by hand. Only what is computed (an average rating, whether
 * a version has a bundle, scopes) is added on top of the generic mapping.
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { rowMapping, type RowMapping } from '../../infra/db/rows';

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

const nullableText = { type: 'text', nullable: true } as const;
const nullableUuid = { type: 'uuid', nullable: true } as const;
const nullableTime = { type: 'timestamp', nullable: true } as const;

/** A stored row (a row interface names the columns a service reads) to its mapping's domain value. */
const mapped =
  <Out>(mapping: RowMapping<Out>) =>
  (row: object): Out =>
    mapping.map(row as Record<string, unknown>);

/** What the public listing shows of an extension. */
const publicExtensionColumns = {
  id: 'uuid',
  short_id: 'text',
  slug: 'text',
  name: 'text',
  description: nullableText,
  category: nullableText,
  icon_key: nullableText,
  pricing_type: 'text',
  pricing_amount: { type: 'integer', nullable: true },
  pricing_currency: nullableText,
  install_count: 'bigint',
  rating_count: 'integer',
  published_at: nullableTime,
} as const;
const extensionColumns = {
  ...publicExtensionColumns,
  developer_id: nullableUuid,
  team_id: nullableUuid,
  status: 'text',
  created_at: 'timestamp',
  updated_at: 'timestamp',
} as const;

/** The average rating, from the stored sum and count (null before the first rating). */
const rated = (row: object) => {
  const { rating_sum: sum, rating_count: count } = row as { rating_sum: number | string; rating_count: number };
  return { ratingAvg: count > 0 ? Number(sum) / count : null };
};
const extensionMapping = mapped(rowMapping<typeof extensionColumns, Omit<Extension, 'ratingAvg'>>(extensionColumns));
const publicExtensionMapping = mapped(rowMapping<typeof publicExtensionColumns, Omit<PublicExtension, 'ratingAvg'>>(publicExtensionColumns));
export const extensionOf = (row: object): Extension => ({ ...extensionMapping(row), ...rated(row) });
export const publicExtensionOf = (row: object): PublicExtension => ({ ...publicExtensionMapping(row), ...rated(row) });

/** The review trail a limit request and a version review end with. */
const reviewTrailColumns = { review_notes: nullableText, reviewed_by: nullableUuid, reviewed_at: nullableTime } as const;
/** The extension (and its owner) a limit request or a version review is about. */
const subjectColumns = { extension_id: 'uuid', extension_name: 'text', developer_id: nullableUuid, team_id: nullableUuid } as const;

const versionColumns = {
  id: 'uuid',
  extension_id: 'uuid',
  version: 'text',
  status: 'text',
  changelog: nullableText,
  review_notes: nullableText,
  manifest: { type: 'json', nullable: true },
  created_at: 'timestamp',
  uploaded_at: nullableTime,
  published_at: nullableTime,
} as const;
const versionMapping = mapped(rowMapping<typeof versionColumns, Omit<ExtensionVersion, 'hasBundle' | 'manifest'> & { manifest: Manifest | null }>(versionColumns));
/** A version: `hasBundle` once code is uploaded; `manifest` only when there is one. */
export const versionOf = (row: { handler_code: string | null }): ExtensionVersion => {
  const { manifest, ...version } = versionMapping(row);
  return { ...version, hasBundle: row.handler_code !== null, ...(manifest ? { manifest } : {}) };
};

const reviewColumns = {
  id: 'uuid',
  ...subjectColumns,
  version: 'text',
  status: 'text',
  changelog: nullableText,
  manifest: { type: 'json', nullable: true },
  submitted_at: nullableTime,
  ...reviewTrailColumns,
} as const;
export const reviewOf = mapped(rowMapping<typeof reviewColumns, ExtensionReview>(reviewColumns));

const limitRequestColumns = {
  id: 'uuid',
  ...subjectColumns,
  requested_by: nullableUuid,
  requested_limits: 'json',
  reason: nullableText,
  status: 'text',
  ...reviewTrailColumns,
  created_at: 'timestamp',
  updated_at: 'timestamp',
} as const;
export const limitRequestOf = mapped(rowMapping<typeof limitRequestColumns, LimitRequest>(limitRequestColumns));

const limitEventColumns = { event_type: 'text', actor_id: nullableUuid, details: 'json', created_at: 'timestamp' } as const;
export const limitEventOf = mapped(rowMapping<typeof limitEventColumns, LimitRequestEvent>(limitEventColumns));

const screenshotColumns = { id: 'uuid', extension_id: 'uuid', key: nullableText, url: nullableText, caption: nullableText, position: 'integer', created_at: 'timestamp' } as const;
export const screenshotOf = mapped(rowMapping<typeof screenshotColumns, ExtensionScreenshot>(screenshotColumns));

const testerColumns = { user_id: 'uuid', display_name: 'text', avatar_url: nullableText, added_by: nullableUuid, created_at: 'timestamp' } as const;
export const testerOf = mapped(rowMapping<typeof testerColumns, ExtensionTester>(testerColumns));

const purchaseColumns = {
  id: 'uuid',
  external_id: 'text',
  extension_id: 'uuid',
  account_id: nullableUuid,
  buyer_user_id: nullableUuid,
  amount_cents: 'bigint',
  currency: 'text',
  status: 'text',
  created_at: 'timestamp',
  refunded_at: nullableTime,
} as const;
export const purchaseOf = mapped(rowMapping<typeof purchaseColumns, ExtensionPurchase>(purchaseColumns));

const installColumns = {
  id: 'uuid',
  account_id: 'uuid',
  extension_id: 'uuid',
  extension_name: 'text',
  version_id: nullableUuid,
  version: nullableText,
  enabled: 'boolean',
  config: 'json',
  permissions: 'json',
  disabled_reason: nullableText,
  installed_by: nullableUuid,
  created_at: 'timestamp',
  updated_at: 'timestamp',
} as const;
export const installOf = mapped(rowMapping<typeof installColumns, ExtensionInstall>(installColumns));

const grantColumns = { extension_id: 'uuid', user_id: 'uuid', granted_by: nullableUuid, created_at: 'timestamp' } as const;
export const grantOf = mapped(rowMapping<typeof grantColumns, AccessGrant>(grantColumns));

const logColumns = {
  id: 'uuid',
  extension_id: 'uuid',
  install_id: nullableUuid,
  account_id: nullableUuid,
  level: 'text',
  message: 'text',
  data: { type: 'json', nullable: true },
  created_at: 'timestamp',
} as const;
export const logOf = mapped(rowMapping<typeof logColumns, ExtensionLog>(logColumns));
