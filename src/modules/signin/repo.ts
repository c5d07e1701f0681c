/** Storage of login codes and used sign-in flows (knex). Expired rows are swept by the writes. */
import type { Knex } from 'knex';

export interface LoginCodeRow {
  code_hash: string;
  user_id: string;
  account_id: string | null;
  provider: string;
  expires_at: Date;
}

export function createSigninRepo(knex: Knex) {
  return {
    /** signin.useFlow: true the first time a flow id is used, false on a replay */
    async useFlow(flowId: string, expiresAt: Date): Promise<boolean> {
      await knex('signin_flows').where('expires_at', '<', new Date()).delete();
      const inserted: unknown[] = await knex('signin_flows').insert({ flow_id: flowId, expires_at: expiresAt }).onConflict('flow_id').ignore().returning('flow_id');
      return inserted.length > 0;
    },
    /** signin.insertCode */
    async insertCode(row: LoginCodeRow): Promise<void> {
      await knex('login_codes').where('expires_at', '<', new Date()).delete();
      await knex('login_codes').insert(row);
    },
    /** signin.takeCode: deletes and answers the row (single use), live or not */
    async takeCode(codeHash: string): Promise<LoginCodeRow | undefined> {
      const rows: LoginCodeRow[] = await knex('login_codes').where({ code_hash: codeHash }).delete().returning('*');
      return rows[0];
    },
  };
}

export type SigninRepo = ReturnType<typeof createSigninRepo>;
