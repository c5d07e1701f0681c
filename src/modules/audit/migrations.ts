/** The audit log: one append-only table for user, account and system scope rows. No foreign keys: rows outlive what they name. */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const auditMigrations: readonly Migration[] = [
  {
    name: '20261122100300_create_audit_log',
    async up(knex: Knex) {
      await knex.schema.createTable('audit_log', (t) => {
        t.uuid('id').primary();
        t.string('scope', 10).notNullable();
        t.string('type', 100).notNullable();
        t.uuid('user_id').nullable();
        t.uuid('account_id').nullable();
        t.uuid('actor_id').nullable();
        t.string('ip_address', 100).nullable();
        t.string('user_agent', 1000).nullable();
        t.jsonb('metadata').notNullable().defaultTo('{}');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['scope', 'user_id', 'created_at']);
        t.index(['scope', 'account_id', 'created_at']);
        t.index(['created_at']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('audit_log');
    },
  },
];
