/**
 * Users, plans (the rows accounts point at; their limits and admin surface join with the plans
 * module), accounts, account roles, members, invites, and the user and admin role tables the
 * permission registry seeds.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';
import { SUPER_ADMIN_ROLE, defaultUserRoles, superAdminPermissions } from '../../auth/registry';

const timestamps = (t: Knex.CreateTableBuilder, knex: Knex) => {
  t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
};

export const accountMigrations: readonly Migration[] = [
  {
    name: '20261122100000_create_users_and_accounts',
    async up(knex: Knex) {
      await knex.schema.createTable('users', (t) => {
        t.uuid('id').primary();
        t.string('email', 254).nullable().unique();
        t.string('display_name', 100).notNullable();
        t.string('avatar_url', 2000).nullable();
        timestamps(t, knex);
      });
      await knex.schema.createTable('plans', (t) => {
        t.uuid('id').primary();
        t.string('slug', 40).notNullable().unique();
        t.string('name', 100).notNullable();
        t.boolean('is_default').notNullable().defaultTo(false);
        timestamps(t, knex);
      });
      await knex('plans').insert([
        { id: randomUUID(), slug: 'free', name: 'Free', is_default: true },
        { id: randomUUID(), slug: 'pro', name: 'Pro', is_default: false },
      ]);
      await knex.schema.createTable('accounts', (t) => {
        t.uuid('id').primary();
        t.string('name', 100).notNullable();
        t.uuid('owner_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('plan_id').nullable().references('plans.id').onDelete('SET NULL');
        timestamps(t, knex);
        t.index(['owner_id']);
      });
      await knex.schema.createTable('account_roles', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('name', 100).notNullable();
        t.integer('position').notNullable();
        t.boolean('is_system').notNullable().defaultTo(false);
        t.jsonb('permissions').notNullable();
        timestamps(t, knex);
        t.unique(['account_id', 'name']);
      });
      await knex.schema.createTable('account_members', (t) => {
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('role_id').notNullable().references('account_roles.id').onDelete('RESTRICT');
        t.timestamp('joined_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['account_id', 'user_id']);
        t.index(['user_id']);
      });
      await knex.schema.createTable('account_invites', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('role_id').notNullable().references('account_roles.id').onDelete('CASCADE');
        t.uuid('invited_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.unique(['account_id', 'user_id']);
      });
      await knex.schema.createTable('user_roles', (t) => {
        t.uuid('id').primary();
        t.string('name', 100).notNullable().unique();
        t.boolean('is_system').notNullable().defaultTo(false);
        t.boolean('assigned_to_every_user').notNullable().defaultTo(false);
        t.jsonb('permissions').notNullable();
        t.jsonb('admin_permissions').notNullable();
        timestamps(t, knex);
      });
      await knex('user_roles').insert(
        defaultUserRoles.map((r) => ({
          id: randomUUID(),
          name: r.name,
          is_system: true,
          assigned_to_every_user: r.assignedToEveryUser,
          permissions: JSON.stringify(r.permissions),
          admin_permissions: JSON.stringify(r.adminPermissions),
        })),
      );
      await knex.schema.createTable('user_role_assignments', (t) => {
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('role_id').notNullable().references('user_roles.id').onDelete('CASCADE');
        t.timestamp('assigned_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['user_id', 'role_id']);
      });
      await knex.schema.createTable('admin_roles', (t) => {
        t.uuid('id').primary();
        t.string('name', 100).notNullable().unique();
        t.string('description', 1000).nullable();
        t.boolean('is_system').notNullable().defaultTo(false);
        t.jsonb('permissions').notNullable();
        timestamps(t, knex);
      });
      await knex('admin_roles').insert({
        id: randomUUID(),
        name: SUPER_ADMIN_ROLE,
        description: 'Every admin permission',
        is_system: true,
        permissions: JSON.stringify(superAdminPermissions),
      });
      await knex.schema.createTable('admin_role_assignments', (t) => {
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('role_id').notNullable().references('admin_roles.id').onDelete('CASCADE');
        t.timestamp('assigned_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['user_id', 'role_id']);
      });
    },
    async down(knex: Knex) {
      for (const table of [
        'admin_role_assignments',
        'admin_roles',
        'user_role_assignments',
        'user_roles',
        'account_invites',
        'account_members',
        'account_roles',
        'accounts',
        'plans',
        'users',
      ]) {
        await knex.schema.dropTableIfExists(table);
      }
    },
  },
  {
    // After the features module's plan columns (20261123080000): users get their own settings.
    name: '20261123081000_user_settings_and_account_limit',
    async up(knex: Knex) {
      await knex.schema.alterTable('users', (t) => {
        t.boolean('extension_dev_mode').notNullable().defaultTo(false);
        t.boolean('developer_override').notNullable().defaultTo(false);
        t.integer('max_accounts_override').nullable();
      });
    },
    async down(knex: Knex) {
      await knex.schema.alterTable('users', (t) => {
        t.dropColumn('extension_dev_mode');
        t.dropColumn('developer_override');
        t.dropColumn('max_accounts_override');
      });
    },
  },
  {
    // Part 2 "Retention": an account-level chat_retention_days wins over the plan's (null: the plan's applies).
    name: '20261123100000_account_retention_override',
    async up(knex: Knex) {
      await knex.schema.alterTable('accounts', (t) => {
        t.integer('chat_retention_days').nullable();
      });
    },
    async down(knex: Knex) {
      await knex.schema.alterTable('accounts', (t) => {
        t.dropColumn('chat_retention_days');
      });
    },
  },
  {
    // Operators suspend users and accounts (src/modules/operators). The access version moves with a
    // suspension, so the guarded per-request reads (a user's grants, an account's standing) see it at once.
    name: '20261128100000_user_and_account_suspension',
    async up(knex: Knex) {
      for (const table of ['users', 'accounts']) {
        await knex.schema.alterTable(table, (t) => {
          t.timestamp('suspended_at', { useTz: true }).nullable();
          t.string('suspended_reason', 500).nullable();
        });
        await knex.raw(`create trigger ${table}_suspension_access_version after update of suspended_at on ${table} for each statement execute function bump_access_version()`);
      }
    },
    async down(knex: Knex) {
      for (const table of ['users', 'accounts']) {
        await knex.raw(`drop trigger if exists ${table}_suspension_access_version on ${table}`);
        await knex.schema.alterTable(table, (t) => {
          t.dropColumn('suspended_at');
          t.dropColumn('suspended_reason');
        });
      }
    },
  },
  {
    // Invites by e-mail: an address no user has is invited with a token mailed to it (its hash here).
    name: '20261128100100_account_invites_by_email',
    async up(knex: Knex) {
      await knex.raw('alter table account_invites alter column user_id drop not null');
      await knex.schema.alterTable('account_invites', (t) => {
        t.string('email', 254).nullable();
        t.specificType('token_hash', 'char(64)').nullable().unique();
        t.timestamp('expires_at', { useTz: true }).nullable();
        t.unique(['account_id', 'email']);
      });
    },
    async down(knex: Knex) {
      await knex('account_invites').whereNull('user_id').delete();
      await knex.schema.alterTable('account_invites', (t) => {
        t.dropUnique(['account_id', 'email']);
        t.dropColumn('email');
        t.dropColumn('token_hash');
        t.dropColumn('expires_at');
      });
      await knex.raw('alter table account_invites alter column user_id set not null');
    },
  },
];
