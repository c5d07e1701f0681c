/**
 * The payouts module's tables: the payout account of each payee (a developer profile or a team:
 * the payout e-mail and the connected payment account the payment-connect webhook reports), the
 * payout requests with their state, the timeline of each request (one row per provider event id,
 * so a redelivered event changes nothing), and the extension subscriptions the payment-connect
 * webhook reports. Payee ids are developer profile or team ids (uuids that never collide).
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

const TABLES = ['extension_subscriptions', 'payout_events', 'payouts', 'payout_accounts'] as const;

export const payoutMigrations: readonly Migration[] = [
  {
    name: '20261125214500_payouts_create_tables',
    async up(knex: Knex) {
      await knex.schema.createTable('payout_accounts', (t) => {
        /** The developer profile or team id (exactly one of developer_id and team_id equals it). */
        t.uuid('payee_id').primary();
        t.uuid('developer_id').nullable().unique().references('developer_profiles.id').onDelete('CASCADE');
        t.uuid('team_id').nullable().unique().references('developer_teams.id').onDelete('CASCADE');
        t.string('payout_email', 320).nullable();
        t.string('connect_account_id', 255).nullable().unique();
        t.boolean('connect_charges_enabled').notNullable().defaultTo(false);
        t.boolean('connect_payouts_enabled').notNullable().defaultTo(false);
        t.boolean('connect_details_submitted').notNullable().defaultTo(false);
        t.timestamp('connect_updated_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.raw('alter table payout_accounts add constraint payout_accounts_one_payee check ((developer_id is null) <> (team_id is null))');
      await knex.schema.createTable('payouts', (t) => {
        t.uuid('id').primary();
        t.uuid('payee_id').notNullable().references('payout_accounts.payee_id').onDelete('CASCADE');
        t.uuid('developer_id').nullable();
        t.uuid('team_id').nullable();
        t.uuid('requested_by').nullable().references('users.id').onDelete('SET NULL');
        t.bigInteger('amount_cents').notNullable();
        t.string('currency', 10).notNullable();
        t.string('status', 20).notNullable().defaultTo('pending');
        t.string('payout_email', 320).notNullable();
        t.string('provider_batch_id', 255).nullable();
        t.string('provider_item_id', 255).nullable().unique();
        t.string('failure_reason', 500).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('paid_at', { useTz: true }).nullable();
        t.index(['payee_id', 'created_at']);
        t.index(['provider_batch_id']);
      });
      await knex.schema.createTable('payout_events', (t) => {
        t.uuid('id').primary();
        t.uuid('payout_id').notNullable().references('payouts.id').onDelete('CASCADE').index();
        /** The provider's event id: one state change per event, whatever redelivers it. */
        t.string('event_id', 255).notNullable().unique();
        t.string('event_type', 100).notNullable();
        t.string('from_status', 20).notNullable();
        t.string('to_status', 20).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.schema.createTable('extension_subscriptions', (t) => {
        t.string('subscription_id', 255).primary();
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE');
        t.uuid('account_id').nullable().references('accounts.id').onDelete('SET NULL');
        t.string('customer_id', 255).nullable();
        t.string('status', 40).notNullable();
        t.string('last_invoice_status', 20).nullable();
        t.timestamp('current_period_end', { useTz: true }).nullable();
        t.timestamp('canceled_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['extension_id', 'account_id']);
      });
    },
    async down(knex: Knex) {
      for (const table of TABLES) await knex.schema.dropTableIfExists(table);
    },
  },
  {
    // Submission to the payout provider (./submitter.ts): tries made, when the next is due, the
    // node holding a try in flight and until when, and the last error a try met. A pending payout
    // is due at once (existing rows included: they were waiting for exactly this).
    name: '20261128130000_payouts_submission',
    async up(knex: Knex) {
      await knex.schema.alterTable('payouts', (t) => {
        t.integer('submit_attempts').notNullable().defaultTo(0);
        t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.string('locked_by', 200).nullable();
        t.timestamp('locked_until', { useTz: true }).nullable();
        t.string('last_error', 500).nullable();
        t.timestamp('submitted_at', { useTz: true }).nullable();
      });
      // The submitter's claim: pending payouts by due time.
      await knex.raw("create index payouts_pending_due on payouts (next_attempt_at) where status = 'pending'");
    },
    async down(knex: Knex) {
      await knex.raw('drop index if exists payouts_pending_due');
      await knex.schema.alterTable('payouts', (t) => {
        t.dropColumns('submit_attempts', 'next_attempt_at', 'locked_by', 'locked_until', 'last_error', 'submitted_at');
      });
    },
  },
];
