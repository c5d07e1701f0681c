/** Audit log storage (knex): append and filtered, paginated reads, newest first. */
import type { Knex } from 'knex';
import { schemaRows } from '../../infra/db/rows';
import type { AuditInsert, AuditRecord, AuditScope } from './types';

export type { AuditInsert } from './types';

/** An audit row as stored: the spec's item without the names the service resolves at read time. */
const auditOf = schemaRows('AuditItem', { omit: ['resolved_names'] });

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
    async insert(row: AuditInsert, db: Knex | Knex.Transaction = knex): Promise<void> {
      await db('audit_log').insert({ ...row, metadata: JSON.stringify(row.metadata) });
    },
    /** audit.forgetUser: clears the client address and agent of the rows a deleted user is named in */
    async forgetUser(db: Knex.Transaction, userId: string): Promise<number> {
      const cleared = (await db('audit_log')
        .where((w) => w.where('user_id', userId).orWhere('actor_id', userId))
        .where((w) => w.whereNotNull('ip_address').orWhereNotNull('user_agent'))
        .update({ ip_address: null, user_agent: null })
        .returning('id')) as unknown[];
      return cleared.length;
    },
    /** audit.page */
    async page(q: AuditQuery): Promise<{ rows: AuditRecord[]; total: number }> {
      const [rows, count] = await Promise.all([
        filtered(q).select(knex.raw(auditOf.select)).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(q.limit).offset(q.offset),
        filtered(q).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return {
        rows: rows.map((row: Record<string, unknown>) => auditOf.map(row)),
        total: Number(count?.count ?? 0),
      };
    },
  };
}

export type AuditRepo = ReturnType<typeof createAuditRepo>;
