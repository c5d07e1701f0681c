/** Audit log storage (knex): append and filtered, paginated reads, newest first. */
import type { Knex } from 'knex';
import { fromJson } from '../../infra/db/database';

export type AuditScope = 'user' | 'account' | 'system';

export interface AuditRow {
  id: string;
  scope: AuditScope;
  type: string;
  user_id: string | null;
  account_id: string | null;
  actor_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export interface AuditQuery {
  scope?: AuditScope;
  userId?: string;
  accountId?: string;
  type?: string;
  from?: Date;
  to?: Date;
  limit: number;
  offset: number;
}

export function createAuditRepo(knex: Knex) {
  const filtered = (q: AuditQuery) => {
    const query = knex('audit_log');
    if (q.scope) query.where('scope', q.scope);
    if (q.userId) query.where('user_id', q.userId);
    if (q.accountId) query.where('account_id', q.accountId);
    if (q.type) query.where('type', q.type);
    if (q.from) query.where('created_at', '>=', q.from);
    // Timestamps leave the API cut to milliseconds; an inclusive bound covers its whole millisecond.
    if (q.to) query.where('created_at', '<', new Date(q.to.getTime() + 1));
    return query;
  };
  return {
    /** audit.insert */
    async insert(row: Omit<AuditRow, 'created_at'>, db: Knex | Knex.Transaction = knex): Promise<void> {
      await db('audit_log').insert({ ...row, metadata: JSON.stringify(row.metadata) });
    },
    /** audit.page */
    async page(q: AuditQuery): Promise<{ rows: AuditRow[]; total: number }> {
      const [rows, count] = await Promise.all([
        filtered(q).select('*').orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(q.limit).offset(q.offset),
        filtered(q).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return {
        rows: rows.map((r: AuditRow) => ({ ...r, metadata: fromJson<Record<string, unknown>>(r.metadata, {}) })),
        total: Number(count?.count ?? 0),
      };
    },
  };
}

export type AuditRepo = ReturnType<typeof createAuditRepo>;
