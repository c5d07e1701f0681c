/** Extension, version, screenshot, tester, purchase, install and limit-request storage (knex). */
import type { Knex } from 'knex';

type Db = Knex | Knex.Transaction;

export interface ExtensionRow {
  id: string;
  short_id: string;
  slug: string;
  name: string;
  description: string | null;
  category: string | null;
  icon_key: string | null;
  developer_id: string | null;
  team_id: string | null;
  created_by: string | null;
  pricing_type: 'free' | 'one_time' | 'subscription';
  pricing_amount: number | null;
  pricing_currency: string | null;
  status: 'draft' | 'published';
  rating_count: number;
  rating_sum: number;
  published_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** Current installs (a subquery of every read). */
  install_count: number | string;
}

export interface VersionRow {
  id: string;
  extension_id: string;
  version: string;
  status: 'draft' | 'uploaded' | 'pending_review' | 'published' | 'rejected';
  changelog: string | null;
  manifest: unknown;
  handler_code: string | null;
  created_at: Date;
  uploaded_at: Date | null;
  published_at: Date | null;
  review_notes?: string | null;
  reviewed_by?: string | null;
  reviewed_at?: Date | null;
  submitted_at?: Date | null;
  submitted_by?: string | null;
}

export interface ScreenshotRow {
  id: string;
  extension_id: string;
  key: string | null;
  url: string | null;
  caption: string | null;
  position: number;
  created_at: Date;
}

export interface TesterRow {
  user_id: string;
  display_name: string;
  avatar_url: string | null;
  added_by: string | null;
  created_at: Date;
}

export interface PurchaseRow {
  id: string;
  external_id: string;
  extension_id: string;
  account_id: string | null;
  buyer_user_id: string | null;
  amount_cents: number | string;
  currency: string;
  status: 'completed' | 'refunded';
  created_at: Date;
  refunded_at: Date | null;
}

export interface InstallRow {
  id: string;
  account_id: string;
  extension_id: string;
  extension_name: string;
  version_id: string | null;
  version: string | null;
  enabled: boolean;
  config: unknown;
  installed_by: string | null;
  created_at: Date;
  updated_at: Date;
}

/** An install with its version's bundle, for the internal feeds. */
export interface FeedRow extends InstallRow {
  manifest: unknown;
  handler_code: string | null;
}

export interface LimitRequestRow {
  id: string;
  extension_id: string;
  extension_name: string;
  developer_id: string | null;
  team_id: string | null;
  requested_by: string | null;
  requested_limits: unknown;
  reason: string | null;
  status: 'open' | 'in_review' | 'approved' | 'rejected';
  review_notes: string | null;
  reviewed_by: string | null;
  reviewed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface LimitEventRow {
  event_type: 'created' | 'in_review' | 'approved' | 'rejected';
  actor_id: string | null;
  details: unknown;
  created_at: Date;
}

export interface Owners {
  developerIds: string[];
  teamIds: string[];
}

export function createExtensionsRepo(knex: Knex) {
  const extensions = (db: Db = knex) =>
    db('extensions as e').select('e.*', db.raw('(select count(*) from extension_installs i where i.extension_id = e.id) as install_count'));
  const installs = (db: Db = knex) =>
    db('extension_installs as i')
      .join('extensions as e', 'e.id', 'i.extension_id')
      .leftJoin('extension_versions as v', 'v.id', 'i.version_id')
      .select('i.*', 'e.name as extension_name', 'v.version as version');
  const limitRequests = (db: Db = knex) => db('extension_limit_requests as r').join('extensions as e', 'e.id', 'r.extension_id').select('r.*', 'e.name as extension_name');

  return {
    /** extensions.insert */
    async insertExtension(row: Omit<ExtensionRow, 'install_count' | 'rating_count' | 'rating_sum' | 'status' | 'published_at' | 'created_at' | 'updated_at'>, db: Db = knex): Promise<boolean> {
      const inserted = await db('extensions').insert(row).onConflict('slug').ignore().returning('id');
      return inserted.length > 0;
    },
    /** extensions.byId */
    extensionById(id: string, db: Db = knex): Promise<ExtensionRow | undefined> {
      return extensions(db).where('e.id', id).first();
    },
    /** extensions.byId for update (a row lock inside a transaction) */
    async lockExtension(id: string, db: Knex.Transaction): Promise<boolean> {
      return Boolean(await db('extensions').where({ id }).forUpdate().first('id'));
    },
    /** extensions.ofOwners: the extensions of some developer profiles and teams, oldest first */
    extensionsOf(owners: Owners): Promise<ExtensionRow[]> {
      if (owners.developerIds.length === 0 && owners.teamIds.length === 0) return Promise.resolve([]);
      return extensions()
        .where((q) => {
          if (owners.developerIds.length) q.orWhereIn('e.developer_id', owners.developerIds);
          if (owners.teamIds.length) q.orWhereIn('e.team_id', owners.teamIds);
        })
        .orderBy([{ column: 'e.created_at' }, { column: 'e.id' }]);
    },
    /** extensions.published: an owner's published extensions, newest publication first */
    publishedOf(owner: { developerId?: string; teamId?: string }): Promise<ExtensionRow[]> {
      const q = extensions().where('e.status', 'published');
      if (owner.developerId) q.where('e.developer_id', owner.developerId);
      else q.where('e.team_id', owner.teamId!);
      return q.orderBy([{ column: 'e.published_at', order: 'desc' }, { column: 'e.id' }]);
    },
    /** extensions.update */
    async updateExtension(id: string, patch: Partial<ExtensionRow>, db: Db = knex): Promise<void> {
      await db('extensions').where({ id }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** extensions.delete */
    async deleteExtension(id: string, db: Db = knex): Promise<void> {
      await db('extensions').where({ id }).delete();
    },

    /** extension_versions.insert: false when the version string exists */
    async insertVersion(row: { id: string; extension_id: string; version: string; changelog: string | null }): Promise<boolean> {
      const inserted = await knex('extension_versions').insert(row).onConflict(['extension_id', 'version']).ignore().returning('id');
      return inserted.length > 0;
    },
    /** extension_versions.byId */
    versionById(extensionId: string, id: string, db: Db = knex): Promise<VersionRow | undefined> {
      return db('extension_versions').where({ extension_id: extensionId, id }).first();
    },
    /** extension_versions.byVersion */
    versionByName(extensionId: string, version: string): Promise<VersionRow | undefined> {
      return knex('extension_versions').where({ extension_id: extensionId, version }).first();
    },
    /** extension_versions.list, newest first */
    versions(extensionId: string): Promise<VersionRow[]> {
      return knex('extension_versions').where({ extension_id: extensionId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]);
    },
    /** extension_versions.latest: the newest version in one of the statuses */
    latestVersion(extensionId: string, statuses: VersionRow['status'][]): Promise<VersionRow | undefined> {
      return knex('extension_versions')
        .where({ extension_id: extensionId })
        .whereIn('status', statuses)
        .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
        .first();
    },
    /** extension_versions.update */
    async updateVersion(id: string, patch: Record<string, unknown>, db: Db = knex): Promise<void> {
      await db('extension_versions').where({ id }).update(patch);
    },

    /** extension_screenshots.list, by position */
    screenshots(extensionId: string): Promise<ScreenshotRow[]> {
      return knex('extension_screenshots').where({ extension_id: extensionId }).orderBy([{ column: 'position' }, { column: 'created_at' }, { column: 'id' }]);
    },
    /** extension_screenshots.insert */
    async insertScreenshot(row: Omit<ScreenshotRow, 'created_at'>): Promise<ScreenshotRow> {
      const [inserted] = await knex('extension_screenshots').insert(row).returning('*');
      return inserted as ScreenshotRow;
    },
    /** extension_screenshots.delete */
    async deleteScreenshot(extensionId: string, id: string): Promise<boolean> {
      return (await knex('extension_screenshots').where({ extension_id: extensionId, id }).delete().returning('id')).length > 0;
    },

    /** extension_testers.list, with display names */
    testers(extensionId: string): Promise<TesterRow[]> {
      return knex('extension_testers as t')
        .join('users as u', 'u.id', 't.user_id')
        .where('t.extension_id', extensionId)
        .orderBy([{ column: 't.created_at' }, { column: 't.user_id' }])
        .select('t.user_id', 'u.display_name', 'u.avatar_url', 't.added_by', 't.created_at');
    },
    /** users.exists */
    async userExists(userId: string): Promise<boolean> {
      return Boolean(await knex('users').where({ id: userId }).first('id'));
    },
    /** extension_testers.insert: false when already a tester */
    async insertTester(row: { extension_id: string; user_id: string; added_by: string | null }): Promise<boolean> {
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
    async insertPurchase(row: Omit<PurchaseRow, 'status' | 'created_at' | 'refunded_at'>): Promise<void> {
      await knex('extension_purchases').insert(row).onConflict('external_id').ignore();
    },
    /** extension_purchases.page, newest first */
    async purchases(extensionId: string, page: { limit: number; offset: number }): Promise<{ rows: PurchaseRow[]; total: number }> {
      const [rows, count] = await Promise.all([
        knex('extension_purchases').where({ extension_id: extensionId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(page.limit).offset(page.offset),
        knex('extension_purchases').where({ extension_id: extensionId }).count<{ count: string | number }[]>('* as count'),
      ]);
      return { rows: rows as PurchaseRow[], total: Number(count[0]?.count ?? 0) };
    },
    /** extension_purchases.stats: counts and revenue per currency */
    async purchaseStats(extensionId: string): Promise<{ status: string; currency: string; count: number; amount: number }[]> {
      const rows = await knex('extension_purchases')
        .where({ extension_id: extensionId })
        .groupBy('status', 'currency')
        .select('status', 'currency', knex.raw('count(*) as count'), knex.raw('coalesce(sum(amount_cents), 0) as amount'));
      return (rows as { status: string; currency: string; count: string | number; amount: string | number }[]).map((r) => ({ status: r.status, currency: r.currency, count: Number(r.count), amount: Number(r.amount) }));
    },
    /** extension_installs.counts */
    async installCounts(extensionId: string): Promise<{ total: number; enabled: number }> {
      const [row] = await knex('extension_installs')
        .where({ extension_id: extensionId })
        .select(knex.raw('count(*) as total'), knex.raw('count(*) filter (where enabled) as enabled'));
      const r = row as { total: string | number; enabled: string | number };
      return { total: Number(r.total), enabled: Number(r.enabled) };
    },

    /** extension_installs.list of an account, oldest first */
    installsOf(accountId: string): Promise<InstallRow[]> {
      return installs().where('i.account_id', accountId).orderBy([{ column: 'i.created_at' }, { column: 'i.id' }]);
    },
    /** extension_installs.byId (account-scoped) */
    installById(accountId: string, id: string, db: Db = knex): Promise<InstallRow | undefined> {
      return installs(db).where({ 'i.account_id': accountId, 'i.id': id }).first();
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
    feed(filter: { accountId?: string; installId?: string; enabledOnly?: boolean }): Promise<FeedRow[]> {
      const q = installs().select('v.manifest', 'v.handler_code');
      if (filter.accountId) q.where('i.account_id', filter.accountId);
      if (filter.installId) q.where('i.id', filter.installId);
      if (filter.enabledOnly) q.where('i.enabled', true);
      return q.orderBy([{ column: 'i.created_at' }, { column: 'i.id' }]);
    },

    /** extension_limit_requests.insert */
    async insertLimitRequest(row: Omit<LimitRequestRow, 'extension_name' | 'status' | 'review_notes' | 'reviewed_by' | 'reviewed_at' | 'created_at' | 'updated_at'>, db: Db): Promise<void> {
      await db('extension_limit_requests').insert({ ...row, requested_limits: JSON.stringify(row.requested_limits) });
    },
    /** extension_limit_requests.hasOpen: an open or in-review request on the extension */
    async hasOpenRequest(extensionId: string, db: Db): Promise<boolean> {
      return Boolean(await db('extension_limit_requests').where({ extension_id: extensionId }).whereIn('status', ['open', 'in_review']).first('id'));
    },
    /** extension_limit_requests.byId (optionally locked for update) */
    async limitRequestById(id: string, db: Db = knex, lock = false): Promise<LimitRequestRow | undefined> {
      if (lock) await (db as Knex.Transaction)('extension_limit_requests').where({ id }).forUpdate().first('id');
      return limitRequests(db).where('r.id', id).first();
    },
    /** extension_limit_requests.list, newest first, by status, developer or extensions */
    limitRequestsWhere(filter: { status?: string; developerId?: string; extensionIds?: string[] }): Promise<LimitRequestRow[]> {
      const q = limitRequests();
      if (filter.status) q.where('r.status', filter.status);
      if (filter.developerId) q.where((w) => w.where('r.developer_id', filter.developerId!).orWhere('e.developer_id', filter.developerId!));
      if (filter.extensionIds) q.whereIn('r.extension_id', filter.extensionIds);
      return q.orderBy([{ column: 'r.created_at', order: 'desc' }, { column: 'r.id', order: 'desc' }]);
    },
    /** extension_limit_requests.update */
    async updateLimitRequest(id: string, patch: Record<string, unknown>, db: Db): Promise<void> {
      await db('extension_limit_requests').where({ id }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** extension_limit_request_events.insert */
    async insertLimitEvent(row: { id: string; request_id: string; event_type: LimitEventRow['event_type']; actor_id: string | null; details: Record<string, unknown> }, db: Db): Promise<void> {
      const [last] = await db('extension_limit_request_events').where({ request_id: row.request_id }).max<{ seq: number | null }[]>('seq as seq');
      await db('extension_limit_request_events').insert({ ...row, seq: Number(last?.seq ?? 0) + 1, details: JSON.stringify(row.details), created_at: new Date() });
    },
    /** extension_limit_request_events.dropLast: undoes the newest event of a request (a failed approval) */
    async dropLastLimitEvent(requestId: string, db: Db): Promise<void> {
      const [last] = await db('extension_limit_request_events').where({ request_id: requestId }).max<{ seq: number | null }[]>('seq as seq');
      if (last?.seq !== null && last?.seq !== undefined) await db('extension_limit_request_events').where({ request_id: requestId, seq: last.seq }).delete();
    },
    /** extension_limit_request_events.list, oldest first */
    limitEvents(requestId: string): Promise<LimitEventRow[]> {
      return knex('extension_limit_request_events').where({ request_id: requestId }).orderBy('seq').select('event_type', 'actor_id', 'details', 'created_at');
    },
  };
}

export type ExtensionsRepo = ReturnType<typeof createExtensionsRepo>;
