/**
 * Per-auth-context rate limits (Part 1, "Limits") through real HTTP: the X-RateLimit-* headers,
 * 429 RATE_LIMIT_EXCEEDED with Retry-After on REST and GraphQL alike, system keys never limited,
 * the switch off, failing open when Redis refuses or hangs, the tier and bucket of every context,
 * and (with REDIS_URL) one budget shared by two processes on the same Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import Redis from 'ioredis';
import { ANONYMOUS, type AuthContext, type AuthContextKind } from '../../src/auth/context';
import { loadConfig } from '../../src/config/config';
import type { RequestContext } from '../../src/http/context';
import { errorHandler } from '../../src/http/errors';
import { createRateLimiter, rateLimitStep, type RateDecision } from '../../src/http/rate-limit';
import { services, startTestApp, systemKey, useTestApp, type TestApp } from '../helpers/app';
import { captureLog } from '../helpers/log-capture';
import { devLogin } from '../helpers/users';

const LIMITED = { error: 'RATE_LIMIT_EXCEEDED', message: 'Rate limit exceeded' };
const ROOT = path.resolve(__dirname, '../..');

function get(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
}

function postGql(baseUrl: string, query: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${baseUrl}/v1/gql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(10_000),
  });
}

function rateHeaders(res: Response) {
  return {
    limit: res.headers.get('x-ratelimit-limit'),
    remaining: res.headers.get('x-ratelimit-remaining'),
    reset: res.headers.get('x-ratelimit-reset'),
  };
}

/** X-RateLimit-Reset is Unix epoch seconds within the one-minute window that starts now. */
function expectResetWithinWindow(res: Response): void {
  const reset = Number(res.headers.get('x-ratelimit-reset'));
  const now = Date.now() / 1000;
  expect(Number.isInteger(reset)).toBe(true);
  expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
  expect(reset).toBeLessThanOrEqual(Math.ceil(now) + 61);
}

async function expectLimited(res: Response, limit: number): Promise<void> {
  expect(res.status).toBe(429);
  expect(await res.json()).toEqual(LIMITED);
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  expect(rateHeaders(res)).toEqual({ limit: String(limit), remaining: '0', reset: expect.stringMatching(/^\d+$/) });
  expectResetWithinWindow(res);
}

describe('anonymous requests at the default budget', () => {
  const t = useTestApp();

  test('carry X-RateLimit-Limit 120, Remaining and Reset', async () => {
    const first = await get(`${t.url}/v1/health`);
    expect(first.status).toBe(200);
    expect(rateHeaders(first)).toEqual({ limit: '120', remaining: '119', reset: expect.any(String) });
    expectResetWithinWindow(first);
    const second = await get(`${t.url}/v1/health`);
    expect(rateHeaders(second).remaining).toBe('118');
    expect(Number(rateHeaders(second).reset)).toBe(Number(rateHeaders(first).reset));
  });

  test('paths outside /v1/ are not counted', async () => {
    const res = await get(`${t.url}/not-the-api`);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('anonymous requests over budget', () => {
  const sys = systemKey('ops', ['events:read']);
  const t = useTestApp({ rate_limits: { anonymous: 5 }, auth: { system_keys: [sys.config] } });

  test('the first 5 pass counting down; the 6th gets 429 RATE_LIMIT_EXCEEDED with Retry-After', async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await get(`${t.url}/v1/health`);
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toMatchObject({ limit: '5', remaining: String(5 - i) });
      expect(res.headers.get('retry-after')).toBeNull();
    }
    await expectLimited(await get(`${t.url}/v1/health`), 5);
  });

  test('the budget covers GraphQL too: POST /v1/gql is refused with the same body', async () => {
    await expectLimited(await postGql(t.url, '{ __typename }'), 5);
  });

  test('a system key is never limited and gets no X-RateLimit headers', async () => {
    for (let i = 0; i < 8; i++) {
      const res = await get(`${t.url}/v1/health`, { authorization: `Bearer ${sys.key}` });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
      expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
      expect(res.headers.get('x-ratelimit-reset')).toBeNull();
      expect(res.headers.get('retry-after')).toBeNull();
    }
  });

  test('another client address (X-Forwarded-For from a trusted loopback proxy) has its own bucket', async () => {
    const res = await get(`${t.url}/v1/health`, { 'x-forwarded-for': '203.0.113.9' });
    expect(res.status).toBe(200);
    expect(rateHeaders(res)).toMatchObject({ limit: '5', remaining: '4' });
  });
});

describe('GraphQL requests', () => {
  const t = useTestApp({ rate_limits: { anonymous: 2 } });

  test('count against the same budget and get 429 with the headers once it is spent', async () => {
    for (const remaining of ['1', '0']) {
      const res = await postGql(t.url, '{ __typename }');
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toMatchObject({ limit: '2', remaining });
    }
    await expectLimited(await postGql(t.url, '{ __typename }'), 2);
    await expectLimited(await get(`${t.url}/v1/health`), 2);
  });
});

describe('credentials over real HTTP', () => {
  const t = useTestApp({ rate_limits: { jwt: 3, token: 2 } });

  test('a JWT has the jwt budget (here 3), one bucket per session', async () => {
    const first = await devLogin(t);
    const again = await devLogin(t, first.email); // same user, a second session
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const a1 = await get(`${t.url}/v1/tokens/me`, bearer(first.accessToken));
    expect(a1.status).toBe(200);
    expect(rateHeaders(a1)).toMatchObject({ limit: '3', remaining: '2' });
    expect(rateHeaders(await get(`${t.url}/v1/tokens/me`, bearer(first.accessToken))).remaining).toBe('1');
    expect(rateHeaders(await get(`${t.url}/v1/tokens/me`, bearer(again.accessToken)))).toMatchObject({ limit: '3', remaining: '2' });
  });

  test('each popout token has its own bucket, keyed on its hash', async () => {
    const owner = await devLogin(t);
    const mint = () => t.app.authStore.mint({ kind: 'popout', accountId: owner.accountId!, userId: owner.userId, createdBy: owner.userId, permissions: [] });
    const [a, b] = await Promise.all([mint(), mint()]);
    const withToken = (token: string) => get(`${t.url}/v1/tokens/me?token=${encodeURIComponent(token)}`);
    expect(rateHeaders(await withToken(a.token))).toMatchObject({ limit: '2', remaining: '1' });
    expect(rateHeaders(await withToken(a.token))).toMatchObject({ limit: '2', remaining: '0' });
    await expectLimited(await withToken(a.token), 2);
    expect(rateHeaders(await withToken(b.token))).toMatchObject({ limit: '2', remaining: '1' });
  });
});

describe('rate_limits.enabled: false', () => {
  const t = useTestApp({ rate_limits: { enabled: false, anonymous: 1 } });

  test('no request is counted or refused, and no headers are sent', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await get(`${t.url}/v1/health`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
    const gql = await postGql(t.url, '{ __typename }');
    expect(gql.status).toBe(200);
    expect(gql.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('when Redis fails (the middleware alone over real HTTP)', () => {
  const { lines, log } = captureLog('warn');
  const sockets = new Set<Socket>();
  // Accepts connections and never answers: a Redis that hangs.
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const clients: Redis[] = [];
  const servers: Server[] = [];

  async function serve(redis: Redis): Promise<string> {
    const limiter = createRateLimiter({ config: loadConfig({ env: {}, overrides: { env: 'test', rate_limits: { anonymous: 2 } } }), redis, prefix: 'unit:', log });
    const app = express();
    app.use((req, _res, next) => {
      req.context = { auth: ANONYMOUS, requestId: 'r', log, selfUrl: req.originalUrl } as RequestContext;
      next();
    });
    const step = rateLimitStep(limiter, (req) => req.socket.remoteAddress ?? 'unknown');
    app.use((req, res, next) => void step(req, res).then(() => next(), next));
    app.get('/v1/ping', (_req, res) => {
      res.json({ ok: true });
    });
    app.use(errorHandler(log));
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await Promise.all(
      clients.map((client) => {
        if (client.status === 'end') return undefined;
        const ended = once(client, 'end');
        client.disconnect();
        return Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 3_000).unref())]);
      }),
    );
    await Promise.all([...servers, silent].map((server) => new Promise((resolve) => server.close(resolve))));
  });

  test.each([
    ['refuses connections', () => new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null })],
    ['hangs (one draw waits out the 250 ms timeout, then the breaker counts locally at once)', () => new Redis(`redis://127.0.0.1:${(silent.address() as AddressInfo).port}`, { maxRetriesPerRequest: 0, retryStrategy: () => null })],
  ])('it %s: every request is still counted, on this node, and the budget holds; one warning is logged', async (_name, makeClient) => {
    const redis = makeClient();
    redis.on('error', () => undefined);
    clients.push(redis);
    const url = await serve(redis);
    const before = lines.length;
    const took: number[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const started = performance.now();
      const res = await get(`${url}/v1/ping`);
      took.push(performance.now() - started);
      statuses.push(res.status);
      if (i === 0) expect(res.headers.get('x-ratelimit-limit')).toBe('2');
    }
    // The budget of 2 holds while Redis is away: the third and fourth requests are refused.
    expect(statuses).toEqual([200, 200, 429, 429]);
    // At most one request waits out the timeout; the others are answered at once.
    expect(took[0]).toBeLessThan(2_000);
    for (const ms of took.slice(1)) expect(ms).toBeLessThan(200);
    // Logged once when the outage starts, not once per request.
    const warnings = lines.slice(before).filter((l) => l.msg === 'rate limiter counting on this node: Redis does not answer');
    expect(warnings).toEqual([expect.objectContaining({ level: 40 })]);
  });
});

const context = (kind: AuthContextKind, credentialId: string | null, userId: string | null = null): AuthContext => ({
  kind,
  userId,
  accountId: null,
  permissions: new Set(),
  adminPermissions: new Set(),
  userPermissions: new Set(),
  credentialId,
  label: null,
});
const counted = (decision: RateDecision) => {
  if (decision.outcome !== 'allowed' && decision.outcome !== 'rejected') throw new Error(`not counted: ${decision.outcome}`);
  return decision;
};

describe('tier and bucket of each context (unit, in-memory)', () => {
  const limiter = () => createRateLimiter({ config: loadConfig({ env: {}, overrides: { env: 'test' } }), redis: null, prefix: 'unit:' });

  test('each popout token hash is its own bucket', async () => {
    const l = limiter();
    const a1 = counted(await l.consume(context('popout', 'hash-a', 'u1'), '127.0.0.1'));
    const a2 = counted(await l.consume(context('popout', 'hash-a', 'u1'), '127.0.0.1'));
    const b1 = counted(await l.consume(context('popout', 'hash-b', 'u1'), '127.0.0.1'));
    expect([a1.key, a2.key, b1.key]).toEqual(['token:hash-a', 'token:hash-a', 'token:hash-b']);
    expect([a1.remaining, a2.remaining, b1.remaining]).toEqual([599, 598, 599]);
    expect(a1.limit).toBe(600);
  });

  test.each<[AuthContextKind, string, number]>([
    ['user_api_key', 'api_key', 1200],
    ['service_key', 'api_key', 1200],
    ['developer_api_key', 'api_key', 1200],
    ['jwt', 'jwt', 600],
    ['popout', 'token', 600],
    ['overlay', 'token', 600],
    ['shared_overlay', 'token', 600],
    ['extension', 'token', 600],
    ['widget', 'token', 600],
  ])('%s: tier %s, %i per minute, keyed on the credential id', async (kind, tier, limit) => {
    const decision = counted(await limiter().consume(context(kind, 'cred-1', 'user-1'), '127.0.0.1'));
    expect(decision).toMatchObject({ outcome: 'allowed', tier, key: `${tier}:cred-1`, limit, remaining: limit - 1, retryAfterSeconds: expect.any(Number) });
  });

  test('a credential without an id falls back to its user; anonymous keys on the client address', async () => {
    const l = limiter();
    expect(counted(await l.consume(context('jwt', null, 'user-7'), '127.0.0.1')).key).toBe('jwt:user-7');
    expect(counted(await l.consume(context('anonymous', null), '203.0.113.7'))).toMatchObject({ key: 'anonymous:203.0.113.7', limit: 120, remaining: 119 });
    expect(counted(await l.consume(context('anonymous', null), '203.0.113.8')).remaining).toBe(119);
  });

  test('system keys are skipped, and everything is skipped when limits are off', async () => {
    expect(await limiter().consume(context('system_key', 'key-hash'), '127.0.0.1')).toEqual({ outcome: 'skipped' });
    const off = createRateLimiter({ config: loadConfig({ env: {}, overrides: { env: 'test', rate_limits: { enabled: false } } }), redis: null, prefix: '' });
    expect(off.enabled).toBe(false);
    expect(await off.consume(context('anonymous', null), '127.0.0.1')).toEqual({ outcome: 'skipped' });
  });

  test('over budget: rejected with Remaining 0 and Retry-After within the window', async () => {
    const l = createRateLimiter({ config: loadConfig({ env: {}, overrides: { env: 'test', rate_limits: { jwt: 1 } } }), redis: null, prefix: '' });
    expect((await l.consume(context('jwt', 's1'), '::1')).outcome).toBe('allowed');
    const rejected = counted(await l.consume(context('jwt', 's1'), '::1'));
    expect(rejected).toMatchObject({ outcome: 'rejected', limit: 1, remaining: 0 });
    expect(rejected.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(rejected.retryAfterSeconds).toBeLessThanOrEqual(60);
  });
});

/** The service as an operator runs it (`src/main.ts` under tsx), as in test/server/process.test.ts. */
function spawnService(configFile: string): { child: ChildProcess; output: () => string; exited: Promise<void> } {
  const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', SVC_CONFIG: configFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, output: () => output, exited };
}

async function waitForListening(proc: ReturnType<typeof spawnService>, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const url = /Service listening on (http:\/\/\S+)/.exec(proc.output())?.[1];
    if (url) return url;
    if (proc.child.exitCode !== null) throw new Error(`the second process exited early:\n${proc.output()}`);
    if (Date.now() > deadline) throw new Error(`the second process did not start in time:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('two processes on one Redis', () => {
  const prefix = `test:rl-shared:${randomBytes(6).toString('hex')}:`;
  let dir: string | undefined;
  let local: TestApp | undefined;
  let other: ReturnType<typeof spawnService> | undefined;
  let otherUrl = '';

  beforeAll(async () => {
    if (!services.redis) return;
    dir = mkdtempSync(path.join(tmpdir(), 'rate-limit-'));
    const configFile = path.join(dir, 'svc.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        env: 'test',
        host: '127.0.0.1',
        port: 0,
        data_dir: 'memory://',
        redis_url: process.env.REDIS_URL,
        redis_prefix: prefix,
        rate_limits: { anonymous: 6 },
        metrics: { host: '127.0.0.1', port: 0 },
        log: { level: 'warn' },
      }),
    );
    other = spawnService(configFile);
    [local, otherUrl] = await Promise.all([startTestApp({ redis_prefix: prefix, rate_limits: { anonymous: 6 } }), waitForListening(other, 45_000)]);
  }, 60_000);

  afterAll(async () => {
    if (other && other.child.exitCode === null) {
      other.child.kill('SIGTERM');
      const killed = setTimeout(() => other?.child.kill('SIGKILL'), 5_000);
      await other.exited;
      clearTimeout(killed);
    }
    await local?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 20_000);

  (services.redis ? test : test.skip)('share one anonymous budget: 3 + 3 pass, the 7th to either is refused', async () => {
    const remaining: string[] = [];
    for (const url of [local!.url, local!.url, local!.url, otherUrl, otherUrl, otherUrl]) {
      const res = await get(`${url}/v1/health`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('6');
      remaining.push(res.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['5', '4', '3', '2', '1', '0']);
    await expectLimited(await get(`${otherUrl}/v1/health`), 6);
    await expectLimited(await get(`${local!.url}/v1/health`), 6);
    await expectLimited(await postGql(otherUrl, '{ __typename }'), 6);

    // The counter lives in Redis under the configured prefix.
    const ttl = await local!.app.cache.redis!.pttl(`${prefix}ratelimit:anonymous:127.0.0.1`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  }, 30_000);
});

describe('concurrent requests of one bucket on Redis', () => {
  (services.redis ? test : test.skip)('are drawn in batches, each with the outcome and remaining budget of its place in line', async () => {
    const redis = new Redis(process.env.REDIS_URL!);
    let increments = 0;
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = ((command: { name: string }) => {
      if (/^eval/i.test(command.name)) increments += 1;
      return send(command as never);
    }) as typeof redis.sendCommand;
    try {
      const limiter = createRateLimiter({ config: loadConfig({ env: {}, overrides: { env: 'test', rate_limits: { jwt: 7 } } }), redis, prefix: `batch:${randomBytes(4).toString('hex')}:` });
      const ctx = context('jwt', 's-batched');
      // A first draw loads the limiter's script into this Redis connection.
      await limiter.consume(context('jwt', 's-warm-up'), '::1');
      increments = 0;
      const decisions = (await Promise.all(Array.from({ length: 12 }, () => limiter.consume(ctx, '::1')))).map(counted);
      expect(decisions.map((d) => d.outcome)).toEqual([...Array(7).fill('allowed'), ...Array(5).fill('rejected')]);
      expect(decisions.map((d) => d.remaining)).toEqual([6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0]);
      // The first request went alone; the eleven that arrived meanwhile shared one increment.
      expect(increments).toBe(2);
      // Sequential requests still draw one at a time.
      expect(counted(await limiter.consume(ctx, '::1')).outcome).toBe('rejected');
      expect(increments).toBe(3);
    } finally {
      redis.disconnect();
    }
  });
});

describe('concurrent requests of different buckets on Redis', () => {
  (services.redis ? test : test.skip)('leave in one socket write, and each bucket counts exactly its own draws', async () => {
    const redis = new Redis(process.env.REDIS_URL!);
    try {
      const limiter = createRateLimiter({ config: loadConfig({ env: {}, overrides: { env: 'test', rate_limits: { jwt: 2 } } }), redis, prefix: `joined:${randomBytes(4).toString('hex')}:` });
      // A first draw loads the limiter's script into this Redis connection.
      await limiter.consume(context('jwt', 's-warm-up'), '::1');
      let writes = 0;
      const stream = redis.stream;
      const write = stream._write.bind(stream);
      const writev = stream._writev?.bind(stream);
      stream._write = (...args: Parameters<typeof stream._write>) => ((writes += 1), write(...args));
      if (writev) stream._writev = (...args: Parameters<NonNullable<typeof stream._writev>>) => ((writes += 1), writev(...args));
      // Three sessions, one turn: three increments, sent together.
      const first = (await Promise.all(['s-a', 's-b', 's-c'].map((s) => limiter.consume(context('jwt', s), '::1')))).map(counted);
      expect(writes).toBe(1);
      expect(first.map((d) => [d.key, d.outcome, d.remaining])).toEqual([
        ['jwt:s-a', 'allowed', 1],
        ['jwt:s-b', 'allowed', 1],
        ['jwt:s-c', 'allowed', 1],
      ]);
      // Each bucket still counts its own draws, in arrival order (s-a's second waits for its first).
      const second = (await Promise.all(['s-a', 's-b', 's-a'].map((s) => limiter.consume(context('jwt', s), '::1')))).map(counted);
      expect(second.map((d) => [d.key, d.outcome, d.remaining])).toEqual([
        ['jwt:s-a', 'allowed', 0],
        ['jwt:s-b', 'allowed', 0],
        ['jwt:s-a', 'rejected', 0],
      ]);
    } finally {
      redis.disconnect();
    }
  });
});
