/**
 * The SDK transport's retry of 429 and 503 (bounded, honouring Retry-After) against a local HTTP
 * server that answers what the service answers when it is rate limited or a store is down (the
 * real service's answers are covered by its own tests; this pins the client's reaction), and the
 * browser entry's imports (nothing Node-only, no `ws`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ApiError, createSdk, retryAfterMs, unwrap } from '../../sdk/src/index';

/** The ApiError a call fails with (fails the test when it succeeds or fails otherwise). */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('the call succeeded');
}

describe('SDK transport', () => {
  let server: Server;
  let baseUrl = '';
  const script: { status: number; retryAfter?: string }[] = [];
  const seen: { url: string; authorization?: string; key?: string; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen.push({ url: req.url!, authorization: req.headers.authorization, key: req.headers['idempotency-key'] as string | undefined, body });
        const next = script.shift() ?? { status: 200 };
        if (next.status === 0) {
          // A network failure: the connection drops without an answer.
          req.socket.destroy();
          return;
        }
        if (next.status === 200) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [], _links: {}, _meta: { total: 0, page: 1, limit: 25, pages: 0 } }));
          return;
        }
        const error = next.status === 429 ? { error: 'RATE_LIMIT_EXCEEDED', message: 'Rate limit exceeded' } : { error: 'SERVICE_UNAVAILABLE', message: 'The service is temporarily unavailable' };
        res.writeHead(next.status, { 'content-type': 'application/json', ...(next.retryAfter ? { 'retry-after': next.retryAfter } : {}) }).end(JSON.stringify(error));
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((done) => server.close(done));
  });
  beforeEach(() => {
    script.length = 0;
    seen.length = 0;
  });

  it('retries 429 and 503 after Retry-After, resending the same body and credential', async () => {
    const waits: number[] = [];
    const sdk = createSdk({ baseUrl, credential: { kind: 'key', key: 'lm_key' }, sleep: async (ms) => void waits.push(ms) });
    script.push({ status: 429, retryAfter: '2' }, { status: 503, retryAfter: '1' });
    const result = await unwrap(sdk.rest.POST('/events/emit', { body: { type: 'platform_a:follow', platform: 'platform_a', raw: { a: 1 } } }));
    expect(result).toBeDefined();
    expect(waits).toEqual([2000, 1000]);
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.body))).toEqual(new Set([JSON.stringify({ type: 'platform_a:follow', platform: 'platform_a', raw: { a: 1 } })]));
    expect(seen.every((s) => s.authorization === 'Bearer lm_key' && s.url === '/v1/events/emit')).toBe(true);
    // One logical call, one Idempotency-Key on every attempt: the service does the work once.
    expect(seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(seen.map((s) => s.key)).size).toBe(1);
    // The next call is another change: another key.
    await unwrap(sdk.rest.POST('/events/emit', { body: { type: 'platform_a:follow', platform: 'platform_a', raw: { a: 2 } } }));
    expect(seen[3]!.key).not.toBe(seen[0]!.key);
  });

  it('a change that takes no Idempotency-Key is sent once, whatever the answer', async () => {
    const sdk = createSdk({ baseUrl, credential: { kind: 'key', key: 'lm_key' }, sleep: async () => undefined });
    script.push({ status: 503, retryAfter: '1' });
    const failed = await failure(unwrap(sdk.rest.POST('/api-keys', { body: { label: 'once', permissions: ['events:read'] } })));
    expect(failed.code).toBe('SERVICE_UNAVAILABLE');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.key).toBeUndefined();
  });

  it('retries a network failure for a read and for a keyed change, with the same key', async () => {
    const sdk = createSdk({ baseUrl, credential: { kind: 'key', key: 'lm_key' }, sleep: async () => undefined });
    script.push({ status: 0 }, { status: 200 });
    await unwrap(sdk.rest.GET('/events'));
    expect(seen).toHaveLength(2);
    seen.length = 0;
    script.push({ status: 0 }, { status: 200 });
    await unwrap(sdk.rest.POST('/events/emit', { body: { type: 'platform_a:follow', platform: 'platform_a', raw: { n: 1 } } }));
    expect(seen).toHaveLength(2);
    expect(seen[0]!.key).toBeDefined();
    expect(seen[1]!.key).toBe(seen[0]!.key);
  });

  it('an abort during the wait before a retry ends the call at once', async () => {
    const sdk = createSdk({ baseUrl, credential: { kind: 'key', key: 'lm_key' }, retry: { maxDelayMs: 120_000 } });
    script.push({ status: 503, retryAfter: '60' });
    const controller = new AbortController();
    const started = Date.now();
    const call = sdk.rest.GET('/events', { signal: controller.signal });
    // Abort once the 503 has been answered, so the call is in its 60 s wait.
    for (let i = 0; i < 500 && seen.length === 0; i++) await new Promise((done) => setTimeout(done, 10));
    await new Promise((done) => setTimeout(done, 50));
    controller.abort();
    await expect(call).rejects.toBeDefined();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(seen).toHaveLength(1);
  });

  it('gives up after the retry bound, and does not wait longer than maxDelayMs', async () => {
    const waits: number[] = [];
    const sdk = createSdk({ baseUrl, retry: { retries: 2 }, sleep: async (ms) => void waits.push(ms) });
    script.push({ status: 503 }, { status: 503 }, { status: 503 }, { status: 200 });
    const failed = await failure(unwrap(sdk.rest.GET('/events')));
    expect(failed).toBeInstanceOf(ApiError);
    expect(failed.code).toBe('SERVICE_UNAVAILABLE');
    expect(seen).toHaveLength(3);
    expect(waits).toEqual([500, 1000]);

    script.length = 0;
    seen.length = 0;
    const capped = createSdk({ baseUrl, retry: { maxDelayMs: 5000 }, sleep: async () => void waits.push(-1) });
    script.push({ status: 429, retryAfter: '60' });
    const limited = await failure(unwrap(capped.rest.GET('/events')));
    expect(limited.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(seen).toHaveLength(1);
  });

  it('sends a query-capable token as ?token= only where the spec declares the parameter', async () => {
    const sdk = createSdk({ baseUrl, credential: { kind: 'token', token: 'lm_overlay_abc', transport: 'query' } });
    await unwrap(sdk.rest.GET('/events'));
    expect(seen[0]!.url).toBe('/v1/events?token=lm_overlay_abc');
    expect(seen[0]!.authorization).toBeUndefined();
  });

  it('reads Retry-After in seconds and as an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(Date.now() + 4000).toUTCString(), Date.now())).toBeGreaterThan(2000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });

  it('keeps the browser entry free of Node-only imports', () => {
    const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../sdk/package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const allowed = new Set(Object.keys(pkg.dependencies));
    const visited = new Set<string>();
    const external: string[] = [];
    const walk = (file: string) => {
      if (visited.has(file)) return;
      visited.add(file);
      for (const ref of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
        if (ref.fileName.startsWith('.')) walk(path.resolve(path.dirname(file), ref.fileName.replace(/\.js$/, '.ts')));
        else external.push(ref.fileName);
      }
    };
    walk(path.join(__dirname, '../../sdk/src/index.ts'));
    expect(visited.size).toBeGreaterThan(5);
    expect(external.filter((name) => !allowed.has(name))).toEqual([]);
  });
});
