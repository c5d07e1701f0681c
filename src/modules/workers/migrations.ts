/** Ingest leases: the live nodes and which node holds which unit of owned work (a platform channel). */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const workerMigrations: readonly Migration[] = [
  {
    name: '20261125150000_create_worker_leases',
    async up(knex: Knex) {
      await knex.schema.createTable('worker_nodes', (t) => {
        t.string('node_id', 200).primary();
        t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.schema.createTable('worker_leases', (t) => {
        t.string('key', 400).primary();
        t.string('kind', 50).notNullable();
        t.string('node_id', 200).notNullable();
        /** Raised on every change of holder: a holder's writes can be fenced by it. */
        t.bigInteger('fence').notNullable();
        t.timestamp('acquired_at', { useTz: true }).notNullable();
        t.timestamp('expires_at', { useTz: true }).notNullable();
        t.index(['node_id']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('worker_leases');
      await knex.schema.dropTableIfExists('worker_nodes');
    },
  },
  {
    // Every node is listed, not only those running owned work: `passive` nodes (no ingest) are
    // shown but not counted when the ingest is shared out; `version` is the node's release.
    // Expand only: a node of the release before writes neither and reads as active, version null.
    name: '20261128100100_worker_nodes_version_and_passive',
    async up(knex: Knex) {
      await knex.schema.alterTable('worker_nodes', (t) => {
        t.string('version', 50).nullable();
        t.boolean('passive').notNullable().defaultTo(false);
      });
    },
    async down(knex: Knex) {
      await knex.schema.alterTable('worker_nodes', (t) => {
        t.dropColumns('version', 'passive');
      });
    },
  },
];
