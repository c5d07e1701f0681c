/**
 * The events table (Part 2, "Event row") and the indexes that serve `GET /v1/events` filters on
 * PostgreSQL: newest first per account, by type, by platform, by `raw ->> 'user_id'`, and a
 * trigram index on `raw::text` for the case-insensitive search (when pg_trgm is available; the
 * embedded PGlite has no contrib extensions, so it scans there).
 *
 * `event_counts` keeps the number of visible rows per account, UTC day, type and platform, so the
 * exact `_meta.total` of a page filtered by types, platform and time needs no count over the rows
 * themselves (a million rows took 60–70 ms to count; repo.ts `total`). Statement-level triggers on
 * `events` keep it in step with every write (emit, gift hold and release, retention, cascades)
 * inside the writing transaction.
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
  {
    name: '20261124100000_create_event_counts',
    async up(knex: Knex) {
      await knex.schema.createTable('event_counts', (t) => {
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.date('day').notNullable();
        t.string('type', 100).notNullable();
        t.string('platform', 50).notNullable();
        t.bigInteger('n').notNullable();
        t.primary(['account_id', 'day', 'type', 'platform']);
      });
      // Bumped for an account by every statement that changes its events (a patched gift header
      // too): the version that guards kept event pages on PostgreSQL (src/infra/db/hot-read.ts).
      await knex.schema.createTable('event_versions', (t) => {
        t.uuid('account_id').primary().references('accounts.id').onDelete('CASCADE');
        t.bigInteger('n').notNullable();
      });
      await knex.raw(`
        create function events_bump_versions(accounts uuid[]) returns void language sql as $$
          insert into event_versions as v (account_id, n)
          select a, 1 from unnest(accounts) a where exists (select 1 from accounts where id = a) order by a
          on conflict (account_id) do update set n = v.n + 1;
        $$`);
      // `events_count_apply` adds net changes per (account, day, type, platform) in key order (two
      // concurrent statements lock counter rows in the same order) and drops rows that reach 0.
      // Each trigger passes what its statement added (+1) and removed (-1) among visible rows; a
      // transition table exists only for the operations that have it, hence one branch each.
      await knex.raw(`
        create function events_count_apply(deltas jsonb) returns void language sql as $$
          insert into event_counts as c (account_id, day, type, platform, n)
          select (e ->> 'a')::uuid, (e ->> 'd')::date, e ->> 't', e ->> 'p', sum((e ->> 'n')::bigint)
          from jsonb_array_elements(deltas) e
          -- An account being deleted takes its events and counts with it (cascade): nothing to count.
          where exists (select 1 from accounts where id = (e ->> 'a')::uuid)
          group by 1, 2, 3, 4 having sum((e ->> 'n')::bigint) <> 0
          order by 1, 2, 3, 4
          on conflict (account_id, day, type, platform) do update set n = c.n + excluded.n;
          delete from event_counts
          where n <= 0 and account_id in (select (e ->> 'a')::uuid from jsonb_array_elements(deltas) e where (e ->> 'n')::bigint < 0);
        $$`);
      const deltas = (table: string, sign: number) => `
        select coalesce(jsonb_agg(jsonb_build_object('a', account_id, 'd', day, 't', type, 'p', platform, 'n', n)), '[]'::jsonb)
        from (select account_id, (created_at at time zone 'UTC')::date as day, type, platform, ${sign} * count(*) as n
              from ${table} where not hidden group by 1, 2, 3, 4) grouped`;
      await knex.raw(`
        create function events_count_rows() returns trigger language plpgsql as $$
        begin
          if tg_op = 'INSERT' then
            perform events_count_apply((${deltas('new_rows', 1)}));
            perform events_bump_versions(array(select distinct account_id from new_rows));
          elsif tg_op = 'DELETE' then
            perform events_count_apply((${deltas('old_rows', -1)}));
            perform events_bump_versions(array(select distinct account_id from old_rows));
          else
            perform events_count_apply((${deltas('new_rows', 1)}) || (${deltas('old_rows', -1)}));
            perform events_bump_versions(array(select account_id from new_rows union select account_id from old_rows));
          end if;
          return null;
        end $$`);
      // Rows written before the triggers are counted once below: writers (other nodes still on the
      // previous release) are held off from here until this migration commits.
      await knex.raw('lock table events in share row exclusive mode');
      await knex.raw('create trigger events_count_insert after insert on events referencing new table as new_rows for each statement execute function events_count_rows()');
      await knex.raw('create trigger events_count_update after update on events referencing old table as old_rows new table as new_rows for each statement execute function events_count_rows()');
      await knex.raw('create trigger events_count_delete after delete on events referencing old table as old_rows for each statement execute function events_count_rows()');
      await knex.raw(`
        insert into event_counts (account_id, day, type, platform, n)
        select account_id, (created_at at time zone 'UTC')::date, type, platform, count(*)
        from events where not hidden group by 1, 2, 3, 4`);
    },
    async down(knex: Knex) {
      await knex.raw('drop trigger if exists events_count_insert on events');
      await knex.raw('drop trigger if exists events_count_update on events');
      await knex.raw('drop trigger if exists events_count_delete on events');
      await knex.raw('drop function if exists events_count_rows()');
      await knex.raw('drop function if exists events_count_apply(jsonb)');
      await knex.raw('drop function if exists events_bump_versions(uuid[])');
      await knex.schema.dropTableIfExists('event_versions');
      await knex.schema.dropTableIfExists('event_counts');
    },
  },
];
