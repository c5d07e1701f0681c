/**
 * The SDK's browser entry in Chromium: sdk/src/index.ts bundled by esbuild for the browser (an
 * ES module, minified, as a consumer's bundler would make it; a Node built-in anywhere in it fails
 * the build), served beside a dashboard page on another site than the API, which imports it and,
 * through the SDK alone, signs in, emits over REST, lists over GraphQL, opens the live socket with
 * the browser's own WebSocket and receives an event the service emitted, then fails a call without
 * a credential as an ApiError. It also resumes: the page's socket is killed, an event is emitted
 * while the page is offline, and the SDK's reconnect (subscribing again with the last cursor as
 * `since`) brings the missed event exactly once, before the live ones. No console error, page
 * error or CSP violation on the way.
 */
import path from 'node:path';
import { build } from 'esbuild';
import type { Browser } from 'puppeteer-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { BROWSER_TEST_TIMEOUT, describeWithBrowser, launchBrowser, startStaticSite, watchedPage, type StaticSite } from './browser';

jest.setTimeout(BROWSER_TEST_TIMEOUT);

const root = path.resolve(__dirname, '../..');

/** The page's own module: everything goes through the bundle it imports. */
const PAGE_MODULE = `
import { ApiError, createSdk, documents } from './sdk.js';

const within = (promise, ms, what) => Promise.race([promise, new Promise((_, fail) => setTimeout(() => fail(new Error('no ' + what + ' within ' + ms + ' ms')), ms))]);

async function run(api, event) {
  const sdk = createSdk({ baseUrl: api });
  const me = await sdk.devLogin({ email: 'browser-' + Date.now() + '@example.test', display_name: 'Browser' });
  const emitted = await sdk.rest.POST('/events/emit', { body: { ...event, raw: { user_id: 'listed' } } });
  const listed = await sdk.graphql(documents.EventsDocument, { filter: { limit: 10 } });

  const live = sdk.realtime();
  let delivered, subscribed;
  const message = new Promise((resolve) => (delivered = resolve));
  const ready = new Promise((resolve) => (subscribed = resolve));
  live.subscribe('events:{account_id}', { account_id: me.accountId }, { onMessage: delivered, onSubscribed: subscribed });
  await within(live.connect(), 15000, 'welcome');
  await within(ready, 15000, 'subscription');
  const sent = await sdk.rest.POST('/events/emit', { body: { ...event, raw: { user_id: 'live' } } });
  const received = await within(message, 15000, 'live event');
  const state = live.state;
  live.close();

  let anonymous = null;
  try {
    await createSdk({ baseUrl: api }).graphql(documents.MeDocument);
  } catch (error) {
    anonymous = error instanceof ApiError ? { code: error.code, status: error.status } : String(error);
  }
  return {
    accountId: me.accountId,
    emitted: { status: emitted.response.status, id: emitted.data && emitted.data.data.id },
    listed: listed.events.items.map((e) => e.id),
    sent: sent.data && sent.data.data.id,
    received: { type: received.type, data: received.data },
    state,
    anonymous,
  };
}
/**
 * Resume across a dropped socket: the browser's WebSocket, wrapped so the page can kill the live
 * socket and keep the network down (a socket that closes before it opens, as a dead network does)
 * until it has emitted the event it will have missed.
 */
async function resume(api, event) {
  const sdk = createSdk({ baseUrl: api });
  const me = await sdk.devLogin({ email: 'resume-' + Date.now() + '@example.test', display_name: 'Resume' });
  const sockets = [];
  let offline = false;
  function Down() {
    const listeners = {};
    this.readyState = 3;
    this.send = () => undefined;
    this.close = () => undefined;
    this.addEventListener = (type, listener) => (listeners[type] = listeners[type] || []).push(listener);
    setTimeout(() => (listeners.close || []).forEach((l) => l({ code: 1006, reason: '' })), 20);
  }
  function Tracked(url) {
    if (offline) return new Down();
    const socket = new WebSocket(url);
    sockets.push(socket);
    return socket;
  }
  const states = [];
  const received = [];
  const waiters = [];
  const wake = () => waiters.splice(0).forEach((check) => check());
  const live = sdk.realtime({ WebSocket: Tracked, reconnect: { initialDelayMs: 100, maxDelayMs: 300 }, onStateChange: (state) => { states.push(state); wake(); } });
  let subscribedCount = 0;
  const onMessage = (message) => {
    received.push({ kind: message.kind, id: message.data && message.data.id, cursor: message.cursor });
    wake();
  };
  const until = (predicate, what) =>
    within(new Promise((resolve) => {
      const check = () => (predicate() ? resolve() : waiters.push(check));
      check();
    }), 15000, what);
  const emit = async (tag) => (await sdk.rest.POST('/events/emit', { body: { ...event, raw: { user_id: tag } } })).data.data.id;
  live.subscribe('events:{account_id}', { account_id: me.accountId }, { onMessage, onSubscribed: () => { subscribedCount += 1; wake(); } });
  await within(live.connect(), 15000, 'welcome');
  await until(() => subscribedCount === 1, 'subscription');

  const before = await emit('before');
  await until(() => received.some((m) => m.id === before), 'the live event before the drop');

  // Kill the socket and keep the network down while an event is emitted.
  offline = true;
  sockets.forEach((socket) => socket.close());
  await until(() => states.includes('waiting'), 'the drop');
  const missed = await emit('missed');
  await new Promise((resolve) => setTimeout(resolve, 500));
  const heardWhileOffline = received.some((m) => m.id === missed);
  offline = false;

  await until(() => subscribedCount >= 2, 'the resubscription');
  await until(() => received.some((m) => m.id === missed), 'the missed event');
  const after = await emit('after');
  await until(() => received.some((m) => m.id === after), 'the live event after the reconnect');
  // Time for a duplicate to show.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  live.close();
  return { before, missed, after, heardWhileOffline, received, sockets: sockets.length };
}
window.sdkPage = { run, resume };
`;

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>SDK dashboard</title><link rel="icon" href="data:,"></head><body><h1>SDK dashboard</h1><script type="module" src="./page.js"></script></body></html>`;

interface Outcome {
  accountId: string;
  emitted: { status: number; id: string };
  listed: string[];
  sent: string;
  received: { type: string; data: { id: string; type: string; raw: { user_id: string } } };
  state: string;
  anonymous: { code: string; status: number } | string | null;
}
interface Resumed {
  before: string;
  missed: string;
  after: string;
  heardWhileOffline: boolean;
  received: Array<{ kind: string; id: string; cursor?: string }>;
  sockets: number;
}
/** The page globals used here (the project's TypeScript has no DOM library; these run in the page). */
declare const window: {
  sdkPage?: { run(api: string, event: { type: string; platform: string }): Promise<Outcome>; resume(api: string, event: { type: string; platform: string }): Promise<Resumed> };
};

const EVENT = { type: 'platform_a:follower', platform: 'platform_a' };

describeWithBrowser('the SDK bundle in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let site: StaticSite;
  let bundle = '';

  beforeAll(async () => {
    const built = await build({
      entryPoints: [path.join(root, 'sdk/src/index.ts')],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      write: false,
      logLevel: 'silent',
    });
    bundle = built.outputFiles[0]!.text;
    [site, browser] = await Promise.all([startStaticSite({ '/dashboard.html': PAGE, '/page.js': PAGE_MODULE, '/sdk.js': bundle }), launchBrowser()]);
    // The page is on another site (localhost) than the API (127.0.0.1), allowed by CORS.
    t = await startTestApp({ http: { cors_origins: [`http://localhost:${site.port}`] } });
  });
  afterAll(async () => {
    await browser?.close();
    await site?.close();
    await t?.stop();
  });

  test('the bundle holds no Node-only import', () => {
    expect(bundle.length).toBeGreaterThan(1000);
    expect(bundle).not.toMatch(/from\s*["']node:|require\(["'](?:node:)?(?:fs|net|http|https|stream|crypto)["']\)/);
  });

  test('a page signs in, calls REST and GraphQL and receives a live event through the bundle', async () => {
    const { page, problems } = await watchedPage(browser);
    await page.goto(`http://localhost:${site.port}/dashboard.html`, { waitUntil: 'load' });
    await page.waitForFunction(() => Boolean(window.sdkPage));
    const outcome = await page.evaluate((api, event) => window.sdkPage!.run(api, event), t.url, EVENT);

    expect(outcome.emitted.status).toBe(201);
    expect(outcome.listed).toContain(outcome.emitted.id);
    expect(outcome.received.type).toBe('event');
    expect(outcome.received.data).toMatchObject({ id: outcome.sent, type: EVENT.type, raw: { user_id: 'live' } });
    expect(outcome.state).toBe('open');
    expect(outcome.anonymous).toEqual({ code: 'UNAUTHORIZED', status: 401 });

    const seen = await problems();
    expect(seen).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });
    await page.close();
  });

  test('after a dropped socket the SDK resumes from its last cursor: the event emitted while offline arrives exactly once', async () => {
    const { page, problems } = await watchedPage(browser);
    await page.goto(`http://localhost:${site.port}/dashboard.html`, { waitUntil: 'load' });
    await page.waitForFunction(() => Boolean(window.sdkPage));
    const outcome = await page.evaluate((api, event) => window.sdkPage!.resume(api, event), t.url, EVENT);

    // Two real sockets: the one killed, and the one the reconnect opened.
    expect(outcome.sockets).toBe(2);
    expect(outcome.heardWhileOffline).toBe(false);
    const ids = outcome.received.map((m) => m.id);
    expect(ids).toEqual([outcome.before, outcome.missed, outcome.after]);
    // Every frame a stored event, with its cursor (the missed one replayed from the stored events).
    expect(outcome.received.every((m) => m.kind === 'event' && typeof m.cursor === 'string')).toBe(true);

    const seen = await problems();
    expect(seen).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });
    await page.close();
  });
});
