/**
 * The extensions module's tables: extensions (owned by a developer profile or a team of the
 * developer module, referenced by id only), their versions with the uploaded bundle, screenshots,
 * testers, purchases (written by the payment-connect receiver through the module API), account
 * installs, and limit requests with their event timeline.
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';
import { bundleHash } from './bundle-content';

export const extensionMigrations: readonly Migration[] = [
  {
    name: '20261123105117_extensions_create_tables',
    async up(knex: Knex) {
      await knex.schema.createTable('extensions', (t) => {
        t.uuid('id').primary();
        t.string('short_id', 10).notNullable().unique();
        t.string('slug', 50).notNullable().unique();
        t.string('name', 100).notNullable();
        t.text('description').nullable();
        t.string('category', 50).nullable();
        t.string('icon_key', 500).nullable();
        /** Exactly one of developer_id (a developer profile) and team_id (a developer team) is set. */
        t.uuid('developer_id').nullable().index();
        t.uuid('team_id').nullable().index();
        t.uuid('created_by').nullable().references('users.id').onDelete('SET NULL');
        t.string('pricing_type', 20).notNullable().defaultTo('free');
        t.integer('pricing_amount').nullable();
        t.string('pricing_currency', 3).nullable();
        t.string('status', 20).notNullable().defaultTo('draft');
        t.integer('rating_count').notNullable().defaultTo(0);
        t.integer('rating_sum').notNullable().defaultTo(0);
        t.timestamp('published_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.raw('alter table extensions add constraint extensions_one_owner check ((developer_id is null) <> (team_id is null))');
      await knex.schema.createTable('extension_versions', (t) => {
        t.uuid('id').primary();
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE');
        t.string('version', 50).notNullable();
        t.string('status', 20).notNullable().defaultTo('draft');
        t.text('changelog').nullable();
        t.jsonb('manifest').nullable();
        t.text('handler_code').nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('uploaded_at', { useTz: true }).nullable();
        t.timestamp('published_at', { useTz: true }).nullable();
        t.unique(['extension_id', 'version']);
      });
      await knex.schema.createTable('extension_screenshots', (t) => {
        t.uuid('id').primary();
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE').index();
        t.string('key', 500).nullable();
        t.string('url', 2000).nullable();
        t.string('caption', 500).nullable();
        t.integer('position').notNullable().defaultTo(0);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.schema.createTable('extension_testers', (t) => {
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('added_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['extension_id', 'user_id']);
      });
      await knex.schema.createTable('extension_purchases', (t) => {
        t.uuid('id').primary();
        t.string('external_id', 255).notNullable().unique();
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE');
        t.uuid('account_id').nullable().references('accounts.id').onDelete('SET NULL');
        t.uuid('buyer_user_id').nullable().references('users.id').onDelete('SET NULL');
        t.bigInteger('amount_cents').notNullable();
        t.string('currency', 10).notNullable();
        t.string('status', 20).notNullable().defaultTo('completed');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('refunded_at', { useTz: true }).nullable();
        t.index(['extension_id', 'created_at']);
      });
      await knex.schema.createTable('extension_installs', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE').index();
        t.uuid('version_id').nullable().references('extension_versions.id').onDelete('SET NULL');
        t.boolean('enabled').notNullable().defaultTo(true);
        t.jsonb('config').notNullable().defaultTo('{}');
        t.uuid('installed_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.unique(['account_id', 'extension_id']);
      });
      await knex.schema.createTable('extension_limit_requests', (t) => {
        t.uuid('id').primary();
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE').index();
        t.uuid('developer_id').nullable().index();
        t.uuid('team_id').nullable();
        t.uuid('requested_by').nullable().references('users.id').onDelete('SET NULL');
        t.jsonb('requested_limits').notNullable();
        t.text('reason').nullable();
        t.string('status', 20).notNullable().defaultTo('open');
        t.text('review_notes').nullable();
        t.uuid('reviewed_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('reviewed_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['status', 'created_at']);
      });
      await knex.schema.createTable('extension_limit_request_events', (t) => {
        t.uuid('id').primary();
        t.uuid('request_id').notNullable().references('extension_limit_requests.id').onDelete('CASCADE').index();
        /** Position in the request's timeline (events are written under the request's row lock). */
        t.integer('seq').notNullable();
        t.string('event_type', 30).notNullable();
        t.uuid('actor_id').nullable();
        t.jsonb('details').notNullable().defaultTo('{}');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
    },
    async down(knex: Knex) {
      for (const table of ['extension_limit_request_events', 'extension_limit_requests', 'extension_installs', 'extension_purchases', 'extension_testers', 'extension_screenshots', 'extension_versions', 'extensions']) {
        await knex.schema.dropTableIfExists(table);
      }
    },
  },
  {
    name: '20261125220000_extensions_review_tokens_storage_logs_access',
    async up(knex: Knex) {
      /** Version review: `pending_review` -> `published` or `rejected` with notes. */
      await knex.schema.alterTable('extension_versions', (t) => {
        t.text('review_notes').nullable();
        t.uuid('reviewed_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('reviewed_at', { useTz: true }).nullable();
        t.timestamp('submitted_at', { useTz: true }).nullable();
        t.uuid('submitted_by').nullable().references('users.id').onDelete('SET NULL');
      });
      /** What the install granted, its current `lm_ext_` token (a credentials row id) and why it is disabled. */
      await knex.schema.alterTable('extension_installs', (t) => {
        t.jsonb('permissions').notNullable().defaultTo('[]');
        t.uuid('token_id').nullable();
        t.string('disabled_reason', 30).nullable();
        t.string('purchase_external_id', 255).nullable();
      });
      await knex.schema.createTable('extension_install_storage', (t) => {
        t.uuid('install_id').notNullable().references('extension_installs.id').onDelete('CASCADE');
        t.string('key', 200).notNullable();
        t.jsonb('value').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['install_id', 'key']);
      });
      await knex.schema.createTable('extension_logs', (t) => {
        t.uuid('id').primary();
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE');
        t.uuid('install_id').nullable().references('extension_installs.id').onDelete('SET NULL');
        t.uuid('account_id').nullable().references('accounts.id').onDelete('CASCADE');
        t.string('level', 10).notNullable();
        t.text('message').notNullable();
        t.jsonb('data').nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['extension_id', 'created_at']);
        t.index(['account_id', 'created_at']);
      });
      /** Users granted access to an extension that is not published (besides testers and developers). */
      await knex.schema.createTable('extension_access_grants', (t) => {
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.uuid('granted_by').nullable().references('users.id').onDelete('SET NULL');
        t.uuid('invite_id').nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['extension_id', 'user_id']);
      });
      /** Access invites: only the SHA-256 of the code is stored; the code is shown once. */
      await knex.schema.createTable('extension_access_invites', (t) => {
        t.uuid('id').primary();
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE').index();
        t.specificType('code_hash', 'char(64)').notNullable().unique();
        t.integer('max_uses').nullable();
        t.integer('uses').notNullable().defaultTo(0);
        t.uuid('created_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('expires_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
    },
    async down(knex: Knex) {
      for (const table of ['extension_access_invites', 'extension_access_grants', 'extension_logs', 'extension_install_storage']) await knex.schema.dropTableIfExists(table);
      await knex.schema.alterTable('extension_installs', (t) => t.dropColumns('permissions', 'token_id', 'disabled_reason', 'purchase_external_id'));
      await knex.schema.alterTable('extension_versions', (t) => t.dropColumns('review_notes', 'reviewed_by', 'reviewed_at', 'submitted_at', 'submitted_by'));
    },
  },
  {
    /**
     * The account-scoped secret store of installs: values sealed at rest by src/auth/secrets.ts
     * (listed in src/auth/sealed.ts's SEALED_COLUMNS, so the start-up check and the reseal cover
     * them); one row per install and name, dropped with the install.
     */
    name: '20261128130000_extension_install_secrets',
    async up(knex: Knex) {
      await knex.schema.createTable('extension_install_secrets', (t) => {
        t.uuid('install_id').notNullable().references('extension_installs.id').onDelete('CASCADE');
        t.string('name', 100).notNullable();
        t.text('value_sealed').notNullable();
        t.uuid('created_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['install_id', 'name']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('extension_install_secrets');
    },
  },
  {
    /**
     * Bundle serving: each uploaded version keeps the SHA-256 of its bundle's content (bundles.ts
     * says how the content is written), the name `GET /v1/extension-bundles/{sha256}` finds it by.
     * Versions uploaded before are hashed here, in one pass.
     */
    name: '20261128170000_extension_bundle_hashes',
    async up(knex: Knex) {
      await knex.schema.alterTable('extension_versions', (t) => {
        t.specificType('bundle_sha256', 'char(64)').nullable().index();
      });
      const uploaded = (await knex('extension_versions').whereNotNull('handler_code').select('id', 'manifest', 'handler_code')) as { id: string; manifest: unknown; handler_code: string }[];
      for (const row of uploaded) {
        await knex('extension_versions').where({ id: row.id }).update({ bundle_sha256: bundleHash(row.manifest, row.handler_code) });
      }
    },
    async down(knex: Knex) {
      await knex.schema.alterTable('extension_versions', (t) => t.dropColumn('bundle_sha256'));
    },
  },
  {
    /**
     * Ratings: one per user and extension, 1 to 5 (ratings.ts). Profiles read the average and count
     * from these rows (repo.ts), so a deleted user's ratings, which go with them, leave nothing
     * stale; the extensions table's rating_sum and rating_count counters, never written, go.
     */
    name: '20261128171000_extension_ratings',
    async up(knex: Knex) {
      await knex.schema.createTable('extension_ratings', (t) => {
        t.uuid('extension_id').notNullable().references('extensions.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        /** The account whose install made the rating possible (kept when it is dissolved). */
        t.uuid('account_id').nullable().references('accounts.id').onDelete('SET NULL');
        t.smallint('rating').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['extension_id', 'user_id']);
        t.index(['user_id']);
      });
      await knex.raw('alter table extension_ratings add constraint extension_ratings_range check (rating between 1 and 5)');
      await knex.schema.alterTable('extensions', (t) => t.dropColumns('rating_count', 'rating_sum'));
    },
    async down(knex: Knex) {
      await knex.schema.alterTable('extensions', (t) => {
        t.integer('rating_count').notNullable().defaultTo(0);
        t.integer('rating_sum').notNullable().defaultTo(0);
      });
      await knex.schema.dropTableIfExists('extension_ratings');
    },
  },
];
