/**
 * Storage of the stats module. Relational (the `db` handle): the channel directory with each
 * channel's public-statistics preferences and its rollups over the tracked streams (what browse
 * reads: one row per channel, one index per metric), the broadcasts with their aggregates and
 * observations (chatters, shared-chat rooms, emotes, GIFs), metadata changes, ad panels, the
 * emote directory and the watchlist. Time-series (the `timeseries` handle): the viewer and
 * follower samples every figure is computed from, in tables partitioned by month on the sample
 * time (PostgreSQL declarative partitioning, which the embedded PGlite supports too); the module
 * creates partitions ahead of the samples it stores (series.ts).
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

const METRICS: readonly [string, string][] = [
  ['watch', 'watch_seconds desc'],
  ['viewers', 'avg_viewers desc'],
  ['peak', 'peak_viewers desc'],
  ['followers', 'follower_gain desc'],
  ['messages', 'total_messages desc'],
  ['recent', 'last_started_at desc nulls last'],
];

export const statsMigrations: readonly Migration[] = [
  {
    name: '20261123105931_stats_create_tables',
    async up(knex: Knex) {
      await knex.schema.createTable('ps_channels', (t) => {
        t.string('platform', 50).notNullable();
        t.string('platform_channel_id', 200).notNullable();
        t.string('login', 200).notNullable();
        t.string('login_lower', 200).notNullable();
        t.string('display_name', 200).nullable();
        t.string('avatar_url', 2000).nullable();
        t.string('broadcaster_type', 20).nullable();
        t.string('source', 50).notNullable().defaultTo('crawler');
        t.boolean('opted_out').notNullable().defaultTo(false);
        t.boolean('show_top_chatters').notNullable().defaultTo(false);
        // Rollups over the channel's tracked streams, recomputed at each ingestion touching it.
        t.integer('stream_count').notNullable().defaultTo(0);
        t.bigInteger('watch_seconds').notNullable().defaultTo(0);
        t.double('avg_viewers').notNullable().defaultTo(0);
        t.integer('peak_viewers').notNullable().defaultTo(0);
        t.bigInteger('total_messages').notNullable().defaultTo(0);
        t.bigInteger('follower_gain').notNullable().defaultTo(0);
        t.timestamp('last_started_at', { useTz: true }).nullable();
        t.string('last_category', 200).nullable();
        t.boolean('is_live').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['platform', 'platform_channel_id']);
      });
      await knex.raw('create index ps_channels_login_idx on ps_channels (platform, login_lower)');
      // Browse: one partial index per metric over the listed channels, ties broken by the key.
      for (const [name, order] of METRICS) {
        await knex.raw(`create index ps_channels_browse_${name}_idx on ps_channels (${order}, platform, platform_channel_id) where not opted_out and stream_count > 0`);
      }
      // Selective browse filters: a few live channels, one category; the matches are sorted in memory.
      await knex.raw('create index ps_channels_live_idx on ps_channels (platform) where is_live and not opted_out and stream_count > 0');
      await knex.raw('create index ps_channels_category_idx on ps_channels (lower(last_category)) where not opted_out and stream_count > 0');
      const trgm = await knex.raw("select 1 from pg_available_extensions where name = 'pg_trgm'");
      if ((trgm.rows ?? trgm).length > 0) {
        await knex.raw('create extension if not exists pg_trgm');
        await knex.raw('create index ps_channels_search_trgm_idx on ps_channels using gin ((login_lower || \' \' || lower(coalesce(display_name, \'\'))) gin_trgm_ops)');
      }

      await knex.schema.createTable('ps_streams', (t) => {
        t.string('platform', 50).notNullable();
        t.string('broadcast_id', 200).notNullable();
        t.string('platform_channel_id', 200).notNullable();
        t.string('title', 500).nullable();
        t.string('category', 200).nullable();
        t.jsonb('tags').nullable();
        t.timestamp('started_at', { useTz: true }).notNullable();
        t.timestamp('ended_at', { useTz: true }).nullable();
        t.timestamp('last_sample_at', { useTz: true }).nullable();
        t.integer('sample_count').notNullable().defaultTo(0);
        t.integer('peak_viewers').notNullable().defaultTo(0);
        t.double('avg_viewers').notNullable().defaultTo(0);
        t.bigInteger('watch_seconds').notNullable().defaultTo(0);
        t.bigInteger('total_messages').notNullable().defaultTo(0);
        t.integer('new_paid_subs').notNullable().defaultTo(0);
        t.integer('gifted_subs').notNullable().defaultTo(0);
        t.integer('new_followers').notNullable().defaultTo(0);
        t.bigInteger('emote_count').notNullable().defaultTo(0);
        t.bigInteger('gif_count').notNullable().defaultTo(0);
        t.primary(['platform', 'broadcast_id']);
      });
      await knex.raw('create index ps_streams_channel_idx on ps_streams (platform, platform_channel_id, started_at desc)');
      await knex.raw('create index ps_streams_category_idx on ps_streams (category)');

      await knex.schema.createTable('ps_stream_chatters', (t) => {
        t.string('platform', 50).notNullable();
        t.string('broadcast_id', 200).notNullable();
        t.string('login', 200).notNullable();
        t.string('display_name', 200).nullable();
        t.integer('message_count').notNullable().defaultTo(0);
        t.primary(['platform', 'broadcast_id', 'login']);
      });
      await knex.raw('create index ps_stream_chatters_top_idx on ps_stream_chatters (platform, broadcast_id, message_count desc)');

      await knex.schema.createTable('ps_stream_shared_chat', (t) => {
        t.string('platform', 50).notNullable();
        t.string('broadcast_id', 200).notNullable();
        t.string('source_channel_id', 200).notNullable();
        t.integer('message_count').notNullable().defaultTo(0);
        t.string('display_name', 200).nullable();
        t.string('avatar_url', 2000).nullable();
        t.primary(['platform', 'broadcast_id', 'source_channel_id']);
      });

      await knex.schema.createTable('ps_stream_emotes', (t) => {
        t.string('platform', 50).notNullable();
        t.string('broadcast_id', 200).notNullable();
        t.string('provider', 50).notNullable();
        t.string('emote_id', 200).notNullable();
        t.string('name', 200).notNullable();
        t.string('url', 2000).nullable();
        t.integer('count').notNullable().defaultTo(0);
        t.primary(['platform', 'broadcast_id', 'provider', 'emote_id']);
      });

      /** GIF content is erased 90 days after first seen (Part 2, "Limits"); the stream keeps gif_count. */
      await knex.schema.createTable('ps_stream_gifs', (t) => {
        t.string('platform', 50).notNullable();
        t.string('broadcast_id', 200).notNullable();
        t.string('gif_id', 200).notNullable();
        t.string('url', 2000).notNullable();
        t.integer('count').notNullable().defaultTo(0);
        t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['platform', 'broadcast_id', 'gif_id']);
      });
      await knex.raw('create index ps_stream_gifs_first_seen_idx on ps_stream_gifs (first_seen_at)');

      await knex.schema.createTable('ps_metadata_changes', (t) => {
        t.bigIncrements('id').primary();
        t.string('platform', 50).notNullable();
        t.string('broadcast_id', 200).notNullable();
        t.string('change_type', 20).notNullable();
        t.jsonb('old_value').nullable();
        t.jsonb('new_value').nullable();
        t.timestamp('changed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.raw('create index ps_metadata_changes_stream_idx on ps_metadata_changes (platform, broadcast_id, changed_at desc, id desc)');

      await knex.schema.createTable('ps_panels', (t) => {
        t.string('platform', 50).notNullable();
        t.string('platform_channel_id', 200).notNullable();
        t.string('panel_id', 200).notNullable();
        t.string('title', 500).nullable();
        t.text('description').nullable();
        t.string('image_url', 2000).nullable();
        t.string('link_url', 2000).nullable();
        t.timestamp('first_seen_at', { useTz: true }).notNullable();
        t.timestamp('last_seen_at', { useTz: true }).notNullable();
        t.timestamp('removed_at', { useTz: true }).nullable();
        t.primary(['platform', 'platform_channel_id', 'panel_id']);
      });
      await knex.schema.createTable('ps_panel_images', (t) => {
        t.string('platform', 50).notNullable();
        t.string('platform_channel_id', 200).notNullable();
        t.string('panel_id', 200).notNullable();
        t.string('image_url', 2000).notNullable();
        t.timestamp('first_seen_at', { useTz: true }).notNullable();
        t.timestamp('last_seen_at', { useTz: true }).notNullable();
        t.primary(['platform', 'platform_channel_id', 'panel_id', 'image_url']);
      });

      /** The emote directory: `set_key` is the set's channel id, '' for a global set. */
      await knex.schema.createTable('ps_emotes', (t) => {
        t.string('provider', 50).notNullable();
        t.string('emote_id', 200).notNullable();
        t.string('set_key', 200).notNullable();
        t.string('platform', 50).notNullable();
        t.string('channel_id', 200).nullable();
        t.string('name', 200).notNullable();
        t.string('url', 2000).nullable();
        t.boolean('animated').notNullable().defaultTo(false);
        t.string('owner_id', 200).nullable();
        t.string('source', 20).notNullable();
        t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['provider', 'emote_id', 'set_key']);
      });
      await knex.raw('create index ps_emotes_name_idx on ps_emotes (lower(name), name, provider, emote_id, set_key)');

      await knex.schema.createTable('stats_watchlist', (t) => {
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('platform', 50).notNullable();
        t.string('platform_channel_id', 200).notNullable();
        t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['user_id', 'platform', 'platform_channel_id']);
      });
      await knex.raw('create index stats_watchlist_user_idx on stats_watchlist (user_id, added_at desc)');
    },
    async down(knex: Knex) {
      for (const table of ['stats_watchlist', 'ps_emotes', 'ps_panel_images', 'ps_panels', 'ps_metadata_changes', 'ps_stream_gifs', 'ps_stream_emotes', 'ps_stream_shared_chat', 'ps_stream_chatters', 'ps_streams', 'ps_channels']) {
        await knex.schema.dropTableIfExists(table);
      }
    },
  },
  {
    // A resent crawler batch must not add its counts twice; each applied batch leaves its key.
    name: '20261125190000_stats_ingest_batches',
    async up(knex: Knex) {
      await knex.schema.createTable('ps_ingest_batches', (t) => {
        t.string('batch_key', 64).primary();
        t.jsonb('result').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['created_at']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('ps_ingest_batches');
    },
  },
  {
    // A creator's own choices for their connected channel (opt-out, top chatters) win over crawler
    // batches; and watchlist entries for channels the crawler does not know yet, by handle.
    name: '20261128101000_stats_channel_preferences_and_pending_watchlist',
    async up(knex: Knex) {
      await knex.schema.createTable('ps_channel_preferences', (t) => {
        t.string('platform', 50).notNullable();
        t.string('platform_channel_id', 200).notNullable();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.boolean('opted_out').nullable();
        t.boolean('show_top_chatters').nullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['platform', 'platform_channel_id']);
      });
      await knex.schema.createTable('stats_watchlist_pending', (t) => {
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('platform', 50).notNullable();
        t.string('login_lower', 200).notNullable();
        t.string('login', 200).notNullable();
        t.timestamp('added_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['user_id', 'platform', 'login_lower']);
        t.index(['platform', 'login_lower']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('stats_watchlist_pending');
      await knex.schema.dropTableIfExists('ps_channel_preferences');
    },
  },
];

/** The sample tables, partitioned by month on the sample time; partitions are made by series.ts. */
export const statsTimeseriesMigrations: readonly Migration[] = [
  {
    name: '20261123105932_stats_create_samples',
    async up(knex: Knex) {
      await knex.raw(`create table ps_viewer_samples (
        platform varchar(50) not null,
        broadcast_id varchar(200) not null,
        platform_channel_id varchar(200) not null,
        sampled_at timestamptz not null,
        viewers integer not null,
        messages integer not null default 0,
        new_followers integer not null default 0,
        new_paid_subs integer not null default 0,
        gifted_subs integer not null default 0,
        primary key (platform, broadcast_id, sampled_at)
      ) partition by range (sampled_at)`);
      await knex.raw('create index ps_viewer_samples_channel_idx on ps_viewer_samples (platform, platform_channel_id, sampled_at)');
      await knex.raw(`create table ps_follower_samples (
        platform varchar(50) not null,
        platform_channel_id varchar(200) not null,
        sampled_at timestamptz not null,
        follower_count integer not null,
        primary key (platform, platform_channel_id, sampled_at)
      ) partition by range (sampled_at)`);
    },
    async down(knex: Knex) {
      await knex.raw('drop table if exists ps_viewer_samples');
      await knex.raw('drop table if exists ps_follower_samples');
    },
  },
];
