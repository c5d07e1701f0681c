/**
 * A database outage ("Fail closed, answer 503"): the app reaches its own scratch
 * PostgreSQL database through a TCP relay of this file's own, which is cut (every connection
 * dropped, new ones reset) and restored; the machine's PostgreSQL itself is never touched. While
 * cut, REST answers 503 SERVICE_UNAVAILABLE with Retry-After and GraphQL the same code and message
 * (never a 500); `GET /v1/health/ready` answers 503 and `GET /v1/health` keeps its shape; the
 * outage is logged once when it starts and once when it ends, not per request. Once restored the
 * first readiness probe answers 200. Needs DATABASE_URL (the embedded store has no network); the
 * readiness endpoint itself is checked on both stores.
 */
import net from 'node:net';
import { createTestDatabase, gql, services, startTestApp, useTestApp, type TestApp } from '../helpers/app';
import { captureLog } from '../helpers/log-capture';
import { api, devLogin } from '../helpers/users';
import type { ScratchDatabase } from '../../src/infra/db/scratch';

const UNAVAILABLE = { error: 'SERVICE_UNAVAILABLE', message: 'The service is temporarily unavailable' };

interface Readiness {
  data: { status: string; services: Record<'relational' | 'timeseries', { status: string; latency_ms: number }> };
  _links: { self: string };
}

async function readiness(url: string): Promise<{ status: number; retryAfter: string | null; body: Readiness }> {
  const res = await fetch(`${url}/v1/health/ready`);
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Readiness };
}

describe('GET /v1/health/ready', () => {
  const t = useTestApp();

  test('200 ready with each store probed, public, in the documented shape', async () => {
    const res = await readiness(t.url);
    expect(res.status).toBe(200);
    expect(res.retryAfter).toBeNull();
    expect(res.body).toEqual({
      data: {
        status: 'ready',
        services: { relational: { status: 'healthy', latency_ms: expect.any(Number) }, timeseries: { status: 'healthy', latency_ms: expect.any(Number) } },
        event_loop: { status: 'healthy', delay_ms: expect.any(Number) },
      },
      _links: { self: '/v1/health/ready' },
    });
    const withBadCredential = await fetch(`${t.url}/v1/health/ready`, { headers: { authorization: 'Bearer lm_sys_nope' } });
    expect(withBadCredential.status).toBe(200);
  });
});

/** A TCP relay to PostgreSQL that can be cut (every connection dropped, new ones reset at once) and restored. */
async function startRelay(target: URL) {
  const sockets = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from);
      from.on('data', (chunk: Buffer) => to.write(chunk));
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(target.href);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.href,
    cut() {
      cut = true;
      for (const s of sockets) s.resetAndDestroy();
    },
    restore() {
      cut = false;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}


(services.postgres ? describe : describe.skip)('a PostgreSQL outage (through a relay that is cut)', () => {
  const { lines, log } = captureLog();
  let database: ScratchDatabase;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let t: TestApp;
  beforeAll(async () => {
    database = await createTestDatabase();
    relay = await startRelay(new URL(database.url));
    t = await startTestApp({ database_url: relay.url, rate_limits: { enabled: false } }, { log });
  });
  afterAll(async () => {
    relay?.restore();
    await t?.stop();
    await relay?.close();
    await database?.drop();
  });

  test('503 SERVICE_UNAVAILABLE with Retry-After on REST and GraphQL, readiness 503, logged once; ready again at the first probe after', async () => {
    const owner = await devLogin(t);
    expect((await api(t, 'GET', '/account', { token: owner.accessToken })).status).toBe(200);
    expect((await readiness(t.url)).status).toBe(200);
    const before = lines.length;

    relay.cut();
    // REST: every request that needs the database, whatever it needs it for.
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${t.url}/v1/account`, { headers: { authorization: `Bearer ${owner.accessToken}` } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(await res.json()).toEqual(UNAVAILABLE);
    }
    // GraphQL: the same code and message, whether the credential could not be checked (before
    // execution: the HTTP answer) or a resolver could not read (a GraphQL error).
    const authenticated = await gql(t.url, '{ myPermissions { permissions } }', {}, { authorization: `Bearer ${owner.accessToken}` });
    expect({ status: authenticated.status, body: authenticated.body }).toEqual({ status: 503, body: UNAVAILABLE });
    // Anonymous: the root field's gate may read before execution (an HTTP answer) or the resolver
    // fails (a GraphQL error); either way the code and message are the REST ones, never a 500.
    const anonymous = await gql(t.url, '{ publicGames { games { category } } }');
    if (anonymous.status === 503) expect(anonymous.body).toEqual(UNAVAILABLE);
    else expect(anonymous.body.errors?.[0]).toMatchObject({ message: UNAVAILABLE.message, extensions: { code: UNAVAILABLE.error } });
    // Readiness fails (with Retry-After); health keeps the specification's shape.
    const notReady = await readiness(t.url);
    expect(notReady.status).toBe(503);
    expect(notReady.retryAfter).toMatch(/^[1-9]\d*$/);
    expect(notReady.body.data).toEqual({
      status: 'unavailable',
      services: { relational: { status: 'unhealthy', latency_ms: expect.any(Number) }, timeseries: { status: 'unhealthy', latency_ms: expect.any(Number) } },
      event_loop: { status: 'healthy', delay_ms: expect.any(Number) },
    });
    const health = await fetch(`${t.url}/v1/health`);
    const healthBody = (await health.json()) as { data: Record<string, unknown> };
    expect(Object.keys(healthBody.data).sort()).toEqual(['services', 'status', 'uptime_seconds', 'version', 'websocket']);
    expect(healthBody.data.status).not.toBe('healthy');

    relay.restore();
    // The very first probe after the database is back reports it.
    expect((await readiness(t.url)).status).toBe(200);
    expect((await api(t, 'GET', '/account', { token: owner.accessToken })).status).toBe(200);
    // Let the logger's buffer reach the capture.
    await new Promise((resolve) => setTimeout(resolve, 50));

    const notable = lines.slice(before).filter((line) => line.level >= 40);
    expect(notable.map((line) => line.msg)).toEqual(['relational store unreachable: requests that need it answer 503 until it returns']);
    expect(lines.slice(before).filter((line) => line.msg === 'relational store reachable again')).toHaveLength(1);
  });
});
