/**
 * The "done when": a service started with `env: production` and one provider lets a
 * browser-like client sign in end to end against a local oidc-provider and call GET /v1/tokens/me.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { createApp } from '../../../src/app';
import { loadConfig } from '../../../src/config/config';
import { startServer, type RunningServer } from '../../../src/server';
import { createTestDatabase, services } from '../../helpers/app';
import { Browser, CLIENT_ID, CLIENT_SECRET, startTestProvider, type TestProvider } from '../../helpers/oidc';

const BACK = 'http://127.0.0.1:9/dashboard/signed-in';

/** A free loopback port: production needs `auth.public_url` before the listener opens. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let idp: TestProvider;
let running: RunningServer;
let drop: (() => Promise<void>) | undefined;
let url: string;

beforeAll(async () => {
  idp = await startTestProvider();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const database = services.postgres ? await createTestDatabase() : null;
  drop = database ? () => database.drop() : undefined;
  const config = loadConfig({
    env: {},
    overrides: {
      env: 'production',
      mail: { allow_log_transport: true },
      port,
      host: '127.0.0.1',
      log: { level: 'silent' },
      database_url: database?.url ?? null,
      data_dir: 'memory://',
      redis_url: process.env.REDIS_URL ?? null,
      redis_prefix: `test:${randomBytes(6).toString('hex')}:`,
      metrics: { host: '127.0.0.1', port: 0 },
      http: { shutdown_grace_ms: 1000 },
      secrets: { encryption_keys: [{ id: 'k1', key: randomBytes(32).toString('base64') }] },
      auth: {
        jwt_secret: randomBytes(32).toString('hex'),
        public_url: url,
        redirect_allow_list: ['http://127.0.0.1:9/dashboard'],
        providers: [{ slug: 'idp', kind: 'oidc', issuer: idp.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, purposes: ['login'] }],
      },
    },
  });
  const app = await createApp(config);
  running = await startServer(app, { port, host: '127.0.0.1', metricsPort: 0, metricsHost: '127.0.0.1' });
  await idp.register([`${url}/v1/auth/callback/idp`]);
});

afterAll(async () => {
  await running?.stop();
  await drop?.();
  await idp?.stop();
});

test('production: sign in through the provider, exchange the code, call GET /v1/tokens/me', async () => {
  expect((await fetch(`${url}/v1/auth/dev/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":"a@b.c","display_name":"A"}' })).status).toBe(404);

  const browser = new Browser();
  const { url: back } = await browser.navigate(`${url}/v1/auth/login/idp?redirect_uri=${encodeURIComponent(BACK)}`, { stopAt: BACK, login: 'olivia' });
  const code = new URLSearchParams(new URL(back).hash.slice(1)).get('login_code');
  expect(code).toBeTruthy();

  const exchanged = await fetch(`${url}/v1/auth/login/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ login_code: code }) });
  expect(exchanged.status).toBe(200);
  const { data } = (await exchanged.json()) as { data: { access_token: string; user_id: string; account_id: string } };

  const me = await fetch(`${url}/v1/tokens/me`, { headers: { authorization: `Bearer ${data.access_token}` } });
  expect(me.status).toBe(200);
  const body = (await me.json()) as { data: { context: string; user_id: string; account_id: string; permissions: string[] } };
  expect(body.data).toMatchObject({ context: 'jwt', user_id: data.user_id, account_id: data.account_id });
  // The owner of the account the first sign-in created.
  expect(body.data.permissions.length).toBeGreaterThan(100);
});
