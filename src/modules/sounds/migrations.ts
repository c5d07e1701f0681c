/** Sounds (rows; their audio lives in the blob store), per-extension limit overrides, and the database blob backend's chunks. */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';
import { blobMigrations } from '../../infra/blobs';

export const soundMigrations: readonly Migration[] = [
  ...blobMigrations,
  {
    name: '20261123102100_sounds_create_sounds',
    async up(knex: Knex) {
      await knex.schema.createTable('sounds', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('name', 100).notNullable();
        t.string('filename', 255).notNullable();
        t.string('content_type', 40).notNullable();
        t.bigInteger('size_bytes').notNullable();
        t.integer('duration_ms').notNullable();
        t.jsonb('waveform').nullable();
        t.string('blob_key', 128).notNullable().unique();
        // The extension that uploaded it (its own limits apply); the extensions module owns extensions.
        t.uuid('source_extension_id').nullable();
        t.string('source_extension_name', 200).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['account_id', 'created_at']);
        t.index(['account_id', 'source_extension_id']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('sounds');
    },
  },
  {
    name: '20261123102200_sounds_extension_limits',
    async up(knex: Knex) {
      await knex.schema.createTable('sound_extension_limits', (t) => {
        t.uuid('extension_id').primary();
        t.integer('max_sounds').nullable();
        t.bigInteger('max_sound_file_size').nullable();
        t.bigInteger('max_sound_storage_bytes').nullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('sound_extension_limits');
    },
  },
];
