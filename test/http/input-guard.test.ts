/**
 * Strings PostgreSQL cannot store through real HTTP: a NUL character or a
 * lone UTF-16 surrogate anywhere in a REST query string, path parameter or JSON body (nested, in
 * keys, in opaque `metadata`), or in a GraphQL argument (inline literal or variable, through
 * fragments), is refused once at the edge with 400 VALIDATION_ERROR naming the field, before
 * anything is stored; twins name the same field with the same message; well-formed text
 * (surrogate pairs included) still goes through; broken percent-encoding, non-JSON bodies and JSON
 * nested past any consumer's stack stay 4xx.
 */
import { messages } from '../../src/errors';
import { fieldName, inputProblem, MAX_JSON_DEPTH } from '../../src/http/input-guard';
import { systemKey, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const NUL = '\u0000';
const HIGH = '\ud83c'; // first half of 🎥 alone
const LOW = '\udfa5'; // second half of 🎥 alone
const HOSTILE: [string, string][] = [
  ['a NUL', `a${NUL}b`],
  ['a lone high surrogate', `a${HIGH}b`],
  ['a lone low surrogate', `a${LOW}b`],
  ['a high surrogate at the end', `ab${HIGH}`],
  ['two high surrogates', `${HIGH}${HIGH}${LOW}`],
];

const ingestKey = systemKey('input-guard-ingest', ['audit:ingest']);

/** The one refusal body: REST `{ error, message, details }`. */
function refusal(field: string) {
  return { error: 'VALIDATION_ERROR', message: messages.invalidCharacters(field), details: { fields: [{ field, message: messages.invalidCharactersDetail }] } };
}

/** The same refusal as a GraphQL error: HTTP 400, the same message and details under extensions. */
function gqlRefusal(field: string) {
  const { error, message, details } = refusal(field);
  return { errors: [{ message, extensions: { code: error, details } }] };
}

async function gql(t: Pick<TestApp, 'url'>, query: string, variables: Record<string, unknown>, token?: string) {
  const res = await fetch(`${t.url}/v1/gql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

/** A raw request (the path goes out exactly as written, percent-escapes included). */
async function raw(t: Pick<TestApp, 'url'>, method: string, path: string, token: string, body?: string) {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
}

describe('the shared check', () => {
  test('finds the first unstorable string at any depth, and names a bad key by its object', () => {
    expect(inputProblem({ a: 'ok', b: [1, 'fine', { c: `x${NUL}` }] })).toEqual({ kind: 'characters', path: ['b', 2, 'c'] });
    expect(inputProblem({ meta: { [`k${NUL}`]: 1 } })).toEqual({ kind: 'characters', path: ['meta'] });
    expect(inputProblem({ a: '🎥 ok', b: null, c: true, d: 1.5 })).toBeNull();
    expect(fieldName([], 'body')).toBe('body');
    expect(fieldName(['x'.repeat(100), 2], 'body')).toBe(`${'x'.repeat(64)}….2`);
  });

  test('nesting is bounded, and a body nested 100,000 deep is walked without recursion', () => {
    const nest = (levels: number, inner: unknown): unknown => {
      let value = inner;
      for (let i = 0; i < levels; i++) value = [value];
      return value;
    };
    expect(inputProblem(nest(MAX_JSON_DEPTH, 'ok'))).toBeNull();
    expect(inputProblem(nest(MAX_JSON_DEPTH + 1, 'ok'))?.kind).toBe('depth');
    expect(inputProblem(nest(100_000, `x${NUL}`))?.kind).toBe('depth');
  });
});

describe('REST', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, auth: { system_keys: [ingestKey.config] } });
  let user: LoggedIn;
  beforeAll(async () => {
    user = await devLogin(t);
  });

  test.each(HOSTILE)('dev login display_name with %s → 400 naming display_name, no user made', async (_label, value) => {
    const email = `guard-${Math.random().toString(36).slice(2)}@example.test`;
    const res = await api(t, 'POST', '/auth/dev/login', { body: { email, display_name: value } });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: refusal('display_name') });
    // The e-mail is still free: the refused login stored nothing.
    const again = await api(t, 'POST', '/auth/dev/login', { body: { email, display_name: 'Fine' } });
    expect(again.status).toBe(200);
  });

  test('a well-formed surrogate pair (an emoji) is accepted', async () => {
    const res = await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'Studio 🎥' } });
    expect(res.status).toBe(201);
    expect((res.body as { data: { name: string } }).data.name).toBe('Studio 🎥');
  });

  test('account and role names, and an item of a list', async () => {
    expect((await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: `a${NUL}` } })).body).toEqual(refusal('name'));
    expect((await api(t, 'POST', '/account/roles', { token: user.accessToken, body: { name: `r${LOW}`, permissions: [] } })).body).toEqual(refusal('name'));
    const listed = await api(t, 'POST', '/account/roles', { token: user.accessToken, body: { name: 'ok', permissions: ['chat:read', `x${NUL}`] } });
    expect({ status: listed.status, body: listed.body }).toEqual({ status: 400, body: refusal('permissions.1') });
  });

  test('a key anywhere in the body, refused without echoing it', async () => {
    const res = await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'ok', [`k${NUL}`]: 1 } });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: refusal('body') });
  });

  test('opaque JSON (audit-ingest metadata): nested values and keys', async () => {
    const ingest = (metadata: unknown) => api(t, 'POST', '/internal/audit-ingest', { token: ingestKey.key, body: { user_id: user.userId, type: 'user:login', metadata } });
    const nested = await ingest({ note: 'fine', deep: { list: ['ok', `bad${HIGH}`] } });
    expect({ status: nested.status, body: nested.body }).toEqual({ status: 400, body: refusal('metadata.deep.list.1') });
    const key = await ingest({ deep: { [`${LOW}`]: 'x' } });
    expect({ status: key.status, body: key.body }).toEqual({ status: 400, body: refusal('metadata.deep') });
    expect((await ingest({ note: 'Studio 🎥' })).status).toBe(201);
  });

  test('a query string parameter (audit type filter)', async () => {
    const res = await raw(t, 'GET', '/v1/me/audit-log?type=a%00b', user.accessToken);
    expect(res).toEqual({ status: 400, body: refusal('type') });
  });

  test('a path parameter: NUL, a lone surrogate’s UTF-8 and broken percent-encoding', async () => {
    for (const segment of ['a%00b', 'a%ED%A0%80', 'a%E0%A4%A', '%C0%80']) {
      const res = await raw(t, 'PATCH', `/v1/notifications/preferences/${segment}`, user.accessToken, JSON.stringify({ channel: 'off' }));
      expect({ segment, ...res }).toEqual({ segment, status: 400, body: refusal('type') });
    }
  });

  test('a body that is not JSON stays 400 BAD_REQUEST', async () => {
    const res = await raw(t, 'POST', '/v1/accounts', user.accessToken, '{"name":');
    expect(res).toEqual({ status: 400, body: { error: 'BAD_REQUEST', message: messages.malformedJson } });
  });

  test('JSON nested deeper than any consumer can serialise → 400 naming the outermost field, not a 500', async () => {
    const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    for (const levels of [1000, 100_000]) {
      const body = `{"user_id":"${user.userId}","type":"user:login","metadata":${deep(levels)}}`;
      const res = await fetch(`${t.url}/v1/internal/audit-ingest`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ingestKey.key}` }, body });
      expect({ levels, status: res.status, body: await res.json() }).toEqual({
        levels,
        status: 400,
        body: {
          error: 'VALIDATION_ERROR',
          message: messages.nestedTooDeep('metadata', MAX_JSON_DEPTH),
          details: { fields: [{ field: 'metadata', message: messages.nestedTooDeepDetail(MAX_JSON_DEPTH) }] },
        },
      });
    }
    const fine = await api(t, 'POST', '/internal/audit-ingest', { token: ingestKey.key, body: { user_id: user.userId, type: 'user:login', metadata: JSON.parse(deep(20)) } });
    expect(fine.status).toBe(201);
    const list = await raw(t, 'POST', '/v1/accounts', user.accessToken, `{"name":${'['.repeat(100_000)}"x"${']'.repeat(100_000)}}`);
    expect(list).toMatchObject({ status: 400, body: { error: 'VALIDATION_ERROR', message: messages.nestedTooDeep('name', MAX_JSON_DEPTH) } });
  });
});

describe('GraphQL', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  let user: LoggedIn;
  beforeAll(async () => {
    user = await devLogin(t);
  });

  const createAccount = 'mutation ($input: CreateAccountInput!) { createAccount(input: $input) { id name } }';

  test.each(HOSTILE)('a variable with %s → 400 naming the argument path, nothing stored', async (_label, value) => {
    const before = await api(t, 'GET', '/accounts', { token: user.accessToken });
    const res = await gql(t, createAccount, { input: { name: value } }, user.accessToken);
    expect(res).toEqual({ status: 400, body: gqlRefusal('input.name') });
    expect((await api(t, 'GET', '/accounts', { token: user.accessToken })).body).toEqual(before.body);
  });

  test('an inline literal (GraphQL strings can carry \\u0000)', async () => {
    const res = await gql(t, 'mutation { createAccount(input: { name: "a\\u0000b" }) { id } }', {}, user.accessToken);
    expect(res).toEqual({ status: 400, body: gqlRefusal('input.name') });
  });

  test('an argument inside a fragment, and a scalar variable inside an input literal', async () => {
    const res = await gql(t, 'query ($t: String) { ...F } fragment F on Query { myAuditLog(filter: { type: $t }) { total } }', { t: `x${NUL}` }, user.accessToken);
    expect(res).toEqual({ status: 400, body: gqlRefusal('filter.type') });
  });

  test('anonymous callers are refused the same way (the guard runs before any gate)', async () => {
    const res = await gql(t, 'mutation ($t: String!) { exchangePopoutToken(token: $t) { token } }', { t: `lm_pop_${NUL}` });
    expect(res).toEqual({ status: 400, body: gqlRefusal('token') });
  });

  test('a well-formed emoji goes through', async () => {
    const res = await gql(t, createAccount, { input: { name: 'Stream 🎥' } }, user.accessToken);
    expect(res.status).toBe(200);
    expect((res.body as { data: { createAccount: { name: string } } }).data.createAccount.name).toBe('Stream 🎥');
  });

  test('twins: REST and GraphQL refuse the same field with the same code, message and details', async () => {
    const rest = await raw(t, 'PATCH', '/v1/notifications/preferences/a%00b', user.accessToken, JSON.stringify({ channel: 'off' }));
    const graphql = await gql(t, 'mutation ($type: String!) { updateNotificationPreference(type: $type, channel: "off") { type } }', { type: `a${NUL}b` }, user.accessToken);
    expect(rest).toEqual({ status: 400, body: refusal('type') });
    expect(graphql).toEqual({ status: 400, body: gqlRefusal('type') });
    const restChannel = await raw(t, 'PATCH', '/v1/notifications/preferences/member_joined', user.accessToken, JSON.stringify({ channel: `off${HIGH}` }));
    const graphqlChannel = await gql(t, 'mutation { updateNotificationPreference(type: "member_joined", channel: "off\\u0000") { type } }', {}, user.accessToken);
    expect(restChannel).toEqual({ status: 400, body: refusal('channel') });
    expect(graphqlChannel).toEqual({ status: 400, body: gqlRefusal('channel') });
  });
});
