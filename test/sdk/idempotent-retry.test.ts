/**
 * A retried write stays one write: a proxy in front of the real service lets the first emit reach
 * it (the event is stored) and then answers the SDK 503, as a balancer does when the node's answer
 * is lost. The SDK retries with the same Idempotency-Key and the service answers the stored result
 * instead of storing the event again.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSdk, unwrap } from '../../sdk/src/index';
import { useTestApp } from '../helpers/app';
import { devLogin } from '../helpers/users';

describe('SDK retries of a write lost after the service stored it', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  let proxy: Server;
  let proxyUrl = '';
  let dropNextEmit = false;
  const keys: (string | undefined)[] = [];

  beforeAll(async () => {
    const target = new URL(t.url);
    proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const isEmit = req.method === 'POST' && req.url === '/v1/events/emit';
        if (isEmit) keys.push(req.headers['idempotency-key'] as string | undefined);
        const upstream = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => body.push(chunk));
          answer.on('end', () => {
            if (isEmit && dropNextEmit) {
              dropNextEmit = false;
              res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end(JSON.stringify({ error: 'SERVICE_UNAVAILABLE', message: 'The service is temporarily unavailable' }));
              return;
            }
            res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(body));
          });
        });
        upstream.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((done) => proxy.close(done));
  });

  test('a 503 injected after the service stored an emit leaves exactly one event', async () => {
    const user = await devLogin(t);
    const sdk = createSdk({ baseUrl: proxyUrl, credential: { kind: 'session', accessToken: user.accessToken, refreshToken: user.refreshToken }, sleep: async () => undefined });
    const externalId = `retried-${Date.now()}`;
    dropNextEmit = true;
    const emitted = await unwrap(sdk.rest.POST('/events/emit', { body: { type: 'platform_a:follow', platform: 'platform_a', raw: { retried: true }, external_id: externalId } }));
    expect(emitted).toBeDefined();
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBeDefined();
    expect(keys[1]).toBe(keys[0]);
    const stored = await t.app.db.knex('events').where({ account_id: user.accountId, external_id: externalId }).count<{ count: string | number }[]>('* as count');
    expect(Number(stored[0]!.count)).toBe(1);
  });
});
