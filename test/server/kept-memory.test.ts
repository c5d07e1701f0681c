/**
 * Memory is bounded. 40 events of ~200 KB `raw` each, then the pages `limit=40, 39, 38, …` (each a
 * distinct kept page of ~8 MB, with its rendered bytes, against a 32 MB budget): the results kept
 * for later requests stay under the configured byte budget (`memory.kept_bytes`, read from the
 * caches' own count, src/infra/kept.ts), and the process keeps serving. Then a larger sequence (100
 * events, pages of ~19 MB) against `src/main.ts` in a child process with `npm start`'s heap limit
 * (--max-old-space-size=256), where keeping every page would pass the heap: it stays alive and
 * its RSS stays under RSS_BOUND.
 *
 * The kept results live in process memory whatever the store, so CI runs this file in the
 * embedded pass only (.ci/run).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startNodeArgs } from '../../scripts/bench/lib';
import { keptBudget, keptBytes } from '../../src/infra/kept';
import { createTestDatabase, services, useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

const root = path.resolve(__dirname, '../..');
/** The in-process case: distinct pages far past the budget, at a fifth of the child's bytes. */
const SMALL = { events: 40, pages: 12 };
/** The child case: every page kept would be ~20 pages × 19 MB, past the 256 MB heap. */
const LARGE = { events: 100, pages: 20 };
/** The child's resident set must stay under this (its heap is capped at 256 MB; PGlite's memory comes on top). */
const RSS_BOUND = 900 * 1024 * 1024;

const raw = (i: number) => ({ user_id: `u${i}`, note: 'x'.repeat(200_000), i });
/**
 * Events this large, and pages of a hundred of them, are past the default bounds on `raw` and on a
 * page's bytes; these cases raise both (and the node's read budget) to press on the kept results.
 */
const LARGE_EVENTS = { max_raw_bytes: 262_144, page_max_bytes: 64 * 1024 * 1024, read_budget_bytes: 256 * 1024 * 1024 };

async function emitAll(base: { url: string }, token: string, events: number): Promise<void> {
  for (let i = 0; i < events; i++) {
    const res = await api(base, 'POST', '/events/emit', { token, body: { type: 'platform_a:follow', platform: 'platform_a', raw: raw(i) } });
    if (res.status !== 201) throw new Error(`emit ${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  }
}

async function page(base: string, token: string, limit: number): Promise<number> {
  const res = await fetch(`${base}/v1/events?limit=${limit}`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { data?: unknown[] };
  if (res.status !== 200) throw new Error(`page ${limit}: ${res.status}`);
  return body.data?.length ?? 0;
}

describe('kept results are bounded by bytes', () => {
  const budget = 32 * 1024 * 1024;
  const t = useTestApp({ memory: { kept_bytes: budget }, events: LARGE_EVENTS });

  test(`${SMALL.events} large events, then limit=${SMALL.events}, ${SMALL.events - 1}, …: kept bytes stay under the budget and the process serves`, async () => {
    expect(keptBudget()).toBe(budget);
    const owner = await devLogin(t);
    await emitAll(t, owner.accessToken!, SMALL.events);
    let peak = 0;
    for (let limit = SMALL.events; limit > SMALL.events - SMALL.pages; limit--) {
      expect(await page(t.url, owner.accessToken!, limit)).toBe(limit);
      // Twice: the second is answered from what was kept.
      expect(await page(t.url, owner.accessToken!, limit)).toBe(limit);
      const kept = keptBytes();
      peak = Math.max(peak, kept);
      expect(kept).toBeLessThanOrEqual(budget);
    }
    expect((await fetch(`${t.url}/v1/health`, { headers: { connection: 'close' } })).status).toBe(200);
    // Something was kept (the bound is not met by keeping nothing), and the metric reports it.
    expect(peak).toBeGreaterThan(budget / 4);
    const metrics = await (await fetch(`${t.metricsUrl}/metrics`)).text();
    const reported = Number(/^svc_kept_bytes\{[^}]*\} (\d+)/m.exec(metrics)?.[1]);
    expect(reported).toBeLessThanOrEqual(budget);
    expect(reported).toBeGreaterThan(0);
  }, 400_000);
});

describe('the process under its heap limit', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'kept-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;

  test(`src/main.ts with --max-old-space-size=256 serves the whole sequence with RSS under ${RSS_BOUND / 1024 / 1024} MB`, async () => {
    const database = services.postgres ? await createTestDatabase() : null;
    const configFile = path.join(dir, 'svc.json');
    writeFileSync(configFile, JSON.stringify({ host: '127.0.0.1', metrics: { port: 0 }, log: { level: 'warn' }, events: LARGE_EVENTS, redis_prefix: `kept:${randomBytes(4).toString('hex')}:` }));
    const env: Record<string, string> = { PORT: '0', SVC_CONFIG: configFile, SVC_DATA_DIR: path.join(dir, 'data') };
    if (database) env.DATABASE_URL = database.url;
    if (services.redis) env.REDIS_URL = process.env.REDIS_URL!;
    const nodeArgs = startNodeArgs();
    expect(nodeArgs).toContain('--max-old-space-size=256');
    const child: ChildProcess = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts'], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let exited: number | null | undefined;
    child.on('exit', (code) => (exited = code));
    try {
      const deadline = Date.now() + 150_000;
      let url: string | undefined;
      while (!(url = /Service listening on (http:\/\/\S+)/.exec(output)?.[1])) {
        if (Date.now() > deadline || exited !== undefined) throw new Error(`the service did not start: ${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const owner = await devLogin({ url });
      await emitAll({ url }, owner.accessToken!, LARGE.events);
      let peak = 0;
      for (let limit = LARGE.events; limit > LARGE.events - LARGE.pages; limit--) {
        expect(await page(url, owner.accessToken!, limit)).toBe(limit);
        expect(exited).toBeUndefined();
        peak = Math.max(peak, rssOf(child.pid!));
        expect(peak).toBeLessThan(RSS_BOUND);
      }
      expect((await fetch(`${url}/v1/health`, { headers: { connection: 'close' } })).status).toBe(200);
      expect(output).not.toMatch(/heap limit|FATAL/);
      console.log(`kept-memory: child peak RSS ${Math.round(peak / 1024 / 1024)} MB (bound ${RSS_BOUND / 1024 / 1024} MB)`);
    } finally {
      child.kill('SIGKILL');
      await database?.drop();
    }
  }, 500_000);
});
