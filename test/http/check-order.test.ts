/**
 * The order of a request's checks, on REST and GraphQL: authenticate (401), then authorise the
 * token class, permission and feature (403), then validate the input (400). An anonymous or
 * unauthorised caller learns nothing of an operation's input (no field names, no limits) from a
 * 400. And answers that carry a credential are never kept by a cache.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

describe('authenticate, then authorise, then validate', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  let owner: LoggedIn;
  let narrowKey: string;
  let serviceKey: string;

  beforeAll(async () => {
    owner = await devLogin(t, `order-${randomUUID()}@order.test`);
    const made = await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'narrow', permissions: ['events:read'] } });
    narrowKey = (made.body.data as { key: string }).key;
    const service = await api(t, 'POST', '/service-keys', { token: owner.accessToken, body: { label: 'service', permissions: ['events:read'] } });
    serviceKey = (service.body.data as { key: string }).key;
  });

  test('an anonymous request to a protected operation is 401 whatever its body, never a 400 naming its fields', async () => {
    for (const body of [{}, { title: 'x' }, { user_id: 7, nonsense: true }]) {
      const ingest = await api(t, 'POST', '/internal/audit-ingest', { body });
      expect({ status: ingest.status, body: ingest.body }).toEqual({ status: 401, body: { error: 'UNAUTHORIZED', message: 'Authentication required' } });
    }
    const idea = await api(t, 'POST', '/ideas', { body: { title: 'x' } });
    expect(idea.status).toBe(401);
    // A malformed JSON body is not even read before the gate.
    const res = await fetch(`${t.url}/v1/events/emit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'UNAUTHORIZED', message: 'Authentication required' });
  });

  test('a key lacking the permission, or a service key on a user-scope operation, is 403 before validation', async () => {
    for (const token of [narrowKey, serviceKey]) {
      const idea = await api(t, 'POST', '/ideas', { token, body: { title: 'x' } });
      expect({ status: idea.status, body: idea.body }).toEqual({ status: 403, body: { error: 'FORBIDDEN', message: 'Missing permission: ideas:create' } });
    }
    const emit = await api(t, 'POST', '/events/emit', { token: narrowKey, body: { type: 42 } });
    expect(emit.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: events:create' });
    // A caller the gate lets through gets the validation answer.
    const valid = await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 42 } });
    expect(valid.status).toBe(400);
  });

  test('GraphQL: the gates of the root fields come before argument checks, with the REST code and message', async () => {
    const tooLong = 'x'.repeat(5000);
    const mutation = 'mutation ($input: CreateOverlayInput!) { createOverlay(input: $input) { id } }';
    const anonymous = await gql(t.url, mutation, { input: { name: tooLong } });
    expect(anonymous.body.errors?.[0]).toMatchObject({ message: 'Authentication required', extensions: { code: 'UNAUTHORIZED' } });
    const narrow = await gql(t.url, mutation, { input: { name: tooLong } }, { authorization: `Bearer ${narrowKey}` });
    expect(narrow.body.errors?.[0]).toMatchObject({ message: 'Missing permission: overlays:create', extensions: { code: 'FORBIDDEN' } });
    const allowed = await gql(t.url, mutation, { input: { name: tooLong } }, { authorization: `Bearer ${owner.accessToken}` });
    expect(allowed.status).toBe(400);
    expect(allowed.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    // One refused root field refuses the operation whole: nothing else in it runs.
    const mixed = await gql(t.url, '{ me { id } adminRoles { __typename } }', {}, { authorization: `Bearer ${owner.accessToken}` });
    expect(mixed.body.data ?? null).toBeNull();
    expect(mixed.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  test('answers carrying a credential are Cache-Control: no-store; so is every GraphQL answer', async () => {
    const login = await fetch(`${t.url}/v1/auth/dev/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `nostore-${randomUUID()}@order.test`, display_name: 'n' }) });
    expect(login.status).toBe(200);
    expect(login.headers.get('cache-control')).toBe('no-store');
    const { access_token: token } = ((await login.json()) as { data: { access_token: string } }).data;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    for (const [path, body] of [
      ['/v1/api-keys', { label: 'cached?', permissions: ['events:read'] }],
      ['/v1/auth/ws-token', undefined],
    ] as const) {
      const res = await fetch(`${t.url}${path}`, { method: 'POST', headers, ...(body ? { body: JSON.stringify(body) } : {}) });
      expect(res.status).toBeLessThan(300);
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    const graphql = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers, body: JSON.stringify({ query: 'mutation { issueWsToken { wsToken } }' }) });
    expect(graphql.headers.get('cache-control')).toBe('no-store');
    // An answer without a credential keeps its usual caching.
    const events = await fetch(`${t.url}/v1/events`, { headers });
    expect(events.headers.get('cache-control')).not.toBe('no-store');
  });
});
