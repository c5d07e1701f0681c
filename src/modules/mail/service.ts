/**
 * Mail delivery through an outbox. `queue` renders a message (./templates.ts) and writes its
 * outbox row in the caller's transaction, with a `mail.deliver` job in the same transaction (the
 * job system, docs/adr/005-background-jobs.md), so a message exists exactly when the change that
 * causes it does. `deliverDue` is the worker: it claims due rows (FOR UPDATE SKIP LOCKED, then a
 * committed `sending` hold, so two nodes never send one row), sends each through the transport,
 * and marks it sent with the transport's message id, or due again after a bounded exponential
 * backoff with jitter, or failed once out of tries (a 5xx refusal is final at once). A node that
 * dies mid-send leaves its hold to expire, and the row is tried again. The periodic
 * `mail.retry-sweep` picks up retries and expired holds on whichever node takes its slot. Owns
 * `mail_outbox`; reads a recipient's address from `users`.
 *
 * Bodies are sealed at rest (src/auth/secrets.ts, AES-256-GCM with key ids, as provider tokens
 * are): a message may carry an invite code, which must never sit in clear in the database. Only
 * the worker opens them, at send time; the operator listing shows no body. Subjects carry no
 * secret (templates.ts keeps codes out of them) and recipients stay readable for operators.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { backoffDelayMs } from '../../infra/backoff';
import { SealedValueError, type SecretBox } from '../../auth/secrets';
import { AppError } from '../../errors';
import type { Config } from '../../config/config';
import type { Jobs } from '../../infra/jobs';
import type { Logger } from '../../infra/logger';
import { pageOf, type Page, type PageRequest } from '../../paging';
import type { MailRepo, OutboxItem, OutboxMessage, OutboxStatus } from './repo';
import { renderMail, singleLine } from './templates';
import type { MailTransport } from './transport';

export const DELIVER_JOB = 'mail.deliver';
export const SWEEP_JOB = 'mail.retry-sweep';
const MAIL_NOT_FOUND = 'Mail message not found';
const ONLY_FAILED = 'Only a failed message can be retried';
/** Rows one claim takes; they are sent at once (the pool bounds the connections). */
const CLAIM_BATCH = 10;

export interface MailRecipient {
  address: string;
  name: string | null;
  /** The recipient's user, when there is one. */
  userId?: string | null;
}

export type { OutboxItem } from './repo';

export interface MailCounts {
  sent: number;
  retried: number;
  failed: number;
}

export interface MailDeps {
  repo: MailRepo;
  jobs: Jobs;
  log: Logger;
  config: Readonly<Config['mail']>;
  transport: MailTransport;
  nodeId: string;
  /** Seals bodies at rest; the worker opens them to send. */
  secrets: SecretBox;
}

const isTransaction = (db: Knex | Knex.Transaction | undefined): db is Knex.Transaction => Boolean(db && 'commit' in db && typeof db.commit === 'function');

/** An SMTP reply in the 5xx range refuses the message for good; anything else may pass later. */
const isPermanent = (error: unknown): boolean => {
  const code = (error as { responseCode?: number })?.responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
};

const describe = (error: unknown): string => {
  const e = error as { code?: string; responseCode?: number; message?: string };
  return singleLine([e?.code, e?.responseCode, e?.message ?? String(error)].filter((part) => part !== undefined && part !== '').join(' '), 1000);
};

export function createMailService(deps: MailDeps) {
  const { repo, jobs, log, config, transport, nodeId, secrets } = deps;
  const linkBase = config.link_base.replace(/\/+$/, '');
  const from = singleLine(config.from, 320);
  const counts: MailCounts = { sent: 0, retried: 0, failed: 0 };

  async function deliver(row: OutboxMessage): Promise<void> {
    let text: string;
    let html: string;
    try {
      text = secrets.open(row.textBody);
      html = secrets.open(row.htmlBody);
    } catch (error) {
      if (!(error instanceof SealedValueError)) throw error;
      // Sealed with a key this node lacks: during a key rotation another node may hold it, so the
      // message goes back for a later try (by any node) rather than failing here; out of tries it
      // fails, and an operator can re-queue it (POST /v1/admin/mail/outbox/{id}/retry).
      const reason = `sealed body cannot be opened on node ${nodeId}: ${error.message}`;
      if (row.attempts >= row.maxAttempts) {
        if (await repo.markFailed(row, nodeId, reason)) counts.failed += 1;
        log.error({ mail_id: row.id, kind: row.kind, key_id: error.keyId, attempts: row.attempts }, 'mail failed: its sealed body cannot be opened with this node\'s keys');
        return;
      }
      const delay = backoffDelayMs(row.attempts, config.retry);
      if (await repo.markRetry(row, nodeId, delay, reason)) counts.retried += 1;
      log.warn({ mail_id: row.id, kind: row.kind, key_id: error.keyId, attempts: row.attempts, retry_in_ms: delay }, 'mail not sent by this node: its sealed body names a key this node cannot open; left for another try');
      return;
    }
    try {
      const { messageId } = await transport.send({
        from,
        to: { address: row.to, name: row.toName },
        subject: row.subject,
        text,
        html,
        kind: row.kind,
      });
      if (await repo.markSent(row, nodeId, messageId)) counts.sent += 1;
      log.info({ mail_id: row.id, kind: row.kind, attempts: row.attempts, message_id: messageId }, 'mail sent');
    } catch (error) {
      const reason = describe(error);
      if (isPermanent(error) || row.attempts >= row.maxAttempts) {
        if (await repo.markFailed(row, nodeId, reason)) counts.failed += 1;
        log.warn({ mail_id: row.id, kind: row.kind, attempts: row.attempts, error: reason }, 'mail failed: given up');
        return;
      }
      const delay = backoffDelayMs(row.attempts, config.retry);
      if (await repo.markRetry(row, nodeId, delay, reason)) counts.retried += 1;
      log.info({ mail_id: row.id, kind: row.kind, attempts: row.attempts, retry_in_ms: delay, error: reason }, 'mail not delivered yet: will retry');
    }
  }

  const service = {
    /**
     * Queues one message: rendered now, written in `db` (the transaction of the change that
     * causes it), delivered by the worker once that transaction commits.
     */
    async queue(kind: string, to: MailRecipient, data: Readonly<Record<string, unknown>>, db?: Knex | Knex.Transaction): Promise<string> {
      const name = to.name ? singleLine(to.name, 200) : null;
      const rendered = renderMail(kind, { name, data, linkBase });
      const id = randomUUID();
      await repo.insert(
        { id, kind, user_id: to.userId ?? null, to_address: singleLine(to.address, 320), to_name: name, subject: rendered.subject, text_body: secrets.seal(rendered.text), html_body: secrets.seal(rendered.html), max_attempts: config.retry.max_attempts },
        db,
      );
      await jobs.enqueue(DELIVER_JOB, {}, isTransaction(db) ? { trx: db } : {});
      return id;
    },

    /** Queues a message to a user's address (null when the user has none: nothing to send). */
    async queueForUser(userId: string, kind: string, data: Readonly<Record<string, unknown>>, db?: Knex | Knex.Transaction): Promise<string | null> {
      const contact = await repo.contact(userId, db);
      if (!contact?.email) return null;
      return service.queue(kind, { address: contact.email, name: contact.displayName, userId }, data, db);
    },

    /** One worker pass: claims and sends due rows until none is left; resolves with how many were handled. */
    async deliverDue(): Promise<number> {
      let handled = 0;
      for (;;) {
        const rows = await repo.claim(nodeId, CLAIM_BATCH, config.retry.lease_ms);
        if (rows.length === 0) return handled;
        await Promise.all(rows.map(deliver));
        handled += rows.length;
      }
    },

    /** The periodic pass: holds whose node died without tries left fail, due rows go, old sent rows go. */
    async sweep(): Promise<void> {
      const abandoned = await repo.abandonExpired();
      if (abandoned > 0) {
        counts.failed += abandoned;
        log.warn({ count: abandoned }, 'mail given up: the node sending it stopped during its last try');
      }
      await service.deliverDue();
      await repo.pruneSent(config.retry.keep_sent_days);
    },

    /** GET /v1/admin/mail/outbox: newest first; by default what is not sent yet and what failed. */
    async outbox(status: OutboxStatus | undefined, request: PageRequest): Promise<Page<OutboxItem>> {
      const statuses: OutboxStatus[] = status ? [status] : ['pending', 'sending', 'failed'];
      const { rows, total } = await repo.page(statuses, request.limit, request.offset);
      return pageOf(rows, total, request);
    },

    /** POST /v1/admin/mail/outbox/{id}/retry: a failed message pending again, due now, with a fresh set of tries. */
    async retry(id: string): Promise<OutboxItem> {
      const result = await repo.requeue(id);
      if (!result) throw AppError.notFound(MAIL_NOT_FOUND);
      if (!result.requeued) throw new AppError('CONFLICT', ONLY_FAILED);
      await jobs.enqueue(DELIVER_JOB, {});
      log.info({ mail_id: id, kind: result.item.kind }, 'mail re-queued by an operator');
      return result.item;
    },

    /**
     * A deleted user's erasure (privacy module), in its transaction: every message for them or to
     * their address goes, sent or not, so nothing is sent to them afterwards and no copy of what was
     * is kept. A message a worker is sending at that moment is not marked sent (its row is gone).
     */
    eraseRecipient: (trx: Knex.Transaction, userId: string, address: string | null): Promise<number> => repo.eraseRecipient(trx, userId, address),

    /** Messages sent, retries scheduled and messages given up by this node since it started (metrics). */
    counts(): MailCounts {
      return { ...counts };
    },
  };
  return service;
}

export type MailService = ReturnType<typeof createMailService>;
