/** Storage of login codes and used sign-in flows (knex). Expired rows are swept by the writes. */
import type { Knex } from 'knex';
import { rowMapping, tableColumns, type Mapped, type RowOf } from '../../infra/db/rows';

/** The migration's columns of `login_codes` (generated/tables.ts). */
const loginCodeColumns = tableColumns('login_codes');
/** A login code (by the hash of its text) and whom it signs in; not on the wire. */
export type LoginCode = Mapped<typeof loginCodeColumns>;
const loginCodeOf = rowMapping(loginCodeColumns);

export function createSigninRepo(knex: Knex) {
  return {
    /** signin.useFlow: true the first time a flow id is used, false on a replay */
    async useFlow(flowId: string, expiresAt: Date): Promise<boolean> {
      await knex('signin_flows').where('expires_at', '<', new Date()).delete();
      const inserted: unknown[] = await knex('signin_flows').insert({ flow_id: flowId, expires_at: expiresAt }).onConflict('flow_id').ignore().returning('flow_id');
      return inserted.length > 0;
    },
    /** signin.insertCode */
    async insertCode(row: RowOf<typeof loginCodeColumns>): Promise<void> {
      await knex('login_codes').where('expires_at', '<', new Date()).delete();
      await knex('login_codes').insert(row);
    },
    /** signin.takeCode: deletes and answers the row (single use), live or not */
    async takeCode(codeHash: string): Promise<LoginCode | undefined> {
      const [row] = (await knex('login_codes').where({ code_hash: codeHash }).delete().returning('*')) as Record<string, unknown>[];
      return row ? loginCodeOf.map(row) : undefined;
    },
  };
}

export type SigninRepo = ReturnType<typeof createSigninRepo>;
