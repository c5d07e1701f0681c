/** The mail outbox: every message, written with the change that causes it, until it is sent or given up. */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

/** What the operator pages need: the workers and mail pages, and re-queueing failed mail. */
const OPERATOR_PERMISSIONS = ['workers:read', 'mail:read', 'mail:edit'];

export const mailMigrations: readonly Migration[] = [
  {
    name: '20261125190000_create_mail_outbox',
    async up(knex: Knex) {
      await knex.schema.createTable('mail_outbox', (t) => {
        t.uuid('id').primary();
        /** The template that rendered it (a notification type, `team_invite`, ...). */
        t.string('kind', 100).notNullable();
        /** The recipient's user, when the message is for one (null for an address without an account). */
        t.uuid('user_id').nullable();
        t.string('to_address', 320).notNullable();
        t.string('to_name', 200).nullable();
        t.text('subject').notNullable();
        t.text('text_body').notNullable();
        t.text('html_body').notNullable();
        /** pending → sending → sent; back to pending for a retry; failed once out of tries. */
        t.string('status', 20).notNullable().defaultTo('pending');
        t.integer('attempts').notNullable().defaultTo(0);
        t.integer('max_attempts').notNullable();
        t.timestamp('next_attempt_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        /** While sending: the node holding it and until when; an expired hold is retried. */
        t.string('locked_by', 200).nullable();
        t.timestamp('locked_until', { useTz: true }).nullable();
        t.text('last_error').nullable();
        t.string('message_id', 400).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('sent_at', { useTz: true }).nullable();
        t.index(['status', 'next_attempt_at']);
        t.index(['created_at']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('mail_outbox');
    },
  },
  {
    // Operators' permissions a release added after the seeded `super-admin` role was written:
    // an upgraded database gets them as a fresh install does (the role keeps whatever else it has).
    name: '20261128100000_super_admin_operator_permissions',
    async up(knex: Knex) {
      for (const role of await knex('admin_roles').where({ name: 'super-admin', is_system: true }).select('id', 'permissions')) {
        const held = (typeof role.permissions === 'string' ? JSON.parse(role.permissions) : role.permissions) as string[];
        const missing = OPERATOR_PERMISSIONS.filter((p) => !held.includes(p));
        if (missing.length) await knex('admin_roles').where({ id: role.id }).update({ permissions: JSON.stringify([...held, ...missing]) });
      }
    },
    async down(knex: Knex) {
      for (const role of await knex('admin_roles').where({ name: 'super-admin', is_system: true }).select('id', 'permissions')) {
        const held = (typeof role.permissions === 'string' ? JSON.parse(role.permissions) : role.permissions) as string[];
        await knex('admin_roles').where({ id: role.id }).update({ permissions: JSON.stringify(held.filter((p) => p !== 'mail:edit')) });
      }
    },
  },
];
