/**
 * Migrations as a step (src/infra/db/migrate.ts): with DATABASE_URL, three nodes started at the
 * same instant on an empty database all come up (migrations and pg-boss's queues under one
 * advisory lock, each migration applied once); on either store, `db.migrate_on_start: false`
 * refuses a database that lacks migrations and names them, and a database migrated by a newer
 * release is served (said in a warning) while nothing of this release is missing, refused when
 * something is.
 */
import { createApp, sharedStoreMigrations, type App } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { openDatabase } from '../../src/infra/db/database';
import { FIRST_LEDGER_MIGRATIONS, SECOND_LEDGER_TABLE } from '../../src/infra/db/ledgers';
import { migrate, migrationStatus, NewerDatabaseError, PendingMigrationsError } from '../../src/infra/db/migrate';
import { createScratchDatabase, type ScratchDatabase } from '../../src/infra/db/scratch';
import { createLogger } from '../../src/infra/logger';
import { startServer, type RunningServer } from '../../src/server';
import { captureLog } from '../helpers/log-capture';
import { services } from '../helpers/app';

/** Relational migrations over both ledgers (src/infra/db/ledgers.ts). */
const relationalCount = sharedStoreMigrations[0]!.migrations.length + sharedStoreMigrations[1]!.migrations.length;
const log = createLogger({ level: 'silent', service: 'test', env: 'test', version: 'test' });

(services.postgres ? describe : describe.skip)('three nodes on an empty PostgreSQL database', () => {
  let scratch: ScratchDatabase;
  const nodes: { app: App; running: RunningServer }[] = [];

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'mig');
  });
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.running.stop()));
    await scratch?.drop();
  });

  it('all start at once and become ready; each migration is applied once', async () => {
    const start = async (i: number) => {
      const config = loadConfig({
        env: {},
        overrides: { env: 'test', port: 0, host: '127.0.0.1', metrics: { host: '127.0.0.1', port: 0 }, database_url: scratch.url, data_dir: 'memory://', jobs: { node_id: `node-${i}` }, http: { shutdown_grace_ms: 500 } },
      });
      const app = await createApp(config);
      const running = await startServer(app, { port: 0, host: '127.0.0.1', metricsPort: 0, metricsHost: '127.0.0.1' });
      nodes.push({ app, running });
      return running.url;
    };
    const urls = await Promise.all([0, 1, 2].map(start));
    for (const url of urls) {
      const res = await fetch(`${url}/v1/health/ready`);
      expect(res.status).toBe(200);
    }
    const { rows } = (await nodes[0]!.app.db.knex.raw('select name, count(*)::int as n from (select name from knex_migrations union all select name from knex_migrations_2) l group by name')) as { rows: { n: number }[] };
    expect(rows).toHaveLength(relationalCount);
    expect(rows.every((row) => row.n === 1)).toBe(true);
  }, 120_000);
});

describe('migrate_on_start: false, and a database a newer release migrated', () => {
  let scratch: ScratchDatabase | null = null;
  afterAll(async () => {
    await scratch?.drop();
  });

  it('refuses a database lacking migrations, naming them; serves one with only newer migrations; refuses one with both', async () => {
    scratch = services.postgres ? await createScratchDatabase(process.env.DATABASE_URL!, 'mig') : null;
    const url = scratch?.url ?? null;
    // Under a table name of its own: no migrated embedded template stands in for this set.
    const fresh = openDatabase({ url, dataDir: 'memory://', migrationSets: [{ ...sharedStoreMigrations[0]!, table: 'knex_migrations_check' }], migrate: 'check', log });
    await expect(fresh).rejects.toBeInstanceOf(PendingMigrationsError);
    await expect(fresh).rejects.toThrow(/lacks \d+ migration\(s\) of this release: 20\d+_/);

    // One handle kept open (a memory:// PGlite lives as long as its handle): migrate, then doctor it.
    const db = await openDatabase({ url, dataDir: 'memory://', migrationSets: sharedStoreMigrations, log });
    expect(await migrationStatus(db.knex, sharedStoreMigrations)).toEqual({ pending: [], unknown: [], misplaced: [] });
    await db.knex('knex_migrations').insert({ name: '29991231000000_from_a_newer_release', batch: 99, migration_time: new Date() });
    const logs = captureLog();
    await expect(migrate(db.knex, sharedStoreMigrations, { url, mode: 'check', log: logs.log })).resolves.toEqual([]);
    expect(logs.lines.some((line) => line.msg.includes('migrated by a newer release') && JSON.stringify(line.unknown).includes('29991231000000_from_a_newer_release'))).toBe(true);

    const last = sharedStoreMigrations[0]!.migrations.map((m) => m.name).sort().at(-1)!;
    await db.knex('knex_migrations').where({ name: last }).delete();
    await expect(migrate(db.knex, sharedStoreMigrations, { url, mode: 'check', log })).rejects.toBeInstanceOf(NewerDatabaseError);
    await expect(migrate(db.knex, sharedStoreMigrations, { url, mode: 'apply', log })).rejects.toThrow(/migrated by a newer release .*29991231000000_from_a_newer_release.*lacks this release's/);
    await db.knex('knex_migrations').where({ name: '29991231000000_from_a_newer_release' }).delete();
    await expect(migrate(db.knex, sharedStoreMigrations, { url, mode: 'check', log })).rejects.toThrow(new RegExp(`lacks 1 migration\\(s\\) of this release: ${last}`));
    await db.close();
  }, 120_000);

  it("keeps the first rolling-upgradable release's ledger to its own migrations, and moves later records out of it", async () => {
    const own = services.postgres ? await createScratchDatabase(process.env.DATABASE_URL!, 'mig') : null;
    const url = own?.url ?? null;
    const db = await openDatabase({ url, dataDir: 'memory://', migrationSets: sharedStoreMigrations, log });
    const names = async (table: string) => ((await db.knex(table).select('name')) as { name: string }[]).map((r) => r.name).sort();
    // That release refuses to start when its ledger holds a name it lacks: it holds exactly its own.
    expect(await names('knex_migrations')).toEqual([...FIRST_LEDGER_MIGRATIONS].sort());
    const later = sharedStoreMigrations[1]!.migrations.map((m) => m.name).sort();
    expect(later.length).toBeGreaterThan(0);
    expect(await names(SECOND_LEDGER_TABLE)).toEqual(later);
    // A database migrated before the split: every record in the first ledger.
    const rows = (await db.knex(SECOND_LEDGER_TABLE).select('name', 'batch', 'migration_time')) as object[];
    await db.knex('knex_migrations').insert(rows);
    await db.knex(SECOND_LEDGER_TABLE).delete();
    expect(await migrationStatus(db.knex, sharedStoreMigrations)).toEqual({ pending: [], unknown: [], misplaced: later });
    // Served as it is when only checked; moved (nothing re-applied) by the next apply.
    await expect(migrate(db.knex, sharedStoreMigrations, { url, mode: 'check', log })).resolves.toEqual([]);
    await expect(migrate(db.knex, sharedStoreMigrations, { url, mode: 'apply', log })).resolves.toEqual([]);
    expect(await names('knex_migrations')).toEqual([...FIRST_LEDGER_MIGRATIONS].sort());
    expect(await names(SECOND_LEDGER_TABLE)).toEqual(later);
    await db.close();
    await own?.drop();
  }, 120_000);
});
