/**
 * The webhooks module's tables: the receipt log of payment and payout deliveries (idempotency on
 * the provider's event id, and the record of what each delivery reported), the shop_platform
 * shops with their signing secrets, and the billing state the payment provider reports.
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const webhookMigrations: readonly Migration[] = [
  {
    name: '20261123104500_webhooks_receipts_shops_billing',
    async up(knex: Knex) {
      await knex.schema.createTable('webhook_receipts', (t) => {
        t.uuid('id').primary();
        t.string('provider', 40).notNullable();
        t.string('external_id', 255).notNullable();
        t.string('type', 100).notNullable();
        t.uuid('account_id').nullable().references('accounts.id').onDelete('SET NULL');
        t.jsonb('payload').notNullable();
        t.string('outcome', 40).notNullable();
        t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.unique(['provider', 'external_id'], { indexName: 'webhook_receipts_provider_external_unique' });
        t.index(['provider', 'type', 'received_at'], 'webhook_receipts_provider_type_idx');
      });
      await knex.schema.createTable('webhook_shops', (t) => {
        t.string('shop_domain', 255).primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        // An HMAC secret must be usable to sign, so it is kept as given (never returned by the API).
        t.string('secret', 500).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['account_id'], 'webhook_shops_account_idx');
      });
      await knex.schema.createTable('billing_subscriptions', (t) => {
        t.uuid('account_id').primary().references('accounts.id').onDelete('CASCADE');
        t.string('customer_id', 255).nullable();
        t.string('subscription_id', 255).nullable().unique('billing_subscriptions_subscription_unique');
        t.uuid('plan_id').nullable();
        t.string('status', 40).notNullable();
        t.timestamp('current_period_end', { useTz: true }).nullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['customer_id'], 'billing_subscriptions_customer_idx');
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('billing_subscriptions');
      await knex.schema.dropTableIfExists('webhook_shops');
      await knex.schema.dropTableIfExists('webhook_receipts');
    },
  },
];
