/**
 * One user cannot take the cluster down: three service processes as production runs them (the
 * built `dist/main.js` with `npm start`'s Node options, so with its bounded heap; built first when
 * the sources are newer) on one PostgreSQL database and one Redis, started at the
 * same instant, and one account whose events carry 200 KB `raw` each, read by 24 and then 100
 * concurrent readers of 100-item pages spread over the nodes, with readers beside them that ask
 * for pages and never read the answers. Every node lives, its resident memory stays within what
 * the performance guide allows a node, every hostile read answers a page or 503 with Retry-After,
 * another account's reads keep answering on every node, and readiness never calls the healthy
 * database down. PostgreSQL and Redis only: the embedded store belongs to one process.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startNodeArgs } from '../../scripts/bench/lib';
import type { ScratchDatabase } from '../../src/infra/db/scratch';
import { createTestDatabase, services } from '../helpers/app';
import { buildIfStale, ROOT, sharedNodeConfig, startServiceProcess, type ServiceProcess } from '../helpers/service-process';
import { api, devLogin, type LoggedIn } from '../helpers/users';

/** What the performance guide allows a node on PostgreSQL + Redis (peak resident memory). */
const RSS_BOUND_BYTES = 300 * 1024 * 1024;
const RAW_BYTES = 200 * 1024;

function startNode(configFile: string, database: ScratchDatabase, dataDir: string): Promise<ServiceProcess> {
  return startServiceProcess('hostile', [...startNodeArgs(), 'dist/main.js'], ROOT, { SVC_CONFIG: configFile, SVC_DATA_DIR: dataDir, DATABASE_URL: database.url, REDIS_URL: process.env.REDIS_URL! });
}

/** The process's peak resident memory so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/** A reader that asks for `count` pages on one connection and never reads the answers. */
function stalledReader(url: string, token: string, count: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(Number(new URL(url).port), '127.0.0.1', () => {
      socket.pause();
      socket.write(`GET /v1/events?limit=100 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`.repeat(count));
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

(services.postgres && services.redis ? describe : describe.skip)('three nodes under hostile readers', () => {
  const nodes: ServiceProcess[] = [];
  let database: ScratchDatabase;
  let dir: string;
  let hostile: LoggedIn;
  let other: LoggedIn;

  beforeAll(async () => {
    buildIfStale();
    dir = mkdtempSync(path.join(tmpdir(), 'hostile-'));
    database = await createTestDatabase();
    const configFile = path.join(dir, 'svc.json');
    writeFileSync(
      configFile,
      JSON.stringify(
        sharedNodeConfig('hostile', {
          events: { max_raw_bytes: RAW_BYTES + 1024 },
          // Budgets the readers never reach: this is about bytes, not the request rate.
          rate_limits: { enabled: true, api_key: 1_000_000, jwt: 1_000_000, token: 1_000_000, anonymous: 1_000_000 },
        }),
      ),
    );
    nodes.push(...(await Promise.all([0, 1, 2].map((i) => startNode(configFile, database, path.join(dir, `data-${i}`))))));
    hostile = await devLogin(nodes[0]!);
    other = await devLogin(nodes[1]!);
    const filler = 'x'.repeat(RAW_BYTES - 40);
    for (let n = 0; n < 100; n += 1) {
      const res = await api(nodes[n % 3]!, 'POST', '/events/emit', { token: hostile.accessToken, body: { type: 'platform_a:note', platform: 'platform_a', raw: { n, filler } } });
      expect(res.status).toBe(201);
    }
    for (let n = 0; n < 3; n += 1) expect((await api(nodes[n]!, 'POST', '/events/emit', { token: other.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { n } } })).status).toBe(201);
  }, 300_000);

  afterAll(async () => {
    for (const node of nodes) node.child.kill('SIGKILL');
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('24 then 100 concurrent readers of 200 KB events: no node dies or passes its memory bound, other accounts keep answering, readiness stays ready', async () => {
    if (process.env.BUDGET_FIGURES) console.log('rss before MiB', nodes.map((n) => Math.round(peakRss(n.child.pid!) / 1048576)));
    const readiness: { node: number; status: number; body: string }[] = [];
    let probing = true;
    const probes = nodes.map(async (node, i) => {
      while (probing) {
        const res = await fetch(`${node.url}/v1/health/ready`).catch(() => null);
        readiness.push({ node: i, status: res?.status ?? 0, body: res ? await res.text() : 'no answer' });
        await new Promise((r) => setTimeout(r, 200));
      }
    });
    const stalled = (await Promise.all(nodes.flatMap((node) => Array.from({ length: 4 }, () => stalledReader(node.url, hostile.accessToken, 4))))) as Socket[];
    const answered: Record<number, number> = {};
    try {
      for (const readers of [24, 100]) {
        const hostileReads = Array.from({ length: readers }, (_, i) => api(nodes[i % 3]!, 'GET', '/events', { token: hostile.accessToken, query: { limit: '100' } }));
        const otherReads = nodes.flatMap((node) => Array.from({ length: 3 }, () => api(node, 'GET', '/events', { token: other.accessToken, query: { limit: '100' } })));
        const [h, o] = await Promise.all([Promise.all(hostileReads), Promise.all(otherReads)]);
        for (const res of h) {
          answered[res.status] = (answered[res.status] ?? 0) + 1;
          if (res.status === 503) {
            expect(res.body).toEqual({ error: 'SERVICE_UNAVAILABLE', message: 'The service is temporarily unavailable' });
            expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
          } else {
            expect(res.status).toBe(200);
            // The page stops at its byte budget and says so.
            expect((res.body._meta as { truncated?: boolean }).truncated).toBe(true);
          }
        }
        expect(o.map((r) => r.status)).toEqual(o.map(() => 200));
        expect(o.map((r) => (r.body.data as unknown[]).length)).toEqual(o.map(() => 3));
      }
    } finally {
      for (const socket of stalled) socket.destroy();
      probing = false;
      await Promise.all(probes);
    }
    if (process.env.BUDGET_FIGURES) console.log('answers', answered, 'peak rss MiB', nodes.map((n) => Math.round(peakRss(n.child.pid!) / 1048576)));
    expect(answered[200]).toBeGreaterThan(0);
    for (const node of nodes) {
      expect(node.child.exitCode).toBeNull();
      expect(node.output()).not.toMatch(/heap out of memory|FATAL ERROR/);
      expect((await fetch(`${node.url}/v1/health/ready`)).status).toBe(200);
      expect(peakRss(node.child.pid!)).toBeLessThan(RSS_BOUND_BYTES);
    }
    // The database answered throughout: no probe on any node called it down.
    expect(readiness.filter((r) => r.status !== 200)).toEqual([]);
    expect(readiness.length).toBeGreaterThan(3);
  }, 180_000);
});
