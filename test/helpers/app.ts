/**
 * Starts the real service for a test file: real HTTP and WebSocket listeners on 127.0.0.1 with
 * ephemeral ports. Storage follows the environment: with DATABASE_URL a fresh database is created
 * for this app and dropped after; with REDIS_URL a unique key and channel prefix isolates it.
 * Without either, embedded in-memory PGlite and the in-process cache and bus.
 */
import { randomBytes } from 'node:crypto';
import { createApp, sharedStoreMigrations, type App, type AppOptions } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { createScratchDatabase, type ScratchDatabase } from '../../src/infra/db/scratch';
import { startServer, type RunningServer } from '../../src/server';

export interface TestApp {
  app: App;
  url: string;
  metricsUrl: string;
  wsUrl: string;
  running: RunningServer;
  stop(): Promise<void>;
}

export const services = {
  postgres: Boolean(process.env.DATABASE_URL),
  redis: Boolean(process.env.REDIS_URL),
};

/**
 * A fresh, uniquely named database on the server of DATABASE_URL, already migrated (copied from a
 * template, which an app start then finds up to date); drop() removes it.
 */
export function createTestDatabase(): Promise<ScratchDatabase> {
  return createScratchDatabase(process.env.DATABASE_URL!, 't', sharedStoreMigrations);
}

/**
 * The sealing key of every node a test file starts: nodes that share a database (a second node on
 * `t.app.config.database_url`) open each other's sealed values, as nodes configured alike do. A
 * test that is about keys passes `secrets` itself.
 */
const TEST_SEALING_KEY = { id: 'test', key: randomBytes(32).toString('base64') };

export async function startTestApp(overrides: Record<string, unknown> = {}, options: AppOptions = {}): Promise<TestApp> {
  const database = services.postgres ? await createTestDatabase() : null;
  const storage: Record<string, unknown> = {
    database_url: database?.url ?? null,
    data_dir: 'memory://',
    redis_url: process.env.REDIS_URL ?? null,
    redis_prefix: `test:${randomBytes(6).toString('hex')}:`,
  };
  const config = loadConfig({
    env: {},
    overrides: {
      env: 'test',
      port: 0,
      host: '127.0.0.1',
      metrics: { host: '127.0.0.1', port: 0 },
      http: { shutdown_grace_ms: 1000 },
      secrets: { encryption_keys: [TEST_SEALING_KEY] },
      ...storage,
      ...overrides,
    },
  });
  let app: App;
  try {
    app = await createApp(config, options);
  } catch (error) {
    await database?.drop();
    throw error;
  }
  const running = await startServer(app, { port: 0, host: '127.0.0.1', metricsPort: 0, metricsHost: '127.0.0.1' });
  return {
    app,
    url: running.url,
    metricsUrl: running.metricsUrl,
    wsUrl: `${running.url.replace(/^http/, 'ws')}/v1/ws`,
    running,
    async stop() {
      await running.stop();
      await database?.drop();
    },
  };
}

/**
 * Starts one app for the enclosing describe block (beforeAll) and stops it after (afterAll). The
 * returned object forwards to the running app, so tests read `t.url`, `t.app` as usual.
 */
export function useTestApp(overrides: Record<string, unknown> = {}, options: AppOptions = {}): TestApp {
  let started: TestApp | undefined;
  beforeAll(async () => {
    started = await startTestApp(overrides, options);
  });
  afterAll(async () => {
    await started?.stop();
  });
  return new Proxy({} as TestApp, {
    get(_target, property) {
      if (!started) throw new Error('the test app is used before beforeAll started it');
      return started[property as keyof TestApp];
    },
  });
}

/** A system key in the `lm_sys_` format with its config entry (the plain key, hashed at load). */
export function systemKey(label: string, permissions: string[]): { key: string; config: { label: string; key: string; permissions: string[] } } {
  const key = `lm_sys_${randomBytes(32).toString('hex')}`;
  return { key, config: { label, key, permissions } };
}

/** POST /v1/gql; `queryToken` travels as `?token=` (popout, overlay, widget, extension tokens). */
export function gql(url: string, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}, queryToken?: string) {
  const target = queryToken ? `${url}/v1/gql?token=${encodeURIComponent(queryToken)}` : `${url}/v1/gql`;
  return fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] } }));
}
