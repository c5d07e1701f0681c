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
 * re-enables the account's installs of the extension.
 */
import { defineModule } from '../contract';
import { payoutMigrations } from './migrations';
import { createPayoutsRepo } from './repo';
import { createPayoutsRest } from './rest';
import { createPayoutsService, type PayoutsService } from './service';

export type { EventOutcome, ProviderEventInput } from './service';

export type PayoutsApi = Pick<PayoutsService, 'payoutEvent' | 'connectEvent' | 'subscriptionStatus' | 'events'>;

declare module '../contract' {
  interface ModuleApis {
    payouts: PayoutsApi;
  }
}

export const payoutsModule = defineModule({
  name: 'payouts',
  migrations: payoutMigrations,
  build: ({ db, log, use }) => {
    const service = createPayoutsService({ knex: db.knex, repo: createPayoutsRepo(db.knex), developer: use('developer'), notifications: use('notifications'), extensions: use('extensions'), log });
    const api: PayoutsApi = { payoutEvent: service.payoutEvent, connectEvent: service.connectEvent, subscriptionStatus: service.subscriptionStatus, events: service.events };
    return { api, rest: createPayoutsRest(service) };
  },
});
