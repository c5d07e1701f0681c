/** The sessions table: one row per login session; JWTs name it and are only as good as it is. */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const sessionMigrations: readonly Migration[] = [
  {
    // The historic name, from when one migration created this table and `credentials` (now
    // src/auth's `20261122100101_create_credentials`): databases that ran it keep their record.
    name: '20261122100100_create_sessions_and_credentials',
    async up(knex: Knex) {
      await knex.schema.createTable('sessions', (t) => {
        t.uuid('id').primary();
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('account_id').nullable().references('accounts.id').onDelete('SET NULL');
        t.uuid('refresh_jti').notNullable();
        t.string('ip_address', 100).nullable();
        t.string('user_agent', 1000).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('last_used_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('expires_at', { useTz: true }).notNullable();
        t.timestamp('revoked_at', { useTz: true }).nullable();
        t.index(['user_id']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('sessions');
    },
  },
];
