/**
 * `npm run migrate`: applies this release's pending migrations to the configured database(s)
 * under the migration lock (src/infra/db/migrate.ts), a log line per migration, and exits 0;
 * `--status` lists what is pending and what a newer release applied, without changing anything
 * (exit 2 when something is pending); `--rollback` undoes the last batch of each store. Reads the
 * same configuration as the service (SVC_CONFIG, environment).
 */
import { commandContext, embeddedDataDir, storeMigrationSets } from './app';
import { openDatabase } from './infra/db/database';
import { migrate, migrationStatus, rollbackLast } from './infra/db/migrate';

async function main(argv: string[]): Promise<number> {
  const context = commandContext('migrate');
  if (!context) return 1;
  const { config, log } = context;
  const sets = storeMigrationSets(config);
  const stores = [
    { name: 'relational', url: config.database_url, dataDir: embeddedDataDir(config, 'pglite'), sets: sets.relational },
    ...(config.timeseries_url ? [{ name: 'timeseries', url: config.timeseries_url, dataDir: '', sets: sets.timeseries }] : []),
  ];
  let code = 0;
  for (const store of stores) {
    const db = await openDatabase({ url: store.url, dataDir: store.dataDir, migrationSets: store.sets, migrate: 'none', poolMax: 2, log });
    try {
      if (argv.includes('--status')) {
        const status = await migrationStatus(db.knex, store.sets);
        log.info({ store: store.name, pending: status.pending, unknown: status.unknown, misplaced: status.misplaced }, status.pending.length ? `${status.pending.length} migration(s) pending` : 'up to date');
        if (status.pending.length) code = 2;
      } else if (argv.includes('--rollback')) {
        const undone = await rollbackLast(db.knex, store.sets, { url: store.url, log });
        log.info({ store: store.name, rolled_back: undone }, `${undone.length} migration(s) rolled back`);
      } else {
        const started = Date.now();
        const applied = await migrate(db.knex, store.sets, { url: store.url, mode: 'apply', log });
        log.info({ store: store.name, applied: applied.length, ms: Date.now() - started }, applied.length ? `${applied.length} migration(s) applied` : 'up to date: no migration pending');
      }
    } finally {
      await db.close();
    }
  }
  return code;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${JSON.stringify({ level: 50, time: new Date().toISOString(), msg: 'migration failed', err: error instanceof Error ? error.message : String(error) })}\n`);
    process.exitCode = 1;
  },
);
