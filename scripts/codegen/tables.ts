/**
 * generated/tables.ts: every relational and time-series table's columns as a `Columns` literal
 * (src/infra/db/rows.ts), read from the catalogue of an in-memory PGlite that ran every module's
 * migrations, so a stored-only row names its columns once, in its migration.
 *
 * This is the one part of codegen that reads src/: the modules' migration lists (and the database
 * opener that runs them), imported directly rather than through src/app.ts, so codegen never loads
 * a module that may itself import generated/tables.ts. test/codegen/tables.test.ts checks that the
 * lists below are the ones the app runs.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { openDatabase, type Migration, type MigrationSet } from '../../src/infra/db/database';
import { accessVersionMigrations } from '../../src/auth/access-version';
import { credentialMigrations } from '../../src/auth/store';
import { accountMigrations } from '../../src/modules/accounts/migrations';
import { auditMigrations } from '../../src/modules/audit/migrations';
import { chatMigrations } from '../../src/modules/chat/migrations';
import { connectionMigrations } from '../../src/modules/connections/migrations';
import { developerMigrations } from '../../src/modules/developer/migrations';
import { eventMigrations } from '../../src/modules/events/migrations';
import { extensionMigrations } from '../../src/modules/extensions/migrations';
import { featureMigrations } from '../../src/modules/features/migrations';
import { ideasMigrations } from '../../src/modules/ideas/migrations';
import { idempotencyMigrations } from '../../src/modules/idempotency/migrations';
import { mailMigrations } from '../../src/modules/mail/migrations';
import { notificationMigrations } from '../../src/modules/notifications/migrations';
import { overlayMigrations } from '../../src/modules/overlays/migrations';
import { payoutMigrations } from '../../src/modules/payouts/migrations';
import { platformMigrations } from '../../src/modules/platforms/migrations';
import { presetMigrations } from '../../src/modules/presets/migrations';
import { sessionMigrations } from '../../src/modules/sessions/migrations';
import { signinMigrations } from '../../src/modules/signin/migrations';
import { soundMigrations } from '../../src/modules/sounds/migrations';
import { statsMigrations, statsTimeseriesMigrations } from '../../src/modules/stats/migrations';
import { webhookMigrations } from '../../src/modules/webhooks/migrations';
import { workerMigrations } from '../../src/modules/workers/migrations';
import { BANNER, root } from './common';

/** Every relational migration the app runs (src/app.ts's relationalMigrations, as a set). */
export const relationalMigrationList: readonly Migration[] = [
  ...featureMigrations,
  ...auditMigrations,
  ...mailMigrations,
  ...notificationMigrations,
  ...accountMigrations,
  ...presetMigrations,
  ...connectionMigrations,
  ...sessionMigrations,
  ...signinMigrations,
  ...eventMigrations,
  ...overlayMigrations,
  ...workerMigrations,
  ...platformMigrations,
  ...chatMigrations,
  ...soundMigrations,
  ...developerMigrations,
  ...extensionMigrations,
  ...payoutMigrations,
  ...webhookMigrations,
  ...idempotencyMigrations,
  ...ideasMigrations,
  ...statsMigrations,
  ...credentialMigrations,
  ...accessVersionMigrations,
];
/** Every time-series migration the app runs (src/app.ts's timeseriesMigrations). */
export const timeseriesMigrationList: readonly Migration[] = [...statsTimeseriesMigrations];

/** The column type a PostgreSQL type converts by (src/infra/db/rows.ts's ColumnType), or null when none is sound. */
export function columnTypeOfPg(type: string): string | null {
  switch (type) {
    case 'uuid':
      return 'uuid';
    case 'text':
    case 'character varying':
    case 'character':
    case 'citext':
      return 'text';
    case 'boolean':
      return 'boolean';
    case 'integer':
    case 'smallint':
      return 'integer';
    // Counts and sums past 2^31 (and numeric amounts) arrive as text; the mapping makes them numbers.
    case 'bigint':
    case 'numeric':
      return 'bigint';
    case 'json':
    case 'jsonb':
      return 'json';
    case 'double precision':
    case 'real':
      return 'double';
    case 'timestamp with time zone':
      return 'timestamp';
    case 'bytea':
      return 'bytes';
    default:
      return null;
  }
}

/** A column of the catalogue: its PostgreSQL type and the column type it converts by (null: none soundly). */
export interface CatalogColumn {
  table: string;
  column: string;
  pgType: string;
  type: string | null;
  nullable: boolean;
}

/**
 * The columns of a migrated database's ordinary and partitioned tables (not their partitions, not
 * knex's own): tables by name in code-point order (not the database's collation), columns in the
 * order the migrations made them.
 */
export async function catalogColumns(knex: Knex): Promise<CatalogColumn[]> {
  const result = await knex.raw<{ rows: { table_name: string; column_name: string; data_type: string; udt_name: string; is_nullable: 'YES' | 'NO' }[] }>(`
    select c.table_name, c.column_name, c.data_type, c.udt_name, c.is_nullable
      from information_schema.columns c
      join pg_catalog.pg_namespace n on n.nspname = c.table_schema
      join pg_catalog.pg_class k on k.relname = c.table_name and k.relnamespace = n.oid
     where c.table_schema = current_schema()
       and k.relkind in ('r', 'p')
       and not k.relispartition
       and c.table_name not like 'knex\\_migrations%'
     order by c.table_name, c.ordinal_position`);
  return result.rows
    .map((row) => {
      // An array's data_type is ARRAY (its element type is udt_name without the leading underscore); an extension's type (citext) is USER-DEFINED.
      const pgType = row.data_type === 'ARRAY' ? `${row.udt_name.replace(/^_/, '')}[]` : row.data_type === 'USER-DEFINED' ? row.udt_name : row.data_type;
      return { table: row.table_name, column: row.column_name, pgType, type: columnTypeOfPg(pgType), nullable: row.is_nullable === 'YES' };
    })
    .sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : 0));
}

/** The catalogue of a fresh in-memory PGlite that ran every migration. */
async function migratedCatalog(): Promise<CatalogColumn[]> {
  const sets: MigrationSet[] = [
    { table: 'knex_migrations', migrations: relationalMigrationList },
    { table: 'knex_migrations_timeseries', migrations: timeseriesMigrationList },
  ];
  const previous = process.env.PGLITE_TEMPLATE_DIR;
  // A fresh database every run: codegen must not depend on a test template left on the machine.
  delete process.env.PGLITE_TEMPLATE_DIR;
  const db = await openDatabase({ url: null, dataDir: 'memory://', migrationSets: sets });
  if (previous !== undefined) process.env.PGLITE_TEMPLATE_DIR = previous;
  try {
    return await catalogColumns(db.knex);
  } finally {
    await db.close();
  }
}

/** A key as a TypeScript property name (quoted when it is not an identifier). */
const key = (name: string) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name));

/**
 * What generated/tables.ts is a function of: the text of every file of src/ this part loaded (the
 * migration lists and what they import, the database opener), this part and its banner's file,
 * and the versions of the database and the query builder that ran the migrations.
 */
function inputsDigest(): string {
  const hash = createHash('sha256');
  const files = Object.keys(require.cache)
    .filter((file) => !file.includes(`${path.sep}node_modules${path.sep}`) && file.startsWith(path.join(root, 'src') + path.sep))
    .concat(__filename, path.join(__dirname, 'common.ts'))
    .sort();
  for (const file of files) hash.update(`${path.relative(root, file)}\n${readFileSync(file, 'utf8')}\n`);
  for (const name of ['@electric-sql/pglite', 'knex']) hash.update(`${name}@${(JSON.parse(readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version}\n`);
  return hash.digest('hex').slice(0, 32);
}

/**
 * generated/tables.ts from the migrated catalogue. Migrating a fresh PGlite costs about 6 s of CPU,
 * so the result is kept under node_modules/.cache/codegen/ by the digest of its inputs
 * (inputsDigest): any change to a migration, to what it imports or to the drivers runs them again.
 */
export async function tablesModule(): Promise<string> {
  const cached = path.join(root, 'node_modules', '.cache', 'codegen', `tables-${inputsDigest()}.ts`);
  if (existsSync(cached)) return readFileSync(cached, 'utf8');
  const content = await migratedTablesModule();
  mkdirSync(path.dirname(cached), { recursive: true });
  const partial = `${cached}.${process.pid}.tmp`;
  writeFileSync(partial, content);
  renameSync(partial, cached);
  return content;
}

async function migratedTablesModule(): Promise<string> {
  const tables = new Map<string, string[]>();
  for (const { table, column, pgType, type, nullable } of await migratedCatalog()) {
    const list = tables.get(table) ?? [];
    // A column no ColumnType converts soundly is named with its type but left out: nothing maps it
    // by a wrong conversion; a query that needs it selects it in a form that has one (`day::text`).
    list.push(type === null ? `    // ${column}: ${pgType}${nullable ? ' (nullable)' : ''}, no ColumnType converts it` : `    ${key(column)}: ${nullable ? `{ type: '${type}', nullable: true }` : `'${type}'`},`);
    tables.set(table, list);
  }
  const body = [...tables].map(([table, lines]) => `  ${key(table)}: {\n${lines.join('\n')}\n  },`).join('\n');
  return `${BANNER.replace('from spec/', "from the modules' migrations")}
/**
 * Every table's columns, tables by name, columns in the order the migrations made them
 * (partitions and knex's own tables left out; a column of a type no ColumnType converts soundly
 * is a comment), as src/infra/db/rows.ts's \`Columns\`: a stored-only row reads its columns from
 * here (\`tableColumns('sessions')\`), so they are written once, in the migration.
 */
export const tables = {
${body}
} as const;

export type TableName = keyof typeof tables;
`;
}
