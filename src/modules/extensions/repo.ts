/**
 * Extension, version, screenshot, tester, purchase, install and limit-request storage (knex). Each
 * read answers its spec schema's domain value through `schemaRows` (infra/db/rows.ts), so an
 * entity's fields are written in the spec and the migration only; a join names only the table a
 * member comes from, and what the wire computes (an average rating, whether a version has a
 * bundle) is an expression of the select list.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { rowMapping, schemaRows, tableColumns, type RowValue } from '../../infra/db/rows';
import type { Extension, ExtensionInstall, ExtensionPurchase, ExtensionScreenshot, ExtensionTester, ExtensionVersion, LimitRequest, LimitRequestEvent, Manifest, RequestedLimits } from './records';

type Db = Knex | Knex.Transaction;
type Schemas = components['schemas'];

/**
 * Current installs, and the ratings users gave (ratings.ts): the average (null before the first
 * rating) and count are read from `extension_ratings` itself, so a rating that goes with its
 * user (a cascade delete) leaves no stale counter behind.
 */
const counted = {
  install_count: '(select count(*) from extension_installs i where i.extension_id = e.id)',
  rating_avg: '(select avg(r.rating)::float8 from extension_ratings r where r.extension_id = e.id)',
  rating_count: '(select count(*)::int from extension_ratings r where r.extension_id = e.id)',
} as const;
const extensionRows = schemaRows('Extension', { table: 'e', from: counted });
/** A published extension, with the rating sum its profile's average is computed from. */
const publishedRows = schemaRows('PublicExtension', {
  table: 'e',
  from: counted,
  extra: { rating_sum: { type: 'integer', from: '(select coalesce(sum(r.rating), 0)::int from extension_ratings r where r.extension_id = e.id)' } },
});
export type PublishedExtension = RowValue<typeof publishedRows>;

/** The stored manifest is NULL until the bundle is uploaded (the wire leaves the member out then). */
const versionRows = schemaRows('ExtensionVersion', { omit: ['manifest'], from: { has_bundle: '(handler_code is not null)' }, extra: tableColumns('extension_versions', ['manifest']) });
const versionOf = (row: Record<string, unknown>): ExtensionVersion => {
  const { manifest, ...version } = versionRows.map(row);
  return manifest ? { ...version, manifest: manifest as Manifest } : (version as ExtensionVersion);
};

const screenshotRows = schemaRows('ExtensionScreenshot');
const testerRows = schemaRows('ExtensionTester', { table: 't', from: { display_name: 'u.display_name', avatar_url: 'u.avatar_url' } });
const purchaseRows = schemaRows('ExtensionPurchase');

/** An install with its extension's name and its version string. */
const installFrom = { table: 'i', from: { extension_name: 'e.name', version: 'v.version' } } as const;
const installRows = schemaRows('ExtensionInstall', installFrom);
/** An install with the id of the token it holds now (never on the wire). */
const grantRows = schemaRows('ExtensionInstall', { ...installFrom, extra: tableColumns('extension_installs', ['token_id'], 'i') });
export type InstallGrant = RowValue<typeof grantRows>;
/** An install with its version's bundle, for the internal feeds. */
const feedRows = schemaRows('ExtensionInstall', {
  ...installFrom,
  extra: tableColumns('extension_versions', ['manifest', 'handler_code'], 'v'),
});
export type FeedInstall = RowValue<typeof feedRows>;

/** Aggregates for a developer's analytics (the service builds the wire's ExtensionAnalytics from them; counts arrive as text). */
const purchaseTotalsOf = rowMapping({ status: 'text', currency: 'text', count: 'bigint', amount: 'bigint' } as const);
const installCountsOf = rowMapping({ total: 'bigint', enabled: 'bigint' } as const);

const limitRequestRows = schemaRows('LimitRequest', { table: 'r', from: { extension_name: 'e.name' } });
const limitEventRows = schemaRows('LimitRequestEvent');

/** An extension as it is written: the wire members stored as given, and its creator. */
type ExtensionInsert = Pick<Schemas['Extension'], 'id' | 'short_id' | 'slug' | 'name' | 'description' | 'category' | 'icon_key' | 'developer_id' | 'team_id' | 'pricing_type' | 'pricing_amount' | 'pricing_currency'> & {
  created_by: string | null;
};
type ExtensionPatch = { [K in keyof Schemas['Extension']]?: Schemas['Extension'][K] | Knex.Raw };
type PurchaseInsert = Pick<Schemas['ExtensionPurchase'], 'id' | 'external_id' | 'extension_id' | 'account_id' | 'buyer_user_id' | 'amount_cents' | 'currency'>;
type LimitRequestInsert = Pick<Schemas['LimitRequest'], 'id' | 'extension_id' | 'developer_id' | 'team_id' | 'requested_by' | 'reason'> & { requested_limits: RequestedLimits };

export interface Owners {
  developerIds: string[];
  teamIds: string[];
}

export function createExtensionsRepo(knex: Knex) {
  const extensions = (db: Db = knex, select = extensionRows.select) => db('extensions as e').select(db.raw(select));
  const installs = (db: Db = knex, select = installRows.select) =>
    db('extension_installs as i').join('extensions as e', 'e.id', 'i.extension_id').leftJoin('extension_versions as v', 'v.id', 'i.version_id').select(db.raw(select));
  const limitRequests = (db: Db = knex) => db('extension_limit_requests as r').join('extensions as e', 'e.id', 'r.extension_id').select(db.raw(limitRequestRows.select));
  const versionNewestFirst = [{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }];

  return {
    /** extensions.insert */
    async insertExtension(row: ExtensionInsert, db: Db = knex): Promise<boolean> {
      const inserted = await db('extensions').insert(row).onConflict('slug').ignore().returning('id');
      return inserted.length > 0;
    },
    /** extensions.byId */
    async extensionById(id: string, db: Db = knex): Promise<Extension | undefined> {
      const row = await extensions(db).where('e.id', id).first();
      return row ? extensionRows.map(row) : undefined;
    },
    /** extensions.byId for update (a row lock inside a transaction) */
    async lockExtension(id: string, db: Knex.Transaction): Promise<boolean> {
      return Boolean(await db('extensions').where({ id }).forUpdate().first('id'));
    },
    /** extensions.ofOwners: the extensions of some developer profiles and teams, oldest first */
    async extensionsOf(owners: Owners): Promise<Extension[]> {
      if (owners.developerIds.length === 0 && owners.teamIds.length === 0) return [];
      const rows = await extensions()
        .where((q) => {
          if (owners.developerIds.length) q.orWhereIn('e.developer_id', owners.developerIds);
          if (owners.teamIds.length) q.orWhereIn('e.team_id', owners.teamIds);
        })
        .orderBy([{ column: 'e.created_at' }, { column: 'e.id' }]);
      return rows.map(extensionRows.map);
    },
    /** extensions.published: an owner's published extensions, newest publication first */
    async publishedOf(owner: { developerId?: string; teamId?: string }): Promise<PublishedExtension[]> {
      const q = extensions(knex, publishedRows.select).where('e.status', 'published');
      if (owner.developerId) q.where('e.developer_id', owner.developerId);
      else q.where('e.team_id', owner.teamId!);
      return (await q.orderBy([{ column: 'e.published_at', order: 'desc' }, { column: 'e.id' }])).map(publishedRows.map);
    },
    /** extensions.update */
    async updateExtension(id: string, patch: ExtensionPatch, db: Db = knex): Promise<void> {
      await db('extensions').where({ id }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** extensions.delete */
    async deleteExtension(id: string, db: Db = knex): Promise<void> {
      await db('extensions').where({ id }).delete();
    },

    /** extension_versions.insert: false when the version string exists */
    async insertVersion(row: Pick<Schemas['ExtensionVersion'], 'id' | 'extension_id' | 'version' | 'changelog'>): Promise<boolean> {
      const inserted = await knex('extension_versions').insert(row).onConflict(['extension_id', 'version']).ignore().returning('id');
      return inserted.length > 0;
    },
    /** extension_versions.byId */
    async versionById(extensionId: string, id: string, db: Db = knex): Promise<ExtensionVersion | undefined> {
      const row = await db('extension_versions').where({ extension_id: extensionId, id }).first(db.raw(versionRows.select));
      return row ? versionOf(row) : undefined;
    },
    /** extension_versions.byVersion */
    async versionByName(extensionId: string, version: string): Promise<ExtensionVersion | undefined> {
      const row = await knex('extension_versions').where({ extension_id: extensionId, version }).first(knex.raw(versionRows.select));
      return row ? versionOf(row) : undefined;
    },
    /** extension_versions.list, newest first */
    async versions(extensionId: string): Promise<ExtensionVersion[]> {
      return (await knex('extension_versions').where({ extension_id: extensionId }).select(knex.raw(versionRows.select)).orderBy(versionNewestFirst)).map(versionOf);
    },
    /** extension_versions.latest: the newest version in one of the statuses */
    async latestVersion(extensionId: string, statuses: ExtensionVersion['status'][]): Promise<ExtensionVersion | undefined> {
      const row = await knex('extension_versions').where({ extension_id: extensionId }).whereIn('status', statuses).orderBy(versionNewestFirst).first(knex.raw(versionRows.select));
      return row ? versionOf(row) : undefined;
    },
    /** extension_versions.update */
    async updateVersion(id: string, patch: Record<string, unknown>, db: Db = knex): Promise<void> {
      await db('extension_versions').where({ id }).update(patch);
    },

    /** extension_screenshots.list, by position */
    async screenshots(extensionId: string): Promise<ExtensionScreenshot[]> {
      return (await knex('extension_screenshots').where({ extension_id: extensionId }).select(knex.raw(screenshotRows.select)).orderBy([{ column: 'position' }, { column: 'created_at' }, { column: 'id' }])).map(screenshotRows.map);
    },
    /** extension_screenshots.insert */
    async insertScreenshot(row: Omit<Schemas['ExtensionScreenshot'], 'created_at'>): Promise<ExtensionScreenshot> {
      const [inserted] = (await knex('extension_screenshots').insert(row).returning('*')) as Record<string, unknown>[];
      return screenshotRows.map(inserted!);
    },
    /** extension_screenshots.delete */
    async deleteScreenshot(extensionId: string, id: string): Promise<boolean> {
      return (await knex('extension_screenshots').where({ extension_id: extensionId, id }).delete().returning('id')).length > 0;
    },

    /** extension_testers.list, with display names */
    async testers(extensionId: string): Promise<ExtensionTester[]> {
      const rows = await knex('extension_testers as t')
        .join('users as u', 'u.id', 't.user_id')
        .where('t.extension_id', extensionId)
        .orderBy([{ column: 't.created_at' }, { column: 't.user_id' }])
        .select(knex.raw(testerRows.select));
      return rows.map(testerRows.map);
    },
    /** users.exists */
    async userExists(userId: string): Promise<boolean> {
      return Boolean(await knex('users').where({ id: userId }).first('id'));
    },
    /** extension_testers.insert: false when already a tester */
    async insertTester(row: Pick<Schemas['ExtensionTester'], 'user_id' | 'added_by'> & { extension_id: string }): Promise<boolean> {
      const inserted = await knex('extension_testers').insert(row).onConflict(['extension_id', 'user_id']).ignore().returning('user_id');
      return inserted.length > 0;
    },
    /** extension_testers.delete */
    async deleteTester(extensionId: string, userId: string): Promise<boolean> {
      return (await knex('extension_testers').where({ extension_id: extensionId, user_id: userId }).delete().returning('user_id')).length > 0;
    },
    /** extension_testers.has */
    async isTester(extensionId: string, userId: string): Promise<boolean> {
      return Boolean(await knex('extension_testers').where({ extension_id: extensionId, user_id: userId }).first('user_id'));
    },

    /** extension_purchases.insert: idempotent on the provider's external id */
    async insertPurchase(row: PurchaseInsert): Promise<void> {
      await knex('extension_purchases').insert(row).onConflict('external_id').ignore();
    },
    /** extension_purchases.page, newest first */
    async purchases(extensionId: string, page: { limit: number; offset: number }): Promise<{ rows: ExtensionPurchase[]; total: number }> {
      const [rows, count] = await Promise.all([
        knex('extension_purchases').where({ extension_id: extensionId }).select(knex.raw(purchaseRows.select)).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(page.limit).offset(page.offset),
        knex('extension_purchases').where({ extension_id: extensionId }).count<{ count: string | number }[]>('* as count'),
      ]);
      return { rows: rows.map(purchaseRows.map), total: Number(count[0]?.count ?? 0) };
    },
    /** extension_purchases.stats: counts and revenue per currency */
    async purchaseStats(extensionId: string): Promise<RowValue<typeof purchaseTotalsOf>[]> {
      const rows = await knex('extension_purchases')
        .where({ extension_id: extensionId })
        .groupBy('status', 'currency')
        .select('status', 'currency', knex.raw('count(*) as count'), knex.raw('coalesce(sum(amount_cents), 0) as amount'));
      return rows.map((row: object) => purchaseTotalsOf.map(row));
    },
    /** extension_installs.counts */
    async installCounts(extensionId: string): Promise<RowValue<typeof installCountsOf>> {
      const [row] = await knex('extension_installs')
        .where({ extension_id: extensionId })
        .select(knex.raw('count(*) as total'), knex.raw('count(*) filter (where enabled) as enabled'));
      return installCountsOf.map(row as object);
    },

    /** extension_installs.list of an account, oldest first */
    async installsOf(accountId: string): Promise<ExtensionInstall[]> {
      return (await installs().where('i.account_id', accountId).orderBy([{ column: 'i.created_at' }, { column: 'i.id' }])).map(installRows.map);
    },
    /** extension_installs.byId (account-scoped) */
    async installById(accountId: string, id: string, db: Db = knex): Promise<ExtensionInstall | undefined> {
      const row = await installs(db).where({ 'i.account_id': accountId, 'i.id': id }).first();
      return row ? installRows.map(row) : undefined;
    },
    /** extension_installs.byId with its token (account-scoped) */
    async installGrant(accountId: string, id: string, db: Db = knex): Promise<InstallGrant | undefined> {
      const row = await installs(db, grantRows.select).where({ 'i.account_id': accountId, 'i.id': id }).first();
      return row ? grantRows.map(row) : undefined;
    },
    /** extension_installs.accountOf: the owning account of `ext-storage:{install_id}` */
    async installAccount(id: string): Promise<string | null> {
      const row = await knex('extension_installs').where({ id }).first('account_id');
      return (row as { account_id: string } | undefined)?.account_id ?? null;
    },
    /** extension_installs.delete */
    async deleteInstall(accountId: string, id: string, db: Db = knex): Promise<boolean> {
      return (await db('extension_installs').where({ account_id: accountId, id }).delete().returning('id')).length > 0;
    },
    /** extension_installs.feed: installs with their version's bundle, by account and/or install */
    async feed(filter: { accountId?: string; installId?: string; enabledOnly?: boolean }): Promise<FeedInstall[]> {
      const q = installs(knex, feedRows.select);
      if (filter.accountId) q.where('i.account_id', filter.accountId);
      if (filter.installId) q.where('i.id', filter.installId);
      if (filter.enabledOnly) q.where('i.enabled', true);
      return (await q.orderBy([{ column: 'i.created_at' }, { column: 'i.id' }])).map(feedRows.map);
    },

    /** extension_limit_requests.insert */
    async insertLimitRequest(row: LimitRequestInsert, db: Db): Promise<void> {
      await db('extension_limit_requests').insert({ ...row, requested_limits: JSON.stringify(row.requested_limits) });
    },
    /** extension_limit_requests.hasOpen: an open or in-review request on the extension */
    async hasOpenRequest(extensionId: string, db: Db): Promise<boolean> {
      return Boolean(await db('extension_limit_requests').where({ extension_id: extensionId }).whereIn('status', ['open', 'in_review']).first('id'));
    },
    /** extension_limit_requests.byId (optionally locked for update) */
    async limitRequestById(id: string, db: Db = knex, lock = false): Promise<LimitRequest | undefined> {
      if (lock) await (db as Knex.Transaction)('extension_limit_requests').where({ id }).forUpdate().first('id');
      const row = await limitRequests(db).where('r.id', id).first();
      return row ? limitRequestRows.map(row) : undefined;
    },
    /** extension_limit_requests.list, newest first, by status, developer or extensions */
    async limitRequestsWhere(filter: { status?: string; developerId?: string; extensionIds?: string[] }): Promise<LimitRequest[]> {
      const q = limitRequests();
      if (filter.status) q.where('r.status', filter.status);
      if (filter.developerId) q.where((w) => w.where('r.developer_id', filter.developerId!).orWhere('e.developer_id', filter.developerId!));
      if (filter.extensionIds) q.whereIn('r.extension_id', filter.extensionIds);
      return (await q.orderBy([{ column: 'r.created_at', order: 'desc' }, { column: 'r.id', order: 'desc' }])).map(limitRequestRows.map);
    },
    /** extension_limit_requests.update */
    async updateLimitRequest(id: string, patch: Record<string, unknown>, db: Db): Promise<void> {
      await db('extension_limit_requests').where({ id }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** extension_limit_request_events.insert */
    async insertLimitEvent(row: Pick<Schemas['LimitRequestEvent'], 'event_type' | 'actor_id' | 'details'> & { id: string; request_id: string }, db: Db): Promise<void> {
      const [last] = await db('extension_limit_request_events').where({ request_id: row.request_id }).max<{ seq: number | null }[]>('seq as seq');
      await db('extension_limit_request_events').insert({ ...row, seq: Number(last?.seq ?? 0) + 1, details: JSON.stringify(row.details), created_at: new Date() });
    },
    /** extension_limit_request_events.dropLast: undoes the newest event of a request (a failed approval) */
    async dropLastLimitEvent(requestId: string, db: Db): Promise<void> {
      const [last] = await db('extension_limit_request_events').where({ request_id: requestId }).max<{ seq: number | null }[]>('seq as seq');
      if (last?.seq !== null && last?.seq !== undefined) await db('extension_limit_request_events').where({ request_id: requestId, seq: last.seq }).delete();
    },
    /** extension_limit_request_events.list, oldest first */
    async limitEvents(requestId: string): Promise<LimitRequestEvent[]> {
      return (await knex('extension_limit_request_events').where({ request_id: requestId }).orderBy('seq').select(knex.raw(limitEventRows.select))).map(limitEventRows.map);
    },
  };
}

export type ExtensionsRepo = ReturnType<typeof createExtensionsRepo>;
