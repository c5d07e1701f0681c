/**
 * The bench (`npm run bench`; docs/guides/performance.md). Starts the service as its own process, as
 * `npm start` does (the production build, dist/main.js), on a scratch database (embedded PGlite in a temporary directory by default;
 * a throw-away database on the server of DATABASE_URL, and REDIS_URL under a fresh prefix, when
 * set), next to references in their own processes: a bare Express 5 JSON endpoint, a bare `ws`
 * broadcast server and, with the cold case, the cold page's floor (its statement on bare
 * node:http, scripts/bench/reference-page.ts; on the embedded store over its own PGlite, a copy
 * of the service's data) and the Express reference's answer on bare node:http (the yardstick of
 * the cold page's parts), and on PostgreSQL the events page's peer: what a team would write
 * instead (Fastify 5, node-postgres, pino; scripts/bench/reference-fastify.ts), each reference
 * compiled to plain JavaScript as the service is (lib.ts `compiledScript`), whose answers must
 * equal the service's on a sample before its cases count, compared round by round (same-round
 * ratios, judged on their median). autocannon (scripts/bench/load.ts) and the WebSocket client
 * (scripts/bench/ws-client.ts) each run in a process of their own. Service and reference runs
 * alternate, so both see the same machine load; each figure is the better of its rounds.
 *
 * Every figure is printed with its ratio to its reference; the run exits 1 when a ratio target
 * is missed, a case sees an error answer, or memory goes over its cap. The result also goes to a
 * JSON file (BENCH_OUT, default bench-results/<storage>-<time>.json) so runs can be compared.
 * BENCH_CPU_PROF=<dir> runs the service under `node --cpu-prof` and leaves the profile there (the
 * Fastify peer's in <dir>/peer, to compare the two); BENCH_HEAP_PROF=<dir> does the same with
 * `--heap-prof` (sampled allocations, by the function that made them); BENCH_NODE_FLAGS adds
 * Node flags to both measured processes (`--trace-gc`: the service's in its log).
 * Everything listens on 127.0.0.1; every run is bounded in count and in time.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createScratchDatabase, type ScratchDatabase } from '../src/infra/db/scratch';
import { coldGraphqlPool, coldRestPool, firstPagesPool, inParallel, COLD_REPEAT_DISTANCE, poolCursors, seededEvent, storeCpuSampler, writePool, type BenchAccount } from './bench/cold';
import type { LoadInput, LoadResult, PoolRequest } from './bench/load';
import { compiledScript, cpuMillis, firstJsonLine, freePort, HOST, memorySampler, productionBuild, residentMemory, ROOT, startNodeArgs, round, runJson, spawnJs, stop } from './bench/lib';
import type { WsInput, WsResult } from './bench/ws-client';

const onPostgres = Boolean(process.env.DATABASE_URL);
const storage = onPostgres ? 'postgres' : 'embedded';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const MAX_REQUESTS = 200_000;
/**
 * Each case runs this long before its rounds (BENCH_WARMUP), on every side alike: a deployed
 * process serves in its steady state, and V8 was still optimising the service's request path
 * after the 1.5 s warm-up this once was (about a fifth of its CPU in the first rounds went to the
 * optimising compiler, a few per cent from the third round on; the peer's smaller path settles sooner).
 */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 6);
const MILLION = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const MEMORY_CAP_MIB = onPostgres ? 300 : 900;
/**
 * BENCH_RATE=<req/s> sends every throughput case at that fixed rate instead of as fast as it is
 * answered: the service's CPU per request then compares two builds steadily on a shared machine,
 * where throughput moves with the neighbours (its ratios mean nothing, so the run passes nothing).
 */
const RATE = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
/**
 * BENCH_ONLY=health,events,graphql,members,cold,coldgql,live,accounts,ws,million runs only those
 * cases (profiling one path); the run then passes nothing.
 */
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;
const runs = (name: string) => !ONLY || ONLY.has(name);
/** The many-accounts case: this many accounts, each with its own key and events (BENCH_ACCOUNTS). */
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 1000);
/** The cold cases draw their users among the first of those accounts, each holding this many events. */
const COLD_USERS = 20;
const COLD_EVENTS_PER_USER = 240;
/** Distinct requests in each cold pool (each request draws one at random). */
const COLD_POOL = 50_000;
/** The live case: at most this many events emitted per second to the account whose page is read... */
const LIVE_EMITS_PER_SECOND = 50;
/** ...while this many readers (connections) ask its page. */
const LIVE_READERS = 50;
/** The live writer's emits waiting for their answer, at most. */
const LIVE_WRITER_IN_FLIGHT = 8;
/** Requests of the cold pool whose answers the Fastify peer must give byte for byte as the service does. */
const PEER_SAMPLE = Number(process.env.BENCH_PEER_SAMPLE ?? 1000);

interface Figure {
  case: string;
  measures: string;
  value: number;
  unit: 'req/s' | 'ms p99' | 'ms p90' | 'MiB' | 'sockets' | 'ms/req' | 'stmt/req' | 'per req' | '×' | 'emits/s';
  reference: string | null;
  referenceValue: number | null;
  ratio: number | null;
  target: string | null;
  ok: boolean;
  /**
   * The ratio of each round to its reference in the same round (printed beside the target's ratio,
   * never instead of it): when the machine's speed drifts during a run, the best round of each side
   * may come from different moments, and the per-round ratios show how far that moved the ratio.
   */
  perRound?: number[];
  detail?: Record<string, unknown>;
}

const figures: Figure[] = [];
const log = (line: string) => console.log(line);
/** A process's resident memory now and its peak so far, for the progress lines. */
const rss = (pid: number): string => {
  const m = residentMemory(pid);
  return m ? `${m.rssMiB.toFixed(0)} (peak ${m.peakMiB.toFixed(0)})` : '?';
};

function throughputFigure(name: string, measures: string, runs: LoadResult[], reference: { name: string; runs: LoadResult[] } | null, minRatio: number | null): Figure {
  const best = (rs: LoadResult[]) => Math.max(...rs.map((r) => r.rps));
  const failed = runs.some((r) => r.non2xx > 0 || r.errors > 0);
  const value = best(runs);
  const referenceValue = reference ? best(reference.runs) : null;
  const ratio = referenceValue ? value / referenceValue : null;
  const ok = !failed && (minRatio === null || (ratio !== null && ratio >= minRatio));
  const detail = {
    rounds: runs.map((r) => ({
      rps: round(r.rps, 0),
      cpu_ms_per_request: round(r.cpuMsPerRequest ?? Number.NaN, 3),
      ...(r.store ? { postgres_cpu_ms_per_request: round(r.store.postgresMs, 3), redis_cpu_ms_per_request: round(r.store.redisMs, 3), postgres_transactions_per_request: round(r.store.transactions, 2) } : {}),
      p50_ms: r.p50Ms, p99_ms: r.p99Ms, requests: r.requests, non2xx: r.non2xx, errors: r.errors })),
  };
  const perRound = reference && reference.runs.length === runs.length ? runs.map((r, i) => round(r.rps / reference.runs[i]!.rps, 2)) : undefined;
  return { case: name, measures, value: round(value, 0), unit: 'req/s', reference: reference?.name ?? null, referenceValue: referenceValue === null ? null : round(referenceValue, 0), ratio: ratio === null ? null : round(ratio, 2), target: minRatio === null ? null : `>= ${minRatio}`, ok, ...(perRound ? { perRound } : {}), detail };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  log(`bench: ${storage}${process.env.REDIS_URL ? ' + Redis' : ''}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}, load ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  // The service as deployed (dist/main.js, built when stale), the references compiled alike (lib.ts).
  const serviceMain = productionBuild();
  const [httpRefJs, wsRefJs, floorJs, peerJs] = await Promise.all(
    ['scripts/bench/reference-http.ts', 'scripts/bench/reference-ws.ts', 'scripts/bench/reference-page.ts', 'scripts/bench/reference-fastify.ts'].map(compiledScript),
  );
  const work = mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  const scratch: ScratchDatabase | null = onPostgres ? await createScratchDatabase(process.env.DATABASE_URL!, 'bench') : null;
  const [port, metricsPort] = [await freePort(), await freePort()];
  const configFile = path.join(work, 'config.json');
  // As `npm start` runs it (development defaults: info logs, dev login), except that limits sit
  // high enough never to refuse the load; they stay on, so their cost is measured.
  writeFileSync(
    configFile,
    JSON.stringify({
      host: HOST,
      redis_prefix: `bench:${randomBytes(4).toString('hex')}:`,
      metrics: { host: HOST, port: metricsPort },
      rate_limits: { api_key: 1_000_000_000, jwt: 1_000_000_000, token: 1_000_000_000, anonymous: 1_000_000_000 },
      realtime: { max_sockets_per_credential: 10_000, max_sockets_per_address: 10_000 },
    }),
  );
  const serviceLog = path.join(work, 'service.log');
  const profileDir = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : null;
  const heapProfileDir = process.env.BENCH_HEAP_PROF ? path.resolve(process.env.BENCH_HEAP_PROF) : null;
  /** The profilers' flags for one measured process, its profiles in `dir` under each profile's directory. */
  const profiling = (dir: string): string[] => [
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profileDir, dir)}`] : []),
    ...(heapProfileDir ? ['--heap-prof', `--heap-prof-dir=${path.join(heapProfileDir, dir)}`] : []),
    ...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ').filter(Boolean) : []),
  ];
  const serviceEnv = {
    PORT: String(port),
    SVC_CONFIG: configFile,
    SVC_DATA_DIR: path.join(work, 'data'),
    ...(scratch ? { DATABASE_URL: scratch.url } : {}),
  };
  // A first start creates the scratch database and runs every migration, then stops: the measured
  // process serves an existing database, as a deployed one does (PGlite's one-time initdb and
  // migrations hold about 400 MiB of WebAssembly memory that a restarted process never takes).
  // The cold and many-accounts cases' accounts, keys and events are made by that first process
  // too, so that a profile of the measured one (BENCH_CPU_PROF) holds the measured cases alone.
  log('preparing the scratch database (first start: migrations, accounts and events)');
  const first = spawnJs(serviceMain, [], { env: serviceEnv, stdout: openSync(serviceLog, 'a') });
  /** The pool file of each cold or many-accounts case. */
  const pools: Record<string, string> = {};
  /** What a sample of the cold REST pool answers (`sampledFill`). */
  let poolFill: { empty: number; items: number } | null = null;
  /** The cold REST pool's last requests: the sample whose answers the peer must give as the service does (`sameAnswers`). */
  let peerSample: PoolRequest[] = [];
  try {
    const base = `http://${HOST}:${port}`;
    await waitForHealth(base, 180_000, first);
    if (runs('cold') || runs('coldgql') || runs('accounts')) {
      const t0 = performance.now();
      const accounts: BenchAccount[] = new Array(ACCOUNTS);
      await inParallel(Array.from({ length: ACCOUNTS }, (_, i) => i), 16, async (i) => {
        const user = await call<{ access_token: string; account_id: string }>(base, 'POST', '/v1/auth/dev/login', undefined, { email: `bench-${i}@example.test`, display_name: `Bench ${i}` });
        const made = await call<{ key: string }>(base, 'POST', '/v1/api-keys', { authorization: `Bearer ${user.access_token}` }, { label: 'bench', permissions: ['events:read', 'events:create'] });
        accounts[i] = { accountId: user.account_id, key: { authorization: `Bearer ${made.key}` } };
      });
      const emits = accounts.flatMap((a, i) => Array.from({ length: i < COLD_USERS ? COLD_EVENTS_PER_USER : 1 }, (_, n) => ({ a, n })));
      await inParallel(emits, 16, async ({ a, n }) => void (await call(base, 'POST', '/v1/events/emit', a.key, seededEvent(n))));
      log(`  ${ACCOUNTS} accounts with a key each, ${emits.length} events, in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      const coldUsers = accounts.slice(0, COLD_USERS);
      const restPool = coldRestPool(coldUsers, COLD_EVENTS_PER_USER, COLD_POOL, 27);
      pools.cold = writePool(path.join(work, 'cold-rest.json'), restPool);
      // The floor and the peer walk copies of the pool, each from its start with a cursor of its
      // own: they ask the pages the service asks, in the same order, and leave the service's walk
      // to the service (sharing one cursor, the pool came around within a few rounds).
      pools.coldFloor = writePool(path.join(work, 'cold-rest-floor.json'), restPool);
      pools.coldPeer = writePool(path.join(work, 'cold-rest-peer.json'), restPool);
      peerSample = restPool.slice(-PEER_SAMPLE);
      pools.coldgql = writePool(path.join(work, 'cold-graphql.json'), coldGraphqlPool(coldUsers, COLD_EVENTS_PER_USER, COLD_POOL, 28));
      pools.accounts = writePool(path.join(work, 'accounts.json'), firstPagesPool(accounts));
      if (runs('cold')) {
        poolFill = await sampledFill(base, restPool.slice(-POOL_FILL_SAMPLE));
        log(`  cold pool: ${POOL_FILL_SAMPLE} requests from its end, asked of the set-up process: ${poolFill.empty} empty pages, ${poolFill.items.toFixed(1)} events a page`);
      }
    }
  } finally {
    await stop(first);
  }
  // The embedded floor reads a copy of the data the first start made: PGlite's directory is its
  // process's own, so the measured service and the floor cannot share one.
  const floorData = !onPostgres && runs('cold') ? path.join(work, 'floor-pglite') : null;
  if (floorData) cpSync(path.join(work, 'data', 'pglite'), floorData, { recursive: true });
  const service = spawnJs(serviceMain, [], {
    env: serviceEnv,
    stdout: openSync(serviceLog, 'a'),
    nodeArgs: [...startNodeArgs(), ...profiling('.')],
  });
  // The references run with the service's Node options too (heap bounds, young generation size):
  // a ratio then compares the code, not V8 settings one side has and the other lacks.
  const httpRef = spawnJs(httpRefJs, ['0'], { nodeArgs: startNodeArgs() });
  const wsRef = spawnJs(wsRefJs, ['0'], { nodeArgs: startNodeArgs() });
  // The cold page's floor (reference-page.ts): the same statement on bare node:http, against the
  // service's database on PostgreSQL, on its own PGlite over a copy of the data on the embedded store.
  const floorEnv = scratch ? { DATABASE_URL: scratch.url } : floorData ? { FLOOR_PGLITE_DIR: floorData } : null;
  const floorRef = floorEnv && runs('cold') ? spawnJs(floorJs, ['0'], { env: floorEnv, nodeArgs: startNodeArgs() }) : null;
  // The same answer as the Express reference on bare node:http, beside the cold case: what Express
  // itself costs, and the yardstick the cold page's parts are measured against (partsFigure).
  const bareRef = runs('cold') ? spawnJs(httpRefJs, ['0', 'node'], { nodeArgs: startNodeArgs() }) : null;
  // The events page's peer (reference-fastify.ts): what a team would write instead, on the
  // service's database. PostgreSQL only: the embedded store's database lives in the service's
  // process, and a peer over its own PGlite would measure PGlite in two processes, not the peer.
  const peerRef = scratch && (runs('cold') || runs('events')) ? spawnJs(peerJs, ['0'], { env: { DATABASE_URL: scratch.url, PEER_LOG: path.join(work, 'peer.log') }, nodeArgs: [...startNodeArgs(), ...profiling('peer')] }) : null;
  const children = [service, httpRef, wsRef, ...(floorRef ? [floorRef] : []), ...(bareRef ? [bareRef] : []), ...(peerRef ? [peerRef] : [])];
  let failure: unknown = null;
  try {
    const base = `http://${HOST}:${port}`;
    const refHttp = `http://${HOST}:${(await firstJsonLine<{ port: number }>(httpRef, 30_000, 'Express reference')).port}`;
    const refWs = `${HOST}:${(await firstJsonLine<{ port: number }>(wsRef, 30_000, 'ws reference')).port}`;
    const floorBase = floorRef ? `http://${HOST}:${(await firstJsonLine<{ port: number }>(floorRef, 60_000, 'cold page floor')).port}` : null;
    const bareBase = bareRef ? `http://${HOST}:${(await firstJsonLine<{ port: number }>(bareRef, 30_000, 'node:http reference')).port}` : null;
    const peerBase = peerRef ? `http://${HOST}:${(await firstJsonLine<{ port: number }>(peerRef, 60_000, 'Fastify peer')).port}` : null;
    await waitForHealth(base, 120_000, service);
    const memory = memorySampler(service.pid!);
    log(`service pid ${service.pid} on ${base}; logs in ${serviceLog}`);

    // A user with a session (JWT), and a personal key of theirs for events.
    const login = await call<{ access_token: string; account_id: string }>(base, 'POST', '/v1/auth/dev/login', undefined, { email: 'bench@example.test', display_name: 'Bench' });
    const jwt = { authorization: `Bearer ${login.access_token}` };
    const created = await call<{ key: string }>(base, 'POST', '/v1/api-keys', jwt, { label: 'bench', permissions: ['events:read', 'events:create'] });
    const key = { authorization: `Bearer ${created.key}` };
    const accountId = login.account_id;
    const emitBody = (seq: number | string, i = 0) =>
      JSON.stringify({ type: 'platform_a:follow', platform: 'platform_a', raw: { bench_seq: seq, user_id: `viewer-${i % 50}`, username: `Viewer ${i % 50}`, message: 'Thanks for the follow!' } });
    for (let i = 0; i < 200; i += 1) await call(base, 'POST', '/v1/events/emit', key, JSON.parse(emitBody(0, i)));

    const stores = await storeCpuSampler(scratch?.url ?? null, scratch?.name ?? null, onPostgres ? (process.env.REDIS_URL ?? null) : null);
    const gqlBody = JSON.stringify({
      query: 'query Page($filter: EventFilterInput) { events(filter: $filter) { items { id accountId eventType platform externalId raw createdAt } total page limit pages } }',
      variables: { filter: { limit: 25 } },
    });
    const all: { name: string; pid: number; input: Omit<LoadInput, 'connections' | 'seconds' | 'maxRequests'>; connections?: number }[] = [
      { name: 'express', pid: httpRef.pid!, input: { url: `${refHttp}/json` } },
      ...(bareRef && bareBase ? [{ name: 'bare', pid: bareRef.pid!, input: { url: `${bareBase}/json` } }] : []),
      { name: 'health', pid: service.pid!, input: { url: `${base}/v1/health` } },
      { name: 'events', pid: service.pid!, input: { url: `${base}/v1/events?limit=25`, headers: key } },
      ...(peerRef && peerBase && runs('events') ? [{ name: 'peerkept', pid: peerRef.pid!, input: { url: `${peerBase}/v1/events?limit=25`, headers: key } }] : []),
      { name: 'graphql', pid: service.pid!, input: { url: `${base}/v1/gql`, method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: gqlBody } },
      { name: 'members', pid: service.pid!, input: { url: `${base}/v1/account/members`, headers: jwt } },
      { name: 'cold', pid: service.pid!, input: { url: `${base}/v1/events`, poolFile: pools.cold } },
      ...(peerRef && peerBase && runs('cold') ? [{ name: 'peer', pid: peerRef.pid!, input: { url: `${peerBase}/v1/events`, poolFile: pools.coldPeer } }] : []),
      ...(floorRef && floorBase ? [{ name: 'floor', pid: floorRef.pid!, input: { url: `${floorBase}/v1/events`, poolFile: pools.coldFloor } }] : []),
      { name: 'coldgql', pid: service.pid!, input: { url: `${base}/v1/gql`, poolFile: pools.coldgql } },
      { name: 'live', pid: service.pid!, input: { url: `${base}/v1/events?limit=25`, headers: key }, connections: LIVE_READERS },
      { name: 'accounts', pid: service.pid!, input: { url: `${base}/v1/events`, poolFile: pools.accounts } },
    ];
    const cases = all.filter((c) => c.name === 'express' || c.name === 'bare' || c.name === 'floor' || c.name === 'peer' || c.name === 'peerkept' || runs(c.name));
    const results: Record<string, LoadResult[]> = Object.fromEntries(cases.map((c) => [c.name, []]));
    // The cold pools are walked in order, each run where the last one stopped (cold.ts).
    const cursors = poolCursors([pools.cold, pools.coldFloor, pools.coldPeer, pools.coldgql].filter((file): file is string => file !== undefined));
    const load = async (input: Omit<LoadInput, 'connections' | 'seconds' | 'maxRequests'>, seconds: number, connections = CONNECTIONS): Promise<LoadResult> => {
      const result = await runJson<LoadResult>(
        'scripts/bench/load.ts',
        { ...cursors.place(input), connections, seconds, maxRequests: MAX_REQUESTS, ...(RATE && !input.paths ? { rate: RATE } : {}) },
        (seconds + 30) * 1000,
        `load ${input.url}`,
      );
      cursors.advance(input, result.requests, connections);
      return result;
    };
    // The peer counts only once it answers as the service does: the kept page's URL and the
    // cold pool's last requests (which no run reaches: their keys are forgotten long before the
    // walk gets there), each asked of both, bodies compared byte for byte.
    let peerChecked: { compared: number; differing: number; example?: string } | null = null;
    if (peerBase) {
      const sample: PoolRequest[] = [{ path: '/v1/events?limit=25', headers: key }, ...(runs('cold') ? peerSample : [])];
      peerChecked = await sameAnswers(base, peerBase, sample);
      log(`  Fastify peer: ${peerChecked.compared} answers compared with the service's, ${peerChecked.differing} differing${peerChecked.example ? ` (first: ${peerChecked.example})` : ''}`);
      if (peerChecked.differing > 0) throw new Error('the Fastify peer answers differently from the service: its figures would compare other work');
    }
    log(`warming up (${WARMUP_SECONDS} s a case)`);
    for (const c of cases) await load(c.input, WARMUP_SECONDS, c.connections);
    // The live case's writer: LIVE_EMITS_PER_SECOND emits a second to the read account while it
    // runs, each sent on its tick whether the last one was answered or not (events arrive as they
    // happen on the platforms), with at most LIVE_WRITER_IN_FLIGHT unanswered: a tick that finds
    // that many skips its emit. The emits the service accepted (2xx) per second tell whether it
    // kept the writer's pace.
    const liveWriter = () => {
      let accepted = 0;
      let refused = 0;
      let skipped = 0;
      let inFlight = 0;
      let n = 0;
      const started = performance.now();
      const send = () => {
        if (inFlight >= LIVE_WRITER_IN_FLIGHT) {
          skipped += 1;
          return;
        }
        inFlight += 1;
        fetch(`${base}/v1/events/emit`, { method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: emitBody(`live-${n}`, n) })
          .then(async (res) => {
            await res.arrayBuffer();
            if (res.ok) accepted += 1;
            else refused += 1;
          })
          .catch(() => {
            refused += 1;
          })
          .finally(() => {
            inFlight -= 1;
          });
      };
      // Each tick sends the emits due by now: a timer late on a loaded machine delays emits, it
      // does not drop them.
      const timer = setInterval(() => {
        const due = Math.floor(((performance.now() - started) * LIVE_EMITS_PER_SECOND) / 1000);
        for (; n < due; n += 1) send();
      }, 1000 / LIVE_EMITS_PER_SECOND);
      return async () => {
        clearInterval(timer);
        const seconds = (performance.now() - started) / 1000;
        // Emits still on their way count if answered within a second more.
        for (let waited = 0; inFlight > 0 && waited < 1000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
        return { accepted, refused, skipped, seconds, rate: accepted / seconds };
      };
    };
    // The statements the service sent, from its own counter: exact at any instant, where
    // pg_stat_database's transactions arrive up to a second late per backend (and not on embedded).
    // So are the event pages a kept result answered: a cold case that a kept page answers measures
    // the cache, not the path without it.
    const serviceCounts = async (): Promise<{ statements: number; keptPages: number }> => {
      const lines = (await (await fetch(`http://${HOST}:${metricsPort}/metrics`)).text()).split('\n');
      const value = (prefix: string, label: string): number | undefined => {
        const line = lines.find((l) => l.startsWith(`${prefix}{`) && l.includes(label));
        return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
      };
      const statements = value('svc_db_statements_total', 'pool="relational"');
      if (statements === undefined) throw new Error('the service exposes no svc_db_statements_total');
      // REST reads the page as JSON text (events.text), GraphQL as objects (events.page).
      const keptPages = (value('svc_kept_answers_total', 'read="events.page"') ?? 0) + (value('svc_kept_answers_total', 'read="events.text"') ?? 0);
      return { statements, keptPages };
    };
    for (let r = 1; r <= ROUNDS; r += 1) {
      for (const c of cases) {
        const onService = c.pid === service.pid;
        const countsBefore = onService ? await serviceCounts() : null;
        const storeBefore = onService || c.name === 'floor' || c.name === 'peer' || c.name === 'peerkept' ? await stores.sample() : null;
        const cpuBefore = cpuMillis(c.pid);
        const stopWriter = c.name === 'live' ? liveWriter() : null;
        const result = await load(c.input, SECONDS, c.connections);
        if (stopWriter) result.writer = await stopWriter();
        result.cpuMsPerRequest = (cpuMillis(c.pid) - cpuBefore) / result.requests;
        if (countsBefore !== null) {
          const after = await serviceCounts();
          result.statements = (after.statements - countsBefore.statements) / result.requests;
          result.keptPages = (after.keptPages - countsBefore.keptPages) / result.requests;
        }
        if (storeBefore) {
          // PostgreSQL publishes a backend's counts when it goes idle, at most once a second.
          if (onPostgres) await new Promise((resolve) => setTimeout(resolve, 1100));
          const after = await stores.sample();
          result.store = {
            postgresMs: (after.postgresMs - storeBefore.postgresMs) / result.requests,
            redisMs: (after.redisMs - storeBefore.redisMs) / result.requests,
            transactions: (after.postgresTransactions - storeBefore.postgresTransactions) / result.requests,
          };
        }
        results[c.name]!.push(result);
        const storeLine = result.store && onPostgres ? `  postgres ${result.store.postgresMs.toFixed(3)} ms/req (${result.store.transactions.toFixed(2)} xact/req)  redis ${result.store.redisMs.toFixed(3)} ms/req` : '';
        const statementLine = result.statements === undefined ? '' : `  ${result.statements.toFixed(2)} stmt/req  kept pages ${(result.keptPages ?? 0).toFixed(2)}/req`;
        const writerLine = result.writer ? `  writer ${result.writer.rate.toFixed(1)} emits/s accepted (${result.writer.refused} refused, ${result.writer.skipped} skipped)` : '';
        log(`  round ${r} ${c.name.padEnd(8)} ${result.rps.toFixed(0).padStart(6)} req/s  p50 ${result.p50Ms} ms  p99 ${result.p99Ms} ms  cpu ${result.cpuMsPerRequest.toFixed(3)} ms/req${statementLine}${storeLine}${writerLine}  rss ${rss(c.pid)} MiB${result.non2xx || result.errors ? `  non-2xx ${result.non2xx} errors ${result.errors}` : ''}`);
      }
    }
    await stores.close();
    const express = { name: 'bare Express 5 JSON endpoint', runs: results.express! };
    if (runs('health')) figures.push(throughputFigure('GET /v1/health', 'public route through the whole middleware chain; probe results served from the background loop', results.health!, express, 0.8));
    if (runs('events')) figures.push(throughputFigure('GET /v1/events?limit=25 (personal API key)', 'key look-up, rate limit, request validation, gates, a real page query with its count', results.events!, express, onPostgres ? 0.5 : null));
    if (runs('graphql') && runs('events')) figures.push(throughputFigure('POST /v1/gql events(filter: { limit: 25 })', 'the same page through GraphQL (document cache, gates, cost, rate limit)', results.graphql!, { name: 'GET /v1/events?limit=25', runs: results.events! }, 0.8));
    if (runs('members')) figures.push(throughputFigure('GET /v1/account/members (JWT session)', 'JWT verification, session row and live roles, the member list query', results.members!, express, 0.4));
    if (runs('cold')) {
      figures.push(throughputFigure('cold: GET /v1/events, random page/size/filter/user', `each request is the next of ${COLD_POOL} random pages (limit 10-50, no filter or types, platform, user_id or a time window, a page among those the filter fills) of ${COLD_USERS} users holding ${COLD_EVENTS_PER_USER} events each, sent in order, none repeated within ${COLD_REPEAT_DISTANCE} requests: no kept result answers, every request runs its page query (reported: its targets are against the Fastify peer and the floor)`, results.cold!, express, null));
      figures.push(keptFigure('cold: pages a kept page answered (REST)', results.cold!));
      if (poolFill) figures.push(fillFigure(poolFill));
      figures.push(cpuFigure('cold: service CPU per request vs bare Express', 'CPU of the service process per cold page against the bare Express process per answer, same run (reported: the CPU target is against the Fastify peer)', results.cold!, express.runs, null));
    }
    if (results.peer && results.cold) {
      const peerName = 'Fastify peer (reference-fastify.ts)';
      const onStores = (r: LoadResult) => (r.cpuMsPerRequest ?? Number.NaN) + (r.store ? r.store.postgresMs + r.store.redisMs : Number.NaN);
      figures.push(sameRoundFigure('cold vs peer: throughput', 'the cold REST case against the Fastify peer on the same pool (its next requests), same round: service req/s / peer req/s', results.cold, results.peer, (r) => r.rps, peerName, { atLeast: 1.0 }));
      figures.push(sameRoundFigure('cold vs peer: server CPU per request', 'CPU of the service process per cold page / CPU of the peer process per page, same round (lower is better)', results.cold, results.peer, (r) => r.cpuMsPerRequest ?? Number.NaN, peerName, { atMost: 1.0 }));
      figures.push(sameRoundFigure('cold vs peer: CPU of server + PostgreSQL + Redis', 'the server process, the PostgreSQL backends of the scratch database and the Redis server, per page, same round (Redis is the whole server, shared with the machine: an upper bound on both sides)', results.cold, results.peer, onStores, peerName, {}));
      figures.push(sameRoundFigure('cold vs peer: p99', "the cold case's p99 latency / the peer's, same round (lower is better)", results.cold, results.peer, (r) => r.p99Ms, peerName, { atMost: 1.2 }));
    }
    if (results.peerkept && results.events) {
      figures.push(sameRoundFigure('kept page vs peer: throughput', "the events case (a kept page through the whole pipeline) against the peer asked the same URL with the same key, same round", results.events, results.peerkept, (r) => r.rps, 'Fastify peer, GET /v1/events?limit=25', { atLeast: 3.0 }));
    }
    if (results.floor) {
      const floorMeasures = "the cold REST pool's requests answered by bare node:http through the service's events domain alone (its `list` and repo) (scripts/bench/reference-page.ts: no pipeline, no wire mapping, no ETag, log or metrics): what the statement and the machine allow a cold page";
      figures.push(throughputFigure('floor: the cold page without the pipeline', floorMeasures, results.floor, express, null));
      figures.push(cpuFigure('floor: its CPU per request vs bare Express', 'CPU of the floor process per cold page against the bare Express process per answer, same run', results.floor, express.runs, null));
      figures.push(sameRoundFigure('cold vs floor: throughput', 'the cold REST case against the floor on the same pool, same round: the share of the floor the pipeline leaves', results.cold!, results.floor, (r) => r.rps, 'floor (bare node:http + events domain)', onPostgres ? { atLeast: 0.8 } : {}));
    }
    if (results.bare) {
      figures.push(cpuFigure('bare node:http: its CPU per answer vs bare Express', "the Express reference's answer on node:http alone (reference-http.ts `node`): Express 5's own share of the yardstick", results.bare, express.runs, null));
      if (results.floor && results.events) figures.push(partsFigure(results.events, results.floor, results.bare, express.runs));
    }
    if (runs('coldgql') && runs('cold')) {
      figures.push(throughputFigure('cold: POST /v1/gql events(filter), random draws', 'draws of the same kind (another seed, so that neither case warms the other) through GraphQL, in order as the REST case', results.coldgql!, { name: 'cold GET /v1/events', runs: results.cold! }, 0.9));
      figures.push(keptFigure('cold: pages a kept page answered (GraphQL)', results.coldgql!));
      figures.push(statementsFigure('cold: database statements per page, GraphQL vs REST', "statements the service sent per cold page through GraphQL against REST (its svc_db_statements_total: every statement is one transaction unless it runs in one; pg_stat_database's lagging count is printed per round)", results.coldgql!, results.cold!, 1.1));
    }
    if (runs('live')) {
      const live = results.live!;
      figures.push(throughputFigure(`live: ${LIVE_READERS} readers of GET /v1/events?limit=25, up to ${LIVE_EMITS_PER_SECOND} emits/s`, 'the repeated page of one account read by 50 connections while a writer emits events to it: each write makes the kept page stale', live, express, onPostgres ? 0.7 : null));
      const slowest = Math.min(...live.map((r) => r.writer?.rate ?? 0));
      figures.push({
        case: 'live: emits the writer had accepted, slowest round',
        measures: `the writer sends ${LIVE_EMITS_PER_SECOND} emits a second during every live round, at most ${LIVE_WRITER_IN_FLIGHT} unanswered (a tick finding that many skips its emit); every emit must be accepted at that pace (95 % of it, for timer slack)`,
        value: round(slowest, 1),
        unit: 'emits/s',
        reference: null,
        referenceValue: null,
        ratio: null,
        target: `>= ${0.95 * LIVE_EMITS_PER_SECOND}, none refused`,
        ok: slowest >= 0.95 * LIVE_EMITS_PER_SECOND && live.every((r) => r.writer !== undefined && r.writer.refused === 0 && r.writer.skipped === 0),
        detail: { rounds: live.map((r) => r.writer) },
      });
      if (onPostgres) {
        const perRead = live.map((r) => (r.store ? r.store.postgresMs + r.store.redisMs : Number.NaN));
        figures.push({
          case: 'live: CPU of PostgreSQL + Redis per read',
          measures: 'the PostgreSQL backends of the scratch database and the Redis server per answered read of the live case (the writes they took are in it), the least of the rounds',
          value: round(Math.min(...perRead), 3),
          unit: 'ms/req',
          reference: null,
          referenceValue: null,
          ratio: null,
          target: null,
          ok: true,
          detail: { rounds_ms: perRead.map((n) => round(n, 3)) },
        });
      }
    }
    if (runs('accounts')) figures.push(throughputFigure(`many accounts: ${ACCOUNTS} accounts, each its own first page`, 'GET /v1/events?limit=25, each request with the key of one of the accounts at random (own events, own key look-up)', results.accounts!, express, onPostgres ? 0.4 : null));

    // WebSocket fan-out: the service's emitted event against the bare broadcast of the same frame.
    const channel = `events:${accountId}`;
    const fanOut = (sockets: number, messages: number): Promise<WsResult> =>
      runJson<WsResult>(
        'scripts/bench/ws-client.ts',
        {
          url: `ws://${HOST}:${port}/v1/ws`,
          headers: key,
          subscribe: channel,
          sockets,
          messages,
          trigger: { url: `${base}/v1/events/emit`, method: 'POST', headers: key, body: emitBody(0) },
          gapMs: 50,
          waitMs: 5000,
          seconds: 90,
        } satisfies WsInput,
        150_000,
        `fan-out to ${sockets}`,
      );
    const reference = (sockets: number, messages: number, frame: string): Promise<WsResult> =>
      runJson<WsResult>(
        'scripts/bench/ws-client.ts',
        { url: `ws://${refWs}/ws`, sockets, messages, trigger: { url: `http://${refWs}/broadcast`, method: 'POST', body: frame }, gapMs: 50, waitMs: 5000, seconds: 90 } satisfies WsInput,
        150_000,
        `reference fan-out to ${sockets}`,
      );
    // Each message is 1,000 deliveries: with 30 messages (the first choice) one slow message alone
    // was over 1% of the deliveries and set the p99, on either side, so the ratio swung from 1.1 to
    // 2.1 between runs of the same code. With 100, the p99 is the tail of the slowest messages.
    const FAN_OUT_MESSAGES = 100;
    const service1k: WsResult[] = [];
    const reference1k: WsResult[] = [];
    for (let r = 1; r <= (runs('ws') ? ROUNDS : 0); r += 1) {
      const own = await fanOut(1000, FAN_OUT_MESSAGES);
      service1k.push(own);
      const frame = (own.sampleFrame ?? emitBody(0)).replace(/"bench_seq":\d+/, '"bench_seq":0');
      const bare = await reference(1000, FAN_OUT_MESSAGES, frame);
      reference1k.push(bare);
      log(`  round ${r} fan-out 1000: service p99 ${own.p99Ms.toFixed(2)} ms (p50 ${own.p50Ms.toFixed(2)}), bare ws p99 ${bare.p99Ms.toFixed(2)} ms (p50 ${bare.p50Ms.toFixed(2)})  rss ${rss(service.pid!)} MiB`);
    }
    const bestP99 = (rs: WsResult[]) => Math.min(...rs.map((r) => r.p99Ms));
    const wsClean = (rs: WsResult[]) => rs.every((r) => r.opened === r.sockets && r.dropped === 0 && r.missed === 0);
    if (runs('ws')) await webSocketFigures();
    async function webSocketFigures(): Promise<void> {
    const ws1k = bestP99(service1k);
    const wsRef1k = bestP99(reference1k);
    figures.push({
      case: 'WebSocket fan-out to 1,000 sockets (p99 delivery)',
      measures: 'POST /v1/events/emit → bus → every subscribed socket of events:{account_id}, timed per socket from the emit request; the reference broadcasts the same frame',
      value: round(ws1k),
      unit: 'ms p99',
      reference: 'bare ws broadcast',
      referenceValue: round(wsRef1k),
      ratio: round(ws1k / wsRef1k),
      target: '<= 1.5',
      ok: wsClean(service1k) && wsClean(reference1k) && ws1k <= 1.5 * wsRef1k,
      detail: { service: service1k.map(({ sampleFrame: _f, ...r }) => r), reference: reference1k.map(({ sampleFrame: _f, ...r }) => r) },
    });
    const five = await fanOut(5000, 10);
    log(`  fan-out 5000: opened ${five.opened}, dropped ${five.dropped}, missed ${five.missed}, p99 ${five.p99Ms.toFixed(2)} ms  rss ${rss(service.pid!)} MiB`);
    figures.push({
      case: 'WebSocket: 5,000 subscribed sockets on one node',
      measures: '5,000 sockets subscribed to one channel, 10 events each; none may be dropped or miss a frame',
      value: five.opened - five.dropped,
      unit: 'sockets',
      reference: null,
      referenceValue: null,
      ratio: null,
      target: 'all 5,000 kept, no frame missed',
      ok: five.opened === 5000 && five.dropped === 0 && five.missed === 0,
      detail: { p50_ms: round(five.p50Ms), p99_ms: round(five.p99Ms), max_ms: round(five.maxMs), deliveries: five.deliveries },
    });
    }

    if (scratch && runs('million')) await millionEvents(scratch.url, base, key, accountId, load);

    const peak = memory.peakMiB();
    memory.stop();
    figures.push({
      case: `Peak resident memory of the service (${onPostgres ? 'PostgreSQL' : 'embedded PGlite'})`,
      measures: 'highest VmRSS/VmHWM of the service process over the whole run',
      value: round(peak, 0),
      unit: 'MiB',
      reference: null,
      referenceValue: null,
      ratio: null,
      target: `<= ${MEMORY_CAP_MIB} MiB`,
      ok: peak <= MEMORY_CAP_MIB,
    });
  } catch (error) {
    failure = error;
  } finally {
    await Promise.all(children.map((child) => stop(child)));
    await scratch?.drop().catch((error: unknown) => console.error('could not drop the scratch database:', error));
    rmSync(work, { recursive: true, force: true });
  }
  if (failure) throw failure;

  log('');
  log(`${'case'.padEnd(52)} ${'figure'.padStart(14)} ${'reference'.padStart(14)} ${'ratio'.padStart(6)}  target`);
  for (const f of figures) {
    const ref = f.referenceValue === null ? '' : `${f.referenceValue} ${f.unit}`;
    log(`${f.ok ? 'ok  ' : 'MISS'} ${f.case.padEnd(47)} ${`${f.value} ${f.unit}`.padStart(14)} ${ref.padStart(14)} ${(f.ratio === null ? '' : f.ratio.toFixed(2)).padStart(6)}  ${f.target ?? '(reported)'}`);
    if (f.perRound && f.perRound.length > 1) {
      const sorted = [...f.perRound].sort((a, b) => a - b);
      const judged = f.unit === '×' ? `range ${sorted[0]!.toFixed(2)}–${sorted[sorted.length - 1]!.toFixed(2)}; the target is judged on the median` : `median ${median(sorted).toFixed(2)}; the target is judged on the best rounds, above`;
      log(`       the same round's ratios: ${f.perRound.map((r) => r.toFixed(2)).join(', ')} (${judged})`);
    }
  }
  // A fixed-rate run measures CPU per request only: its ratios are not the targets'.
  const passed = !RATE && figures.every((f) => f.ok);
  if (RATE) log(`fixed rate ${RATE} req/s: compare the cpu ms/req of the rounds; ratios are not measured`);
  const out = process.env.BENCH_OUT ?? path.join(ROOT, 'bench-results', `${storage}-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        started_at: startedAt.toISOString(),
        storage: onPostgres ? 'PostgreSQL' : 'embedded PGlite',
        cache_bus: process.env.REDIS_URL ? 'Redis' : 'in-process',
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? null, memory_gib: round(os.totalmem() / 2 ** 30, 1), node: process.version, load_average_at_start: os.loadavg() },
        settings: { rounds: ROUNDS, seconds: SECONDS, connections: CONNECTIONS },
        figures,
        ...(RATE ? { fixed_rate: RATE } : {}),
        passed,
      },
      null,
      2,
    )}\n`,
  );
  log(`\nresults: ${path.relative(ROOT, out)}`);
  process.exit(passed ? 0 : 1);
}

/**
 * One million events of one account, seeded with one INSERT ... SELECT generate_series, then the
 * filters of GET /v1/events, each answered one request at a time (a client waiting on its page):
 * p90 latency within 100 ms ("tens of milliseconds"), and each page plan on an index (no
 * sequential scan of events). Totals come from the per-day counts or an indexed count (events repo).
 */
async function millionEvents(
  url: string,
  base: string,
  key: Record<string, string>,
  accountId: string,
  load: (input: Omit<LoadInput, 'connections' | 'seconds' | 'maxRequests'>, seconds: number, connections?: number) => Promise<LoadResult>,
): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const t0 = performance.now();
    await client.query(
      `insert into events (id, account_id, type, platform, external_id, raw, hidden, created_at)
       select gen_random_uuid(), $1,
              (array['platform_a:follow','platform_a:subscription','platform_a:cheer','platform_b:membership','platform_c:follow'])[1 + g % 5],
              (array['platform_a','platform_b','platform_c'])[1 + g % 3],
              null,
              jsonb_build_object('user_id', 'user-' || (g % 5000), 'username', 'Viewer ' || (g % 5000), 'message', 'message number ' || g || ' from the bench', 'amount', g % 100),
              false,
              now() - (g * interval '2 seconds')
       from generate_series(1, $2::int) as g`,
      [accountId, MILLION],
    );
    await client.query('vacuum analyze events');
    const seeded = (performance.now() - t0) / 1000;
    log(`  seeded ${MILLION} events in ${seeded.toFixed(1)} s`);
    // Each filter is timed over 50 distinct requests (other values, pages or windows of the same
    // shape), sent once each and one at a time: none can be answered from a kept page
    // (src/infra/db/hot-read.ts), so every figure is the page query and its total.
    const DISTINCT = 50;
    const types = ['platform_a:follow', 'platform_a:subscription', 'platform_a:cheer', 'platform_b:membership', 'platform_c:follow'];
    const platforms = ['platform_a', 'platform_b', 'platform_c'];
    const window = (i: number) => {
      const to = new Date(Date.now() - (1 + i / 10) * 86_400_000);
      return { from: new Date(to.getTime() - 2 * 86_400_000).toISOString(), to: to.toISOString() };
    };
    const each = (make: (i: number) => string) => Array.from({ length: DISTINCT }, (_, i) => make(i));
    // The SQL of the events repository's page query (events.page) for each filter, with the
    // parameters of its first request (for EXPLAIN).
    // `search, all` matches every row: its exact `_meta.total` counts a million matches, which no
    // index can shorten; it is reported, not held to the 100 ms target.
    const variants: { name: string; paths: string[]; where: string; params: unknown[]; reportOnly?: boolean }[] = [
      { name: 'no filter', paths: each((i) => `&page=${i + 1}`), where: '', params: [] },
      { name: 'types', paths: each((i) => `&types=${types[i % 5]}&page=${1 + Math.floor(i / 5)}`), where: 'and type in ($2)', params: [types[0]] },
      { name: 'platform', paths: each((i) => `&platform=${platforms[i % 3]}&page=${1 + Math.floor(i / 3)}`), where: 'and platform in ($2)', params: [platforms[0]] },
      { name: 'user_id', paths: each((i) => `&user_id=user-${(i * 97) % 5000}`), where: "and (raw ->> 'user_id') = $2", params: ['user-0'] },
      { name: 'search', paths: each((i) => `&search=NUMBER%20${424242 + i * 1013}`), where: "and (raw::text) ilike $2 escape '\\'", params: ['%NUMBER 424242%'] },
      { name: 'search, all', paths: each((i) => `&search=FROM%20THE%20BENCH&page=${i + 1}`), where: "and (raw::text) ilike $2 escape '\\'", params: ['%FROM THE BENCH%'], reportOnly: true },
      {
        name: 'time range',
        paths: each((i) => `&from=${encodeURIComponent(window(i).from)}&to=${encodeURIComponent(window(i).to)}`),
        where: 'and created_at > $2 and created_at < $3',
        params: [window(0).from, window(0).to],
      },
      { name: 'page 2,000', paths: each((i) => `&page=${2000 + i}`), where: '', params: [] },
    ];
    for (const v of variants) {
      const res = await client.query<{ 'QUERY PLAN': string }>(`explain select * from events where account_id = $1 and hidden = false ${v.where} order by created_at desc, id desc limit 25`, [accountId, ...v.params]);
      const plan = res.rows.map((r) => r['QUERY PLAN']).join('\n');
      const indexed = !/Seq Scan on events/.test(plan);
      const result = await load({ url: `${base}/v1/events`, headers: key, paths: v.paths.map((q) => `/v1/events?limit=25${q}`) }, 60, 1);
      log(`  1M events, ${v.name.padEnd(10)} p50 ${result.p50Ms} ms  p90 ${result.p90Ms} ms  p99 ${result.p99Ms} ms  (${result.requests} distinct requests, one at a time)  page ${indexed ? 'index' : 'SEQUENTIAL SCAN'}`);
      figures.push({
        case: `1M events: GET /v1/events?limit=25 (${v.name})`,
        measures: 'a filtered page with its exact total over one account holding a million events; 50 distinct requests (none answered from a kept page), one at a time; the page query must use an index',
        value: result.p90Ms,
        unit: 'ms p90',
        reference: null,
        referenceValue: null,
        ratio: null,
        target: v.reportOnly ? null : '<= 100 ms, page on an index',
        // A reported variant has no target: its requests take seconds each, and as many as the
        // run's time bound lets through are its figure (printed with their count).
        ok: indexed && (v.reportOnly ? result.requests > 0 : result.requests === DISTINCT && result.p90Ms <= 100) && result.non2xx === 0 && result.errors === 0,
        detail: { p50_ms: result.p50Ms, p99_ms: result.p99Ms, requests: result.requests, seed_seconds: round(seeded, 1), plan_page: plan },
      });
    }
  } finally {
    await client.end();
  }
}

/** The middle value (the mean of the two middle ones for an even count). */
function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/**
 * A ratio taken round by round (`measure` of the service's run / the reference's in the same
 * round): on a shared machine both sides of one round saw the same neighbours, where the best
 * rounds of each side may come from different moments. Judged on the median; the range is printed.
 */
function sameRoundFigure(name: string, measures: string, runs: LoadResult[], reference: LoadResult[], measure: (r: LoadResult) => number, referenceName: string, target: { atLeast?: number; atMost?: number }): Figure {
  const ratios = runs.map((r, i) => measure(r) / measure(reference[i]!));
  const sorted = [...ratios].sort((a, b) => a - b);
  const middle = median(ratios);
  const failed = [...runs, ...reference].some((r) => r.non2xx > 0 || r.errors > 0);
  const ok = !failed && Number.isFinite(middle) && (target.atLeast === undefined || middle >= target.atLeast) && (target.atMost === undefined || middle <= target.atMost);
  return {
    case: name,
    measures,
    value: round(middle, 2),
    unit: '×',
    reference: referenceName,
    referenceValue: null,
    ratio: round(middle, 2),
    target: target.atLeast !== undefined ? `median >= ${target.atLeast}` : target.atMost !== undefined ? `median <= ${target.atMost}` : null,
    ok,
    perRound: ratios.map((x) => round(x, 2)),
    detail: { median: round(middle, 3), min: round(sorted[0]!, 3), max: round(sorted[sorted.length - 1]!, 3), service_median: round(median(runs.map(measure)), 3), reference_median: round(median(reference.map(measure)), 3) },
  };
}

/**
 * Asks every request of `sample` of the service and of the peer (8 at a time) and compares the
 * bodies byte for byte: the peer's figures count only when it does the same work.
 */
async function sameAnswers(base: string, peerBase: string, sample: readonly PoolRequest[]): Promise<{ compared: number; differing: number; example?: string }> {
  let differing = 0;
  let example: string | undefined;
  const body = async (origin: string, request: PoolRequest): Promise<string> => {
    const send = () => fetch(`${origin}${request.path}`, { headers: request.headers });
    const res = await send().catch(send);
    const text = await res.text();
    return `${res.status} ${text}`;
  };
  await inParallel(sample, 8, async (request) => {
    const [own, peer] = await Promise.all([body(base, request), body(peerBase, request)]);
    if (own !== peer) {
      differing += 1;
      example ??= `${request.path}: service ${own.slice(0, 300)} | peer ${peer.slice(0, 300)}`;
    }
  });
  return { compared: sample.length, differing, ...(example ? { example } : {}) };
}

/** The service's best CPU per request against the reference's, as a ratio (lower is better). */
/** The least CPU per request among a case's rounds. */
const leastCpu = (rs: LoadResult[]): number => Math.min(...rs.map((r) => r.cpuMsPerRequest ?? Number.NaN));

function cpuFigure(name: string, measures: string, runs: LoadResult[], reference: LoadResult[], maxRatio: number | null): Figure {
  const value = leastCpu(runs);
  const referenceValue = leastCpu(reference);
  const ratio = value / referenceValue;
  return { case: name, measures, value: round(value, 3), unit: 'ms/req', reference: 'bare Express 5 JSON endpoint', referenceValue: round(referenceValue, 3), ratio: round(ratio, 2), target: maxRatio === null ? null : `<= ${maxRatio}`, ok: maxRatio === null || ratio <= maxRatio };
}

/**
 * About the least a cold page costs the service, from parts measured in the same run: the pipeline as
 * a kept page runs it (the events case: credential, rate limit, validation, gates, ETag, access log,
 * a kept answer) plus what the floor spends on the page beyond a bare node:http answer (the
 * statement, its parse and its answer). A cold page runs both, and maps and hashes a fresh answer
 * besides; so a CPU target below this figure asks the pipeline itself to be cheaper than on the
 * kept path. Reported against the cold case's CPU target, as a ratio to bare Express.
 */
function partsFigure(kept: LoadResult[], floor: LoadResult[], bare: LoadResult[], express: LoadResult[]): Figure {
  const value = leastCpu(kept) + leastCpu(floor) - leastCpu(bare);
  const referenceValue = leastCpu(express);
  return {
    case: 'cold: its parts (kept page + floor - bare node:http)',
    measures: 'CPU per request of the events case (a kept page through the whole pipeline) plus the floor beyond a bare node:http answer, best rounds, against bare Express: about the least a cold page costs the service with this pipeline',
    value: round(value, 3),
    unit: 'ms/req',
    reference: 'bare Express 5 JSON endpoint',
    referenceValue: round(referenceValue, 3),
    ratio: round(value / referenceValue, 2),
    target: null,
    ok: true,
    detail: { kept_ms: round(leastCpu(kept), 3), floor_ms: round(leastCpu(floor), 3), bare_ms: round(leastCpu(bare), 3) },
  };
}

/**
 * The share of a cold case's requests that a kept event page answered (svc_kept_answers_total): at
 * most one in a hundred, or the case measured the cache (before its pools were walked in
 * order, a fifth of the cold pages were kept ones).
 */
function keptFigure(name: string, runs: LoadResult[]): Figure {
  const value = Math.max(...runs.map((r) => r.keptPages ?? Number.NaN));
  return { case: name, measures: 'event pages answered by a kept page per request, the largest of the rounds', value: round(value, 3), unit: 'per req', reference: null, referenceValue: null, ratio: null, target: '<= 0.01', ok: value <= 0.01 };
}

/** How many of the cold REST pool's last requests `sampledFill` asks (none of them is reached by a run's walk from the start). */
const POOL_FILL_SAMPLE = 200;

/**
 * Asks `sample` one request at a time of the set-up process (not the measured service, whose kept
 * pages it would warm) and counts the events each page answered: the cold case must ask pages that
 * hold events, as a dashboard paging through results does (an earlier pool drew pages whatever
 * their filter held: two thirds of them were past the end of their filter, and empty pages cost little).
 */
async function sampledFill(base: string, sample: readonly PoolRequest[]): Promise<{ empty: number; items: number }> {
  let empty = 0;
  let items = 0;
  for (const request of sample) {
    const n = (await call<unknown[]>(base, 'GET', request.path, request.headers)).length;
    items += n;
    if (n === 0) empty += 1;
  }
  return { empty, items: items / sample.length };
}

/** The share of the sampled cold pages that were empty: at most one in twenty. */
function fillFigure(fill: { empty: number; items: number }): Figure {
  const value = fill.empty / POOL_FILL_SAMPLE;
  return {
    case: 'cold: empty pages in a sample of the REST pool',
    measures: `${POOL_FILL_SAMPLE} requests from the pool's end asked of the set-up process: the share whose page held no event (${fill.items.toFixed(1)} events a page on average)`,
    value: round(value, 3),
    unit: 'per req',
    reference: null,
    referenceValue: null,
    ratio: null,
    target: '<= 0.05',
    ok: value <= 0.05,
  };
}

/** Database statements per request of one case against another's (the same pages asked another way). */
function statementsFigure(name: string, measures: string, runs: LoadResult[], reference: LoadResult[], maxRatio: number): Figure {
  const mean = (rs: LoadResult[]) => rs.reduce((sum, r) => sum + (r.statements ?? Number.NaN), 0) / rs.length;
  const value = mean(runs);
  const referenceValue = mean(reference);
  const ratio = value / referenceValue;
  return { case: name, measures, value: round(value, 2), unit: 'stmt/req', reference: 'the same draws on REST', referenceValue: round(referenceValue, 2), ratio: round(ratio, 2), target: `<= ${maxRatio}`, ok: ratio <= maxRatio };
}

async function call<T>(base: string, method: string, route: string, headers: Record<string, string> | undefined, body?: unknown): Promise<T> {
  const send = () =>
    fetch(`${base}${route}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  // A kept-alive connection the server closed as the request left is reset: sent again once
  // (the set-up's calls may repeat: a second key or event changes no figure).
  const res = await send().catch(send);
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

async function waitForHealth(base: string, timeoutMs: number, service: ReturnType<typeof spawnJs>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.exitCode !== null) throw new Error(`the service exited with ${service.exitCode} during start-up`);
    try {
      const res = await fetch(`${base}/v1/health`);
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('the service did not become healthy in time');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
