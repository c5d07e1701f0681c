/**
 * Storage of the webhooks module (knex): receipts, shops, billing state; one read of connections.
 * Receipts and billing rows stay in their stored form (snake_case, Date): the module API answers
 * them as they are to operators and tests, and billing rows are read back to be written again.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { schemaRows, tableColumns, type RowOf, type RowValue, type StoredRow } from '../../infra/db/rows';

type Db = Knex | Knex.Transaction;

/** A receipt as stored (not a schema: no route answers it; operators and tests read it as stored); the migration's columns. */
const receiptColumns = tableColumns('webhook_receipts');
export type ReceiptRow = StoredRow<typeof receiptColumns> & { payload: Record<string, unknown> };

/** A shop connection as the admin route answers it. */
export type ShopConnection = Camelize<components['schemas']['ShopConnection']>;
/** A stored shop: the connection with its signing secret in place of `has_secret`. */
const shopOf = schemaRows('ShopConnection', { omit: ['has_secret'], extra: tableColumns('webhook_shops', ['secret']) });
export type Shop = RowValue<typeof shopOf>;
/** The connection as the route answers it: whether a secret is stored, never the secret. */
const shopConnectionOf = schemaRows('ShopConnection', { from: { has_secret: "(coalesce(secret, '') <> '')" } });

/**
 * An account's billing state (not a schema: no route answers it; it is read back to be written
 * again): the migration's columns but `updated_at`, which the write sets.
 */
const billingColumns = tableColumns('billing_subscriptions', ['account_id', 'customer_id', 'subscription_id', 'plan_id', 'status', 'current_period_end']);
export type BillingRow = StoredRow<typeof billingColumns>;
const billingSelect = Object.keys(billingColumns);

export function createWebhooksRepo(knex: Knex) {
  return {
    /**
     * webhooks.accountsByChannel: the accounts connected to a platform channel. Reads the
     * connections module's `account_connections` (read-only; its API has no lookup by channel id).
     */
    async accountsByChannel(platform: string, channelId: string): Promise<string[]> {
      const rows: { account_id: string }[] = await knex('account_connections').where({ platform, platform_channel_id: channelId }).select('account_id').orderBy('account_id');
      return rows.map((r) => r.account_id);
    },
    /** webhooks.accountExists */
    async accountExists(id: string, db: Db = knex): Promise<boolean> {
      return Boolean(await db('accounts').where({ id }).first('id'));
    },
    /** webhooks.claimReceipt: false when this provider's event id was received before */
    async claimReceipt(row: Omit<RowOf<typeof receiptColumns>, 'received_at'>): Promise<boolean> {
      const inserted: unknown[] = await knex('webhook_receipts').insert(row).onConflict(['provider', 'external_id']).ignore().returning('id');
      return inserted.length > 0;
    },
    /** webhooks.settleReceipt */
    async settleReceipt(id: string, outcome: string, accountId: string | null): Promise<void> {
      await knex('webhook_receipts').where({ id }).update({ outcome, account_id: accountId });
    },
    /** webhooks.releaseReceipt: a delivery that failed inside is forgotten, so the redelivery runs */
    async releaseReceipt(id: string): Promise<void> {
      await knex('webhook_receipts').where({ id }).delete();
    },
    /** webhooks.receipts: of one provider, newest first (tests and operators) */
    receipts(provider: string): Promise<ReceiptRow[]> {
      return knex('webhook_receipts').where({ provider }).select(Object.keys(receiptColumns)).orderBy([{ column: 'received_at', order: 'desc' }, { column: 'id' }]);
    },
    /** webhooks.shop */
    async shop(domain: string, db: Db = knex): Promise<Shop | undefined> {
      const row = await db('webhook_shops').where({ shop_domain: domain }).first(db.raw(shopOf.select));
      return row ? shopOf.map(row) : undefined;
    },
    /** webhooks.shopConnection: as the admin route answers it */
    async shopConnection(domain: string, db: Db = knex): Promise<ShopConnection | undefined> {
      const row = await db('webhook_shops').where({ shop_domain: domain }).first(db.raw(shopConnectionOf.select));
      return row ? shopConnectionOf.map(row) : undefined;
    },
    /** webhooks.insertShop */
    async insertShop(db: Knex.Transaction, row: { shop_domain: string; account_id: string; secret: string | null }): Promise<void> {
      await db('webhook_shops').insert(row);
    },
    /** webhooks.updateShopSecret */
    async updateShopSecret(db: Knex.Transaction, domain: string, secret: string | null): Promise<void> {
      await db('webhook_shops').where({ shop_domain: domain }).update({ secret, updated_at: db.fn.now() });
    },
    /** webhooks.touchShop */
    async touchShop(db: Knex.Transaction, domain: string): Promise<void> {
      await db('webhook_shops').where({ shop_domain: domain }).update({ updated_at: db.fn.now() });
    },
    /** webhooks.removeShop: true when one was removed */
    async removeShop(db: Knex.Transaction, accountId: string, domain: string): Promise<boolean> {
      const removed: unknown[] = await db('webhook_shops').where({ shop_domain: domain, account_id: accountId }).delete().returning('shop_domain');
      return removed.length > 0;
    },
    /** webhooks.billingBySubscription */
    billingBySubscription(subscriptionId: string): Promise<BillingRow | undefined> {
      return knex('billing_subscriptions').where({ subscription_id: subscriptionId }).first(billingSelect);
    },
    /** webhooks.billingByCustomer: the most recently updated row of a customer */
    billingByCustomer(customerId: string): Promise<BillingRow | undefined> {
      return knex('billing_subscriptions').where({ customer_id: customerId }).orderBy('updated_at', 'desc').first(billingSelect);
    },
    /** webhooks.billing */
    billing(accountId: string): Promise<BillingRow | undefined> {
      return knex('billing_subscriptions').where({ account_id: accountId }).first(billingSelect);
    },
    /** webhooks.saveBilling: one row per account; a subscription id moves with its latest account */
    async saveBilling(db: Knex.Transaction, row: RowOf<typeof billingColumns>): Promise<void> {
      if (row.subscription_id) await db('billing_subscriptions').where({ subscription_id: row.subscription_id }).whereNot({ account_id: row.account_id }).update({ subscription_id: null });
      await db('billing_subscriptions')
        .insert({ ...row, updated_at: db.fn.now() })
        .onConflict(['account_id'])
        .merge({ customer_id: row.customer_id, subscription_id: row.subscription_id, plan_id: row.plan_id, status: row.status, current_period_end: row.current_period_end, updated_at: db.fn.now() });
    },
  };
}

export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;
