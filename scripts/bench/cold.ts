/**
 * The bench's cases of what users hit beside the kept page (scripts/bench.ts): many
 * accounts with keys of their own and events of their own, the pools of distinct requests the
 * cold cases draw from at random (page, size, filter and user: no kept result can answer them),
 * and the CPU the stores spend (PostgreSQL backends of the scratch database, the Redis server),
 * so that a case's CPU per request is split between the service process and the stores.
 */
import { writeFileSync } from 'node:fs';
import Redis from 'ioredis';
import { Client } from 'pg';
import { cpuMillis } from './lib';
import type { PoolRequest } from './load';

export interface BenchAccount {
  accountId: string;
  key: Record<string, string>;
}

const TYPES = ['platform_a:follow', 'platform_a:subscription', 'platform_a:cheer', 'platform_b:membership', 'platform_c:follow'];
const PLATFORMS = ['platform_a', 'platform_b', 'platform_c'];
/** Page sizes of the cold draws: any of 10 to 50, as clients pick them. */
const LIMIT_MIN = 10;
const LIMIT_MAX = 50;
/**
 * The least distance, in a pool walked in order (and around its end), between two draws of the same
 * request. The events page is kept from its second load within the latest two to four thousand page
 * keys (src/infra/db/hot-read.ts, `keepOnRepeat`), so a request repeated closer than that would be
 * answered by a kept page: the cold cases must not measure the cache.
 */
export const COLD_REPEAT_DISTANCE = 10_000;

/** Runs `work` over `items` with at most `width` at once. */
export async function inParallel<T>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i]!, i);
      }
    }),
  );
}

/** The body of an emitted event: viewers, types and platforms spread so that every filter selects a part. */
export function seededEvent(i: number): Record<string, unknown> {
  const type = TYPES[i % TYPES.length]!;
  return { type, platform: type.slice(0, type.indexOf(':')), raw: { bench_seq: i, user_id: `viewer-${i % 50}`, username: `Viewer ${i % 50}`, message: `Cold message ${i}` } };
}

/** A small deterministic generator (mulberry32), so that two runs draw the same requests. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Draw {
  account: BenchAccount;
  page: number;
  limit: number;
  filter: { types?: string[]; platform?: string; userId?: string; from?: string; to?: string };
}

/**
 * How many of a user's `eventsPerUser` seeded events (`seededEvent(0..n-1)`) a filter selects. A
 * time window always covers the seeding (below), so it selects them all.
 */
const matched = new Map<string, number>();
function matching(filter: Draw['filter'], eventsPerUser: number): number {
  const key = JSON.stringify([eventsPerUser, filter.types, filter.platform, filter.userId]);
  const known = matched.get(key);
  if (known !== undefined) return known;
  let n = 0;
  for (let i = 0; i < eventsPerUser; i += 1) {
    const event = seededEvent(i) as { type: string; platform: string; raw: { user_id: string } };
    if (filter.types && !filter.types.includes(event.type)) continue;
    if (filter.platform && filter.platform !== event.platform) continue;
    if (filter.userId && filter.userId !== event.raw.user_id) continue;
    n += 1;
  }
  matched.set(key, n);
  return n;
}

/**
 * One random request over `accounts`: a page size of 10..50, one filter of five kinds (or none), and
 * a page among those the filter fills (a dashboard pages through results; an earlier pool drew pages from 1..12 whatever the filter
 * held, and two thirds of them were past the end: empty pages, which cost the service little and measured mostly its fixed cost).
 */
function drawOne(accounts: readonly BenchAccount[], random: () => number, now: number, eventsPerUser: number): Draw {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const filter: Draw['filter'] = {};
  switch (Math.floor(random() * 6)) {
    case 1:
      filter.types = [pick(TYPES)];
      break;
    case 2:
      filter.platform = pick(PLATFORMS);
      break;
    case 3:
      filter.userId = `viewer-${Math.floor(random() * 50)}`;
      break;
    case 4: {
      // A two-hour window ending within the next hour, minute-aligned: it holds the rows seeded
      // before the pool is drawn (seeding takes minutes), whichever of its 60 ends is drawn.
      const to = now + 60_000 + Math.floor(random() * 60) * 60_000;
      filter.from = new Date(to - 2 * 3_600_000).toISOString();
      filter.to = new Date(to).toISOString();
      break;
    }
    default:
      break;
  }
  const limit = LIMIT_MIN + Math.floor(random() * (LIMIT_MAX - LIMIT_MIN + 1));
  const pages = Math.max(1, Math.ceil(matching(filter, eventsPerUser) / limit));
  return { account: pick(accounts), page: 1 + Math.floor(random() * pages), limit, filter };
}

/**
 * `count` random requests over `accounts`, to be sent in order and around again: a draw that repeats
 * a request less than COLD_REPEAT_DISTANCE places before it (or, counted around the end, after it) is
 * drawn again. The unfiltered pages of the 20 users (9,840 distinct) are a third of the draws, so
 * drawn freely a pool repeats them every few thousand requests, which kept pages would answer (a
 * fifth of the requests, when the pools were drawn freely).
 */
function draws(accounts: readonly BenchAccount[], eventsPerUser: number, count: number, seed: number): Draw[] {
  const random = generator(seed);
  const now = Date.now();
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  const out: Draw[] = [];
  while (out.length < count) {
    const d = drawOne(accounts, random, now, eventsPerUser);
    const key = `${accounts.indexOf(d.account)} ${d.page} ${d.limit} ${JSON.stringify(d.filter)}`;
    const at = out.length;
    const before = last.get(key);
    const wrapped = first.get(key);
    if (before !== undefined && at - before < COLD_REPEAT_DISTANCE) continue;
    if (wrapped !== undefined && count - at + wrapped < COLD_REPEAT_DISTANCE) continue;
    if (wrapped === undefined) first.set(key, at);
    last.set(key, at);
    out.push(d);
  }
  return out;
}

/**
 * Where each pool's next run starts: the pools named here (the cold ones) are walked in order
 * (load.ts `poolStart`), each run continuing where the previous one on the same service stopped.
 * `place` gives a load input its start; `advance` moves past what a run took from the pool, its
 * answered requests and the `connections` still on their way when it stopped.
 */
export function poolCursors(ordered: Iterable<string>): {
  place<T extends { poolFile?: string }>(input: T): T & { poolStart?: number };
  advance(input: { poolFile?: string }, requests: number, connections: number): void;
} {
  const at = new Map([...ordered].map((poolFile) => [poolFile, 0]));
  return {
    place: (input) => (input.poolFile !== undefined && at.has(input.poolFile) ? { ...input, poolStart: at.get(input.poolFile)! } : input),
    advance(input, requests, connections) {
      if (input.poolFile !== undefined && at.has(input.poolFile)) at.set(input.poolFile, at.get(input.poolFile)! + requests + connections);
    },
  };
}

/** REST requests of the cold case: `GET /v1/events` with the draw's page, size, filter and key. */
export function coldRestPool(accounts: readonly BenchAccount[], eventsPerUser: number, count: number, seed: number): PoolRequest[] {
  return draws(accounts, eventsPerUser, count, seed).map((d) => {
    const q = new URLSearchParams({ page: String(d.page), limit: String(d.limit) });
    if (d.filter.types) q.set('types', d.filter.types.join(','));
    if (d.filter.platform) q.set('platform', d.filter.platform);
    if (d.filter.userId) q.set('user_id', d.filter.userId);
    if (d.filter.from) q.set('from', d.filter.from);
    if (d.filter.to) q.set('to', d.filter.to);
    return { path: `/v1/events?${q.toString()}`, headers: d.account.key };
  });
}

const PAGE_QUERY = 'query Page($filter: EventFilterInput) { events(filter: $filter) { items { id accountId eventType platform externalId raw createdAt } total page limit pages } }';

/**
 * Draws of the same kind through GraphQL. Give it another seed than the REST pool's: both reach the
 * same kept pages (the events service's `list`), so the same draws would let one case warm the other.
 */
export function coldGraphqlPool(accounts: readonly BenchAccount[], eventsPerUser: number, count: number, seed: number): PoolRequest[] {
  return draws(accounts, eventsPerUser, count, seed).map((d) => ({
    path: '/v1/gql',
    method: 'POST',
    headers: { ...d.account.key, 'content-type': 'application/json' },
    body: JSON.stringify({ query: PAGE_QUERY, variables: { filter: { ...d.filter, page: d.page, limit: d.limit } } }),
  }));
}

/** Each account's own first page (`GET /v1/events?limit=25`). */
export function firstPagesPool(accounts: readonly BenchAccount[]): PoolRequest[] {
  return accounts.map((a) => ({ path: '/v1/events?limit=25', headers: a.key }));
}

export function writePool(file: string, pool: readonly PoolRequest[]): string {
  writeFileSync(file, JSON.stringify(pool));
  return file;
}

/** CPU (ms) used so far by the stores: the PostgreSQL backends serving `database` and the Redis server. */
export interface StoreCpu {
  postgresMs: number;
  redisMs: number;
  /** Transactions (every autocommit statement is one) PostgreSQL counted for `database`. */
  postgresTransactions: number;
}

/**
 * Samples the stores' CPU. PostgreSQL: the sum over the backends connected to the scratch
 * database (a backend that appeared since the last sample counts from 0); its own connection is
 * left out. Redis: the whole server process (shared with other users of the machine: an upper
 * bound). Both are read from /proc, so only stores on this machine are measured.
 */
export async function storeCpuSampler(databaseUrl: string | null, database: string | null, redisUrl: string | null) {
  const pg = databaseUrl ? new Client({ connectionString: databaseUrl }) : null;
  await pg?.connect();
  let redisPid: number | null = null;
  if (redisUrl) {
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1] ?? Number.NaN) || null;
    } finally {
      redis.disconnect();
    }
  }
  const seen = new Map<number, number>();
  let postgresTotal = 0;
  let first = true;
  return {
    async sample(): Promise<StoreCpu> {
      let postgresTransactions = 0;
      if (pg) {
        const res = await pg.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
        for (const { pid } of res.rows) {
          const now = cpuMillis(pid);
          if (!Number.isFinite(now)) continue;
          // A backend the first sample did not see connected since: all its CPU is new.
          postgresTotal += now - (seen.get(pid) ?? (first ? now : 0));
          seen.set(pid, now);
        }
        first = false;
        const stats = await pg.query<{ n: string }>('select xact_commit + xact_rollback as n from pg_stat_database where datname = $1', [database]);
        postgresTransactions = Number(stats.rows[0]?.n ?? 0);
      }
      return { postgresMs: postgresTotal, redisMs: redisPid ? cpuMillis(redisPid) : Number.NaN, postgresTransactions };
    },
    async close(): Promise<void> {
      await pg?.end();
    },
  };
}
