/** Feature flag tables. Global kill-switches are seeded on, so a fresh install works end to end. */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const seededFlags: readonly { key: string; category: string; label: string }[] = [
  { key: 'feature:apikeys', category: 'feature', label: 'API keys' },
  { key: 'feature:automation', category: 'feature', label: 'Automations' },
  { key: 'feature:bot_module_extensions', category: 'bot_module', label: 'Bot module extensions' },
  { key: 'feature:bots', category: 'feature', label: 'Bots' },
  { key: 'feature:connections', category: 'feature', label: 'Platform connections' },
  { key: 'feature:events', category: 'feature', label: 'Stream events' },
  { key: 'feature:extension_development', category: 'feature', label: 'Extension development' },
  { key: 'feature:extensions', category: 'feature', label: 'Extensions' },
  { key: 'feature:multichat', category: 'feature', label: 'Multi-platform chat' },
  { key: 'feature:music', category: 'integration', label: 'Music platform' },
  { key: 'feature:overlays', category: 'feature', label: 'Overlays' },
  { key: 'feature:sounds', category: 'feature', label: 'Sounds' },
  { key: 'feature:stream_history', category: 'feature', label: 'Stream history' },
  { key: 'feature:widgets', category: 'widget', label: 'Widgets' },
  { key: 'system:account_creation', category: 'system', label: 'Account creation' },
  { key: 'system:ideas_hub', category: 'system', label: 'Ideas hub' },
  { key: 'system:ideas_hub_public', category: 'system', label: 'Ideas hub open to the public' },
  { key: 'system:public_stats', category: 'system', label: 'Public statistics' },
];

export const featureMigrations: readonly Migration[] = [
  {
    name: '20261121120000_create_feature_flags',
    async up(knex: Knex) {
      await knex.schema.createTable('feature_flags', (t) => {
        t.string('key', 100).primary();
        t.string('category', 40).notNullable();
        t.string('label', 200).notNullable();
        t.boolean('enabled').notNullable().defaultTo(true);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex('feature_flags').insert(seededFlags.map((f) => ({ ...f, enabled: true })));
    },
    async down(knex: Knex) {
      await knex.schema.dropTable('feature_flags');
    },
  },
  {
    // Runs after the accounts module's tables (users, plans, accounts) exist: the names sort after them.
    name: '20261123080000_plans_plan_features_and_overrides',
    async up(knex: Knex) {
      await knex.schema.alterTable('feature_flags', (t) => {
        t.uuid('id').nullable().unique();
      });
      for (const { key } of await knex('feature_flags').select('key')) await knex('feature_flags').where({ key }).update({ id: randomUUID() });
      await knex.schema.alterTable('plans', (t) => {
        t.string('description', 2000).nullable();
        t.integer('price_monthly').notNullable().defaultTo(0);
        t.integer('price_yearly').notNullable().defaultTo(0);
        t.string('currency', 3).notNullable().defaultTo('USD');
        t.boolean('is_public').notNullable().defaultTo(true);
        t.integer('sort_order').notNullable().defaultTo(0);
        t.integer('max_overlays').notNullable().defaultTo(0);
        t.bigInteger('max_storage_bytes').notNullable().defaultTo(0);
        t.bigInteger('max_upload_size_bytes').notNullable().defaultTo(0);
        t.integer('max_integrations').notNullable().defaultTo(0);
        t.integer('chat_retention_days').notNullable().defaultTo(0);
        t.integer('max_setting_presets').notNullable().defaultTo(0);
        t.integer('max_sounds').notNullable().defaultTo(0);
        t.bigInteger('max_sound_file_size').notNullable().defaultTo(0);
        t.bigInteger('max_sound_storage_bytes').notNullable().defaultTo(0);
        t.integer('max_accounts').notNullable().defaultTo(3); // not an AdminPlan field (Part 1): plans made through the API allow 3
        t.string('stripe_product_id', 200).nullable();
        t.string('stripe_monthly_price_id', 200).nullable();
        t.string('stripe_yearly_price_id', 200).nullable();
      });
      const MiB = 1024 * 1024;
      await knex('plans').where({ slug: 'free' }).update({
        sort_order: 0, max_overlays: 5, max_storage_bytes: 500 * MiB, max_upload_size_bytes: 10 * MiB, max_integrations: 3,
        chat_retention_days: 30, max_setting_presets: 5, max_sounds: 50, max_sound_file_size: 5 * MiB, max_sound_storage_bytes: 100 * MiB, max_accounts: 3,
      });
      await knex('plans').where({ slug: 'pro' }).update({
        price_monthly: 999, price_yearly: 9990, sort_order: 1, max_overlays: 50, max_storage_bytes: 10 * 1024 * MiB, max_upload_size_bytes: 100 * MiB, max_integrations: 20,
        chat_retention_days: 0, max_setting_presets: 20, max_sounds: 500, max_sound_file_size: 20 * MiB, max_sound_storage_bytes: 2 * 1024 * MiB, max_accounts: 10,
      });
      await knex.schema.createTable('plan_features', (t) => {
        t.uuid('plan_id').notNullable().references('plans.id').onDelete('CASCADE');
        t.string('feature_key', 100).notNullable().references('feature_flags.key').onDelete('CASCADE');
        t.boolean('enabled').notNullable();
        t.primary(['plan_id', 'feature_key']);
      });
      // Both seeded plans enable every account feature, so a fresh install works end to end.
      const plans = await knex('plans').select('id');
      const keys = seededFlags.filter((f) => f.category !== 'system').map((f) => f.key);
      await knex('plan_features').insert(plans.flatMap((p: { id: string }) => keys.map((feature_key) => ({ plan_id: p.id, feature_key, enabled: true }))));
      await knex.schema.createTable('account_feature_overrides', (t) => {
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('feature_key', 100).notNullable().references('feature_flags.key').onDelete('CASCADE');
        t.boolean('enabled').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['account_id', 'feature_key']);
      });
      await knex.schema.alterTable('users', (t) => {
        t.string('account_creation_override', 10).notNullable().defaultTo('DEFAULT');
      });
    },
    async down(knex: Knex) {
      await knex.schema.alterTable('users', (t) => t.dropColumn('account_creation_override'));
      await knex.schema.dropTableIfExists('account_feature_overrides');
      await knex.schema.dropTableIfExists('plan_features');
    },
  },
];
