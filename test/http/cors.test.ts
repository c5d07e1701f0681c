/**
 * CORS through real HTTP: a listed dashboard origin gets its preflights
 * answered 204 on every /v1/ path (GraphQL included) with credentials allowed and the rate-limit
 * and request-id headers exposed; any other origin gets no Access-Control-Allow-Origin; an empty
 * allow-list (the default) means same origin only. Preflights are never charged to the rate limit
 * and never reach the OpenAPI validator.
 */
import { randomUUID } from 'node:crypto';
import { useTestApp } from '../helpers/app';
import { devLogin } from '../helpers/users';

const DASHBOARD = 'https://dash.example.com';
const LOCAL_DEV = 'http://localhost:5173';
const STRANGER = 'https://evil.example.net';

function preflight(url: string, origin: string, method = 'POST', requestHeaders = 'authorization,content-type'): Promise<Response> {
  return fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': requestHeaders },
    signal: AbortSignal.timeout(10_000),
  });
}

const list = (value: string | null) => (value ?? '').split(',').map((v) => v.trim().toLowerCase()).filter(Boolean);

describe('CORS with an allow-list', () => {
  // The second origin is written the way an operator might: upper case, a trailing slash.
  const t = useTestApp({ http: { cors_origins: [DASHBOARD, 'HTTP://LOCALHOST:5173/'] } });

  test('a preflight to /v1/gql from a listed origin answers 204 with the allow headers', async () => {
    const res = await preflight(`${t.url}/v1/gql`, DASHBOARD);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(list(res.headers.get('access-control-allow-methods'))).toEqual(expect.arrayContaining(['get', 'post', 'put', 'patch', 'delete']));
    expect(list(res.headers.get('access-control-allow-headers'))).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-request-id', 'idempotency-key']));
    expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect(list(res.headers.get('vary'))).toContain('origin');
    expect(await res.text()).toBe('');
  });

  test.each([
    ['GET', '/v1/tokens/me'],
    ['DELETE', `/v1/auth/sessions/${randomUUID()}`],
    ['PUT', `/v1/account/members/${randomUUID()}`],
    ['PUT', '/v1/notifications/preferences/account_invite'],
    ['POST', '/v1/auth/dev/login'],
    ['GET', '/v1/health'],
  ])('a preflight for %s %s answers 204, not the validator 404/405', async (method, path) => {
    const res = await preflight(`${t.url}${path}`, DASHBOARD, method);
    expect({ path, status: res.status }).toEqual({ path, status: 204 });
    expect(res.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
  });

  test('origins match the way browsers send them (case, default port and trailing slash normalised)', async () => {
    const res = await preflight(`${t.url}/v1/gql`, LOCAL_DEV);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(LOCAL_DEV);
  });

  test('an unlisted origin gets no allow-origin, credentials, methods or headers', async () => {
    for (const origin of [STRANGER, 'https://dash.example.com.evil.example.net', 'http://dash.example.com', 'null']) {
      const res = await preflight(`${t.url}/v1/gql`, origin);
      expect({ origin, status: res.status }).toEqual({ origin, status: 204 });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('access-control-allow-methods')).toBeNull();
      expect(res.headers.get('access-control-allow-headers')).toBeNull();
      expect(list(res.headers.get('vary'))).toContain('origin');
    }
  });

  test('an actual request from a listed origin exposes the rate-limit and request-id headers', async () => {
    const user = await devLogin(t);
    const res = await fetch(`${t.url}/v1/tokens/me`, { headers: { origin: DASHBOARD, authorization: `Bearer ${user.accessToken}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(list(res.headers.get('access-control-expose-headers'))).toEqual(
      expect.arrayContaining(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after', 'x-request-id']),
    );
    expect(res.headers.get('x-ratelimit-limit')).not.toBeNull();
    expect(res.headers.get('x-request-id')).not.toBeNull();
  });

  test('conditional requests work cross-origin: If-None-Match is allowed, ETag exposed, a fresh copy is 304', async () => {
    const allowed = await preflight(`${t.url}/v1/schema`, DASHBOARD, 'GET', 'authorization,if-none-match,cache-control');
    expect(allowed.status).toBe(204);
    expect(list(allowed.headers.get('access-control-allow-headers'))).toEqual(expect.arrayContaining(['authorization', 'if-none-match', 'cache-control']));
    const user = await devLogin(t);
    const headers = { origin: DASHBOARD, authorization: `Bearer ${user.accessToken}` };
    const first = await fetch(`${t.url}/v1/schema`, { headers });
    expect(first.status).toBe(200);
    expect(list(first.headers.get('access-control-expose-headers'))).toEqual(expect.arrayContaining(['etag', 'location', 'retry-after']));
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^W\/"/);
    // As a page sends it: fetch() adds `Cache-Control: no-cache` (a request for the full answer) unless told otherwise.
    const again = await fetch(`${t.url}/v1/schema`, { headers: { ...headers, 'if-none-match': etag!, 'cache-control': 'max-age=0' } });
    expect(again.status).toBe(304);
    expect(again.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(list(again.headers.get('access-control-expose-headers'))).toContain('etag');
  });

  test('errors and GraphQL answers carry the CORS headers too, so a dashboard can read them', async () => {
    const denied = await fetch(`${t.url}/v1/tokens/me`, { headers: { origin: DASHBOARD } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(((await denied.json()) as { error: string }).error).toBe('UNAUTHORIZED');

    const gql = await fetch(`${t.url}/v1/gql`, {
      method: 'POST',
      headers: { origin: DASHBOARD, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(gql.status).toBe(200);
    expect(gql.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(gql.headers.get('access-control-allow-credentials')).toBe('true');
  });

  test('an actual request from an unlisted origin is served without CORS headers (the browser withholds it)', async () => {
    const res = await fetch(`${t.url}/v1/health`, { headers: { origin: STRANGER } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-expose-headers')).toBeNull();
  });

  test('preflights are not charged to the rate limit', async () => {
    const remaining = async () => Number((await fetch(`${t.url}/v1/health`)).headers.get('x-ratelimit-remaining'));
    const before = await remaining();
    for (let i = 0; i < 20; i++) {
      const res = await preflight(`${t.url}/v1/health`, i % 2 ? DASHBOARD : STRANGER, 'GET');
      expect(res.status).toBe(204);
      expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
    }
    expect(await remaining()).toBe(before - 1);
  });
});

describe('CORS by default (empty allow-list: same origin only)', () => {
  const t = useTestApp();

  test('no origin is allowed, on preflights or actual requests', async () => {
    const pre = await preflight(`${t.url}/v1/gql`, DASHBOARD);
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();

    const res = await fetch(`${t.url}/v1/health`, { headers: { origin: DASHBOARD } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('a same-origin request (its Origin is the service itself) works as before', async () => {
    const res = await fetch(`${t.url}/v1/gql`, {
      method: 'POST',
      headers: { origin: t.url, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { __typename: string } }).data.__typename).toBe('Query');
  });
});
