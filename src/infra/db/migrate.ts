/**
 * Schema migrations as a step of their own: what a database lacks (pending) and what it holds that
 * this release does not know (a newer release migrated it), and applying the pending ones under a
 * PostgreSQL advisory lock, one log line per migration. `npm run migrate` (src/migrate.ts) and a
 * node's start (`db.migrate_on_start`) both come through here, so any number of nodes and migrate
 * runs started at once on one database apply each migration once, one after the other.
 *
 * Migrations follow expand, then contract (docs/guides/production.md, "Upgrades and rollbacks"): release N only adds what release
 * N-1 can ignore, and removes only what N-1 no longer used. So a node finding migrations it does
 * not know, with none of its own pending, serves (and says so); one missing its own as well stops.
 */
import type { Knex } from 'knex';
import { Client } from 'pg';
import type { Logger } from '../logger';

export interface Migration {
  /** Timestamped name, e.g. 20261121120000_create_feature_flags. */
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** Migrations tracked in one knex table: two stores can share one database with a table each. */
export interface MigrationSet {
  /** Name of the knex migrations table. */
  table: string;
  migrations: readonly Migration[];
  /**
   * A ledger this set's migrations were recorded in before the set had its own (src/infra/db/ledgers.ts):
   * entries found there count as applied, and a migrate moves them into `table`.
   */
  movedFrom?: string;
}

/** The advisory lock key every migration run and job-queue set-up takes (any constant bigint, named once). */
export const MIGRATION_LOCK_KEY = 4_711_202_611n;

export interface MigrationStatus {
  /** This release's migrations the database lacks, by name, in the order they run. */
  pending: string[];
  /** Migrations the database records that this release does not have: a newer release applied them. */
  unknown: string[];
  /** Applied migrations still recorded in the ledger a set moved from (`MigrationSet.movedFrom`): moved at the next apply. */
  misplaced: string[];
}

/** Pending migrations while `db.migrate_on_start` is false: the node does not serve. */
export class PendingMigrationsError extends Error {
  constructor(readonly pending: readonly string[]) {
    super(`the database lacks ${pending.length} migration(s) of this release: ${pending.join(', ')}; run \`npm run migrate\` (or set db.migrate_on_start: true)`);
    this.name = 'PendingMigrationsError';
  }
}

/** The database was migrated by a newer release and also lacks migrations of this one: nothing safe to do. */
export class NewerDatabaseError extends Error {
  constructor(readonly unknown: readonly string[], readonly pending: readonly string[]) {
    super(`this database was migrated by a newer release (migrations this release does not have: ${unknown.join(', ')}) and lacks this release's ${pending.join(', ')}; run the newer release`);
    this.name = 'NewerDatabaseError';
  }
}

async function completedNames(knex: Knex, table: string): Promise<string[]> {
  if (!(await knex.schema.hasTable(table))) return [];
  const rows: { name: string }[] = await knex(table).select('name');
  return rows.map((row) => row.name);
}

/** Pending and unknown migrations over every set, read without writing anything. */
export async function migrationStatus(knex: Knex, sets: readonly MigrationSet[]): Promise<MigrationStatus> {
  const pending: string[] = [];
  const unknown: string[] = [];
  const misplaced: string[] = [];
  // A name one set's ledger holds that another set has (recorded before that set had its own ledger) is not a newer release's.
  const everyKnown = new Set(sets.flatMap((set) => set.migrations.map((m) => m.name)));
  for (const set of sets) {
    const known = new Set(set.migrations.map((m) => m.name));
    const done = new Set(await completedNames(knex, set.table));
    if (set.movedFrom) {
      for (const name of await completedNames(knex, set.movedFrom)) {
        if (known.has(name) && !done.has(name)) {
          done.add(name);
          misplaced.push(name);
        }
      }
    }
    pending.push(...[...set.migrations].map((m) => m.name).filter((name) => !done.has(name)).sort());
    unknown.push(...[...done].filter((name) => !everyKnown.has(name)).sort());
  }
  return { pending, unknown, misplaced: misplaced.sort() };
}

/**
 * Moves the entries of a set's migrations from the ledger it moved from into its own, in one
 * transaction, creating the ledger as knex does. Under the migration lock.
 */
async function adoptMovedEntries(knex: Knex, set: MigrationSet, log: Logger | undefined): Promise<void> {
  const from = set.movedFrom;
  if (!from || !(await knex.schema.hasTable(from))) return;
  const names = set.migrations.map((m) => m.name);
  const rows: { name: string; batch: number; migration_time: Date }[] = await knex(from).whereIn('name', names).select('name', 'batch', 'migration_time').orderBy('id');
  if (rows.length === 0) return;
  await knex.transaction(async (trx) => {
    if (!(await trx.schema.hasTable(set.table))) {
      await trx.schema.createTable(set.table, (t) => {
        t.increments('id').primary();
        t.string('name');
        t.integer('batch');
        t.timestamp('migration_time');
      });
    }
    const there = new Set(((await trx(set.table).select('name')) as { name: string }[]).map((row) => row.name));
    const moving = rows.filter((row) => !there.has(row.name));
    if (moving.length > 0) await trx(set.table).insert(moving);
    await trx(from).whereIn('name', rows.map((row) => row.name)).del();
  });
  log?.info({ from, to: set.table, migrations: rows.map((row) => row.name) }, `moved ${rows.length} migration record(s) to their own ledger`);
}

/**
 * Runs `fn` while holding the migration advisory lock on the database of `url` (a session lock on
 * a connection of its own, so the work itself may use any pooled connection); null `url`
 * (embedded PGlite: one process per data directory) runs it at once.
 */
export async function withMigrationLock<T>(url: string | null, fn: () => Promise<T>, log?: Logger): Promise<T> {
  if (!url) return fn();
  const client = new Client({ connectionString: url, application_name: 'creator-backend migrate' });
  // An error on the idle lock connection (the server going away) must not become an uncaught 'error' event.
  client.on('error', (error) => log?.warn({ err: error }, 'migration lock connection failed'));
  await client.connect();
  try {
    const started = Date.now();
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    const waited = Date.now() - started;
    if (waited > 100) log?.info({ waited_ms: waited }, 'migration lock taken after another node released it');
    try {
      return await fn();
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]).catch(() => undefined);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

class LoggedMigrationSource implements Knex.MigrationSource<Migration> {
  constructor(
    private readonly set: MigrationSet,
    private readonly log: Logger | undefined,
  ) {}
  getMigrations(): Promise<Migration[]> {
    return Promise.resolve([...this.set.migrations].sort((a, b) => a.name.localeCompare(b.name)));
  }
  getMigrationName(migration: Migration): string {
    return migration.name;
  }
  getMigration(migration: Migration): Promise<Knex.Migration> {
    const { log, set } = this;
    return Promise.resolve({
      async up(k: Knex) {
        const started = performance.now();
        await migration.up(k);
        log?.info({ migration: migration.name, table: set.table, ms: Math.round(performance.now() - started) }, 'migration applied');
      },
      async down(k: Knex) {
        await migration.down(k);
        log?.info({ migration: migration.name, table: set.table }, 'migration rolled back');
      },
    });
  }
}

export type MigrateMode = 'apply' | 'check';

/**
 * Brings the database to this release's schema (`apply`, under the lock) or checks that it is
 * there (`check`: PendingMigrationsError naming what is missing). A database migrated by a newer
 * release is served when nothing of this release is missing (a warning says so), refused otherwise.
 * Resolves with the names applied.
 */
export async function migrate(knex: Knex, sets: readonly MigrationSet[], options: { url: string | null; mode: MigrateMode; log?: Logger }): Promise<string[]> {
  const { log } = options;
  const before = await migrationStatus(knex, sets);
  if (before.pending.length === 0 && (before.misplaced.length === 0 || options.mode === 'check')) {
    if (before.unknown.length > 0) log?.warn({ unknown: before.unknown }, 'this database was migrated by a newer release; serving it, as its migrations expand the schema only');
    return [];
  }
  if (options.mode === 'check') {
    if (before.unknown.length > 0) throw new NewerDatabaseError(before.unknown, before.pending);
    throw new PendingMigrationsError(before.pending);
  }
  return withMigrationLock(
    options.url,
    async () => {
      // Records a set keeps in its own ledger now (ledgers.ts), before knex reads that ledger.
      for (const set of sets) await adoptMovedEntries(knex, set, log);
      // Another node may have applied them while this one waited for the lock.
      const status = await migrationStatus(knex, sets);
      if (status.unknown.length > 0 && status.pending.length > 0) throw new NewerDatabaseError(status.unknown, status.pending);
      if (status.pending.length === 0) return [];
      log?.info({ pending: status.pending }, `applying ${status.pending.length} migration(s)`);
      const applied: string[] = [];
      for (const set of sets) {
        const [, names] = (await knex.migrate.latest({ migrationSource: new LoggedMigrationSource(set, log), tableName: set.table, disableMigrationsListValidation: true })) as [number, string[]];
        applied.push(...names);
      }
      return applied;
    },
    log,
  );
}

/** Rolls back the last batch of each set, in reverse order, under the same lock (`npm run migrate -- --rollback`). */
export async function rollbackLast(knex: Knex, sets: readonly MigrationSet[], options: { url: string | null; log?: Logger }): Promise<string[]> {
  return withMigrationLock(
    options.url,
    async () => {
      const undone: string[] = [];
      for (const set of [...sets].reverse()) {
        const [, names] = (await knex.migrate.rollback({ migrationSource: new LoggedMigrationSource(set, options.log), tableName: set.table })) as [number, string[]];
        undone.push(...names);
      }
      return undone;
    },
    options.log,
  );
}
