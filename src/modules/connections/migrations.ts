/** Channel connections of accounts (no tokens: what this service needs to report their state). */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const connectionMigrations: readonly Migration[] = [
  {
    name: '20261123083000_create_account_connections',
    async up(knex: Knex) {
      await knex.schema.createTable('account_connections', (t) => {
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('platform', 40).notNullable();
        t.string('platform_channel_id', 200).notNullable();
        t.timestamp('expires_at', { useTz: true }).nullable();
        t.boolean('reconnect_required').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['account_id', 'platform']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('account_connections');
    },
  },
  {
    name: '20261123083100_create_platform_switches',
    async up(knex: Knex) {
      await knex.schema.createTable('platform_switches', (t) => {
        t.string('platform', 40).primary();
        t.boolean('enabled').notNullable().defaultTo(true);
        t.boolean('login_enabled').notNullable().defaultTo(true);
        t.boolean('channel_enabled').notNullable().defaultTo(true);
        t.boolean('bot_enabled').notNullable().defaultTo(true);
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex('platform_switches').insert(['platform_a', 'platform_b', 'platform_c', 'music_platform'].map((platform) => ({ platform })));
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('platform_switches');
    },
  },
  {
    name: '20261123083200_create_login_connections_and_assignments',
    async up(knex: Knex) {
      await knex.schema.createTable('login_connections', (t) => {
        t.uuid('id').primary();
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('provider', 40).notNullable();
        t.string('platform_user_id', 200).notNullable();
        t.string('display_name', 200).nullable();
        t.boolean('reconnect_required').notNullable().defaultTo(false);
        t.boolean('is_primary').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.unique(['user_id', 'provider', 'platform_user_id']);
      });
      await knex.schema.createTable('login_assignments', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('login_connection_id').notNullable().references('login_connections.id').onDelete('CASCADE');
        t.string('provider', 40).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.unique(['account_id', 'user_id', 'provider']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('login_assignments');
      await knex.schema.dropTableIfExists('login_connections');
    },
  },
  {
    // The provider grant of a login connection, sealed (src/auth/secrets.ts); never in clear.
    name: '20261125153000_add_login_connection_grants',
    async up(knex: Knex) {
      await knex.schema.alterTable('login_connections', (t) => {
        t.text('access_token_sealed').nullable();
        t.text('refresh_token_sealed').nullable();
        t.timestamp('token_expires_at', { useTz: true }).nullable();
        t.text('scopes').nullable();
        t.timestamp('updated_at', { useTz: true }).nullable();
        t.index(['provider', 'platform_user_id']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.alterTable('login_connections', (t) => {
        t.dropIndex(['provider', 'platform_user_id']);
        t.dropColumns('access_token_sealed', 'refresh_token_sealed', 'token_expires_at', 'scopes', 'updated_at');
      });
    },
  },
  {
    // Channel connections made through the sign-in flow keep their grant, sealed; bot
    // connections (a second platform identity per account) get their own table.
    name: '20261125154000_add_account_connection_grants',
    async up(knex: Knex) {
      await knex.schema.alterTable('account_connections', (t) => {
        t.text('access_token_sealed').nullable();
        t.text('refresh_token_sealed').nullable();
        t.text('scopes').nullable();
      });
      await knex.schema.createTable('account_bot_connections', (t) => {
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('platform', 40).notNullable();
        t.string('platform_user_id', 200).notNullable();
        t.text('access_token_sealed').nullable();
        t.text('refresh_token_sealed').nullable();
        t.text('scopes').nullable();
        t.timestamp('expires_at', { useTz: true }).nullable();
        t.boolean('reconnect_required').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['account_id', 'platform']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('account_bot_connections');
      await knex.schema.alterTable('account_connections', (t) => {
        t.dropColumns('access_token_sealed', 'refresh_token_sealed', 'scopes');
      });
    },
  },
  {
    // A grant's refresh is claimed before the provider is asked (until the stored instant), so two
    // nodes due to refresh the same grant ask the provider once: the other waits for the result.
    name: '20261125220000_add_grant_refresh_claims',
    async up(knex: Knex) {
      for (const table of ['login_connections', 'account_connections', 'account_bot_connections']) {
        await knex.schema.alterTable(table, (t) => {
          t.timestamp('refresh_claimed_until', { useTz: true }).nullable();
        });
      }
    },
    async down(knex: Knex) {
      for (const table of ['login_connections', 'account_connections', 'account_bot_connections']) {
        await knex.schema.alterTable(table, (t) => {
          t.dropColumn('refresh_claimed_until');
        });
      }
    },
  },
];
