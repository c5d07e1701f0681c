/**
 * Jobs on PostgreSQL through pg-boss (docs/adr/005-background-jobs.md). Every job is a row in the
 * `pgboss` schema of the relational database; a node takes one with `FOR UPDATE SKIP LOCKED`, so a
 * job runs on one node at a time, and again (up to its retry limit, with its delay and backoff)
 * when its handler throws or its node dies holding it (the attempt expires). Out of retries, a
 * copy goes to `${name}.dead`, which nothing works: it stays for inspection (metrics count it).
 *
 * A periodic job is a throttled send: every node offers one job per time slot (`singletonSeconds`),
 * and pg-boss's unique index on (name, slot) keeps the first offer only, so a slot has one job
 * however many nodes offer it. Enqueueing inside a knex transaction runs pg-boss's insert on that
 * transaction (its `db` option), so the job exists exactly when the change that caused it does.
 */
import os from 'node:os';
import type { Knex } from 'knex';
import PgBoss from 'pg-boss';
import { isOutage } from '../../errors';
import { withMigrationLock } from '../db/migrate';
import type { Logger } from '../logger';
import { deadLetterOf, type JobData, type JobHandler, type JobOptions, type Jobs, type JobStats } from './types';

export const PGBOSS_SCHEMA = 'pgboss';

/**
 * How long an attempt may stay active before it counts as lost (its node died holding it) and is
 * retried: a minute, unless a job says more (every handler here takes seconds). pg-boss looks for
 * such attempts at every maintenance round, every EXPIRY_CHECK_SECONDS, so a dead node's job runs
 * again within about 80 s instead of after 15 minutes in the dead-letter queue.
 */
export const DEFAULT_EXPIRE_SECONDS = 60;
const EXPIRY_CHECK_SECONDS = 20;

/** pg-boss's SQL (`$1` placeholders) on a knex connection or transaction (`?` placeholders). */
export function knexExecutor(knex: Knex | Knex.Transaction): PgBoss.Db {
  return {
    async executeSql(text, values = []) {
      const bindings: unknown[] = [];
      const sql = text.replace(/\$(\d+)/g, (_, index: string) => {
        bindings.push(values[Number(index) - 1] ?? null);
        return '?';
      });
      const result = (await knex.raw(sql, bindings as Knex.RawBinding[])) as { rows?: unknown[] };
      return { rows: result.rows ?? [] };
    },
  };
}

interface Defined {
  handler: JobHandler;
  options: JobOptions;
  /** Seconds per slot for a periodic job. */
  every?: number;
}

export function createPgBossJobs(deps: { url: string; knex: Knex; log: Logger; pollIntervalMs: number; periods: Readonly<Record<string, number>> }): Jobs {
  let boss: PgBoss | null = null;
  /** Made at start, once every periodic job is known: a slot's job must stay in the job table (not archived) for its whole slot. */
  const open = (longestPeriod: number): PgBoss => {
    const made = new PgBoss({
      connectionString: deps.url,
      schema: PGBOSS_SCHEMA,
      max: 4,
      application_name: `jobs@${os.hostname()}`,
      // No cron: periodic jobs are throttled sends (sub-minute periods, see above).
      schedule: false,
      supervise: true,
      maintenanceIntervalSeconds: EXPIRY_CHECK_SECONDS,
      migrate: true,
      archiveCompletedAfterSeconds: Math.max(12 * 3600, longestPeriod + 3600),
    });
    // A database outage is announced once by the health probes (docs/guides/operating.md "Outages"); pg-boss reports it
    // on every poll, so those reports stay at debug.
    made.on('error', (error) => (isOutage(error) ? deps.log.debug({ err: error }, 'job system: database unreachable') : deps.log.warn({ err: error }, 'job system error')));
    return made;
  };
  const defined = new Map<string, Defined>();
  const timers: NodeJS.Timeout[] = [];
  let started = false;
  let stopped = false;
  let stopping: Promise<void> | null = null;

  const define = (name: string, definition: Defined) => {
    if (started) throw new Error(`job ${name} is defined after the job system started`);
    if (defined.has(name)) throw new Error(`job ${name} is defined twice`);
    defined.set(name, definition);
  };

  async function offer(name: string, seconds: number): Promise<void> {
    if (stopped || !boss) return;
    // As pg-boss's own reports (above): an outage is announced once by the health probes, so an
    // offer that fails for it stays at debug; the next offer, twice a slot, sends the slot's job.
    await boss
      .sendThrottled(name, {}, {}, seconds)
      .catch((error: unknown) => (isOutage(error) ? deps.log.debug({ err: error, job: name }, 'periodic job offer: database unreachable') : deps.log.warn({ err: error, job: name }, 'periodic job offer failed')));
  }

  return {
    kind: 'pg-boss',
    define(name, handler, options = {}) {
      define(name, { handler, options });
    },
    every(name, seconds, handler, options = {}) {
      define(name, { handler: () => handler(), options, every: deps.periods[name] ?? seconds });
    },
    async enqueue(name, data: JobData = {}, options = {}) {
      if (!defined.has(name)) throw new Error(`job ${name} is not defined`);
      if (!boss) throw new Error('the job system is not started');
      await boss.send(name, data, options.trx ? { db: knexExecutor(options.trx) } : {});
    },
    async start() {
      started = true;
      const made = open(Math.max(0, ...[...defined.values()].map((d) => d.every ?? 0)));
      boss = made;
      // pg-boss's own schema set-up, and each queue's partition (create_queue attaches a table to
      // the job table), deadlock when nodes start together: one node at a time, under the lock
      // migrations take (src/infra/db/migrate.ts).
      await withMigrationLock(
        deps.url,
        async () => {
          await made.start();
          const existing = new Set((await made.getQueues()).map((queue) => queue.name));
          for (const [name, { options }] of defined) {
            const queue = {
              name,
              retryLimit: options.retryLimit ?? 2,
              retryDelay: options.retryDelaySeconds ?? 1,
              retryBackoff: options.retryBackoff ?? true,
              expireInSeconds: options.expireInSeconds ?? DEFAULT_EXPIRE_SECONDS,
              deadLetter: deadLetterOf(name),
            };
            if (!existing.has(deadLetterOf(name))) await made.createQueue(deadLetterOf(name));
            if (!existing.has(name)) await made.createQueue(name, queue);
            await made.updateQueue(name, queue);
          }
        },
        deps.log,
      );
      for (const [name, { handler }] of defined) {
        await made.work<JobData>(name, { pollingIntervalSeconds: Math.max(0.5, deps.pollIntervalMs / 1000), batchSize: 1 }, async (jobs) => {
          for (const job of jobs) await handler(job.data ?? {});
        });
      }
      for (const [name, { every }] of defined) {
        if (!every) continue;
        void offer(name, every);
        // Twice a slot: a node whose timer drifts still offers every slot.
        const timer = setInterval(() => void offer(name, every), Math.max(250, (every * 1000) / 2));
        timer.unref();
        timers.push(timer);
      }
    },
    stop() {
      stopping ??= (async () => {
        stopped = true;
        for (const timer of timers) clearInterval(timer);
        if (!boss) return;
        await boss.stop({ graceful: true, wait: true, close: true, timeout: 10_000 }).catch((error: unknown) => deps.log.warn({ err: error }, 'job system stop failed'));
      })();
      return stopping;
    },
    async stats() {
      const names = [...defined.keys()];
      if (names.length === 0) return [];
      const dead = names.map(deadLetterOf);
      const { rows } = (await deps.knex.raw(
        `select name,
                count(*) filter (where state in ('created', 'retry'))::int as queued,
                count(*) filter (where state = 'active')::int as running,
                count(*) filter (where state = 'failed')::int as failed,
                coalesce(extract(epoch from now() - min(created_on) filter (where state in ('created', 'retry') and start_after <= now())), 0)::float as oldest
           from ${PGBOSS_SCHEMA}.job where name = any(?) group by name`,
        [[...names, ...dead]],
      )) as { rows: { name: string; queued: number; running: number; failed: number; oldest: number }[] };
      const by = new Map(rows.map((row) => [row.name, row]));
      return names.map(
        (name): JobStats => ({
          name,
          queued: by.get(name)?.queued ?? 0,
          running: by.get(name)?.running ?? 0,
          failed: by.get(name)?.failed ?? 0,
          deadLettered: by.get(deadLetterOf(name))?.queued ?? 0,
          oldestQueuedSeconds: Math.max(0, by.get(name)?.oldest ?? 0),
        }),
      );
    },
  };
}
