/** In-app notifications and per-user delivery preferences. */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const notificationMigrations: readonly Migration[] = [
  {
    name: '20261122100200_create_notifications',
    async up(knex: Knex) {
      await knex.schema.createTable('notifications', (t) => {
        t.uuid('id').primary();
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('type', 100).notNullable();
        t.jsonb('data').notNullable().defaultTo('{}');
        t.string('status', 20).notNullable().defaultTo('unread');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('read_at', { useTz: true }).nullable();
        t.index(['user_id', 'created_at']);
      });
      await knex.schema.createTable('notification_preferences', (t) => {
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('type', 100).notNullable();
        t.string('channel', 20).notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['user_id', 'type']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('notification_preferences');
      await knex.schema.dropTableIfExists('notifications');
    },
  },
];
