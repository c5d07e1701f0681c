/** The idempotency keys table: one row per (credential, key), the first request's hash and answer. */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const idempotencyMigrations: readonly Migration[] = [
  {
    name: '20261128100000_create_idempotency_keys',
    async up(knex: Knex) {
      await knex.schema.createTable('idempotency_keys', (t) => {
        // The credential's stable, non-secret identity (AuthContext.credentialId, a hash or row id) with its kind.
        t.string('scope', 120).notNullable();
        t.string('key', 255).notNullable();
        t.specificType('request_hash', 'char(64)').notNullable();
        t.string('state', 10).notNullable();
        t.integer('status').nullable();
        t.string('content_type', 200).nullable();
        t.text('body').nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['scope', 'key']);
        t.index(['created_at']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('idempotency_keys');
    },
  },
];
