/** Overlays, widget instances and widget access entries (their tokens live in src/auth's credentials table). */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const overlayMigrations: readonly Migration[] = [
  {
    name: '20261123081000_create_overlays_and_widgets',
    async up(knex: Knex) {
      for (const table of ['overlays', 'widgets']) {
        await knex.schema.createTable(table, (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
          t.string('name', 100).notNullable();
          t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
          t.index(['account_id', 'created_at']);
        });
      }
      await knex.schema.createTable('widget_access', (t) => {
        t.uuid('id').primary();
        t.uuid('widget_id').notNullable().references('widgets.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('role', 20).notNullable();
        t.uuid('granted_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.unique(['widget_id', 'user_id']);
      });
    },
    async down(knex: Knex) {
      for (const table of ['widget_access', 'widgets', 'overlays']) await knex.schema.dropTableIfExists(table);
    },
  },
  {
    // Overlays and widgets carry their content, versioned for optimistic concurrency.
    name: '20261125183000_overlay_and_widget_settings',
    async up(knex: Knex) {
      for (const table of ['overlays', 'widgets']) {
        await knex.schema.alterTable(table, (t) => {
          t.jsonb('settings').notNullable().defaultTo('{}');
          t.integer('version').notNullable().defaultTo(1);
          t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
          if (table === 'widgets') t.string('type', 50).notNullable().defaultTo('custom');
        });
        await knex(table).update({ updated_at: knex.ref('created_at') });
      }
    },
    async down(knex: Knex) {
      for (const table of ['overlays', 'widgets']) {
        await knex.schema.alterTable(table, (t) => {
          t.dropColumn('settings');
          t.dropColumn('version');
          t.dropColumn('updated_at');
          if (table === 'widgets') t.dropColumn('type');
        });
      }
    },
  },
];
