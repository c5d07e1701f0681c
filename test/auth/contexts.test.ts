/**
 * The authentication contexts end to end over real HTTP and WebSocket connections (Part 1
 * "Authentication": the context table, "Transports", "JWT", "Key rules" 6; Part 2
 * "Authentication" 1-3): every non-anonymous context on GET /v1/tokens/me and
 * Query.myPermissions with identical data, exact prefixes and lengths, header versus `?token=`
 * transports, JWT use tags on REST, GraphQL and the /v1/ws upgrade, revocation, hash-only
 * storage, and system key grants (`resource:*` counts, `*:*` and `*` are literal).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, decodeJwt } from 'jose';
import { accountPermissions } from '../../src/auth/registry';
import type { MintInput } from '../../src/auth/store';
import { gql, systemKey, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { connect, type TestSocket, closeSocketsAfterEach } from '../helpers/ws';
import type { WsServerMessage } from '../../generated/ws';

const WS_TOKEN_TTL = 120;
const ISSUER = 'creator-backend';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UNAUTHORIZED = { error: 'UNAUTHORIZED', message: 'Authentication required' };
const MY_PERMISSIONS = '{ myPermissions { context userId accountId permissions adminPermissions userPermissions } }';
/** Part 1 "Authorization": the ten user-scoped permissions the `Member` user role holds. */
const IDEAS = [
  'ideas:read',
  'ideas:create',
  'ideas:edit',
  'ideas:delete',
  'ideas:vote',
  'ideas:comment_read',
  'ideas:comment_create',
  'ideas:comment_edit',
  'ideas:comment_delete',
  'ideas:comment_vote',
];

const keys = {
  events: systemKey('events-wildcard', ['events:*']),
  starStar: systemKey('star-star', ['*:*']),
  star: systemKey('star', ['*']),
  audit: systemKey('audit-wildcard', ['audit:*']),
  auditExact: systemKey('audit-exact', ['audit:ingest']),
};

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const hex64 = () => randomBytes(32).toString('hex');

/** How a credential travels: the Authorization header (Bearer, or a raw header value) and/or `?token=`. */
interface Cred {
  header?: string;
  rawHeader?: string;
  query?: string;
}

interface Perms {
  context: string;
  user_id: string | null;
  account_id: string | null;
  permissions: string[];
  admin_permissions: string[];
  user_permissions: string[];
}

const headersOf = (cred: Cred): Record<string, string> =>
  cred.rawHeader !== undefined ? { authorization: cred.rawHeader } : cred.header !== undefined ? { authorization: `Bearer ${cred.header}` } : {};

const withQuery = (base: string, cred: Cred) => (cred.query !== undefined ? `${base}?token=${encodeURIComponent(cred.query)}` : base);

async function restMe(t: TestApp, cred: Cred): Promise<{ status: number; body: unknown }> {
  const res = await fetch(withQuery(`${t.url}/v1/tokens/me`, cred), { headers: headersOf(cred) });
  return { status: res.status, body: await res.json() };
}

/** REST and GraphQL both answer exactly `expected` (GraphQL in camelCase). */
async function expectContext(t: TestApp, cred: Cred, expected: Perms): Promise<void> {
  const rest = await restMe(t, cred);
  expect(rest).toEqual({ status: 200, body: { data: expected, _links: { self: '/v1/tokens/me' } } });
  const viaGql = await gql(t.url, MY_PERMISSIONS, {}, headersOf(cred), cred.query);
  expect(viaGql).toEqual({
    status: 200,
    body: {
      data: {
        myPermissions: {
          context: expected.context,
          userId: expected.user_id,
          accountId: expected.account_id,
          permissions: expected.permissions,
          adminPermissions: expected.admin_permissions,
          userPermissions: expected.user_permissions,
        },
      },
    },
  });
}

/** REST 401 `Authentication required`; GraphQL the UNAUTHORIZED error with no data. */
async function expectAnonymous(t: TestApp, cred: Cred): Promise<void> {
  const rest = await restMe(t, cred);
  expect(rest).toEqual({ status: 401, body: UNAUTHORIZED });
  const viaGql = await gql(t.url, MY_PERMISSIONS, {}, headersOf(cred), cred.query);
  expect(viaGql.status).toBeLessThan(500);
  expect(viaGql.body.data ?? null).toBeNull();
  expect(viaGql.body.errors).toHaveLength(1);
  expect(viaGql.body.errors![0]).toMatchObject({ message: 'Authentication required', extensions: { code: 'UNAUTHORIZED' } });
}

// ------------------------------------------------------------------ WebSocket helpers

const opened = closeSocketsAfterEach();


/** Opens /v1/ws with the credential and consumes the welcome message. */
async function wsSession(t: TestApp, cred: Cred): Promise<TestSocket> {
  const socket = await connect(withQuery(t.wsUrl, cred), { headers: headersOf(cred) });
  opened.push(socket);
  expect((await socket.next()).type).toBe('welcome');
  return socket;
}

/** The upgrade must be refused before the 101 switch; answers its status and JSON body. */
async function wsRefusal(t: TestApp, cred: Cred): Promise<{ status: number | undefined; body: unknown }> {
  try {
    const socket = await connect(withQuery(t.wsUrl, cred), { headers: headersOf(cred) });
    opened.push(socket);
  } catch (error) {
    const e = error as Error & { status?: number; body?: string };
    if (e.status === undefined) throw error;
    return { status: e.status, body: e.body ? (JSON.parse(e.body) as unknown) : undefined };
  }
  throw new Error('the upgrade was accepted');
}

const wsUnauthorized = { status: 401, body: { error: 'UNAUTHORIZED', message: expect.any(String) } };

async function subscribe(s: TestSocket, channel: string): Promise<WsServerMessage> {
  s.send({ type: 'subscribe', channel });
  return s.next();
}

// ------------------------------------------------------------------ JWT helpers

async function signJwt(secret: string, claims: Record<string, unknown>, times: { iat: number; exp: number }): Promise<string> {
  const jwt = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setIssuedAt(times.iat)
    .setJti(randomUUID())
    .setExpirationTime(times.exp)
    .sign(new TextEncoder().encode(secret));
  return `lm_${jwt}`;
}

const payloadOf = (token: string) => decodeJwt(token.slice('lm_'.length));

// ------------------------------------------------------------------ the app

const t = useTestApp({
  rate_limits: { enabled: false },
  auth: { ws_token_expiration: WS_TOKEN_TTL, system_keys: Object.values(keys).map((k) => k.config) },
});

interface Fixtures {
  owner: LoggedIn;
  accountId: string;
  tokens: Record<string, { token: string; id: string }>;
  ids: { developer: string; overlay: string; install: string; extension: string; widget: string };
}

let f: Fixtures;

async function mint(input: MintInput): Promise<{ token: string; id: string }> {
  const { token, row } = await t.app.authStore.mint(input);
  return { token, id: row.id };
}

/**
 * Creates a popout token through the GraphQL twin of POST /v1/tokens (Mutation.createPopoutToken).
 * REST POST /v1/tokens is exercised on its own below: it currently answers 500 (see that test).
 */
async function createPopout(owner: LoggedIn, permissions: string[]): Promise<{ token: string; id: string }> {
  const res = await gql(
    t.url,
    'mutation($input: CreatePopoutTokenInput!) { createPopoutToken(input: $input) { token popoutToken { id permissions } } }',
    { input: { label: 'popout', permissions } },
    { authorization: `Bearer ${owner.accessToken}` },
  );
  expect(res.body.errors).toBeUndefined();
  const created = res.body.data!.createPopoutToken as { token: string; popoutToken: { id: string } };
  return { token: created.token, id: created.popoutToken.id };
}

/** POST /v1/tokens: 201 with the full token shown once. */
async function createPopoutRest(owner: LoggedIn, permissions: string[]): Promise<{ token: string; id: string }> {
  const res = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { label: 'popout', permissions } });
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { data: expect.objectContaining({ token: expect.any(String) }), _links: expect.anything() } });
  const data = res.body.data as { token: string; id: string };
  return { token: data.token, id: data.id };
}

beforeAll(async () => {
  const owner = await devLogin(t);
  const accountId = owner.accountId!;
  const ids = { developer: randomUUID(), overlay: randomUUID(), install: randomUUID(), extension: randomUUID(), widget: randomUUID() };
  const by = { createdBy: owner.userId };
  const tokens = {
    user_api_key: await mint({ kind: 'user_api_key', accountId, userId: owner.userId, ...by, label: 'usr', permissions: ['events:read', 'ideas:read'] }),
    service_key: await mint({ kind: 'service_key', accountId, ...by, label: 'svc', permissions: ['events:read', 'chat:read'] }),
    developer_api_key: await mint({ kind: 'developer_api_key', subjectId: ids.developer, ...by, label: 'dev', permissions: ['extension-dev:read', 'extension-dev:publish'] }),
    popout: await createPopout(owner, ['events:read', 'chat:read']),
    overlay: await mint({ kind: 'overlay', accountId, subjectId: ids.overlay, ...by }),
    shared_overlay: await mint({ kind: 'shared_overlay', accountId, subjectId: ids.overlay, ...by, expiresAt: new Date(Date.now() + 3600_000) }),
    extension: await mint({ kind: 'extension', accountId, subjectId: ids.install, extensionId: ids.extension, expiresAt: new Date(Date.now() + 15 * 60_000) }),
    widget: await mint({ kind: 'widget', accountId, subjectId: ids.widget, ...by }),
  };
  f = { owner, accountId, tokens, ids };
});

const bound = (context: string) => (): Perms => ({ context, user_id: null, account_id: f.accountId, permissions: [], admin_permissions: [], user_permissions: [] });

/** Each non-anonymous context, how it travels, and exactly what it reports. */
const contexts: [string, () => Cred, () => Perms][] = [
  ['system key (config)', () => ({ header: keys.events.key }), () => ({ context: 'system_key', user_id: null, account_id: null, permissions: ['events:*'], admin_permissions: [], user_permissions: [] })],
  [
    'user API key',
    () => ({ header: f.tokens.user_api_key!.token }),
    () => ({ context: 'user_api_key', user_id: f.owner.userId, account_id: f.accountId, permissions: ['events:read'], admin_permissions: [], user_permissions: ['ideas:read'] }),
  ],
  [
    'service key',
    () => ({ header: f.tokens.service_key!.token }),
    () => ({ context: 'service_key', user_id: null, account_id: f.accountId, permissions: ['chat:read', 'events:read'], admin_permissions: [], user_permissions: [] }),
  ],
  [
    'developer API key',
    () => ({ header: f.tokens.developer_api_key!.token }),
    () => ({ context: 'developer_api_key', user_id: null, account_id: null, permissions: ['extension-dev:publish', 'extension-dev:read'], admin_permissions: [], user_permissions: [] }),
  ],
  [
    'JWT (dev login)',
    () => ({ header: f.owner.accessToken }),
    () => ({
      context: 'jwt',
      user_id: f.owner.userId,
      account_id: f.accountId,
      permissions: [...accountPermissions].sort(),
      admin_permissions: [],
      user_permissions: [...IDEAS].sort(),
    }),
  ],
  [
    'popout token (?token=)',
    () => ({ query: f.tokens.popout!.token }),
    () => ({ context: 'popout', user_id: f.owner.userId, account_id: f.accountId, permissions: ['chat:read', 'events:read'], admin_permissions: [], user_permissions: [] }),
  ],
  ['overlay token (header)', () => ({ header: f.tokens.overlay!.token }), bound('overlay')],
  ['overlay token (?token=)', () => ({ query: f.tokens.overlay!.token }), bound('overlay')],
  ['shared overlay token (header)', () => ({ header: f.tokens.shared_overlay!.token }), bound('shared_overlay')],
  ['shared overlay token (?token=)', () => ({ query: f.tokens.shared_overlay!.token }), bound('shared_overlay')],
  ['extension token (header)', () => ({ header: f.tokens.extension!.token }), bound('extension')],
  ['extension token (?token=)', () => ({ query: f.tokens.extension!.token }), bound('extension')],
  ['widget token (header)', () => ({ header: f.tokens.widget!.token }), bound('widget')],
  ['widget token (?token=)', () => ({ query: f.tokens.widget!.token }), bound('widget')],
];

describe('every context on GET /v1/tokens/me and Query.myPermissions', () => {
  test.each(contexts)('%s: reports its context and exactly its scope, identically on both', async (_name, cred, expected) => {
    await expectContext(t, cred(), expected());
  });

  test('the ten contexts of the table are all covered', () => {
    expect(new Set(contexts.map(([, , expected]) => expected().context))).toEqual(
      new Set(['system_key', 'user_api_key', 'service_key', 'developer_api_key', 'jwt', 'popout', 'overlay', 'shared_overlay', 'extension', 'widget']),
    );
  });

  test('anonymous: REST 401 `Authentication required`, GraphQL UNAUTHORIZED', async () => {
    await expectAnonymous(t, {});
  });
});

// ------------------------------------------------------------------ prefixes and lengths

/** kind, prefix, total length, the transport it is allowed on, the valid token. */
const formats: [string, string, number, 'header' | 'query', () => string][] = [
  ['system_key', 'lm_sys_', 71, 'header', () => keys.events.key],
  ['user_api_key', 'lm_usr_', 71, 'header', () => f.tokens.user_api_key!.token],
  ['service_key', 'lm_svc_', 71, 'header', () => f.tokens.service_key!.token],
  ['developer_api_key', 'lm_dev_', 71, 'header', () => f.tokens.developer_api_key!.token],
  ['popout', 'lm_pop_', 71, 'query', () => f.tokens.popout!.token],
  ['overlay', 'lm_overlay_', 75, 'header', () => f.tokens.overlay!.token],
  ['shared_overlay', 'lm_share_', 73, 'header', () => f.tokens.shared_overlay!.token],
  ['extension', 'lm_ext_', 71, 'header', () => f.tokens.extension!.token],
  ['widget', 'lm_widget_', 74, 'header', () => f.tokens.widget!.token],
];

const travel = (transport: 'header' | 'query', token: string): Cred => (transport === 'header' ? { header: token } : { query: token });

describe('exact prefixes and lengths (prefix plus 64 lowercase hex)', () => {
  test.each(formats)('%s: %s, %i characters; wrong length or non-hex body is Anonymous', async (kind, prefix, length, transport, valid) => {
    const token = valid();
    expect(token).toHaveLength(length);
    expect(token.startsWith(prefix)).toBe(true);
    expect(token.slice(prefix.length)).toMatch(/^[0-9a-f]{64}$/);
    const ok = await restMe(t, travel(transport, token));
    expect(ok.status).toBe(200);
    expect((ok.body as { data: Perms }).data.context).toBe(kind);

    const malformed = [
      `${token}0`, // one character too long
      `${token}${hex64()}`, // far too long
      token.slice(0, -1), // one character too short
      `${token.slice(0, -1)}g`, // right length, last character not hex
      `${prefix}${'z'.repeat(64)}`, // right length, no hex at all
      `${prefix}${token.slice(prefix.length).toUpperCase()}`, // right length, upper-case hex
    ];
    for (const bad of malformed) {
      const res = await restMe(t, travel(transport, bad));
      expect({ bad, res }).toEqual({ bad, res: { status: 401, body: UNAUTHORIZED } });
    }
    // Part 2 "Authentication" 3: on the upgrade a presented but invalid credential fails closed.
    expect(await wsRefusal(t, travel(transport, `${token}0`))).toEqual(wsUnauthorized);
  });

  test('malformed tokens are Anonymous on GraphQL too', async () => {
    await expectAnonymous(t, { header: `${f.tokens.service_key!.token}0` });
    await expectAnonymous(t, { query: f.tokens.popout!.token.slice(0, -1) });
    await expectAnonymous(t, { header: `lm_widget_${'Z'.repeat(64)}` });
  });
});

// ------------------------------------------------------------------ transports

describe('transports (Part 1 "Transports")', () => {
  const headerOnly: [string, () => string][] = [
    ['system key', () => keys.events.key],
    ['user API key', () => f.tokens.user_api_key!.token],
    ['service key', () => f.tokens.service_key!.token],
    ['developer API key', () => f.tokens.developer_api_key!.token],
  ];

  test.each(headerOnly)('a %s in ?token= is ignored: REST 401, GraphQL UNAUTHORIZED, upgrade 401', async (_name, token) => {
    await expectAnonymous(t, { query: token() });
    expect(await wsRefusal(t, { query: token() })).toEqual(wsUnauthorized);
  });

  test.each(headerOnly)('the same %s in the header authenticates, on the upgrade too', async (_name, token) => {
    expect((await restMe(t, { header: token() })).status).toBe(200);
    await wsSession(t, { header: token() });
  });

  test('a popout token in the Authorization header is ignored (query only)', async () => {
    await expectAnonymous(t, { header: f.tokens.popout!.token });
  });

  test('a header popout token is final: a valid ?token= popout token is not consulted', async () => {
    await expectAnonymous(t, { header: f.tokens.popout!.token, query: f.tokens.popout!.token });
    const other = await createPopout(f.owner, ['events:read']);
    await expectAnonymous(t, { header: other.token, query: f.tokens.popout!.token });
  });

  test('a recognised but unknown header credential is final too', async () => {
    await expectAnonymous(t, { header: `lm_svc_${hex64()}`, query: f.tokens.overlay!.token });
  });

  test('a valid header credential wins over a different valid ?token= (the context is the header one)', async () => {
    await expectContext(t, { header: f.tokens.service_key!.token, query: f.tokens.overlay!.token }, {
      context: 'service_key',
      user_id: null,
      account_id: f.accountId,
      permissions: ['chat:read', 'events:read'],
      admin_permissions: [],
      user_permissions: [],
    });
    await expectContext(t, { header: f.tokens.widget!.token, query: f.tokens.popout!.token }, bound('widget')());
  });

  test.each([['Bearer abc'], ['Bearer lm_nothing'], ['Basic dXNlcjpwYXNz']])('an unrecognised header (%s) lets ?token= be consulted', async (rawHeader) => {
    await expectContext(t, { rawHeader, query: f.tokens.popout!.token }, {
      context: 'popout',
      user_id: f.owner.userId,
      account_id: f.accountId,
      permissions: ['chat:read', 'events:read'],
      admin_permissions: [],
      user_permissions: [],
    });
  });

  test('a raw access JWT in ?token= is ignored on REST and GraphQL', async () => {
    await expectAnonymous(t, { query: f.owner.accessToken });
  });

  test('a raw access JWT in ?token= is accepted on the WebSocket upgrade, as the user', async () => {
    const s = await wsSession(t, { query: f.owner.accessToken });
    expect(await subscribe(s, `events:${f.accountId}`)).toEqual({ type: 'subscribed', channel: `events:${f.accountId}` });
  });

  test('no token: the upgrade opens as Anonymous, which an account channel refuses (Part 2 "Authentication" 2)', async () => {
    const s = await wsSession(t, {});
    expect(await subscribe(s, `events:${f.accountId}`)).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' });
  });
});

// ------------------------------------------------------------------ JWT use tags

describe('JWT use tags (Part 1 "JWT"; Part 2 "Authentication" 3)', () => {
  async function wsToken(user: LoggedIn): Promise<{ ws_token: string; expires_at: string }> {
    const res = await api(t, 'POST', '/auth/ws-token', { token: user.accessToken });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data']);
    return res.body.data as { ws_token: string; expires_at: string };
  }

  /** Claims the service would put in an access JWT of `user`'s session. */
  const accessClaims = (user: LoggedIn) => {
    const p = payloadOf(user.accessToken);
    return {
      sub: p.sub,
      use: 'access',
      session_id: p.session_id,
      account_id: p.account_id,
      account_permissions: p.account_permissions,
      admin_permissions: p.admin_permissions,
      user_permissions: p.user_permissions,
    };
  };

  test('a ws JWT has the ws use tag, no session id, and lives auth.ws_token_expiration seconds', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { ws_token, expires_at } = await wsToken(f.owner);
    expect(ws_token.startsWith('lm_eyJ')).toBe(true);
    const payload = payloadOf(ws_token);
    expect(payload.use).toBe('ws');
    expect(payload.sub).toBe(f.owner.userId);
    expect(payload).not.toHaveProperty('session_id');
    expect(payload.exp! - payload.iat!).toBe(WS_TOKEN_TTL);
    expect(payload.iat!).toBeGreaterThanOrEqual(before - 1);
    expect(Math.abs(Date.parse(expires_at) / 1000 - payload.exp!)).toBeLessThanOrEqual(1);
    // The access JWT of a login does carry its session.
    expect(payloadOf(f.owner.accessToken)).toMatchObject({ use: 'access', session_id: f.owner.sessionId });
  });

  test('a ws JWT is refused on REST and GraphQL, in the header or in ?token=', async () => {
    const { ws_token } = await wsToken(f.owner);
    await expectAnonymous(t, { header: ws_token });
    await expectAnonymous(t, { query: ws_token });
  });

  test('a ws JWT is accepted on the upgrade (?token= and header) and acts as its user', async () => {
    const { ws_token } = await wsToken(f.owner);
    const viaQuery = await wsSession(t, { query: ws_token });
    expect(await subscribe(viaQuery, `events:${f.accountId}`)).toEqual({ type: 'subscribed', channel: `events:${f.accountId}` });
    const viaHeader = await wsSession(t, { header: ws_token });
    expect(await subscribe(viaHeader, `events:${f.accountId}`)).toEqual({ type: 'subscribed', channel: `events:${f.accountId}` });
  });

  test('a refresh JWT is refused on REST, GraphQL and the upgrade (401 UNAUTHORIZED before the switch)', async () => {
    expect(payloadOf(f.owner.refreshToken).use).toBe('refresh');
    await expectAnonymous(t, { header: f.owner.refreshToken });
    expect(await wsRefusal(t, { query: f.owner.refreshToken })).toEqual(wsUnauthorized);
    expect(await wsRefusal(t, { header: f.owner.refreshToken })).toEqual(wsUnauthorized);
  });

  test('a JWT signed with the service secret by the test itself authenticates (control for the cases below)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signJwt(t.app.config.auth.jwt_secret, accessClaims(f.owner), { iat: now, exp: now + 300 });
    expect((await restMe(t, { header: token })).status).toBe(200);
    await wsSession(t, { query: token });
  });

  test('a JWT signed with another secret: REST 401, upgrade 401 UNAUTHORIZED', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signJwt(`another-secret-${hex64()}`, accessClaims(f.owner), { iat: now, exp: now + 300 });
    await expectAnonymous(t, { header: token });
    expect(await wsRefusal(t, { query: token })).toEqual(wsUnauthorized);
    expect(await wsRefusal(t, { header: token })).toEqual(wsUnauthorized);
  });

  test('an expired JWT: REST 401, upgrade 401 TOKEN_EXPIRED', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signJwt(t.app.config.auth.jwt_secret, accessClaims(f.owner), { iat: now - 600, exp: now - 60 });
    await expectAnonymous(t, { header: token });
    const expired = { status: 401, body: { error: 'TOKEN_EXPIRED', message: expect.any(String) } };
    expect(await wsRefusal(t, { query: token })).toEqual(expired);
    expect(await wsRefusal(t, { header: token })).toEqual(expired);
  });

  test('an expired ws JWT: upgrade 401 TOKEN_EXPIRED', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { ...payloadOf((await wsToken(f.owner)).ws_token) };
    for (const k of ['iat', 'exp', 'jti', 'iss']) delete claims[k];
    const token = await signJwt(t.app.config.auth.jwt_secret, claims, { iat: now - 600, exp: now - 1 });
    expect(await wsRefusal(t, { query: token })).toEqual({ status: 401, body: { error: 'TOKEN_EXPIRED', message: expect.any(String) } });
  });
});

// ------------------------------------------------------------------ revocation

describe('revocation', () => {
  test('revoking a session (DELETE /v1/auth/sessions/{id}) ends its access JWT at once', async () => {
    const second = await devLogin(t, f.owner.email);
    expect(second.sessionId).not.toBe(f.owner.sessionId);
    expect((await restMe(t, { header: second.accessToken })).status).toBe(200);
    await wsSession(t, { query: second.accessToken });

    const revoked = await api(t, 'DELETE', `/auth/sessions/${second.sessionId}`, { token: f.owner.accessToken });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ success: true });

    await expectAnonymous(t, { header: second.accessToken });
    expect(await wsRefusal(t, { query: second.accessToken })).toEqual(wsUnauthorized);
    // The other session is untouched.
    expect((await restMe(t, { header: f.owner.accessToken })).status).toBe(200);
  });

  const opaqueKinds: [MintInput['kind'], 'header' | 'query'][] = [
    ['user_api_key', 'header'],
    ['service_key', 'header'],
    ['developer_api_key', 'header'],
    ['popout', 'query'],
    ['overlay', 'header'],
    ['shared_overlay', 'header'],
    ['extension', 'header'],
    ['widget', 'header'],
  ];

  const mintOf = (kind: MintInput['kind'], expiresAt: Date | null) =>
    mint({
      kind,
      accountId: kind === 'developer_api_key' ? null : f.accountId,
      userId: kind === 'user_api_key' || kind === 'popout' ? f.owner.userId : null,
      createdBy: f.owner.userId,
      subjectId: randomUUID(),
      permissions: kind === 'developer_api_key' ? ['extension-dev:read'] : kind === 'user_api_key' || kind === 'service_key' || kind === 'popout' ? ['events:read'] : [],
      expiresAt,
    });

  test.each(opaqueKinds)('%s: a row with revoked_at stops authenticating', async (kind, transport) => {
    const { token, id } = await mintOf(kind, null);
    const ok = await restMe(t, travel(transport, token));
    expect(ok.status).toBe(200);
    expect((ok.body as { data: Perms }).data.context).toBe(kind);
    expect(await t.app.authStore.revoke(id)).toBe(true);
    await expectAnonymous(t, travel(transport, token));
    expect(await wsRefusal(t, travel(transport, token))).toEqual(wsUnauthorized);
  });

  test.each(opaqueKinds)('%s: a row past expires_at does not authenticate', async (kind, transport) => {
    const live = await mintOf(kind, new Date(Date.now() + 3600_000));
    expect((await restMe(t, travel(transport, live.token))).status).toBe(200);
    const { token } = await mintOf(kind, new Date(Date.now() - 60_000));
    await expectAnonymous(t, travel(transport, token));
  });

  test('a popout token revoked through DELETE /v1/tokens/{id} stops authenticating', async () => {
    const popout = await createPopout(f.owner, ['events:read']);
    expect((await restMe(t, { query: popout.token })).status).toBe(200);
    const res = await api(t, 'DELETE', `/tokens/${popout.id}`, { token: f.owner.accessToken });
    expect(res.status).toBe(200);
    await expectAnonymous(t, { query: popout.token });
  });

  test('a personal key stops when its owner leaves the account; a service key they created keeps working', async () => {
    const owner = await devLogin(t);
    const member = await joinAccount(t, owner, await devLogin(t), { role: 'moderator' });
    const accountId = owner.accountId!;
    expect(member.accountId).toBe(accountId);
    const personal = await mint({ kind: 'user_api_key', accountId, userId: member.userId, createdBy: member.userId, permissions: ['events:read', 'ideas:read'] });
    const service = await mint({ kind: 'service_key', accountId, createdBy: member.userId, permissions: ['events:read'] });
    const serviceContext: Perms = { context: 'service_key', user_id: null, account_id: accountId, permissions: ['events:read'], admin_permissions: [], user_permissions: [] };
    await expectContext(t, { header: personal.token }, {
      context: 'user_api_key',
      user_id: member.userId,
      account_id: accountId,
      permissions: ['events:read'],
      admin_permissions: [],
      user_permissions: ['ideas:read'],
    });
    await expectContext(t, { header: service.token }, serviceContext);

    const removed = await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true });

    await expectAnonymous(t, { header: personal.token });
    expect(await wsRefusal(t, { header: personal.token })).toEqual(wsUnauthorized);
    await expectContext(t, { header: service.token }, serviceContext);
    await wsSession(t, { header: service.token });
    // The member's session JWT loses the account with the next request.
    const after = await restMe(t, { header: member.accessToken });
    expect(after.status).toBe(200);
    expect((after.body as { data: Perms }).data).toMatchObject({ context: 'jwt', user_id: member.userId, account_id: null, permissions: [] });
  });
});

// ------------------------------------------------------------------ storage

describe('only hashes are stored', () => {
  test('no column of credentials or sessions holds a plain token; token_hash is its SHA-256', async () => {
    const popout = await createPopout(f.owner, ['chat:read']);
    const { ws_token } = (await api(t, 'POST', '/auth/ws-token', { token: f.owner.accessToken })).body.data as { ws_token: string };
    const minted = { ...f.tokens, extra_popout: popout };
    const knex = t.app.db.knex;
    const credentials = (await knex('credentials').select('*')) as Record<string, unknown>[];
    const sessions = (await knex('sessions').select('*')) as Record<string, unknown>[];
    expect(sessions.some((s) => s.id === f.owner.sessionId)).toBe(true);

    const cells = [...credentials, ...sessions].flatMap((row) => Object.values(row).map((v) => (v instanceof Date ? v.toISOString() : JSON.stringify(v))));
    const secrets = [f.owner.accessToken, f.owner.refreshToken, ws_token];
    for (const { token } of Object.values(minted)) secrets.push(token, token.slice(token.lastIndexOf('_') + 1));
    for (const secret of secrets) {
      const found = cells.filter((c) => c.includes(secret) || c.includes(secret.slice('lm_'.length)));
      expect({ secret, found }).toEqual({ secret, found: [] });
    }
    // JWT signatures are not stored either.
    for (const jwt of [f.owner.accessToken, f.owner.refreshToken]) {
      const signature = jwt.split('.')[2]!;
      expect(cells.filter((c) => c.includes(signature))).toEqual([]);
    }

    for (const [kind, { token, id }] of Object.entries(minted)) {
      const row = credentials.find((r) => r.id === id);
      expect({ kind, token_hash: row?.token_hash }).toEqual({ kind, token_hash: sha256(token) });
    }
  });
  test('a popout token created through POST /v1/tokens authenticates in ?token= only, and only its hash is stored', async () => {
    const popout = await createPopoutRest(f.owner, ['events:read']);
    expect(popout.token).toMatch(/^lm_pop_[0-9a-f]{64}$/);
    await expectContext(t, { query: popout.token }, {
      context: 'popout',
      user_id: f.owner.userId,
      account_id: f.accountId,
      permissions: ['events:read'],
      admin_permissions: [],
      user_permissions: [],
    });
    await expectAnonymous(t, { header: popout.token });
    const row = (await t.app.db.knex('credentials').where({ id: popout.id }).first()) as Record<string, unknown>;
    expect(row.token_hash).toBe(sha256(popout.token));
    expect(JSON.stringify(row)).not.toContain(popout.token.slice('lm_pop_'.length));
  });
});

// ------------------------------------------------------------------ system key grants

describe('system key grants (Part 1 "Key rules" 6)', () => {
  test.each([
    ['events:*', () => keys.events.key, ['events:*']],
    ['*:*', () => keys.starStar.key, ['*:*']],
    ['*', () => keys.star.key, ['*']],
    ['audit:*', () => keys.audit.key, ['audit:*']],
  ])('a key with %s reports exactly its literal grants, never expanded', async (_name, key, permissions) => {
    await expectContext(t, { header: key() }, { context: 'system_key', user_id: null, account_id: null, permissions, admin_permissions: [], user_permissions: [] });
  });

  test('events:* passes a permission it covers (events:read on a channel); *:* and * do not', async () => {
    const channel = `events:${randomUUID()}`;
    const covered = await wsSession(t, { header: keys.events.key });
    expect(await subscribe(covered, channel)).toEqual({ type: 'subscribed', channel });
    for (const key of [keys.starStar.key, keys.star.key, keys.audit.key]) {
      const s = await wsSession(t, { header: key });
      expect(await subscribe(s, channel)).toEqual({ type: 'error', code: 'UNAUTHORIZED', channel, message: `Not authorized to subscribe to ${channel}` });
    }
  });

  const ingest = (token: string | undefined) =>
    api(t, 'POST', '/internal/audit-ingest', { token, body: { user_id: f.owner.userId, type: 'user:login', metadata: { via: 'contexts-test' } } });

  test.each([
    ['*:*', () => keys.starStar.key],
    ['*', () => keys.star.key],
    ['events:*', () => keys.events.key],
  ])('POST /v1/internal/audit-ingest with %s: 403 `Missing permission: audit:ingest`', async (_name, key) => {
    const res = await ingest(key());
    expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: 'FORBIDDEN', message: 'Missing permission: audit:ingest' } });
  });

  test.each([
    ['audit:*', () => keys.audit.key],
    ['audit:ingest', () => keys.auditExact.key],
  ])('POST /v1/internal/audit-ingest with %s: 201 and the row id', async (_name, key) => {
    const res = await ingest(key());
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(UUID) });
  });

  test('POST /v1/internal/audit-ingest: a user session gets 403, anonymous 401', async () => {
    const asUser = await ingest(f.owner.accessToken);
    expect({ status: asUser.status, body: asUser.body }).toEqual({ status: 403, body: { error: 'FORBIDDEN', message: expect.any(String) } });
    const anonymous = await ingest(undefined);
    expect({ status: anonymous.status, body: anonymous.body }).toEqual({ status: 401, body: UNAUTHORIZED });
  });
});
