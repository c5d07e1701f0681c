/**
 * The events table (Part 2, "Event row") and the indexes that serve `GET /v1/events` filters on
 * PostgreSQL: newest first per account, by type, by platform, by `raw ->> 'user_id'`, and a
 * trigram index on `raw::text` for the case-insensitive search (when pg_trgm is available; the
 * embedded PGlite has no contrib extensions, so it scans there).
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const eventMigrations: readonly Migration[] = [
  {
    name: '20261123080500_create_events',
    async up(knex: Knex) {
      await knex.schema.createTable('events', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('type', 100).notNullable();
        t.string('platform', 50).notNullable();
        t.string('external_id', 255).nullable();
        t.jsonb('raw').notNullable();
        /** Individual community gift rows: stored, hidden from the history (Part 2, "Community gift bundling"). */
        t.boolean('hidden').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        // Redelivery of one external id per account is idempotent (NULLs never conflict).
        t.unique(['account_id', 'external_id'], { indexName: 'events_account_external_unique' });
      });
      await knex.raw('create index events_account_created_idx on events (account_id, created_at desc, id desc)');
      await knex.raw('create index events_account_type_created_idx on events (account_id, type, created_at desc)');
      await knex.raw('create index events_account_platform_created_idx on events (account_id, platform, created_at desc)');
      await knex.raw("create index events_account_user_created_idx on events (account_id, (raw ->> 'user_id'), created_at desc)");
      await knex.raw("create index events_community_gift_idx on events (account_id, (raw ->> 'community_gift_id')) where (raw ->> 'community_gift_id') is not null");
      const trgm = await knex.raw("select 1 from pg_available_extensions where name = 'pg_trgm'");
      if ((trgm.rows ?? trgm).length > 0) {
        await knex.raw('create extension if not exists pg_trgm');
        await knex.raw('create index events_raw_trgm_idx on events using gin ((raw::text) gin_trgm_ops)');
      }
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('events');
    },
  },
];
