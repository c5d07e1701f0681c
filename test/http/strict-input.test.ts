/**
 * Request bodies are validated as the spec types them, without coercion (query, path and header
 * values keep their string coercion), on REST and GraphQL alike; and query values may carry
 * reserved characters unencoded (`+` for a space, `*`, ...) on every operation, as browsers'
 * URLSearchParams and curl write them.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const t = useTestApp({ rate_limits: { enabled: false } });

let owner: LoggedIn;
let operator: LoggedIn;
beforeAll(async () => {
  owner = await devLogin(t);
  const first = await devLogin(t, `operator-${randomUUID()}@strict.test`);
  await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
  operator = await devLogin(t, first.email); // a session whose claims carry the admin role
});

const bearer = (user: LoggedIn) => ({ authorization: `Bearer ${user.accessToken}` });

function expectRefused(res: { status: number; body: { error?: string; message?: string; details?: unknown } }, field: string, type: string): void {
  expect(res.status).toBe(400);
  expect(res.body.error).toBe('VALIDATION_ERROR');
  expect(res.body.message).toBe(`${field} must be ${type}`);
  expect(res.body.details).toEqual({ fields: [{ field, message: `must be ${type}` }] });
}

describe('REST bodies are not coerced', () => {
  test('POST /v1/overlays {"name":false}: 400 naming body.name, nothing created', async () => {
    expectRefused(await api(t, 'POST', '/overlays', { token: owner.accessToken, body: { name: false } }), 'body.name', 'string');
    expectRefused(await api(t, 'POST', '/overlays', { token: owner.accessToken, body: { name: 12 } }), 'body.name', 'string');
    const list = await api(t, 'GET', '/overlays', { token: owner.accessToken });
    expect(list.body.data).toEqual([]);
  });

  test('PUT /v1/admin/accounts/{id}/retention {"chat_retention_days":false}: 400, the override unchanged', async () => {
    const path = `/admin/accounts/${owner.accountId}/retention`;
    expectRefused(await api(t, 'PUT', path, { token: operator.accessToken, body: { chat_retention_days: false } }), 'body.chat_retention_days', 'integer');
    expectRefused(await api(t, 'PUT', path, { token: operator.accessToken, body: { chat_retention_days: '30' } }), 'body.chat_retention_days', 'integer');
    const cleared = await api(t, 'PUT', path, { token: operator.accessToken, body: { chat_retention_days: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toMatchObject({ chat_retention_days: null });
  });

  test('PATCH /v1/me: null and strings are no booleans, numbers no strings', async () => {
    expectRefused(await api(t, 'PATCH', '/me', { token: owner.accessToken, body: { extension_dev_mode: null } }), 'body.extension_dev_mode', 'boolean');
    expectRefused(await api(t, 'PATCH', '/me', { token: owner.accessToken, body: { extension_dev_mode: 'true' } }), 'body.extension_dev_mode', 'boolean');
    expectRefused(await api(t, 'PATCH', '/me', { token: owner.accessToken, body: { display_name: 5 } }), 'body.display_name', 'string');
    const ok = await api(t, 'PATCH', '/me', { token: owner.accessToken, body: { extension_dev_mode: true } });
    expect(ok.status).toBe(200);
  });

  test('query and path values keep their string coercion', async () => {
    const page = await api(t, 'GET', '/sounds', { token: owner.accessToken, query: { limit: '5', offset: '0' } });
    expect(page.status).toBe(200);
    const live = await api(t, 'GET', '/public-stats/browse', { query: { live: 'true', limit: '5' } });
    expect(live.status).toBe(200);
    const notBoolean = await api(t, 'GET', '/public-stats/browse', { query: { live: 'maybe' } });
    expect(notBoolean.status).toBe(400);
    expect(notBoolean.body.error).toBe('VALIDATION_ERROR');
  });
});

describe('GraphQL refuses the same', () => {
  const updateMe = 'mutation Me($input: UpdateMeInput!) { updateMe(input: $input) { __typename } }';

  test('an explicit null in a nullable input field where REST has no null means "not given", as the SDL says, as a variable or inline', async () => {
    const me = 'query { me { extensionDevMode displayName } }';
    expect((await gql(t.url, 'mutation { updateMe(input: { extensionDevMode: true }) { __typename } }', {}, bearer(owner))).body.errors).toBeUndefined();
    const before = (await gql(t.url, me, {}, bearer(owner))).body.data;
    for (const res of [
      await gql(t.url, updateMe, { input: { extensionDevMode: null } }, bearer(owner)),
      await gql(t.url, 'mutation { updateMe(input: { extensionDevMode: null, displayName: null }) { __typename } }', {}, bearer(owner)),
    ]) {
      expect(res.status).toBe(200);
      expect(res.body.errors).toBeUndefined();
    }
    expect((await gql(t.url, me, {}, bearer(owner))).body.data).toEqual(before);
    // A resource created with every optional member null, as SDKs send unset fields.
    const overlay = await gql(t.url, 'mutation { createOverlay(input: { name: "nulls", settings: null }) { name settings } }', {}, bearer(owner));
    expect(overlay.body.errors).toBeUndefined();
    expect(overlay.body.data).toEqual({ createOverlay: { name: 'nulls', settings: {} } });
  });

  test('wrong types: VALIDATION_ERROR, as a variable or inline', async () => {
    for (const res of [
      await gql(t.url, updateMe, { input: { extensionDevMode: 'true' } }, bearer(owner)),
      await gql(t.url, updateMe, { input: { displayName: 5 } }, bearer(owner)),
      await gql(t.url, 'mutation { updateMe(input: { displayName: false }) { __typename } }', {}, bearer(owner)),
    ]) {
      expect(res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
      expect(res.body.data ?? null).toBeNull();
    }
  });

  test('omitted optional fields still leave the value unchanged', async () => {
    const res = await gql(t.url, updateMe, { input: { displayName: 'Still Me' } }, bearer(owner));
    expect(res.body.errors).toBeUndefined();
  });
});

describe('query values as browsers and curl write them', () => {
  const get = (user: LoggedIn | null, pathAndQuery: string) =>
    fetch(`${t.url}/v1${pathAndQuery}`, { headers: user ? bearer(user) : {} }).then(async (res) => ({ status: res.status, body: (await res.json()) as { error?: string } }));

  const values = ['hello+world', 'a*b', "x:y/z?w@v!$'()*,;[]"];
  const operations = ['/sounds?search=', '/ideas?search=', '/events?search=', '/chat/history?platform_user_id=', '/public-stats/games?search='];

  for (const operation of operations) {
    for (const value of values) {
      test(`GET /v1${operation}${value}: 200`, async () => {
        const res = await get(operation.startsWith('/public-stats') ? null : owner, `${operation}${value}`);
        expect(res.body.error).toBeUndefined();
        expect(res.status).toBe(200);
      });
    }
  }

  test('`+` is a space: the same events as %20', async () => {
    const emitted = await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follow', platform: 'platform_a', raw: { text: 'say hello world' } } });
    expect(emitted.status).toBe(201);
    const plus = (await fetch(`${t.url}/v1/events?search=hello+world`, { headers: bearer(owner) }).then((r) => r.json())) as { data: unknown[] };
    const encoded = (await fetch(`${t.url}/v1/events?search=hello%20world`, { headers: bearer(owner) }).then((r) => r.json())) as { data: unknown[] };
    expect(plus.data).toHaveLength(1);
    expect(plus.data).toEqual(encoded.data);
  });
});
