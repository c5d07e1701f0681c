/**
 * The chat tables (Part 2, "Chat"): messages, the moderation log and per-platform user profiles.
 * Indexes serve the history filters (newest first per account; by sender; by live chat), the
 * case-insensitive keyword search (a trigram GIN index on `message` when pg_trgm is available;
 * the embedded PGlite has no contrib extensions, so there the search scans the account's rows
 * inside the time bound) and the prefix search over user names (`lower(...) text_pattern_ops`).
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

async function hasTrigram(knex: Knex): Promise<boolean> {
  const result = await knex.raw("select 1 from pg_available_extensions where name = 'pg_trgm'");
  return ((result.rows ?? result) as unknown[]).length > 0;
}

export const chatMigrations: readonly Migration[] = [
  {
    name: '20261123101301_chat_messages',
    async up(knex: Knex) {
      await knex.schema.createTable('chat_messages', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('platform', 20).notNullable();
        t.string('platform_message_id', 200).notNullable();
        t.string('platform_user_id', 200).notNullable();
        t.string('username', 200).notNullable();
        t.string('display_name', 200).nullable();
        t.text('avatar_url').nullable();
        t.text('message').notNullable();
        t.jsonb('emotes').nullable();
        t.jsonb('badges').nullable();
        t.string('reply_to_message_id', 200).nullable();
        t.string('reply_to_username', 200).nullable();
        t.text('reply_to_message').nullable();
        t.string('live_chat_id', 200).nullable();
        t.boolean('is_shared_chat').notNullable().defaultTo(false);
        t.jsonb('source_channel').nullable();
        t.boolean('is_deleted').notNullable().defaultTo(false);
        t.timestamp('deleted_at', { useTz: true }).nullable();
        t.string('deleted_by', 200).nullable();
        t.jsonb('raw').notNullable().defaultTo('{}');
        t.timestamp('sent_at', { useTz: true }).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        // A redelivered platform message is stored once.
        t.unique(['account_id', 'platform', 'platform_message_id'], { indexName: 'chat_messages_platform_id_unique' });
      });
      await knex.raw('create index chat_messages_account_sent_idx on chat_messages (account_id, sent_at desc, id desc)');
      await knex.raw('create index chat_messages_account_user_idx on chat_messages (account_id, platform_user_id, sent_at desc)');
      await knex.raw('create index chat_messages_account_live_chat_idx on chat_messages (account_id, live_chat_id, sent_at desc) where live_chat_id is not null');
      if (await hasTrigram(knex)) {
        await knex.raw('create extension if not exists pg_trgm');
        await knex.raw('create index chat_messages_message_trgm_idx on chat_messages using gin (message gin_trgm_ops)');
      }
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('chat_messages');
    },
  },
  {
    name: '20261123101302_chat_moderation_log',
    async up(knex: Knex) {
      await knex.schema.createTable('chat_moderation_log', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('platform', 20).notNullable();
        t.string('action', 20).notNullable();
        t.string('platform_action_id', 200).nullable();
        t.string('target_user_id', 200).nullable();
        t.string('target_username', 200).nullable();
        t.string('platform_message_id', 200).nullable();
        t.string('moderator_user_id', 200).nullable();
        t.string('moderator_name', 200).nullable();
        t.integer('duration_secs').nullable();
        t.text('reason').nullable();
        /** `platform` (received from the platform) or `service` (sent through POST /v1/chat/moderate). */
        t.string('source', 20).notNullable().defaultTo('platform');
        t.jsonb('raw').notNullable().defaultTo('{}');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        // Redelivery of one platform action is logged once (NULL ids never conflict).
        t.unique(['account_id', 'platform', 'platform_action_id'], { indexName: 'chat_moderation_log_action_unique' });
      });
      await knex.raw('create index chat_moderation_log_account_created_idx on chat_moderation_log (account_id, created_at desc)');
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('chat_moderation_log');
    },
  },
  {
    name: '20261123101303_chat_platform_users',
    async up(knex: Knex) {
      await knex.schema.createTable('chat_platform_users', (t) => {
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('platform', 20).notNullable();
        t.string('platform_user_id', 200).notNullable();
        t.string('username', 200).notNullable();
        t.string('display_name', 200).nullable();
        t.text('avatar_url').nullable();
        t.timestamp('last_seen_at', { useTz: true }).nullable();
        t.integer('message_count').notNullable().defaultTo(0);
        t.string('user_treatment', 30).notNullable().defaultTo('none');
        t.timestamp('refreshed_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['account_id', 'platform', 'platform_user_id']);
      });
      await knex.raw('create index chat_platform_users_username_idx on chat_platform_users (account_id, lower(username) text_pattern_ops)');
      await knex.raw('create index chat_platform_users_display_name_idx on chat_platform_users (account_id, lower(display_name) text_pattern_ops)');
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('chat_platform_users');
    },
  },
];
