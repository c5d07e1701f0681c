/**
 * Submitting pending payout requests to the payout provider (docs/adr/007-payouts.md), on the
 * job system (docs/adr/005-background-jobs.md), as the mail outbox delivers mail: a new request
 * queues `payouts.submit` in its own transaction, and the periodic `payouts.submit-sweep` picks up
 * retries and the holds of nodes that died. A pass claims due payouts in batches
 * (`payouts.batch_size`; FOR UPDATE SKIP LOCKED, then a committed hold, so two runs never submit
 * one payout at once) and submits each through the provider adapter with the payout's id as the
 * idempotency key, so a try repeated after a lost answer never pays twice.
 *
 * Each answer ends in one transaction on the payout, fenced by the hold (same node, same try):
 * accepted → `processing` with the provider's batch id stored; refused → `failed` with the
 * provider's reason; unavailable → due again after an exponential backoff with jitter, and
 * `failed` once `payouts.retry.max_attempts` tries were made, the last error as the reason. Every
 * change goes through the service's `change`, so it is on the payout's timeline once and the
 * requester is notified of it, as of the provider's own events. Owns the `submit_*`, `locked_*`,
 * `next_attempt_at`, `last_error` and `submitted_at` columns of `payouts`.
 */
import type { Knex } from 'knex';
import { backoffDelayMs } from '../../infra/backoff';
import type { Config } from '../../config/config';
import type { Logger } from '../../infra/logger';
import type { PayoutProvider, SubmissionResult } from './provider';
import type { PayoutsRepo, SubmissionRow } from './repo';
import type { PayoutsService } from './service';

export const SUBMIT_JOB = 'payouts.submit';
export const SUBMIT_SWEEP_JOB = 'payouts.submit-sweep';

/** What the submitter's passes did since start (tests, logs). */
export interface SubmitCounts {
  submitted: number;
  retried: number;
  failed: number;
}

export interface SubmitterDeps {
  knex: Knex;
  repo: PayoutsRepo;
  provider: PayoutProvider;
  change: PayoutsService['change'];
  config: Readonly<Config['payouts']>;
  nodeId: string;
  log: Logger;
}

/** The timeline's names for our own changes (the provider's events use theirs). */
const SUBMITTED = 'PAYOUT.SUBMITTED';
const REFUSED = 'PAYOUT.SUBMISSION_REFUSED';
const GAVE_UP = 'PAYOUT.SUBMISSION_FAILED';

export function createPayoutSubmitter(deps: SubmitterDeps) {
  const { knex, repo, provider, change, config, nodeId, log } = deps;
  const counts: SubmitCounts = { submitted: 0, retried: 0, failed: 0 };

  /** Records the provider's answer to this node's try, if the try still holds the payout. */
  async function record(held: SubmissionRow, result: Exclude<SubmissionResult, { kind: 'unavailable' }> | { kind: 'gave_up'; reason: string }): Promise<void> {
    const outcome = await knex.transaction(async (trx) => {
      const row = await repo.lockHeld(trx, held, nodeId);
      if (!row) return 'hold_lost';
      if (result.kind === 'accepted') {
        // A provider event may have moved it already (settled, or processing): the ids are still learned.
        const moved = await change(trx, row, { id: `submitted:${row.id}`, type: SUBMITTED, object: {} }, { to: 'processing', from: ['pending'] }, { provider_batch_id: result.batchId, provider_item_id: result.itemId });
        await repo.releaseHold(trx, row.id, { submitted_at: trx.fn.now(), last_error: null });
        return moved;
      }
      const [id, type] = result.kind === 'refused' ? [`refused:${row.id}`, REFUSED] : [`gave-up:${row.id}`, GAVE_UP];
      const moved = await change(trx, row, { id, type, object: {} }, { to: 'failed', from: ['pending'] }, { failure_reason: result.reason });
      await repo.releaseHold(trx, row.id, { last_error: result.reason });
      return moved;
    });
    if (outcome === 'payout_processing') counts.submitted += 1;
    if (outcome === 'payout_failed') counts.failed += 1;
    log.info({ payout_id: held.id, attempts: held.attempts, result: result.kind, outcome, ...(result.kind === 'accepted' ? { provider_batch_id: result.batchId } : { reason: result.reason }) }, 'payout submission recorded');
  }

  async function submit(held: SubmissionRow): Promise<void> {
    const result = await provider.submit({ payoutId: held.id, amountCents: held.amountCents, currency: held.currency, receiver: held.payoutEmail });
    if (result.kind !== 'unavailable') return record(held, result);
    if (held.attempts >= config.retry.max_attempts) {
      log.warn({ payout_id: held.id, attempts: held.attempts, error: result.reason }, 'payout submission given up: the provider stayed unavailable');
      return record(held, { kind: 'gave_up', reason: giveUpReason(held.attempts, result.reason) });
    }
    const delay = backoffDelayMs(held.attempts, config.retry);
    if (await repo.retryLater(held, nodeId, delay, result.reason)) counts.retried += 1;
    log.info({ payout_id: held.id, attempts: held.attempts, retry_in_ms: delay, error: result.reason }, 'payout not submitted yet: will retry');
  }

  const giveUpReason = (attempts: number, last: string) => `The payout provider could not be reached after ${attempts} attempts (last: ${last})`.slice(0, 500);

  const submitter = {
    counts: (): Readonly<SubmitCounts> => ({ ...counts }),

    /** One pass: claims and submits due payouts, a batch at a time, until none is left; answers how many were tried. */
    async submitDue(): Promise<number> {
      let tried = 0;
      for (;;) {
        const rows = await repo.claimDue(nodeId, config.batch_size, config.retry.lease_ms, config.retry.max_attempts);
        if (rows.length === 0) return tried;
        await Promise.all(rows.map(submit));
        tried += rows.length;
      }
    },

    /** The periodic pass: payouts whose node died holding their last try fail; due ones are submitted. */
    async sweep(): Promise<void> {
      for (const id of await repo.abandoned(config.retry.max_attempts, config.batch_size)) {
        await knex.transaction(async (trx) => {
          const row = await repo.lockById(trx, id);
          if (!row || row.status !== 'pending') return;
          const reason = giveUpReason(config.retry.max_attempts, 'the node submitting it stopped');
          if ((await change(trx, row, { id: `gave-up:${row.id}`, type: GAVE_UP, object: {} }, { to: 'failed', from: ['pending'] }, { failure_reason: reason })) === 'payout_failed') counts.failed += 1;
          await repo.releaseHold(trx, row.id, { last_error: reason });
        });
      }
      await submitter.submitDue();
    },
  };
  return submitter;
}

export type PayoutSubmitter = ReturnType<typeof createPayoutSubmitter>;
