/**
 * `npm run secrets:reseal`: seals again, with the sealing key, every stored value another key
 * sealed (src/auth/sealed.ts), so that key can be marked `retired` and then removed
 * (docs/guides/production.md, "Key rotation on several nodes"). Safe while nodes serve, once every node lists the sealing key. Exits 0 when every
 * value is now under the sealing key, 2 when some could not be opened (named by key id, left as
 * they are). `--check` only reports what each key holds and what this configuration cannot open.
 */
import { commandContext, embeddedDataDir } from './app';
import { checkSealedValues, resealAll } from './auth/sealed';
import { loadSecretBox } from './auth/secrets';
import { openDatabase } from './infra/db/database';

async function main(argv: string[]): Promise<number> {
  const context = commandContext('secrets:reseal');
  if (!context) return 1;
  const { config, log } = context;
  const box = await loadSecretBox(config);
  const db = await openDatabase({
    url: config.database_url,
    dataDir: embeddedDataDir(config, 'pglite'),
    migrationSets: [],
    migrate: 'none',
    poolMax: 2,
    log,
  });
  try {
    if (!argv.includes('--check')) {
      const result = await resealAll(db.knex, box, log);
      log.info({ sealing_key: box.keyId, resealed: result.resealed, failed_by_key: result.failed }, `${result.resealed} value(s) resealed with key ${box.keyId}`);
    }
    const after = await checkSealedValues(db.knex, box);
    const others = Object.keys(after.counts).filter((id) => id !== box.keyId);
    log.info({ sealing_key: box.keyId, values_by_key: after.counts, unopenable: after.unopenable }, others.length ? `values remain under key(s) ${others.join(', ')}` : `every stored value is sealed with key ${box.keyId}`);
    return others.length ? 2 : 0;
  } finally {
    await db.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${JSON.stringify({ level: 50, time: new Date().toISOString(), msg: 'reseal failed', err: error instanceof Error ? error.message : String(error) })}\n`);
    process.exitCode = 1;
  },
);
