/**
 * Relational and time-series stores through knex: PostgreSQL (pg) when a URL is given, else
 * embedded PGlite under SVC_DATA_DIR with the same SQL and migrations. Migrations run (or are
 * checked) at open through ./migrate.ts.
 * Owns connections and pools only; tables belong to the modules that declare migrations.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import knexFactory, { type Knex } from 'knex';
import type { Logger } from '../logger';
import { trackWrites } from './hot-read';
import { migrate, type MigrateMode, type MigrationSet } from './migrate';
import { PreparingPgLiteClient } from './pglite-client';
import { statementCounter } from './statement';
import { fairTimeout } from '../loop-delay';

export type { Migration, MigrationSet } from './migrate';

export interface Database {
  readonly knex: Knex;
  readonly kind: 'postgresql' | 'pglite';
  /** Runs `select 1`; resolves with the round trip in milliseconds or rejects. */
  ping(timeoutMs?: number): Promise<number>;
  pool(): { connections: number; idle: number };
  /** Statements this process has sent on the handle since it was opened (statement.ts, `statementCounter`). */
  statements(): number;
  close(): Promise<void>;
}

/**
 * knex's own warnings, but not its line per failed connection (`Connection Error: ...`, `Acquire
 * connection error: ...` with a stack), hundreds a second during a database outage: the failures
 * reach their callers (503 SERVICE_UNAVAILABLE) and the outage is logged once at each end by the
 * health probes (src/modules/system/service.ts).
 */
function knexWarning(message: unknown): void {
  if (/^(Connection Error|Acquire connection error):/.test(String(message))) return;
  console.warn(message);
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface OpenDatabaseOptions {
  /** postgres:// URL, or null for embedded PGlite. */
  url: string | null;
  /** PGlite data directory (or `memory://`) when url is null. */
  dataDir: string;
  /** Run in order at open; more than one when stores share this database. */
  migrationSets: readonly MigrationSet[];
  /**
   * `apply` (default): pending migrations run at open, under the migration lock (./migrate.ts);
   * `check`: open refuses a database that lacks any (PendingMigrationsError names them); `none`:
   * neither (the migrate command's own handle).
   */
  migrate?: MigrateMode | 'none';
  /** Most connections in the PostgreSQL pool (`db.pool_max`; default 10). */
  poolMax?: number;
  /** Where each applied migration is logged. */
  log?: Logger;
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  let knex: Knex;
  let kind: Database['kind'];
  /** A fresh `memory://` database whose migrated state becomes the template (see memoryTemplate). */
  let saveTemplate: ((knex: Knex) => Promise<void>) | null = null;
  if (options.url) {
    kind = 'postgresql';
    knex = knexFactory({
      client: 'pg',
      connection: options.url,
      pool: { min: 0, max: options.poolMax ?? 10, idleTimeoutMillis: 30_000 },
      acquireConnectionTimeout: 10_000,
      log: { warn: knexWarning },
    });
  } else {
    kind = 'pglite';
    const dir = options.dataDir.startsWith('memory://') ? options.dataDir : path.resolve(options.dataDir);
    if (!dir.startsWith('memory://')) mkdirSync(dir, { recursive: true });
    const inMemory = dir.startsWith('memory://');
    const template = inMemory ? memoryTemplate(options) : null;
    const fromTemplate = template?.exists() ?? false;
    const pglite = new PGlite({
      dataDir: dir,
      ...(await pgliteArtifacts()),
      ...(template && fromTemplate ? { loadDataDir: template.load() } : {}),
      // Its pages live in memory already: PostgreSQL's default 128 MB buffer pool would cost each
      // start ~0.7 s of initialising and hold nothing a test or scratch database needs.
      ...(inMemory ? { startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'] } : {}),
    });
    if (template && !fromTemplate) saveTemplate = template.save;
    knex = knexFactory({ client: PreparingPgLiteClient, dialect: 'postgres', connection: { pglite } as never });
    trackWrites(knex);
  }
  try {
    if (options.migrate !== 'none') await migrate(knex, options.migrationSets, { url: options.url, mode: options.migrate ?? 'apply', log: options.log });
    await saveTemplate?.(knex);
  } catch (error) {
    await knex.destroy().catch(() => undefined);
    throw error;
  }
  return wrap(knex, kind);
}

type WasmModule = NonNullable<PGliteOptions['pgliteWasmModule']>;
/** Node's global; the project's `lib` (ES2022, no DOM) does not declare it. */
declare const WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> };

let artifacts: Promise<{ pgliteWasmModule: WasmModule; initdbWasmModule: WasmModule; fsBundle: Blob }> | null = null;

/**
 * PGlite's compiled WebAssembly and its file bundle, read and compiled once per process: every
 * PGlite otherwise compiles its own (~0.3 s a start), and tests start many.
 */
function pgliteArtifacts() {
  artifacts ??= (async () => {
    const dist = path.dirname(require.resolve('@electric-sql/pglite'));
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all(['pglite.wasm', 'initdb.wasm'].map((file) => WebAssembly.compile(readFileSync(path.join(dist, file)))));
    return { pgliteWasmModule: pgliteWasmModule!, initdbWasmModule: initdbWasmModule!, fsBundle: new Blob([readFileSync(path.join(dist, 'pglite.data'))]) };
  })();
  return artifacts;
}

/**
 * Migrated, empty `memory://` databases to start from, under PGLITE_TEMPLATE_DIR when it is set
 * (the test setup sets it): every migration on a fresh PGlite costs an embedded start about 4 s,
 * loading their result half of that. A template is named by its migrations (migrationsDigest), so
 * adding or editing one makes a new template; it is written once, atomically, right after the
 * migrations of a fresh database ran, before anything else touched it.
 */
function memoryTemplate(options: OpenDatabaseOptions): { exists(): boolean; load(): Blob; save(knex: Knex): Promise<void> } | null {
  const dir = process.env.PGLITE_TEMPLATE_DIR;
  if (!dir) return null;
  const file = path.join(dir, `pglite-${migrationsDigest(options.migrationSets)}.tar.gz`);
  return {
    exists: () => existsSync(file),
    load: () => new Blob([readFileSync(file)], { type: 'application/x-gzip' }),
    async save(knex) {
      const pglite = (knex.client as { pglite?: PGlite }).pglite;
      if (!pglite) return;
      const dump = await pglite.dumpDataDir('gzip');
      mkdirSync(dir, { recursive: true });
      const partial = `${file}.${randomBytes(6).toString('hex')}`;
      writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
      renameSync(partial, file);
    },
  };
}

/**
 * Names a migrated state: each set's table, and each migration's name and `up` source, in order.
 * Equal digests mean equal schemas, so a template database can stand in for running them.
 */
export function migrationsDigest(sets: readonly MigrationSet[]): string {
  const parts = sets.flatMap((set) => [set.table, ...set.migrations.map((m) => `${m.name}\n${m.up.toString()}`)]);
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 24);
}

/** A second handle on an open database (the time-series store when it shares the relational one): closing it leaves the database open. */
export function shareDatabase(db: Database): Database {
  return { ...wrap(db.knex, db.kind), close: async () => undefined };
}

function wrap(knex: Knex, kind: Database['kind']): Database {
  return {
    knex,
    kind,
    statements: statementCounter(knex),
    async ping(timeoutMs = 2000) {
      const started = performance.now();
      // Timed by the time the loop was free to read the answer: a busy loop is not a dead store.
      await fairTimeout(knex.raw('select 1'), timeoutMs, 'database ping');
      return Math.round(performance.now() - started);
    },
    pool() {
      const pool = (knex.client as { pool?: { numUsed(): number; numFree(): number } }).pool;
      if (!pool) return { connections: 0, idle: 0 };
      return { connections: pool.numUsed() + pool.numFree(), idle: pool.numFree() };
    },
    close: () => knex.destroy(),
  };
}

/** A json/jsonb column value: pg and PGlite parse it; a driver that hands back text is parsed here. */
export function fromJson<T>(value: unknown, fallback: T): T {
  if (typeof value === 'string') return JSON.parse(value) as T;
  return (value as T | null | undefined) ?? fallback;
}

/** A timestamp column as the API's RFC 3339 string (milliseconds, UTC). */
export function isoTime(value: Date | string): string;
export function isoTime(value: Date | string | null): string | null;
export function isoTime(value: Date | string | null): string | null {
  if (value === null) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/**
 * Which of `keys` have no unrevoked row in `table` (revoked or deleted): the periodic re-check of
 * open sockets, one query per 1000 keys however many sockets there are.
 */
export async function revokedAmong(knex: Knex, table: string, column: string, keys: readonly string[]): Promise<Set<string>> {
  const live = new Set<string>();
  for (let i = 0; i < keys.length; i += 1000) {
    const rows: Record<string, string>[] = await knex(table).whereIn(column, keys.slice(i, i + 1000)).whereNull('revoked_at').select(column);
    for (const row of rows) live.add(row[column]!);
  }
  return new Set(keys.filter((key) => !live.has(key)));
}
