/**
 * The SDK's browser entry in Chromium: sdk/src/index.ts bundled by esbuild for the browser (an
 * ES module, minified, as a consumer's bundler would make it; a Node built-in anywhere in it fails
 * the build), served beside a dashboard page on another site than the API, which imports it and,
 * through the SDK alone, signs in, emits over REST, lists over GraphQL, opens the live socket with
 * the browser's own WebSocket and receives an event the service emitted, then fails a call without
 * a credential as an ApiError. No console error, page error or CSP violation on the way.
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
window.sdkPage = { run };
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
/** The page globals used here (the project's TypeScript has no DOM library; these run in the page). */
declare const window: { sdkPage?: { run(api: string, event: { type: string; platform: string }): Promise<Outcome> } };

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
});
