/**
 * Platform ingest benchmark (the cluster sizing in docs/guides/performance.md): the
 * cost of one chat message through the ingest pipeline (`chat.ingestMessage`: validation, the
 * insert and the chatter upsert in one transaction, the broadcast on the bus), as a platform
 * worker drives it: CHANNELS channels at once, each channel's messages in order. Prints the
 * node's CPU per message, messages per second, and the database transactions and rows written per
 * message (from pg_stat_database), on a scratch PostgreSQL database it creates and drops.
 * Not a test: `DATABASE_URL=postgres://… REDIS_URL=redis://… npx tsx scripts/bench-ingest.ts`
 * (MESSAGES, CHANNELS override the counts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createApp, sharedStoreMigrations } from '../src/app';
import { loadConfig } from '../src/config/config';
import { createScratchDatabase } from '../src/infra/db/scratch';

const MESSAGES = Number(process.env.MESSAGES ?? 20_000);
const CHANNELS = Number(process.env.CHANNELS ?? 100);
const WARMUP = 1000;

async function main(): Promise<void> {
  const server = process.env.DATABASE_URL;
  if (!server) throw new Error('DATABASE_URL (a PostgreSQL server) is required');
  const scratch = await createScratchDatabase(server, 'bench_ingest', sharedStoreMigrations);
  const config = loadConfig({
    env: {},
    overrides: { env: 'test', database_url: scratch.url, data_dir: 'memory://', redis_url: process.env.REDIS_URL ?? null, redis_prefix: `bench:${randomBytes(4).toString('hex')}:`, log: { level: 'warn' } },
  });
  const app = await createApp(config);
  try {
    const knex = app.db.knex;
    const owner = randomUUID();
    await knex('users').insert({ id: owner, display_name: 'bench' });
    const accounts = Array.from({ length: CHANNELS }, () => randomUUID());
    await knex('accounts').insert(accounts.map((id, i) => ({ id, name: `bench ${i}`, owner_id: owner })));
    const ingest = app.modules.chat;
    let sequence = 0;
    const run = async (count: number) => {
      const perChannel = Math.ceil(count / CHANNELS);
      await Promise.all(
        accounts.map(async (accountId) => {
          for (let i = 0; i < perChannel; i += 1) {
            const n = (sequence += 1);
            await ingest.ingestMessage({
              accountId,
              platform: 'platform_a',
              platformMessageId: `m-${n}`,
              platformUserId: `viewer-${n % 500}`,
              username: `viewer${n % 500}`,
              displayName: `Viewer ${n % 500}`,
              avatarUrl: null,
              message: `message number ${n} from the bench, with a few words in it`,
              raw: { type: 'chat.message', id: `m-${n}` },
            });
          }
        }),
      );
      return perChannel * CHANNELS;
    };
    const stats = async () => {
      const { rows } = (await knex.raw('select xact_commit::bigint as commits, tup_inserted::bigint as inserted, tup_updated::bigint as updated from pg_stat_database where datname = current_database()')) as {
        rows: { commits: string; inserted: string; updated: string }[];
      };
      return { commits: Number(rows[0]!.commits), inserted: Number(rows[0]!.inserted), updated: Number(rows[0]!.updated) };
    };
    await run(WARMUP);
    await new Promise((r) => setTimeout(r, 1000)); // pg_stat_database is updated by each backend after its transactions
    const before = await stats();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const sent = await run(MESSAGES);
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    await new Promise((r) => setTimeout(r, 1500));
    const after = await stats();
    const cpuMs = (used.user + used.system) / 1000;
    console.log(
      JSON.stringify(
        {
          messages: sent,
          channels: CHANNELS,
          messages_per_second: Math.round(sent / (wallMs / 1000)),
          node_cpu_ms_per_message: Number((cpuMs / sent).toFixed(3)),
          db_commits_per_message: Number(((after.commits - before.commits) / sent).toFixed(2)),
          db_rows_inserted_per_message: Number(((after.inserted - before.inserted) / sent).toFixed(2)),
          db_rows_updated_per_message: Number(((after.updated - before.updated) / sent).toFixed(2)),
        },
        null,
        2,
      ),
    );
  } finally {
    await app.close();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
