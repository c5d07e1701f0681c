/**
 * The payouts module: developer revenue per currency, payout settings (the
 * payout e-mail and the connected payment account), payout requests and their states, and the
 * extension subscriptions the payment-connect webhook reports. The webhooks module verifies and
 * de-duplicates deliveries and hands the payout-provider and payment-connect events here
 * (`payoutEvent`, `connectEvent`); this module owns `payout_accounts`, `payouts`,
 * `payout_events` and `extension_subscriptions`. It reads, never writes, the extensions module's
 * purchases (revenue) and the developer module's profiles and teams; it must not touch the
 * purchase and refund handling (the extensions module's). A subscription change is recorded in
 * one transaction with the extensions module's `subscriptionChanged` hook, which disables or
 * re-enables the account's installs of the extension. It also submits pending requests to the
 * payout provider (./submitter.ts through the adapter in ./provider.ts) when submission is on.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { defineModule } from '../contract';
import { payoutMigrations } from './migrations';
import { createHttpPayoutProvider } from './provider';
import { createPayoutsRepo } from './repo';
import { createPayoutsResolvers } from './graphql';
import { createPayoutsRest } from './rest';
import { createPayoutsService, type PayoutsService } from './service';
import { createPayoutSubmitter, SUBMIT_JOB, SUBMIT_SWEEP_JOB, type PayoutSubmitter } from './submitter';

export type { EventOutcome, ProviderEventInput } from './service';
export type { PayoutProvider, PayoutSubmission, SubmissionResult } from './provider';

export type PayoutsApi = Pick<PayoutsService, 'payoutEvent' | 'connectEvent' | 'subscriptionStatus' | 'events'> & {
  /** One submission pass (the `payouts.submit` job's work); 0 with submission off. Tests and operators. */
  submitDue: PayoutSubmitter['submitDue'];
};

declare module '../contract' {
  interface ModuleApis {
    payouts: PayoutsApi;
  }
}

/**
 * With `payouts.enabled`, pending requests are submitted to the payout provider's HTTP API at
 * `payments.payout_api_url` (./provider.ts) by the `payouts.submit` job and its periodic sweep
 * (./submitter.ts); off, a request stays pending until the provider's events move it.
 */
export const payoutsModule = defineModule({
  name: 'payouts',
  migrations: payoutMigrations,
  build: ({ db, log, use, config, jobs }) => {
    const settings = config.payouts;
    const repo = createPayoutsRepo(db.knex);
    const service = createPayoutsService({
      knex: db.knex,
      repo,
      developer: use('developer'),
      notifications: use('notifications'),
      extensions: use('extensions'),
      log,
      onRequested: settings.enabled ? (trx) => jobs.enqueue(SUBMIT_JOB, {}, { trx }) : undefined,
    });
    let submitDue: PayoutSubmitter['submitDue'] = async () => 0;
    if (settings.enabled) {
      const provider = createHttpPayoutProvider({ apiUrl: config.payments.payout_api_url, clientId: settings.client_id ?? '', clientSecret: settings.client_secret ?? '', timeoutMs: settings.request_timeout_ms, log });
      const nodeId = config.jobs.node_id ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
      const submitter = createPayoutSubmitter({ knex: db.knex, repo, provider, change: service.change, config: settings, nodeId, log });
      jobs.define(SUBMIT_JOB, async () => {
        await submitter.submitDue();
      });
      jobs.every(SUBMIT_SWEEP_JOB, settings.retry.sweep_seconds, () => submitter.sweep(), { retryLimit: 0 });
      submitDue = submitter.submitDue;
    }
    const api: PayoutsApi = { payoutEvent: service.payoutEvent, connectEvent: service.connectEvent, subscriptionStatus: service.subscriptionStatus, events: service.events, submitDue };
    return { api, rest: createPayoutsRest(service), resolvers: createPayoutsResolvers(service) };
  },
});
