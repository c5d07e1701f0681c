/**
 * Paired comparison of two checkouts of this service on one machine: `npm run bench`
 * measures one build, and on a machine shared with other work its figures move more between runs
 * than a cut moves them. Here both builds serve the same scratch database at once, and each
 * round loads one build, then the other, case by case, a few seconds each: both see the same
 * neighbours, and the per-round difference is the build's. Reported per case and build: the
 * service's CPU per request (min and median over rounds) and requests per second.
 *
 * Usage: `tsx scripts/bench/compare.ts <checkout A> <checkout B>` (each a directory holding this
 * project with its node_modules). DATABASE_URL and REDIS_URL as for the bench (PostgreSQL is
 * required: the data is made once, through build A, and read by both). COMPARE_ROUNDS (4),
 * COMPARE_SECONDS (5), COMPARE_CASES (cold,coldgql,events,live), COMPARE_RATE (requests per second over
 * all connections; unset: as fast as answered). `live` is the bench's live case: the events case's
 * page read by 50 connections while a writer emits 50 events a second to its account through the
 * same build; it also reports the emits accepted a second and the stores' CPU per read
 * (PostgreSQL backends of the scratch database and the Redis server). At a fixed rate both builds do the same work per
 * second, and CPU per request moves far less between rounds than at full speed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createScratchDatabase } from '../../src/infra/db/scratch';
import { coldGraphqlPool, coldRestPool, inParallel, poolCursors, seededEvent, storeCpuSampler, type BenchAccount } from './cold';
import { cpuMillis, freePort, HOST, runJson, startNodeArgs, stop } from './lib';
import type { LoadInput, LoadResult } from './load';

const [dirA, dirB] = process.argv.slice(2).map((d) => path.resolve(d));
if (!dirA || !dirB || !process.env.DATABASE_URL) throw new Error('usage: DATABASE_URL=... tsx scripts/bench/compare.ts <checkout A> <checkout B>');
const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 4);
const SECONDS = Number(process.env.COMPARE_SECONDS ?? 5);
const CASES = (process.env.COMPARE_CASES ?? 'cold,coldgql,events').split(',');
/** The live case: readers of the page, and emits a second to its account. */
const LIVE_READERS = 50;
const LIVE_EMITS_PER_SECOND = 50;
const RATE = process.env.COMPARE_RATE ? Number(process.env.COMPARE_RATE) : undefined;
const USERS = 20;
const EVENTS_PER_USER = 240;

function startService(dir: string, env: Record<string, string>, log: number): ChildProcess {
  return spawn(process.execPath, [...startNodeArgs(), '--import', 'tsx', path.join(dir, 'src/main.ts')], { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', log, 'inherit'] });
}

async function healthy(base: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    const ok = await fetch(`${base}/v1/health`).then((r) => r.arrayBuffer().then(() => r.ok), () => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('service not healthy in time');
}

async function call<T>(base: string, method: string, route: string, headers: Record<string, string> | undefined, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${route}`, { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${route} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { data: T }).data;
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'compare-'));
  const scratch = await createScratchDatabase(process.env.DATABASE_URL!, 'compare');
  const children: ChildProcess[] = [];
  try {
    const prefix = `compare:${randomBytes(4).toString('hex')}:`;
    const log = openSync(path.join(work, 'service.log'), 'a');
    /** One node's environment: its own port, metrics port and config file; the database and Redis prefix are shared. */
    const env = async (port: number, name: string) => {
      const config = path.join(work, `config-${name}.json`);
      writeFileSync(config, JSON.stringify({ host: HOST, redis_prefix: prefix, metrics: { host: HOST, port: await freePort() }, rate_limits: { api_key: 1e9, jwt: 1e9, token: 1e9, anonymous: 1e9 } }));
      return { PORT: String(port), SVC_CONFIG: config, SVC_DATA_DIR: path.join(work, `data-${name}`), DATABASE_URL: scratch.url };
    };
    const [portA, portB] = [await freePort(), await freePort()];
    const a = startService(dirA, await env(portA, 'a'), log);
    children.push(a);
    const baseA = `http://${HOST}:${portA}`;
    await healthy(baseA, a);
    // The data, through A: users with a key and events each; one user with a repeated page.
    const accounts: BenchAccount[] = new Array(USERS);
    await inParallel(Array.from({ length: USERS }, (_, i) => i), 8, async (i) => {
      const user = await call<{ access_token: string; account_id: string }>(baseA, 'POST', '/v1/auth/dev/login', undefined, { email: `compare-${i}@example.test`, display_name: `Compare ${i}` });
      const made = await call<{ key: string }>(baseA, 'POST', '/v1/api-keys', { authorization: `Bearer ${user.access_token}` }, { label: 'compare', permissions: ['events:read', 'events:create'] });
      accounts[i] = { accountId: user.account_id, key: { authorization: `Bearer ${made.key}` } };
    });
    const emits = accounts.flatMap((acc) => Array.from({ length: EVENTS_PER_USER }, (_, n) => ({ acc, n })));
    await inParallel(emits, 16, async ({ acc, n }) => void (await call(baseA, 'POST', '/v1/events/emit', acc.key, seededEvent(n))));
    const coldFile = path.join(work, 'cold.json');
    const gqlFile = path.join(work, 'coldgql.json');
    writeFileSync(coldFile, JSON.stringify(coldRestPool(accounts, EVENTS_PER_USER, 50_000, 27)));
    writeFileSync(gqlFile, JSON.stringify(coldGraphqlPool(accounts, EVENTS_PER_USER, 50_000, 28)));
    const b = startService(dirB, await env(portB, 'b'), log);
    children.push(b);
    const baseB = `http://${HOST}:${portB}`;
    await healthy(baseB, b);
    const inputs = (base: string): Record<string, Omit<LoadInput, 'connections' | 'seconds' | 'maxRequests'>> => ({
      cold: { url: `${base}/v1/events`, poolFile: coldFile },
      coldgql: { url: `${base}/v1/gql`, poolFile: gqlFile },
      events: { url: `${base}/v1/events?limit=25`, headers: accounts[0]!.key },
      live: { url: `${base}/v1/events?limit=25`, headers: accounts[0]!.key },
    });
    /** Emits to the events case's account through `base`, LIVE_EMITS_PER_SECOND a second, at most 8 unanswered. */
    const writer = (base: string) => {
      let accepted = 0;
      let inFlight = 0;
      let n = 0;
      const started = performance.now();
      const timer = setInterval(() => {
        if (inFlight >= 8) return;
        inFlight += 1;
        n += 1;
        fetch(`${base}/v1/events/emit`, { method: 'POST', headers: { ...accounts[0]!.key, 'content-type': 'application/json' }, body: JSON.stringify(seededEvent(1_000_000 + n)) })
          .then(async (res) => {
            await res.arrayBuffer();
            if (res.ok) accepted += 1;
          })
          .catch(() => undefined)
          .finally(() => {
            inFlight -= 1;
          });
      }, 1000 / LIVE_EMITS_PER_SECOND);
      return () => {
        clearInterval(timer);
        return accepted / ((performance.now() - started) / 1000);
      };
    };
    const stores = await storeCpuSampler(scratch.url, scratch.name, process.env.REDIS_URL ?? null);
    const builds = [
      { name: 'A', dir: dirA, pid: a.pid!, inputs: inputs(baseA) },
      { name: 'B', dir: dirB, pid: b.pid!, inputs: inputs(baseB) },
    ];
    // The cold pools are walked in order, per build (each service keeps its own pages), each run
    // where that build's last one stopped (cold.ts).
    const cursors = new Map(builds.map((build) => [build.name, poolCursors([coldFile, gqlFile])]));
    const load = async (build: (typeof builds)[number], name: string, seconds: number): Promise<LoadResult> => {
      const input = build.inputs[name]!;
      const cursor = cursors.get(build.name)!;
      const connections = name === 'live' ? LIVE_READERS : 16;
      const stopWriter = name === 'live' ? writer(build.name === 'A' ? baseA : baseB) : null;
      const result = await runJson<LoadResult>(
        'scripts/bench/load.ts',
        { ...cursor.place(input), connections, seconds, maxRequests: 200_000, ...(RATE ? { rate: RATE } : {}) },
        (seconds + 30) * 1000,
        `load ${input.url}`,
      );
      if (stopWriter) result.writer = { accepted: 0, refused: 0, skipped: 0, seconds, rate: stopWriter() };
      cursor.advance(input, result.requests, connections);
      return result;
    };
    for (const build of builds) for (const name of CASES) await load(build, name, 1.5);
    const results: Record<string, { cpu: number; rps: number; stores: number; emits: number }[]> = {};
    for (let r = 1; r <= ROUNDS; r += 1) {
      for (const name of CASES) {
        // Alternate which build goes first, so neither always follows the other.
        for (const build of r % 2 ? builds : [...builds].reverse()) {
          const storesBefore = await stores.sample();
          const before = cpuMillis(build.pid);
          const result = await load(build, name, SECONDS);
          const cpu = (cpuMillis(build.pid) - before) / result.requests;
          // PostgreSQL publishes a backend's counts when it goes idle, at most once a second.
          await new Promise((resolve) => setTimeout(resolve, 1100));
          const storesAfter = await stores.sample();
          const storeMs = (storesAfter.postgresMs - storesBefore.postgresMs + (storesAfter.redisMs - storesBefore.redisMs || 0)) / result.requests;
          const emits = result.writer?.rate ?? Number.NaN;
          (results[`${name} ${build.name}`] ??= []).push({ cpu, rps: result.rps, stores: storeMs, emits });
          console.log(`round ${r} ${name.padEnd(8)} ${build.name}  ${result.rps.toFixed(0).padStart(6)} req/s  cpu ${cpu.toFixed(3)} ms/req  stores ${storeMs.toFixed(3)} ms/req${result.writer ? `  emits ${emits.toFixed(1)}/s` : ''}${result.non2xx || result.errors ? `  non-2xx ${result.non2xx} errors ${result.errors}` : ''}`);
        }
      }
    }
    await stores.close();
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)]!;
    console.log(`\nA = ${dirA}\nB = ${dirB}`);
    for (const name of CASES) {
      const [ra, rb] = [results[`${name} A`]!, results[`${name} B`]!];
      const line = (rs: { cpu: number; rps: number; stores: number; emits: number }[]) =>
        `cpu min ${Math.min(...rs.map((x) => x.cpu)).toFixed(3)} median ${median(rs.map((x) => x.cpu)).toFixed(3)} ms/req, ${median(rs.map((x) => x.rps)).toFixed(0)} req/s median, stores ${median(rs.map((x) => x.stores)).toFixed(3)} ms/req median${name === 'live' ? `, emits ${median(rs.map((x) => x.emits)).toFixed(1)}/s median` : ''}`;
      const rpsRatios = rb.map((x, i) => x.rps / ra[i]!.rps);
      console.log(`${name.padEnd(8)} A: ${line(ra)}\n${' '.repeat(8)} B: ${line(rb)}  (B/A cpu median ${(median(rb.map((x) => x.cpu)) / median(ra.map((x) => x.cpu))).toFixed(2)}; B/A req/s same round ${rpsRatios.map((x) => x.toFixed(2)).join(', ')}, median ${median(rpsRatios).toFixed(2)})`);
    }
  } finally {
    await Promise.all(children.map((c) => stop(c)));
    await scratch.drop().catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
