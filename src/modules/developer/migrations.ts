/**
 * Developer applications, profiles, verifications, teams (roles, members, invites) and the owner
 * rows of developer keys (the keys themselves are rows of src/auth's `credentials` table).
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

const TABLES = [
  'developer_api_keys',
  'developer_team_invites',
  'developer_team_members',
  'developer_team_roles',
  'developer_teams',
  'developer_verifications',
  'developer_profiles',
  'developer_applications',
] as const;

export const developerMigrations: readonly Migration[] = [
  {
    name: '20261123101410_developer_portal',
    async up(knex: Knex) {
      const timestamps = (t: Knex.CreateTableBuilder) => {
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      };
      const review = (t: Knex.CreateTableBuilder) => {
        t.text('review_notes').nullable();
        t.uuid('reviewed_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('reviewed_at', { useTz: true }).nullable();
      };
      await knex.schema.createTable('developer_applications', (t) => {
        t.uuid('id').primary();
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('application_type', 10).notNullable();
        t.string('display_name', 100).notNullable();
        t.string('slug', 50).notNullable();
        t.text('description').notNullable();
        t.text('motivation').notNullable();
        t.text('what_to_build').notNullable();
        t.string('github_url', 500).nullable();
        t.string('website_url', 500).nullable();
        t.text('experience').nullable();
        t.string('avatar_key', 500).nullable();
        t.string('status', 20).notNullable().defaultTo('pending');
        review(t);
        timestamps(t);
        t.index(['user_id', 'created_at']);
        t.index(['status', 'created_at']);
      });
      // One pending application per user, whatever races the service check loses.
      await knex.raw("create unique index developer_applications_one_pending on developer_applications (user_id) where status = 'pending'");
      await knex.schema.createTable('developer_profiles', (t) => {
        t.uuid('id').primary();
        t.uuid('user_id').notNullable().unique().references('users.id').onDelete('CASCADE');
        t.string('display_name', 100).notNullable();
        t.string('slug', 50).notNullable().unique();
        t.text('description').nullable();
        t.string('github_url', 500).nullable();
        t.string('website_url', 500).nullable();
        t.string('avatar_key', 500).nullable();
        timestamps(t);
      });
      await knex.schema.createTable('developer_verifications', (t) => {
        t.uuid('id').primary();
        t.uuid('developer_id').notNullable().unique().references('developer_profiles.id').onDelete('CASCADE');
        t.string('legal_name', 200).notNullable();
        t.string('company_name', 200).nullable();
        t.string('address_line1', 200).notNullable();
        t.string('address_line2', 200).nullable();
        t.string('postal_code', 20).notNullable();
        t.string('city', 100).notNullable();
        t.specificType('country', 'char(2)').notNullable();
        t.string('tax_id', 100).nullable();
        t.string('trade_register_id', 100).nullable();
        t.string('document_key', 500).nullable();
        t.string('status', 20).notNullable().defaultTo('pending');
        review(t);
        timestamps(t);
        t.index(['status', 'created_at']);
      });
      await knex.schema.createTable('developer_teams', (t) => {
        t.uuid('id').primary();
        t.string('name', 100).notNullable();
        t.string('slug', 50).notNullable().unique();
        t.text('description').nullable();
        t.string('github_url', 500).nullable();
        t.string('website_url', 500).nullable();
        t.string('avatar_key', 500).nullable();
        t.uuid('owner_user_id').notNullable().references('users.id').onDelete('CASCADE');
        timestamps(t);
      });
      await knex.schema.createTable('developer_team_roles', (t) => {
        t.uuid('id').primary();
        t.uuid('team_id').notNullable().references('developer_teams.id').onDelete('CASCADE');
        t.string('name', 50).notNullable();
        t.integer('position').notNullable().defaultTo(0);
        t.boolean('is_system').notNullable().defaultTo(false);
        t.jsonb('permissions').notNullable().defaultTo('[]');
        timestamps(t);
        t.unique(['team_id', 'name']);
      });
      await knex.schema.createTable('developer_team_members', (t) => {
        t.uuid('team_id').notNullable().references('developer_teams.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('role_id').notNullable().references('developer_team_roles.id');
        t.timestamp('joined_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['team_id', 'user_id']);
        t.index(['user_id']);
        t.index(['role_id']);
      });
      await knex.schema.createTable('developer_team_invites', (t) => {
        t.uuid('id').primary();
        t.uuid('team_id').notNullable().references('developer_teams.id').onDelete('CASCADE');
        /** SHA-256 of the invite code; the code itself is shown once. */
        t.specificType('code_hash', 'char(64)').notNullable().unique();
        t.string('code_prefix', 20).notNullable();
        t.uuid('role_id').notNullable().references('developer_team_roles.id').onDelete('CASCADE');
        t.uuid('invited_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('expires_at', { useTz: true }).notNullable();
        t.uuid('accepted_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('accepted_at', { useTz: true }).nullable();
        t.timestamp('revoked_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['team_id', 'created_at']);
      });
      await knex.schema.createTable('developer_api_keys', (t) => {
        /** The credentials row of the key (kind developer_api_key). */
        t.uuid('id').primary().references('credentials.id').onDelete('CASCADE');
        t.uuid('developer_id').nullable().references('developer_profiles.id').onDelete('CASCADE');
        t.uuid('team_id').nullable().references('developer_teams.id').onDelete('CASCADE');
        t.index(['developer_id']);
        t.index(['team_id']);
      });
      // Exactly one of developer and team owns a key.
      await knex.raw('alter table developer_api_keys add constraint developer_api_keys_one_owner check ((developer_id is null) <> (team_id is null))');
    },
    async down(knex: Knex) {
      for (const table of TABLES) await knex.schema.dropTableIfExists(table);
    },
  },
];
