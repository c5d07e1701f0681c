/** Overlay, widget and widget access storage (knex). */
import type { Knex } from 'knex';
import type { components, operations } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { schemaRows, type RowMapping } from '../../infra/db/rows';

type Schemas = components['schemas'];

/** Each table's resource schema (its `x-table` in spec/openapi/modules/overlays.yaml). */
export const RESOURCE_SCHEMAS = { overlays: 'Overlay', widgets: 'Widget' } satisfies Record<string, keyof Schemas>;
export type ResourceTable = keyof typeof RESOURCE_SCHEMAS;
/**
 * The resource a table holds, as its OpenAPI schema says (an overlay, or a widget instance with its
 * `type`): functions generic over the table answer the table's own resource, so a member one
 * resource alone declares reaches its callers with no cast and no hand-written copy.
 */
export type ResourceOf<T extends ResourceTable> = Camelize<Schemas[(typeof RESOURCE_SCHEMAS)[T]]>;
export type Overlay = ResourceOf<'overlays'>;
export type Widget = ResourceOf<'widgets'>;
export type AccessEntry = Camelize<Schemas['WidgetAccessEntry']>;

/** The columns a create or update writes (snake_case; opaque JSON as its text), typed by the table's request bodies. */
export type ResourceColumns<T extends ResourceTable> = { [K in keyof ResourceBodies[T]]?: Stored<ResourceBodies[T][K]> | null };
type Stored<V> = V extends object ? string : V;
/** The members of a table's create and update bodies but `version` (update takes it apart). */
export type ResourceBodies = { [T in ResourceTable]: Omit<Members<Body<(typeof RESOURCE_WRITES)[T][number]>>, 'version'> };
/** The operations that write each table's resource: their request bodies are what a write may carry. */
export const RESOURCE_WRITES = { overlays: ['createOverlay', 'updateOverlay'], widgets: ['createWidget', 'updateWidget'] } as const satisfies Record<ResourceTable, readonly (keyof operations)[]>;
type Body<O extends keyof operations> = operations[O] extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
/** The members of either body (a union of the create and the update body), each with its type. */
type Members<B> = { [K in B extends unknown ? keyof B & string : never]: B extends unknown ? (K extends keyof B ? Exclude<B[K], undefined> : never) : never };

const resourceOf: { [T in ResourceTable]: RowMapping<ResourceOf<T>> } = {
  overlays: schemaRows(RESOURCE_SCHEMAS.overlays),
  widgets: schemaRows(RESOURCE_SCHEMAS.widgets),
};
const accessOf = schemaRows('WidgetAccessEntry', {
  from: { id: 'a.id', widget_id: 'a.widget_id', user_id: 'a.user_id', user_name: 'u.display_name', user_avatar: 'u.avatar_url', role: 'a.role', granted_by: 'a.granted_by', created_at: 'a.created_at' },
});

export function createOverlaysRepo(knex: Knex) {
  return {
    /** overlays.list / widgets.list */
    async list<T extends ResourceTable>(table: T, accountId: string): Promise<ResourceOf<T>[]> {
      const { select, map } = resourceOf[table];
      return (await knex(table).where({ account_id: accountId }).select(knex.raw(select)).orderBy([{ column: 'created_at' }, { column: 'id' }])).map(map);
    },
    /** overlays.insert / widgets.insert */
    async insert<T extends ResourceTable>(table: T, row: { id: string; account_id: string } & ResourceColumns<T>, db: Knex | Knex.Transaction = knex): Promise<ResourceOf<T>> {
      const [inserted] = await db(table).insert(row).returning('*');
      return resourceOf[table].map(inserted);
    },
    /** overlays.updateAt / widgets.updateAt: writes only while `version` is current; undefined otherwise */
    async updateAt<T extends ResourceTable>(table: T, accountId: string, id: string, version: number, patch: ResourceColumns<T>, db: Knex | Knex.Transaction = knex): Promise<ResourceOf<T> | undefined> {
      const [updated] = await db(table)
        .where({ id, account_id: accountId, version })
        .update({ ...patch, version: db.raw('version + 1'), updated_at: db.fn.now() })
        .returning('*');
      return updated ? resourceOf[table].map(updated) : undefined;
    },
    /** overlays.byId / widgets.byId (account-scoped) */
    async byId<T extends ResourceTable>(table: T, accountId: string, id: string, db: Knex | Knex.Transaction = knex): Promise<ResourceOf<T> | undefined> {
      const { select, map } = resourceOf[table];
      const row = await db(table).where({ id, account_id: accountId }).first(db.raw(select));
      return row ? map(row) : undefined;
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
    async access(widgetId: string): Promise<AccessEntry[]> {
      const rows = await knex('widget_access as a')
        .join('users as u', 'u.id', 'a.user_id')
        .where({ 'a.widget_id': widgetId })
        .orderBy([{ column: 'a.created_at' }, { column: 'a.id' }])
        .select(knex.raw(accessOf.select));
      return rows.map(accessOf.map);
    },
    /**
     * widget_access.holds: whether the user holds an entry with one of `roles` on the widget (or,
     * with null, on any widget) of the account
     */
    async holdsAccess(query: { accountId: string; userId: string; widgetId: string | null; roles: readonly string[] }): Promise<boolean> {
      const row = await knex('widget_access as a')
        .join('widgets as w', 'w.id', 'a.widget_id')
        .where({ 'a.user_id': query.userId, 'w.account_id': query.accountId })
        .whereIn('a.role', query.roles)
        .modify((q) => {
          if (query.widgetId !== null) void q.where('a.widget_id', query.widgetId);
        })
        .first('a.id');
      return Boolean(row);
    },
    /** widgets.listGranted: the account's widgets the user holds an access entry for, oldest first */
    async listGranted(accountId: string, userId: string): Promise<Widget[]> {
      const { select, map } = resourceOf.widgets;
      const granted = knex('widget_access').where({ user_id: userId }).select('widget_id');
      return (await knex('widgets').where({ account_id: accountId }).whereIn('id', granted).select(knex.raw(select)).orderBy([{ column: 'created_at' }, { column: 'id' }])).map(map);
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
