/**
 * Plan quotas that other modules enforce where a resource is created (Part 1 "Plans", "Limits"):
 * `max_overlays` (overlay and widget create), `max_integrations` (connection create),
 * `max_upload_size_bytes` and `max_storage_bytes` (every upload; sounds are the account's uploads).
 * The account row is the lock: a check and the insert it admits run in one transaction holding
 * it, so two creates at once cannot both pass a quota. The spec shows no account override for
 * these four (only for retention and the per-extension sound limits), so the plan decides; an
 * account without a plan gets the default plan's limits.
 */
import type { Knex } from 'knex';
import { AppError, messages } from '../../errors';
import { planMessages } from './errors';

type Db = Knex | Knex.Transaction;

export interface AccountQuotas {
  maxOverlays: number;
  maxStorageBytes: number;
  maxUploadSizeBytes: number;
  maxIntegrations: number;
}

/** What a counted quota counts, and the tables whose rows of the account make the count. */
const COUNTED = {
  overlays: { limit: 'maxOverlays', tables: ['overlays'], message: planMessages.overlaysReached },
  widgets: { limit: 'maxOverlays', tables: ['widgets'], message: planMessages.widgetsReached },
  integrations: { limit: 'maxIntegrations', tables: ['account_connections', 'account_bot_connections'], message: planMessages.integrationsReached },
} as const;

export type CountedQuota = keyof typeof COUNTED;

const fromDefault = (column: string) => `coalesce(p.${column}, (select ${column} from plans where is_default order by created_at limit 1), 0) as ${column}`;

export function createQuotas(knex: Knex) {
  /** quotas.limits: the account's plan limits (the default plan's without one) */
  async function limits(accountId: string, db: Db = knex): Promise<AccountQuotas> {
    const row = (await db('accounts as a')
      .leftJoin('plans as p', 'p.id', 'a.plan_id')
      .where('a.id', accountId)
      .first(...['max_overlays', 'max_storage_bytes', 'max_upload_size_bytes', 'max_integrations'].map((c) => db.raw(fromDefault(c))))) as Record<string, unknown> | undefined;
    // pg answers bigint as strings; the values stay below 2^53 (the API bounds them).
    return {
      maxOverlays: Number(row?.max_overlays ?? 0),
      maxStorageBytes: Number(row?.max_storage_bytes ?? 0),
      maxUploadSizeBytes: Number(row?.max_upload_size_bytes ?? 0),
      maxIntegrations: Number(row?.max_integrations ?? 0),
    };
  }

  /** quotas.lockAccount: the account row, `for update`; false when the account is gone */
  async function lockAccount(trx: Knex.Transaction, accountId: string): Promise<boolean> {
    return Boolean(await trx('accounts').where({ id: accountId }).forUpdate().first('id'));
  }

  /** quotas.count: the account's rows of a counted quota */
  async function count(quota: CountedQuota, accountId: string, db: Db = knex): Promise<number> {
    let total = 0;
    for (const table of COUNTED[quota].tables) {
      const row = (await db(table).where({ account_id: accountId }).count<{ count: string | number }[]>({ count: '*' }).first()) ?? { count: 0 };
      total += Number(row.count);
    }
    return total;
  }

  return {
    limits,
    lockAccount,
    /**
     * Admits one more row of `quota` for the account inside `trx`: takes the account's lock, then
     * refuses with 403 PLAN_LIMIT_REACHED when the account already holds its plan's number. Call
     * it in the transaction that inserts the row. `replacing` names the row an upsert would
     * overwrite (a reconnect of the same platform): when it exists, nothing new is counted.
     */
    async admit(trx: Knex.Transaction, quota: CountedQuota, accountId: string, replacing?: { table: string; where: Record<string, string> }): Promise<void> {
      if (!(await lockAccount(trx, accountId))) throw AppError.unauthorized(messages.noActiveAccount);
      if (replacing && (await trx(replacing.table).where({ ...replacing.where, account_id: accountId }).first(trx.raw('1 as one')))) return;
      const { limit, message } = COUNTED[quota];
      const max = (await limits(accountId, trx))[limit];
      if ((await count(quota, accountId, trx)) >= max) throw new AppError('PLAN_LIMIT_REACHED', message(max));
    },
    /** Usage beside the limits: counts of the counted quotas. */
    async usage(accountId: string): Promise<{ overlays: number; widgets: number; integrations: number }> {
      const [overlays, widgets, integrations] = await Promise.all([count('overlays', accountId), count('widgets', accountId), count('integrations', accountId)]);
      return { overlays, widgets, integrations };
    },
  };
}

export type Quotas = ReturnType<typeof createQuotas>;
