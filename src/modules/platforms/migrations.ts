/**
 * The platforms module's table: the stream sessions built from the platforms' stream start, change
 * and end reports (`platform_stream_sessions`). At most one open session per account and platform
 * (a partial unique index), so a repeated start report opens nothing twice.
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const platformMigrations: readonly Migration[] = [
  {
    name: '20261128093000_platform_stream_sessions',
    async up(knex: Knex) {
      await knex.schema.createTable('platform_stream_sessions', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('platform', 50).notNullable();
        t.string('platform_channel_id', 200).nullable();
        t.string('stream_id', 200).nullable();
        t.string('title', 500).nullable();
        t.string('category', 500).nullable();
        t.integer('updates').notNullable().defaultTo(0);
        t.timestamp('started_at', { useTz: true }).notNullable();
        t.timestamp('ended_at', { useTz: true }).nullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['account_id', 'started_at'], 'platform_stream_sessions_account_started_idx');
      });
      await knex.raw('create unique index platform_stream_sessions_open_unique on platform_stream_sessions (account_id, platform) where ended_at is null');
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('platform_stream_sessions');
    },
  },
];
