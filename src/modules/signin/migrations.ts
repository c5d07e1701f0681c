/** One-time login codes (hashed) and the ids of sign-in flows already completed (single use). */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const signinMigrations: readonly Migration[] = [
  {
    name: '20261125153100_create_login_codes_and_signin_flows',
    async up(knex: Knex) {
      await knex.schema.createTable('login_codes', (t) => {
        t.string('code_hash', 64).primary();
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('account_id').nullable();
        t.string('provider', 40).notNullable();
        t.timestamp('expires_at', { useTz: true }).notNullable().index();
      });
      await knex.schema.createTable('signin_flows', (t) => {
        t.string('flow_id', 64).primary();
        t.timestamp('expires_at', { useTz: true }).notNullable().index();
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('signin_flows');
      await knex.schema.dropTableIfExists('login_codes');
    },
  },
];
