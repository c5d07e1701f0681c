/** Feature flag tables. Global kill-switches are seeded on, so a fresh install works end to end. */
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
];
