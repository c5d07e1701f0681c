/**
 * The job system (src/infra/jobs, docs/adr/005-background-jobs.md) on the store of the run: with
 * DATABASE_URL, pg-boss with three instances on one database standing in for three nodes; on the
 * embedded store, the in-process queue (one node). A periodic job runs once per period slot
 * across every instance; a throwing job is retried up to its limit, then dead-lettered (and the
 * stats say so); a job enqueued inside a transaction exists only if that transaction commits.
 */
import { randomBytes } from 'node:crypto';
import { sharedStoreMigrations } from '../../src/app';
import { openDatabase, type Database } from '../../src/infra/db/database';
import type { ScratchDatabase } from '../../src/infra/db/scratch';
import { createMemoryJobs } from '../../src/infra/jobs/memory';
import { createPgBossJobs, PGBOSS_SCHEMA } from '../../src/infra/jobs/pgboss';
import type { Jobs } from '../../src/infra/jobs';
import { createLogger } from '../../src/infra/logger';
import { createTestDatabase, services } from '../helpers/app';

const log = createLogger({ level: 'silent', service: 'test', env: 'test', version: 'test' });
const NODES = services.postgres ? 3 : 1;

let scratch: ScratchDatabase | null = null;
let db: Database;
const started: Jobs[] = [];

beforeAll(async () => {
  scratch = services.postgres ? await createTestDatabase() : null;
  // The app's migrations: an embedded run loads them from the template the other tests use.
  db = await openDatabase({ url: scratch?.url ?? null, dataDir: 'memory://', migrationSets: sharedStoreMigrations });
  await db.knex.schema.createTable('job_causes', (t) => t.string('id').primary());
}, 180_000);

afterEach(async () => {
  await Promise.all(started.splice(0).map((jobs) => jobs.stop()));
});

afterAll(async () => {
  await db?.close();
  await scratch?.drop();
});

/** One job system per node, all on the run's store. */
function nodes(): Jobs[] {
  const made = Array.from({ length: NODES }, () =>
    scratch ? createPgBossJobs({ url: scratch.url, knex: db.knex, log, pollIntervalMs: 500, periods: {} }) : createMemoryJobs({ log, pollIntervalMs: 100, periods: {} }),
  );
  started.push(...made);
  return made;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

test(`a periodic job runs once per period across ${NODES} node(s)`, async () => {
  const name = unique('tick');
  const runs: { node: number; second: number }[] = [];
  const all = nodes();
  all.forEach((jobs, node) =>
    jobs.every(name, 1, () => {
      runs.push({ node, second: Math.floor(Date.now() / 1000) });
      return Promise.resolve();
    }),
  );
  for (const jobs of all) await jobs.start();
  await waitFor('four runs', () => (runs.length >= 4 ? true : undefined));
  for (const jobs of all) await jobs.stop();

  if (scratch) {
    // One job per one-second slot, whichever node offered it first; each job ran once.
    const { rows } = (await db.knex.raw(`select singleton_on, count(*)::int as jobs from ${PGBOSS_SCHEMA}.job where name = ? group by singleton_on`, [name])) as { rows: { jobs: number }[] };
    expect(rows.every((r) => r.jobs === 1)).toBe(true);
    const completed = (await db.knex.raw(`select count(*)::int as n from ${PGBOSS_SCHEMA}.job where name = ? and state = 'completed'`, [name])) as { rows: { n: number }[] };
    expect(runs.length).toBe(completed.rows[0]!.n);
  } else {
    // One slot, one run: no second of the clock ran twice.
    expect(new Set(runs.map((r) => r.second)).size).toBe(runs.length);
  }
}, 60_000);

test('a throwing job is retried up to its limit, then dead-lettered', async () => {
  const name = unique('fails');
  let attempts = 0;
  const all = nodes();
  for (const jobs of all) {
    jobs.define(
      name,
      () => {
        attempts += 1;
        return Promise.reject(new Error('always fails'));
      },
      { retryLimit: 2, retryDelaySeconds: 1, retryBackoff: false },
    );
  }
  for (const jobs of all) await jobs.start();
  expect(await all[0]!.stats()).toEqual([{ name, queued: 0, running: 0, failed: 0, deadLettered: 0, oldestQueuedSeconds: 0 }]);
  await all[0]!.enqueue(name, { n: 1 });
  const stats = await waitFor('the dead letter', async () => {
    const [s] = await all[NODES - 1]!.stats();
    return s && s.deadLettered === 1 ? s : undefined;
  });
  // The first attempt and two retries, then nothing more.
  expect(attempts).toBe(3);
  expect(stats).toMatchObject({ name, queued: 0, running: 0, failed: 1, deadLettered: 1 });
}, 60_000);

test('a job enqueued in a transaction exists only if the transaction commits', async () => {
  const name = unique('caused');
  const seen: unknown[] = [];
  const all = nodes();
  for (const jobs of all) jobs.define(name, (data) => Promise.resolve(void seen.push(data.cause)));
  for (const jobs of all) await jobs.start();
  const [jobs] = all;

  await expect(
    db.knex.transaction(async (trx) => {
      await trx('job_causes').insert({ id: 'rolled-back' });
      await jobs!.enqueue(name, { cause: 'rolled-back' }, { trx });
      throw new Error('roll back');
    }),
  ).rejects.toThrow('roll back');
  await db.knex.transaction(async (trx) => {
    await trx('job_causes').insert({ id: 'committed' });
    await jobs!.enqueue(name, { cause: 'committed' }, { trx });
  });
  await waitFor('the committed job', () => (seen.length > 0 ? true : undefined));
  // A later job runs too, so the rolled-back one would have run by now had it been queued.
  await jobs!.enqueue(name, { cause: 'after' });
  await waitFor('the later job', () => (seen.includes('after') ? true : undefined));
  expect(seen).toEqual(['committed', 'after']);
  expect(await db.knex('job_causes').pluck('id')).toEqual(['committed']);
}, 60_000);
