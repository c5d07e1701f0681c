/** The setting presets table: a user's saved settings, by kind, one default per kind. */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const presetMigrations: readonly Migration[] = [
  {
    name: '20261123082000_create_setting_presets',
    async up(knex: Knex) {
      await knex.schema.createTable('setting_presets', (t) => {
        t.uuid('id').primary();
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('kind', 50).notNullable();
        t.string('name', 100).notNullable();
        t.jsonb('payload').notNullable();
        t.boolean('is_default').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['user_id', 'kind']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('setting_presets');
    },
  },
];
