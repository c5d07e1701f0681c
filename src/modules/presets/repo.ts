/** Storage of setting presets (knex). */
import type { Knex } from 'knex';
import { schemaRows, type RowValue } from '../../infra/db/rows';

type Db = Knex | Knex.Transaction;

/** A preset as its owner sees it; operators see it without its payload (the spec's two schemas). */
const presetOf = schemaRows('SettingPreset');
const adminPresetOf = schemaRows('AdminSettingPreset');
export type SettingPreset = RowValue<typeof presetOf>;
export type AdminSettingPreset = RowValue<typeof adminPresetOf>;
const newestFirst = [{ column: 'created_at', order: 'desc' }, { column: 'id' }];

export function createPresetsRepo(knex: Knex) {
  return {
    /** presets.ofUser: newest first */
    async ofUser(userId: string): Promise<SettingPreset[]> {
      return (await knex('setting_presets').where({ user_id: userId }).select(knex.raw(presetOf.select)).orderBy(newestFirst)).map(presetOf.map);
    },
    /** presets.ofUserForAdmin: never reads the payload */
    async ofUserForAdmin(userId: string): Promise<AdminSettingPreset[]> {
      return (await knex('setting_presets').where({ user_id: userId }).select(knex.raw(adminPresetOf.select)).orderBy(newestFirst)).map(adminPresetOf.map);
    },
    /** presets.byId */
    async byId(id: string, db: Db = knex): Promise<SettingPreset | undefined> {
      const row = await db('setting_presets').where({ id }).first(db.raw(presetOf.select));
      return row ? presetOf.map(row) : undefined;
    },
    /** presets.countIn: the user's presets, inside the transaction that holds the user's lock */
    async countIn(db: Knex.Transaction, userId: string): Promise<number> {
      const row = await db('setting_presets').where({ user_id: userId }).count<{ count: string }[]>({ count: '*' }).first();
      return Number(row?.count ?? 0);
    },
    /** presets.quota: max_setting_presets of the user's best owned plan, else the default plan's */
    async quota(db: Db, userId: string): Promise<number> {
      const result = await db.raw(
        `select coalesce(
           (select max(p.max_setting_presets) from accounts a join plans p on p.id = a.plan_id where a.owner_id = ?),
           (select max_setting_presets from plans where is_default limit 1),
           0) as max`,
        [userId],
      );
      return Number(((result.rows ?? result) as { max: number | string }[])[0]?.max ?? 0);
    },
    /** presets.lockUser */
    async lockUser(db: Knex.Transaction, userId: string): Promise<void> {
      await db('users').where({ id: userId }).forUpdate().first('id');
    },
    /** presets.clearDefault: no other default of the kind */
    async clearDefault(db: Knex.Transaction, userId: string, kind: string): Promise<void> {
      await db('setting_presets').where({ user_id: userId, kind, is_default: true }).update({ is_default: false });
    },
    /** presets.insert */
    async insert(db: Knex.Transaction, row: { id: string; user_id: string; kind: string; name: string; payload: unknown; is_default: boolean }): Promise<void> {
      await db('setting_presets').insert({ ...row, payload: JSON.stringify(row.payload) });
    },
    /** presets.update */
    async update(db: Knex.Transaction, id: string, patch: { name?: string; payload?: unknown; is_default?: boolean }): Promise<void> {
      await db('setting_presets')
        .where({ id })
        .update({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.payload !== undefined ? { payload: JSON.stringify(patch.payload) } : {}),
          ...(patch.is_default !== undefined ? { is_default: patch.is_default } : {}),
          updated_at: db.fn.now(),
        });
    },
    /** presets.delete */
    async delete(db: Knex.Transaction, id: string): Promise<void> {
      await db('setting_presets').where({ id }).delete();
    },
  };
}

export type PresetsRepo = ReturnType<typeof createPresetsRepo>;
