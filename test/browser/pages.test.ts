/**
 * Pages on other origins in a real browser, each served by a small static server:
 * - a dashboard on another site (`http://localhost:<port>`, the API at `http://127.0.0.1:<port>`),
 *   allowed by `http.cors_origins`: dev login, an event emitted and listed, a conditional request
 *   answered 304 through CORS, a WebSocket that receives an event emitted over REST, and a refused
 *   upgrade as a page sees it (close 1006, no reason);
 * - a popout on the same site (`http://127.0.0.1:<other port>`): the raw token exchanged for the
 *   httpOnly session cookie (`credentials: 'include'`), the session read by the cookie alone, a
 *   WebSocket token minted by it, a live event, then the token revoked and the socket closed 4002.
 */
import type { Browser, Page } from 'puppeteer-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';
import { BROWSER_TEST_TIMEOUT, describeWithBrowser, launchBrowser, startStaticSite, watchedPage, type StaticSite } from './browser';

jest.setTimeout(BROWSER_TEST_TIMEOUT);

/**
 * What both pages share: REST calls and a WebSocket that records what it receives. The API's
 * address comes from the page's query string (`?api=`).
 */
const PAGE_SCRIPT = `
const API = new URL(location.href).searchParams.get('api');
const WS = API.replace(/^http/, 'ws') + '/v1/ws';
async function call(method, path, { token, body, headers, credentials } = {}) {
  const res = await fetch(API + '/v1' + path, {
    method,
    credentials: credentials || 'omit',
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: 'Bearer ' + token } : {}), ...headers },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, etag: res.headers.get('etag'), remaining: res.headers.get('x-ratelimit-remaining'), body: text ? JSON.parse(text) : null };
}
/** Opens a socket; resolves with it once \`welcome\` arrived, or with the close when refused. */
function openSocket(query) {
  return new Promise((resolve) => {
    const socket = new WebSocket(WS + query);
    const messages = [];
    const waiters = [];
    let closed = null;
    const state = { socket, messages, next, get closed() { return closed; }, whenClosed: new Promise((done) => socket.addEventListener('close', (e) => { closed = { code: e.code, reason: e.reason, wasClean: e.wasClean }; done(closed); resolve(state); })) };
    function next(predicate, ms = 20000) {
      const found = messages.find(predicate);
      if (found) { messages.splice(messages.indexOf(found), 1); return Promise.resolve(found); }
      return new Promise((done, fail) => {
        const timer = setTimeout(() => fail(new Error('no matching message; got ' + JSON.stringify(messages))), ms);
        waiters.push({ predicate, done: (m) => { clearTimeout(timer); done(m); } });
      });
    }
    socket.addEventListener('message', (e) => {
      const message = JSON.parse(e.data);
      if (message.type === 'welcome') resolve(state);
      const waiter = waiters.find((w) => w.predicate(message));
      if (waiter) { waiters.splice(waiters.indexOf(waiter), 1); waiter.done(message); } else messages.push(message);
    });
  });
}
window.page = { call, openSocket };
`;

const html = (title: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><link rel="icon" href="data:,"></head><body><h1>${title}</h1><script>${PAGE_SCRIPT}</script></body></html>`;

interface PageSocket {
  socket: { send(text: string): void; close(code?: number): void };
  closed: { code: number; reason: string; wasClean: boolean } | null;
  whenClosed: Promise<{ code: number; reason: string; wasClean: boolean }>;
  next(predicate: (m: any) => boolean, ms?: number): Promise<any>;
}
interface PageApi {
  call(method: string, path: string, options?: { token?: string; body?: unknown; headers?: Record<string, string>; credentials?: 'omit' | 'include' }): Promise<{ status: number; etag: string | null; remaining: string | null; body: any }>;
  openSocket(query: string): Promise<PageSocket>;
}
/** The page globals used here (the project's TypeScript has no DOM library; these run in the page). */
declare const window: { page: PageApi; sockets: Record<string, PageSocket> };
declare const document: { cookie: string };

const EVENT = { type: 'platform_a:follower', platform: 'platform_a' };

describeWithBrowser('pages on other origins in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let dashboard: StaticSite;
  let popout: StaticSite;

  beforeAll(async () => {
    [dashboard, popout, browser] = await Promise.all([startStaticSite({ '/dashboard.html': html('Dashboard') }), startStaticSite({ '/popout.html': html('Popout') }), launchBrowser()]);
    t = await startTestApp({ http: { cors_origins: [`http://localhost:${dashboard.port}`, `http://127.0.0.1:${popout.port}`] } });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([dashboard?.close(), popout?.close()]);
    await t?.stop();
  });

  async function open(url: string): Promise<{ page: Page; problems: Awaited<ReturnType<typeof watchedPage>>['problems'] }> {
    const watched = await watchedPage(browser);
    await watched.page.goto(url, { waitUntil: 'load' });
    await watched.page.waitForFunction(() => Boolean(window.page));
    return watched;
  }

  test('a dashboard on another site signs in, lists events, revalidates with its ETag and gets a live event over its WebSocket', async () => {
    const { page, problems } = await open(`http://localhost:${dashboard.port}/dashboard.html?api=${encodeURIComponent(t.url)}`);
    const outcome = await page.evaluate(async (event) => {
      const { call, openSocket } = window.page;
      const login = await call('POST', '/auth/dev/login', { body: { email: `dash-${Date.now()}@example.test`, display_name: 'Dash' } });
      const { access_token: token, account_id: account } = login.body.data;
      const emitted = await call('POST', '/events/emit', { token, body: { ...event, raw: { user_id: 'listed' } } });
      const listed = await call('GET', '/events', { token });
      // A conditional request as a page makes one: If-None-Match with the ETag it was given (and
      // max-age=0, else fetch() adds no-cache, which asks for the full answer).
      const revalidated = await call('GET', '/events', { token, headers: { 'if-none-match': listed.etag ?? '', 'cache-control': 'max-age=0' } });
      const minted = await call('POST', '/auth/ws-token', { token });
      const live = await openSocket(`?token=${encodeURIComponent(minted.body.data.ws_token)}`);
      live.socket.send(JSON.stringify({ type: 'subscribe', channel: `events:${account}` }));
      const subscribed = await live.next((m) => m.type === 'subscribed');
      const sent = await call('POST', '/events/emit', { token, body: { ...event, raw: { user_id: 'live' } } });
      const delivered = await live.next((m) => m.type === 'event');
      live.socket.close(1000);
      // A refused upgrade (401 here) reaches a page as a close with code 1006 and no reason.
      const refused = await openSocket('?token=lm_garbage');
      return {
        login: login.status,
        emitted: emitted.status,
        listed: { status: listed.status, types: listed.body.data.map((e: { type: string }) => e.type), etag: listed.etag, remaining: listed.remaining },
        revalidated: revalidated.status,
        subscribed,
        sent: sent.status,
        delivered: { type: delivered.type, raw: delivered.data?.raw ?? delivered.data?.data?.raw ?? null, text: JSON.stringify(delivered) },
        refused: refused.closed,
      };
    }, EVENT);

    expect(outcome.login).toBe(200);
    expect(outcome.emitted).toBe(201);
    expect(outcome.listed.status).toBe(200);
    expect(outcome.listed.types).toContain(EVENT.type);
    // Exposed to the page by CORS: the ETag and the rate-limit budget.
    expect(outcome.listed.etag).toMatch(/^W\/"/);
    expect(Number(outcome.listed.remaining)).toBeGreaterThan(0);
    expect(outcome.revalidated).toBe(304);
    expect(outcome.subscribed).toEqual({ type: 'subscribed', channel: expect.stringMatching(/^events:/) });
    expect(outcome.sent).toBe(201);
    expect(outcome.delivered.type).toBe('event');
    expect(outcome.delivered.text).toContain('"live"');
    expect(outcome.refused).toEqual({ code: 1006, reason: '', wasClean: false });

    // The refused upgrade is the one error Chromium reports (it logs the failed handshake).
    const seen = await problems();
    expect(seen.pageErrors).toEqual([]);
    expect(seen.cspViolations).toEqual([]);
    expect(seen.consoleErrors.filter((e) => !e.includes('lm_garbage'))).toEqual([]);
    await page.close();
  });

  test('a same-site popout exchanges its token for the cookie, mints a ws token, gets a live event, and is closed 4002 on revoke', async () => {
    const owner = await devLogin(t);
    const created = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { label: 'popout page', permissions: ['events:read'] } });
    expect(created.status).toBe(201);
    const raw = created.body.data as { id: string; token: string };

    const { page, problems } = await open(`http://127.0.0.1:${popout.port}/popout.html?api=${encodeURIComponent(t.url)}`);
    const opened = await page.evaluate(async (rawToken) => {
      const { call, openSocket } = window.page;
      // The raw token is used once; everything after rides on the httpOnly cookie.
      const exchanged = await call('POST', '/auth/popout/exchange', { body: { token: rawToken }, credentials: 'include' });
      const withoutCookie = await call('GET', '/auth/popout/session');
      const session = await call('GET', '/auth/popout/session', { credentials: 'include' });
      const minted = await call('POST', '/auth/popout/ws-token', { credentials: 'include' });
      const live = await openSocket(`?token=${encodeURIComponent(minted.body.data.ws_token)}`);
      window.sockets = { live };
      live.socket.send(JSON.stringify({ type: 'subscribe', channel: `events:${session.body.data.account_id}` }));
      const subscribed = await live.next((m) => m.type === 'subscribed');
      return {
        exchanged: exchanged.status,
        cookieVisibleToScript: document.cookie.includes('svc-popout-token'),
        withoutCookie: withoutCookie.status,
        session: session.status,
        accountId: session.body.data.account_id,
        minted: minted.status,
        subscribed,
      };
    }, raw.token);
    expect(opened).toMatchObject({ exchanged: 200, cookieVisibleToScript: false, withoutCookie: 401, session: 200, accountId: owner.accountId, minted: 200 });
    expect(opened.subscribed).toEqual({ type: 'subscribed', channel: `events:${owner.accountId}` });

    expect((await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { ...EVENT, raw: { user_id: 'to-the-popout' } } })).status).toBe(201);
    const delivered = await page.evaluate(async () => JSON.stringify(await window.sockets.live.next((m) => m.type === 'event')));
    expect(delivered).toContain('"to-the-popout"');

    expect((await api(t, 'DELETE', `/tokens/${raw.id}`, { token: owner.accessToken })).status).toBe(200);
    const ended = await page.evaluate(async () => {
      const { live } = window.sockets;
      const closed = await live.whenClosed;
      const revokedError = live.next((m) => m.type === 'error', 1).catch(() => null);
      return { closed, error: await revokedError };
    });
    expect(ended.closed.code).toBe(4002);
    expect(ended.error).toEqual({ type: 'error', code: 'TOKEN_REVOKED', message: 'Token revoked' });
    // The cookie's session ends with its token: the page is signed out.
    expect(await page.evaluate(async () => (await window.page.call('GET', '/auth/popout/session', { credentials: 'include' })).status)).toBe(401);

    const seen = await problems();
    expect(seen.pageErrors).toEqual([]);
    expect(seen.cspViolations).toEqual([]);
    // The two 401s the page asked for on purpose are the only errors Chromium logs.
    expect(seen.consoleErrors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await page.close();
  });
});
