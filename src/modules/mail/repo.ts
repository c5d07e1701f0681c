/** Mail outbox storage (knex; the same SQL on PostgreSQL and PGlite). */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { rowMapping, schemaRows, tableColumns, type RowOf, type RowValue } from '../../infra/db/rows';

/** The outbox's address column is the wire's `to`. */
const addressFrom = { to: 'to_address' } as const;

/** A message as GET /v1/admin/mail/outbox lists it (spec `MailOutboxItem`; no body: bodies stay sealed for the worker). */
const itemOf = schemaRows('MailOutboxItem', { from: addressFrom });
export type OutboxItem = RowValue<typeof itemOf>;
export type OutboxStatus = OutboxItem['status'];

/**
 * What the worker needs that the wire never carries: the recipient's name and the bodies, which
 * are sealed text (src/auth/secrets.ts: a body may carry an invite code; only the worker opens it).
 * Typed by the migration (generated/tables.ts).
 */
const deliveryColumns = tableColumns('mail_outbox', ['to_name', 'text_body', 'html_body']);
/** A message the worker claimed: the listed item with its delivery columns (an explicit extension of the schema). */
const messageOf = schemaRows('MailOutboxItem', { from: addressFrom, extra: deliveryColumns });
export type OutboxMessage = RowValue<typeof messageOf>;

/** A message as it is written: the schema's own columns, the stored address and the delivery columns (bodies sealed). */
export type NewOutboxRow = Pick<components['schemas']['MailOutboxItem'], 'id' | 'kind' | 'user_id' | 'subject' | 'max_attempts'> & { to_address: string } & RowOf<typeof deliveryColumns>;

/** A user's address and name: a look-up of the users table, not an entity of this module's wire. */
const contactOf = rowMapping(tableColumns('users', ['email', 'display_name']));

/** The longest last error kept (an SMTP reply can be long). */
const MAX_ERROR_CHARS = 1000;

export function createMailRepo(knex: Knex) {
  return {
    /** mail_outbox.insert: in the transaction of the change that causes the message */
    async insert(row: NewOutboxRow, db: Knex | Knex.Transaction = knex): Promise<void> {
      await db('mail_outbox').insert(row);
    },

    /** users.contact: the address and name a user's mail goes to */
    async contact(userId: string, db: Knex | Knex.Transaction = knex): Promise<{ email: string | null; displayName: string | null } | undefined> {
      const row = await db('users').where({ id: userId }).first(db.raw(contactOf.select));
      return row ? contactOf.map(row) : undefined;
    },

    /**
     * mail_outbox.claim: takes up to `limit` due rows for this node. Rows another node holds are
     * skipped (FOR UPDATE SKIP LOCKED), and the claim commits `sending` with a hold before any
     * message leaves, so no two nodes send one row; a hold that expired (its node died mid-send)
     * makes the row due again.
     */
    async claim(nodeId: string, limit: number, holdMs: number): Promise<OutboxMessage[]> {
      const result = await knex.raw<{ rows: Record<string, unknown>[] }>(
        `update mail_outbox
            set status = 'sending', attempts = attempts + 1, locked_by = ?, locked_until = now() + (?::int * interval '1 millisecond'), updated_at = now()
          where id in (
            select id from mail_outbox
             where (status = 'pending' and next_attempt_at <= now())
                or (status = 'sending' and locked_until < now() and attempts < max_attempts)
             order by next_attempt_at
             limit ?
             for update skip locked)
        returning ${messageOf.select}`,
        [nodeId, holdMs, limit],
      );
      return result.rows.map((row) => messageOf.map(row));
    },

    /** mail_outbox.abandon: rows whose last try died with its node and that have no try left */
    async abandonExpired(): Promise<number> {
      return knex('mail_outbox')
        .where({ status: 'sending' })
        .where('locked_until', '<', knex.fn.now())
        .whereRaw('attempts >= max_attempts')
        .update({ status: 'failed', last_error: knex.raw("coalesce(last_error, 'the node sending it stopped')"), locked_by: null, locked_until: null, updated_at: knex.fn.now() });
    },

    /** mail_outbox.sent: only while this node still holds the row (a fence on the try) */
    async markSent(row: Pick<OutboxMessage, 'id' | 'attempts'>, nodeId: string, messageId: string | null): Promise<boolean> {
      const n = await knex('mail_outbox')
        .where({ id: row.id, status: 'sending', locked_by: nodeId, attempts: row.attempts })
        .update({ status: 'sent', message_id: messageId?.slice(0, 400) ?? null, sent_at: knex.fn.now(), locked_by: null, locked_until: null, last_error: null, updated_at: knex.fn.now() });
      return n > 0;
    },

    /** mail_outbox.retry: back to pending at `delayMs` from now, with the error */
    async markRetry(row: Pick<OutboxMessage, 'id' | 'attempts'>, nodeId: string, delayMs: number, error: string): Promise<boolean> {
      const n = await knex('mail_outbox')
        .where({ id: row.id, status: 'sending', locked_by: nodeId, attempts: row.attempts })
        .update({
          status: 'pending',
          next_attempt_at: knex.raw("now() + (?::int * interval '1 millisecond')", [Math.round(delayMs)]),
          last_error: error.slice(0, MAX_ERROR_CHARS),
          locked_by: null,
          locked_until: null,
          updated_at: knex.fn.now(),
        });
      return n > 0;
    },

    /** mail_outbox.failed: out of tries (or refused for good); the row stays for operators */
    async markFailed(row: Pick<OutboxMessage, 'id' | 'attempts'>, nodeId: string, error: string): Promise<boolean> {
      const n = await knex('mail_outbox')
        .where({ id: row.id, status: 'sending', locked_by: nodeId, attempts: row.attempts })
        .update({ status: 'failed', last_error: error.slice(0, MAX_ERROR_CHARS), locked_by: null, locked_until: null, updated_at: knex.fn.now() });
      return n > 0;
    },

    /** mail_outbox.requeue: a failed row back to pending, due now, with no tries made; null when not found, the row as it is when not failed */
    async requeue(id: string): Promise<{ requeued: boolean; item: OutboxItem } | null> {
      const updated = (await knex('mail_outbox')
        .where({ id, status: 'failed' })
        .update({ status: 'pending', attempts: 0, next_attempt_at: knex.fn.now(), locked_by: null, locked_until: null, updated_at: knex.fn.now() })
        .returning(knex.raw(itemOf.select) as never)) as Record<string, unknown>[];
      if (updated.length) return { requeued: true, item: itemOf.map(updated[0]!) };
      const row = (await knex('mail_outbox').where({ id }).first(knex.raw(itemOf.select))) as Record<string, unknown> | undefined;
      return row ? { requeued: false, item: itemOf.map(row) } : null;
    },

    /** mail_outbox.eraseRecipient: every message for a user or to their address, whatever its status (their erasure) */
    async eraseRecipient(db: Knex.Transaction, userId: string, address: string | null): Promise<number> {
      const gone = (await db('mail_outbox')
        .where((w) => {
          w.where('user_id', userId);
          if (address) w.orWhereRaw('lower(to_address) = lower(?)', [address]);
        })
        .delete()
        .returning('id')) as unknown[];
      return gone.length;
    },

    /** mail_outbox.prune: sent rows older than `days` */
    async pruneSent(days: number): Promise<number> {
      return knex('mail_outbox').where({ status: 'sent' }).whereRaw("sent_at < now() - (?::int * interval '1 day')", [days]).delete();
    },

    /** mail_outbox.page: newest first, by status */
    async page(statuses: readonly OutboxStatus[], limit: number, offset: number): Promise<{ rows: OutboxItem[]; total: number }> {
      const [rows, count] = await Promise.all([
        knex('mail_outbox')
          .whereIn('status', statuses)
          .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
          .limit(limit)
          .offset(offset)
          .select(knex.raw(itemOf.select)),
        knex('mail_outbox').whereIn('status', statuses).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: (rows as Record<string, unknown>[]).map((row) => itemOf.map(row)), total: Number(count?.count ?? 0) };
    },
  };
}

export type MailRepo = ReturnType<typeof createMailRepo>;
