/** Overlay, widget and widget access storage (knex). */
import type { Knex } from 'knex';

export type ResourceTable = 'overlays' | 'widgets';

export interface ResourceRow {
  id: string;
  account_id: string;
  name: string;
  /** Widgets only. */
  type?: string;
  settings: Record<string, unknown>;
  version: number;
  created_at: Date;
  updated_at: Date;
}

/** The columns an update may set. */
export interface ResourcePatch {
  name?: string;
  type?: string;
  settings?: string;
}

export interface AccessRow {
  id: string;
  widget_id: string;
  user_id: string;
  user_name: string;
  user_avatar: string | null;
  role: 'viewer' | 'editor';
  granted_by: string | null;
  created_at: Date;
}

export function createOverlaysRepo(knex: Knex) {
  return {
    /** overlays.list / widgets.list */
    list(table: ResourceTable, accountId: string): Promise<ResourceRow[]> {
      return knex(table).where({ account_id: accountId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
    },
    /** overlays.insert / widgets.insert */
    async insert(table: ResourceTable, row: { id: string; account_id: string; name: string; type?: string; settings: string }, db: Knex | Knex.Transaction = knex): Promise<ResourceRow> {
      const [inserted] = await db(table).insert(row).returning('*');
      return inserted;
    },
    /** overlays.updateAt / widgets.updateAt: writes only while `version` is current; undefined otherwise */
    async updateAt(table: ResourceTable, accountId: string, id: string, version: number, patch: ResourcePatch, db: Knex | Knex.Transaction = knex): Promise<ResourceRow | undefined> {
      const [updated] = await db(table)
        .where({ id, account_id: accountId, version })
        .update({ ...patch, version: db.raw('version + 1'), updated_at: db.fn.now() })
        .returning('*');
      return updated;
    },
    /** overlays.byId / widgets.byId (account-scoped) */
    byId(table: ResourceTable, accountId: string, id: string, db: Knex | Knex.Transaction = knex): Promise<ResourceRow | undefined> {
      return db(table).where({ id, account_id: accountId }).first();
    },
    /** overlays.accountOf / widgets.accountOf: the owning account of a channel's resource */
    async accountOf(table: ResourceTable, id: string): Promise<string | null> {
      const row = await knex(table).where({ id }).first('account_id');
      return row?.account_id ?? null;
    },
    /** overlays.delete / widgets.delete */
    async delete(table: ResourceTable, id: string, db: Knex.Transaction): Promise<void> {
      await db(table).where({ id }).delete();
    },
    /** credentials.liveOfSubject: live tokens bound to one overlay or widget */
    liveTokens(accountId: string, subjectId: string, kinds: readonly string[], db: Knex | Knex.Transaction = knex): Promise<{ id: string; token_hash: string; kind: string }[]> {
      return db('credentials').where({ account_id: accountId, subject_id: subjectId }).whereIn('kind', [...kinds]).whereNull('revoked_at').select('id', 'token_hash', 'kind');
    },
    /** widget_access.list, with the user's display name and avatar */
    access(widgetId: string): Promise<AccessRow[]> {
      return knex('widget_access as a')
        .join('users as u', 'u.id', 'a.user_id')
        .where({ 'a.widget_id': widgetId })
        .orderBy([{ column: 'a.created_at' }, { column: 'a.id' }])
        .select('a.id', 'a.widget_id', 'a.user_id', 'u.display_name as user_name', 'u.avatar_url as user_avatar', 'a.role', 'a.granted_by', 'a.created_at');
    },
    /** widget_access.insert: undefined when the user already has an entry */
    async grant(row: { id: string; widget_id: string; user_id: string; role: string; granted_by: string | null }): Promise<boolean> {
      const inserted = await knex('widget_access').insert(row).onConflict(['widget_id', 'user_id']).ignore().returning('id');
      return inserted.length > 0;
    },
    /** widget_access.delete */
    async revokeAccess(widgetId: string, id: string): Promise<boolean> {
      const deleted: unknown[] = await knex('widget_access').where({ widget_id: widgetId, id }).delete().returning('id');
      return deleted.length > 0;
    },
  };
}

export type OverlaysRepo = ReturnType<typeof createOverlaysRepo>;
