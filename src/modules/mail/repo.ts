/** Mail outbox storage (knex; the same SQL on PostgreSQL and PGlite). */
import type { Knex } from 'knex';
import type { operations } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { rowMapping } from '../../infra/db/rows';

/** A message as GET /v1/admin/mail/outbox lists it (no body: bodies stay sealed for the worker). */
export type OutboxItem = Camelize<operations['adminMailOutbox']['responses'][200]['content']['application/json']['data'][number]>;
export type OutboxStatus = OutboxItem['status'];

/**
 * A message the worker claimed: the listed item with the recipient's name and the bodies, which
 * are sealed text (src/auth/secrets.ts: a body may carry an invite code; only the worker opens it).
 */
export type OutboxMessage = OutboxItem & { toName: string | null; textBody: string; htmlBody: string };

export interface NewOutboxRow {
  id: string;
  kind: string;
  user_id: string | null;
  to_address: string;
  to_name: string | null;
  subject: string;
  /** Sealed text (src/auth/secrets.ts). */
  text_body: string;
  /** Sealed text, as text_body. */
  html_body: string;
  max_attempts: number;
}

const itemColumns = {
  id: 'uuid',
  kind: 'text',
  user_id: { type: 'uuid', nullable: true },
  to: { type: 'text', from: 'to_address' },
  subject: 'text',
  status: 'text',
  attempts: 'integer',
  max_attempts: 'integer',
  next_attempt_at: 'timestamp',
  last_error: { type: 'text', nullable: true },
  message_id: { type: 'text', nullable: true },
  created_at: 'timestamp',
  updated_at: 'timestamp',
  sent_at: { type: 'timestamp', nullable: true },
} as const;
const itemOf = rowMapping<typeof itemColumns, OutboxItem>(itemColumns);
const messageColumns = { ...itemColumns, to_name: { type: 'text', nullable: true }, text_body: 'text', html_body: 'text' } as const;
const messageOf = rowMapping<typeof messageColumns, OutboxMessage>(messageColumns);
const contactOf = rowMapping({ email: { type: 'text', nullable: true }, display_name: { type: 'text', nullable: true } } as const);

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
