/**
 * Uniquely named throwaway databases on a PostgreSQL server, for test runs and benchmarks that
 * must not touch the database their URL names. drop() removes the database and its connections.
 *
 * Given migrations, a scratch database is copied from a migrated template (`tmpl_<digest>`, see
 * migrationsDigest) instead of starting empty: PostgreSQL copies a template in a fraction of the
 * time every migration takes, and the app's own migrate-at-open then finds nothing to do. The
 * template is built once per server and schema, under a temporary name and renamed into place,
 * so concurrent builders never expose a half-migrated one (the one that loses the rename drops its
 * copy). Templates of earlier schemas stay on the server; they are small and no test reads them.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrationsDigest, openDatabase, type MigrationSet } from './database';

export interface ScratchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

interface PgError {
  code?: string;
}

/** SQLSTATE 55006: a database that must have no sessions still has one (a closed pool's backends exit a moment later). */
const IN_USE = '55006';
/** SQLSTATE 42P04: the database name is taken. */
const DUPLICATE_DATABASE = '42P04';

/** Runs one statement on its own connection to the server; answers its rows. */
async function onServer(url: string, sql: string, params: unknown[] = []): Promise<unknown[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Runs `sql`, retrying for up to 10 s while a database it names still has sessions closing. */
async function whenUnused(url: string, sql: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await onServer(url, sql);
      return;
    } catch (error) {
      if ((error as PgError).code !== IN_USE || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Template builds in flight in this process, by template name. */
const building = new Map<string, Promise<string>>();

/** The name of a database on the server holding exactly `sets` migrated and nothing else. */
function migratedTemplate(serverUrl: string, sets: readonly MigrationSet[]): Promise<string> {
  const name = `tmpl_${migrationsDigest(sets)}`;
  let pending = building.get(name);
  if (!pending) {
    pending = (async () => {
      if ((await onServer(serverUrl, 'select 1 from pg_database where datname = $1', [name])).length > 0) return name;
      const scratch = await createScratchDatabase(serverUrl, `${name}_b`);
      try {
        const db = await openDatabase({ url: scratch.url, dataDir: '', migrationSets: sets });
        await db.close();
        await whenUnused(serverUrl, `ALTER DATABASE "${scratch.name}" RENAME TO "${name}"`);
      } catch (error) {
        await scratch.drop();
        // Another process renamed its build into place first: use that one.
        if ((error as PgError).code !== DUPLICATE_DATABASE) throw error;
      }
      return name;
    })();
    building.set(name, pending);
    pending.catch(() => building.delete(name));
  }
  return pending;
}

/**
 * A new database on the server of `serverUrl`, named `<prefix>_<pid>_<random>`: empty, or with
 * `migrations` already applied when they are given.
 */
export async function createScratchDatabase(serverUrl: string, prefix = 't', migrations?: readonly MigrationSet[]): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(6).toString('hex')}`;
  const template = migrations ? await migratedTemplate(serverUrl, migrations) : null;
  await whenUnused(serverUrl, template ? `CREATE DATABASE "${name}" TEMPLATE "${template}"` : `CREATE DATABASE "${name}"`);
  return {
    name,
    url: databaseUrl(serverUrl, name),
    drop: async () => {
      await onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}
