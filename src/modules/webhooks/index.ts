/**
 * The webhooks module: the signed inbound receivers of the platforms and the payment provider
 * (Part 2 "Inbound webhook receivers"), the shop_platform shops with their signing secrets, the
 * billing state the payment provider reports, and the receipt log of payment and payout
 * deliveries. Owns `webhook_receipts`, `webhook_shops` and `billing_subscriptions`; reaches
 * events, platforms (the platforms' inbound readers), extensions, payouts, plans and accounts only through their APIs (and reads, never writes,
 * the connections module's channel ids to resolve an account).
 */
import { defineModule } from '../contract';
import { webhookMigrations } from './migrations';
import { createHttpPayoutVerifier, type PayoutVerifier } from './payout';
import { createWebhooksRepo } from './repo';
import { createWebhooksRest } from './rest';
import { createWebhooksService, type WebhooksService } from './service';

export type WebhooksApi = Pick<WebhooksService, 'receipts' | 'billing'>;

declare module '../contract' {
  interface ModuleApis {
    webhooks: WebhooksApi;
  }
}

/** `payout` swaps the payout provider's verification adapter (default: its HTTP API at `payments.payout_api_url`). */
export function createWebhooksModule(options: { payout?: PayoutVerifier } = {}) {
  return defineModule({
    name: 'webhooks',
    migrations: webhookMigrations,
    build: ({ db, config, log, use }) => {
      const service = createWebhooksService({
        config,
        log,
        knex: db.knex,
        repo: createWebhooksRepo(db.knex),
        events: use('events'),
        platforms: use('platforms'),
        extensions: use('extensions'),
        accounts: use('accounts'),
        plans: use('plans'),
        features: use('features'),
        audit: use('audit'),
        payouts: use('payouts'),
        payout: options.payout ?? createHttpPayoutVerifier({ apiUrl: config.payments.payout_api_url, log }),
      });
      return { api: { receipts: service.receipts, billing: service.billing } as WebhooksApi, rest: createWebhooksRest(service) };
    },
  });
}

export const webhooksModule = createWebhooksModule();
