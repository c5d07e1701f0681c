/**
 * generated/tables.ts (scripts/codegen/tables.ts): each PostgreSQL type maps to the column type
 * that converts it soundly, a few known tables read as their migrations made them, the committed
 * file is what the catalogue of the run's store (PGlite or PostgreSQL) says, and the migration
 * lists codegen runs are the ones the app runs.
 */
import { relationalMigrations, sharedStoreMigrations, timeseriesMigrations } from '../../src/app';
import { openDatabase, type Database } from '../../src/infra/db/database';
import type { ScratchDatabase } from '../../src/infra/db/scratch';
import { rowMapping, tableColumns } from '../../src/infra/db/rows';
import { tables } from '../../generated/tables';
import { catalogColumns, columnTypeOfPg, relationalMigrationList, timeseriesMigrationList } from '../../scripts/codegen/tables';
import { createTestDatabase, services } from '../helpers/app';

describe('the PostgreSQL type of a column', () => {
  test.each([
    ['uuid', 'uuid'],
    ['text', 'text'],
    ['character varying', 'text'],
    ['citext', 'text'],
    ['boolean', 'boolean'],
    ['integer', 'integer'],
    ['smallint', 'integer'],
    ['bigint', 'bigint'],
    ['numeric', 'bigint'],
    ['double precision', 'double'],
    ['real', 'double'],
    ['json', 'json'],
    ['jsonb', 'json'],
    ['timestamp with time zone', 'timestamp'],
    ['bytea', 'bytes'],
  ])('%s converts as %s', (pgType, type) => {
    expect(columnTypeOfPg(pgType)).toBe(type);
  });

  test.each(['date', 'tsvector', 'inet', 'text[]', 'timestamp without time zone', 'interval'])('%s has no sound conversion', (pgType) => {
    expect(columnTypeOfPg(pgType)).toBeNull();
  });
});

describe('generated/tables.ts', () => {
  test('reads known tables as their migrations made them', () => {
    expect(tables.sessions).toEqual({
      id: 'uuid',
      user_id: 'uuid',
      account_id: { type: 'uuid', nullable: true },
      refresh_jti: 'uuid',
      ip_address: { type: 'text', nullable: true },
      user_agent: { type: 'text', nullable: true },
      created_at: 'timestamp',
      last_used_at: 'timestamp',
      expires_at: 'timestamp',
      revoked_at: { type: 'timestamp', nullable: true },
    });
    expect(tables.login_codes).toEqual({ code_hash: 'text', user_id: 'uuid', account_id: { type: 'uuid', nullable: true }, provider: 'text', expires_at: 'timestamp' });
    expect(tables.webhook_receipts.payload).toBe('json');
    expect(tables.mail_outbox.attempts).toBe('integer');
    expect(tables.ps_streams.watch_seconds).toBe('bigint');
    expect(tables.ps_streams.avg_viewers).toBe('double');
    expect(tables.blob_chunks.data).toBe('bytes');
    // A date has no sound conversion (the drivers build its Date in different time zones): left out.
    expect(Object.keys(tables.event_counts)).not.toContain('day');
  });

  test('types the sealed grant columns alike in the three tables that share one mapping (src/modules/connections/repo.ts)', () => {
    const sealed = ['access_token_sealed', 'refresh_token_sealed', 'scopes', 'reconnect_required'] as const;
    expect(tableColumns('account_connections', sealed)).toEqual(tableColumns('login_connections', sealed));
    expect(tableColumns('account_bot_connections', [...sealed, 'expires_at'])).toEqual(tableColumns('account_connections', [...sealed, 'expires_at']));
  });

  test('leaves out partitions and knex tables', () => {
    const names = Object.keys(tables);
    expect(names).toContain('ps_viewer_samples');
    expect(names.filter((name) => /_y\d{4}m\d{2}$/.test(name) || name.startsWith('knex_'))).toEqual([]);
    expect(names).toEqual([...names].sort());
  });

  test('tableColumns picks the named columns in that order and refuses an unknown one', () => {
    expect(tableColumns('billing_subscriptions', ['status', 'account_id'])).toEqual({ status: 'text', account_id: 'uuid' });
    expect(Object.keys(tableColumns('billing_subscriptions', ['status', 'account_id']))).toEqual(['status', 'account_id']);
    expect(() => tableColumns('billing_subscriptions', ['nope' as 'status'])).toThrow('the table has no column nope');
    // Through a join's alias: each column selected as `alias.column`, its type and nullability kept.
    expect(tableColumns('extension_versions', ['manifest', 'submitted_by'], 'v')).toEqual({
      manifest: { type: 'json', nullable: true, from: 'v.manifest' },
      submitted_by: { type: 'uuid', nullable: true, from: 'v.submitted_by' },
    });
    expect(rowMapping(tableColumns('billing_subscriptions', ['status', 'account_id'], 'b')).select).toBe('b.status as status, b.account_id as account_id');
  });

  test("codegen migrates with the app's migrations", () => {
    const names = (list: readonly { name: string }[]) => list.map((m) => m.name).sort();
    expect(names(relationalMigrationList)).toEqual(names(relationalMigrations));
    expect(names(timeseriesMigrationList)).toEqual(names(timeseriesMigrations));
  });
});

describe("the catalogue of the run's store", () => {
  let scratch: ScratchDatabase | null = null;
  let db: Database;

  beforeAll(async () => {
    scratch = services.postgres ? await createTestDatabase() : null;
    db = await openDatabase({ url: scratch?.url ?? null, dataDir: 'memory://', migrationSets: sharedStoreMigrations });
  }, 180_000);

  afterAll(async () => {
    await db?.close();
    await scratch?.drop();
  });

  test('is what generated/tables.ts says', async () => {
    const read: Record<string, Record<string, unknown>> = {};
    for (const { table, column, type, nullable } of await catalogColumns(db.knex)) {
      read[table] ??= {};
      if (type !== null) read[table][column] = nullable ? { type, nullable } : type;
    }
    expect(read).toEqual(tables);
    // Same order too: a row read with a table's columns has the migration's member order.
    for (const [table, columns] of Object.entries(tables)) expect(Object.keys(read[table] ?? {})).toEqual(Object.keys(columns));
  });
});
