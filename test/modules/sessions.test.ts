/**
 * Login sessions and popout sessions over real HTTP, GraphQL and WebSocket (Part 1, "JWT",
 * "Popout tokens and sessions", "First-party gate", the /v1/auth/* and /v1/tokens rows of the REST
 * table; DESIGN.md "Bootstrap contract"): development login, refresh rotation with replay
 * detection, account switching, the session list and revocation (on every node when PostgreSQL is
 * available), WebSocket-only tokens, popout tokens, their exchange for a cookie session, the
 * popout WebSocket token, revocation re-checked on every request, and the creator's live role
 * capping a popout. Runs embedded and against PostgreSQL + Redis.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { PERMISSION_CLAIMS, decodePermissions } from '../../src/auth/permission-claims';
import { gql, services, startTestApp, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type ApiResult, type LoggedIn } from '../helpers/users';
import { connect, type TestSocket, closeSocketsAfterEach } from '../helpers/ws';

// ------------------------------------------------------------------------------------ constants

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const JWT = /^lm_eyJ[\w-]*\.[\w-]+\.[\w-]+$/;
const POPOUT_TOKEN = /^lm_pop_[0-9a-f]{64}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const AUTH_REQUIRED = { error: 'UNAUTHORIZED', message: 'Authentication required' };
const INVALID_REFRESH = { error: 'UNAUTHORIZED', message: 'Invalid or expired refresh token' };
const INVALID_POPOUT = { error: 'UNAUTHORIZED', message: 'Invalid or expired popout token' };
const ACCOUNT_NOT_FOUND = { error: 'NOT_FOUND', message: 'Account not found' };
const SESSION_NOT_FOUND = { error: 'NOT_FOUND', message: 'Session not found' };
const MEMBER_NOT_FOUND = { error: 'NOT_FOUND', message: 'Member not found' };
const SWITCH_NEEDS_SESSION = { error: 'FORBIDDEN', message: 'Switching accounts requires a user session' };
const PAST_EXPIRY = { error: 'VALIDATION_ERROR', message: 'expires_at cannot be in the past' };
const FIRST_PARTY_ONLY = { error: 'FORBIDDEN', message: "This operation requires a user session or the user's own API key" };
const POPOUT_SESSION_ONLY = { error: 'FORBIDDEN', message: 'This operation requires a popout session' };
const invalidPermission = (p: string) => ({ error: 'VALIDATION_ERROR', message: `Invalid permission: ${p}` });
const cannotGrant = (p: string) => ({ error: 'FORBIDDEN', message: `Cannot grant permissions you do not hold: ${p}` });

const SESSION_TOKEN_KEYS = ['access_token', 'account_id', 'expires_at', 'refresh_token', 'session_id', 'user_id'];
const SESSION_KEYS = ['created_at', 'current', 'expires_at', 'id', 'ip_address', 'last_used_at', 'user_agent'];
const POPOUT_KEYS = ['account_id', 'created_at', 'created_by', 'expires_at', 'id', 'label', 'last_used_at', 'permissions', 'revoked_at', 'user_id'];

const Q = {
  myPermissions: '{ myPermissions { context userId accountId permissions adminPermissions userPermissions } }',
  switchAccount: 'mutation($id: UUID!) { switchAccount(accountId: $id) { accessToken refreshToken expiresAt sessionId userId accountId } }',
  sessions: '{ sessions { id createdAt lastUsedAt expiresAt ipAddress userAgent current } }',
  revokeSession: 'mutation($id: UUID!) { revokeSession(id: $id) }',
  issueWsToken: 'mutation { issueWsToken { wsToken expiresAt } }',
  issuePopoutWsToken: 'mutation { issuePopoutWsToken { wsToken expiresAt } }',
  exchange: 'mutation($token: String!) { exchangePopoutToken(token: $token) { token expiresAt accountId } }',
  createPopout:
    'mutation($input: CreatePopoutTokenInput!) { createPopoutToken(input: $input) { token popoutToken { id accountId userId createdBy label permissions expiresAt revokedAt lastUsedAt createdAt } } }',
} as const;

// ------------------------------------------------------------------------------------ helpers

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const cookie = (sessionJwt: string) => ({ cookie: `svc-popout-token=${sessionJwt}` });

/** The payload of an `lm_`-prefixed JWT, its compact permission claims read back as lists. */
function claims(token: string): Record<string, unknown> {
  const [, payload] = token.slice('lm_'.length).split('.');
  const decoded = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
  for (const name of PERMISSION_CLAIMS) if (decoded[name] !== undefined) decoded[name] = decodePermissions(decoded[name]);
  return decoded;
}

function expectRestError(res: ApiResult, status: number, body: { error: string; message: string }): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body });
}

type GqlResult = Awaited<ReturnType<typeof gql>>;

function expectGqlError(res: GqlResult, body: { error: string; message: string }): void {
  expect(res.status).toBeLessThan(500);
  expect(res.body.data ?? null).toBeNull();
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]).toMatchObject({ message: body.message, extensions: { code: body.error } });
}

function expectGqlData(res: GqlResult): Record<string, unknown> {
  expect(res.body.errors).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data!;
}

/** Milliseconds between an ISO timestamp and now + `seconds`, for "about N seconds from now". */
const driftFrom = (iso: string, seconds: number) => Math.abs(new Date(iso).getTime() - (Date.now() + seconds * 1000));

const opened = closeSocketsAfterEach();


/** Opens a WebSocket session and consumes its welcome. */
async function wsSession(url: string): Promise<TestSocket> {
  const socket = await connect(url);
  opened.push(socket);
  expect((await socket.next()).type).toBe('welcome');
  return socket;
}

/** The rejection of an upgrade that must be refused before the 101 switch. */
async function wsRefused(url: string): Promise<{ status?: number; body: unknown }> {
  try {
    const socket = await connect(url);
    opened.push(socket);
  } catch (error) {
    const e = error as Error & { status?: number; body?: string };
    return { status: e.status, body: e.body ? (JSON.parse(e.body) as unknown) : null };
  }
  throw new Error(`upgrade to ${url} was accepted`);
}

async function subscribe(s: TestSocket, channel: string) {
  s.send({ type: 'subscribe', channel });
  return s.nextMatching((m) => (m.type === 'subscribed' || m.type === 'error') && (m as { channel?: string }).channel === channel);
}

/** Parses a Set-Cookie header into its name, value and lower-cased attributes. */
function parseSetCookie(header: string | null): { name: string; value: string; attributes: Record<string, string | true> } {
  expect(header).not.toBeNull();
  const [pair, ...rest] = header!.split(';').map((s) => s.trim());
  const eq = pair!.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const part of rest) {
    const i = part.indexOf('=');
    if (i < 0) attributes[part.toLowerCase()] = true;
    else attributes[part.slice(0, i).toLowerCase()] = part.slice(i + 1);
  }
  return { name: pair!.slice(0, eq), value: decodeURIComponent(pair!.slice(eq + 1)), attributes };
}

/**
 * The popout cookie of a response: the exact attribute set of the spec (Max-Age 900, Path /,
 * HttpOnly, SameSite Lax, Secure unless development); an `Expires` twin of Max-Age is tolerated.
 */
function expectPopoutCookie(header: string | null, sessionJwt: string, secure: boolean): void {
  const parsed = parseSetCookie(header);
  expect(parsed.name).toBe('svc-popout-token');
  expect(parsed.value).toBe(sessionJwt);
  const { expires, ...rest } = parsed.attributes;
  expect(rest).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax', ...(secure ? { secure: true } : {}) });
  if (expires !== undefined) expect(driftFrom(new Date(expires as string).toISOString(), 900)).toBeLessThan(10_000);
}

/** Creates a popout token through POST /v1/tokens (its own tests assert the full answer). */
async function createPopout(t: TestApp, creator: LoggedIn, body: { permissions: string[]; label?: string }) {
  const res = await api(t, 'POST', '/tokens', { token: creator.accessToken, body });
  if (res.status !== 201) throw new Error(`popout create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string; token: string; user_id: string; permissions: string[] };
}

async function exchange(t: TestApp, token: string): Promise<string> {
  const res = await api(t, 'POST', '/auth/popout/exchange', { body: { token } });
  if (res.status !== 200) throw new Error(`exchange failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body.data as { token: string }).token;
}

async function popoutWsToken(t: TestApp, sessionJwt: string): Promise<string> {
  const res = await api(t, 'POST', '/auth/popout/ws-token', { headers: cookie(sessionJwt) });
  if (res.status !== 200) throw new Error(`popout ws-token failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body.data as { ws_token: string }).ws_token;
}

const myPermissions = (t: TestApp, options: Parameters<typeof api>[3]) => api(t, 'GET', '/tokens/me', options);

/** An owner and an administrator of the owner's account (joined through a real invite). */
async function ownerWithAdmin(t: TestApp): Promise<{ owner: LoggedIn; admin: LoggedIn }> {
  const owner = await devLogin(t);
  const admin = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
  return { owner, admin };
}

// ------------------------------------------------------------------------------------ tests

describe('development login', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test('a new e-mail creates a user with an account it owns, on the four default roles', async () => {
    const email = `dev-${randomUUID()}@example.test`;
    const res = await api(t, 'POST', '/auth/dev/login', { body: { email, display_name: 'Dev User' } });
    expect(res.status).toBe(200);
    const data = res.body.data as Record<string, string>;
    expect(Object.keys(data).sort()).toEqual(SESSION_TOKEN_KEYS);
    expect(data.access_token).toMatch(JWT);
    expect(data.refresh_token).toMatch(JWT);
    expect(data.user_id).toMatch(UUID);
    expect(data.account_id).toMatch(UUID);
    expect(data.session_id).toMatch(UUID);
    expect(driftFrom(data.expires_at!, 900)).toBeLessThan(10_000);
    expect(claims(data.access_token!)).toMatchObject({ use: 'access', sub: data.user_id, session_id: data.session_id, account_id: data.account_id });
    expect(claims(data.refresh_token!)).toMatchObject({ use: 'refresh', sub: data.user_id, session_id: data.session_id });

    const me = await api(t, 'GET', '/me', { token: data.access_token });
    expect(me.status).toBe(200);
    // `me` carries more documented fields since issue 9 (feature statuses, limits, connections).
    expect(me.body).toMatchObject({
      data: {
        id: data.user_id,
        email,
        display_name: 'Dev User',
        avatar_url: null,
        active_account_id: data.account_id,
        owned_account_count: 1,
        created_at: expect.stringMatching(ISO),
      },
      _links: { self: '/v1/me' },
    });

    const roles = await api(t, 'GET', '/account/roles', { token: data.access_token });
    expect(roles.status).toBe(200);
    const list = roles.body.data as { name: string; is_system: boolean; member_count: number }[];
    expect(list.map((r) => [r.name, r.is_system, r.member_count])).toEqual([
      ['owner', true, 1],
      ['administrator', false, 0],
      ['moderator', false, 0],
      ['viewer', false, 0],
    ]);

    const perms = await myPermissions(t, { token: data.access_token });
    expect(perms.body.data).toMatchObject({ context: 'jwt', user_id: data.user_id, account_id: data.account_id });
    expect((perms.body.data as { permissions: string[] }).permissions).toEqual(expect.arrayContaining(['tokens:create', 'account:delete', 'plan:edit']));
  });

  test('logging in again answers the same user and account with a new session', async () => {
    const first = await devLogin(t);
    const second = await devLogin(t, first.email);
    expect(second.userId).toBe(first.userId);
    expect(second.accountId).toBe(first.accountId);
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(second.accessToken).not.toBe(first.accessToken);
    expect(second.refreshToken).not.toBe(first.refreshToken);
    const me = await api(t, 'GET', '/me', { token: second.accessToken });
    expect((me.body.data as { owned_account_count: number }).owned_account_count).toBe(1);
    const sessions = await api(t, 'GET', '/auth/sessions', { token: second.accessToken });
    expect((sessions.body.data as { id: string }[]).map((s) => s.id).sort()).toEqual([first.sessionId, second.sessionId].sort());
    // Both sessions stay usable.
    expect((await myPermissions(t, { token: first.accessToken })).status).toBe(200);
  });

  test.each([
    ['91 characters', 'd'.repeat(90) + 'x'],
    ['100 characters (the most the spec allows)', 'D'.repeat(100)],
    ['100 astral characters (the schema counts code points)', '\u{1F600}'.repeat(100)],
  ])('a first login with a display_name of %s succeeds; the derived account name fits', async (_name, displayName) => {
    const email = `long-${randomUUID()}@example.test`;
    const res = await api(t, 'POST', '/auth/dev/login', { body: { email, display_name: displayName } });
    expect(res.status).toBe(200);
    const token = (res.body.data as Record<string, string>).access_token!;
    const me = await api(t, 'GET', '/me', { token });
    expect((me.body.data as { display_name: string }).display_name).toBe(displayName);
    const account = await api(t, 'GET', '/account', { token });
    expect(account.status).toBe(200);
    const name = (account.body.data as { name: string }).name;
    expect(name.endsWith("'s account")).toBe(true);
    expect([...name].length).toBeLessThanOrEqual(100);
    expect(displayName.startsWith(name.slice(0, -"'s account".length))).toBe(true);
    // A second login finds the same user.
    const again = await api(t, 'POST', '/auth/dev/login', { body: { email, display_name: displayName } });
    expect((again.body.data as Record<string, string>).user_id).toBe((res.body.data as Record<string, string>).user_id);
  });

  test.each([
    ['no body fields', {}],
    ['a missing display_name', { email: 'x@example.test' }],
    ['a malformed e-mail', { email: 'not-an-email', display_name: 'X' }],
    ['an empty display_name', { email: 'x@example.test', display_name: '' }],
    ['an unknown field', { email: 'x@example.test', display_name: 'X', role: 'admin' }],
    ['a non-string e-mail', { email: 42, display_name: 'X' }],
  ])('%s gives 400 VALIDATION_ERROR', async (_name, body) => {
    const res = await api(t, 'POST', '/auth/dev/login', { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'VALIDATION_ERROR', message: expect.any(String), ...(res.body.details ? { details: expect.any(Object) } : {}) });
    expect(res.body.message!.length).toBeGreaterThan(0);
  });
});

describe('development login switched off', () => {
  const t = useTestApp({ auth: { dev_login: false } });

  test('POST /v1/auth/dev/login answers 404 NOT_FOUND, like an unknown path', async () => {
    const res = await api(t, 'POST', '/auth/dev/login', { body: { email: `off-${randomUUID()}@example.test`, display_name: 'Off' } });
    const unknown = await api(t, 'POST', '/auth/no-such-route', { body: {} });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });
    expect(res.body).toEqual(unknown.body);
  });
});

describe('sessions, tokens and popouts', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, });

  // ---------------------------------------------------------------------- refresh
  describe('refresh', () => {
    test('rotates: a new pair for the same session, the new refresh token differs', async () => {
      const user = await devLogin(t);
      const res = await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } });
      expect(res.status).toBe(200);
      const data = res.body.data as Record<string, string>;
      expect(Object.keys(data).sort()).toEqual(SESSION_TOKEN_KEYS);
      expect(data).toMatchObject({ session_id: user.sessionId, user_id: user.userId, account_id: user.accountId });
      expect(data.refresh_token).toMatch(JWT);
      expect(data.refresh_token).not.toBe(user.refreshToken);
      expect(data.access_token).not.toBe(user.accessToken);
      expect(claims(data.refresh_token!).jti).not.toBe(claims(user.refreshToken).jti);
      const perms = await myPermissions(t, { token: data.access_token });
      expect(perms.status).toBe(200);
      expect(perms.body.data).toMatchObject({ context: 'jwt', user_id: user.userId, account_id: user.accountId });
      // The newest refresh token rotates again.
      const again = await api(t, 'POST', '/auth/refresh', { body: { refresh_token: data.refresh_token } });
      expect(again.status).toBe(200);
    });

    test('replaying a rotated refresh token gives 401 and revokes the whole session', async () => {
      const user = await devLogin(t);
      const other = await devLogin(t, user.email); // a second session of the same user survives
      const rotated = await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } });
      expect(rotated.status).toBe(200);
      const newest = rotated.body.data as Record<string, string>;
      expect((await myPermissions(t, { token: newest.access_token })).status).toBe(200);

      expectRestError(await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } }), 401, INVALID_REFRESH);

      expectRestError(await myPermissions(t, { token: newest.access_token }), 401, AUTH_REQUIRED);
      expectRestError(await myPermissions(t, { token: user.accessToken }), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'POST', '/auth/refresh', { body: { refresh_token: newest.refresh_token } }), 401, INVALID_REFRESH);
      const list = await api(t, 'GET', '/auth/sessions', { token: other.accessToken });
      expect((list.body.data as { id: string }[]).map((s) => s.id)).toEqual([other.sessionId]);
    });

    test('an access token, a WebSocket token or garbage presented as refresh_token gives 401', async () => {
      const user = await devLogin(t);
      const ws = await api(t, 'POST', '/auth/ws-token', { token: user.accessToken });
      expect(ws.status).toBe(200);
      for (const refresh_token of [user.accessToken, (ws.body.data as { ws_token: string }).ws_token, 'not-a-token', `lm_${user.refreshToken.slice(4)}`]) {
        expectRestError(await api(t, 'POST', '/auth/refresh', { body: { refresh_token } }), 401, INVALID_REFRESH);
      }
      // None of them disturbed the session: its real refresh token still works.
      expect((await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } })).status).toBe(200);
    });

    test("a revoked session's refresh token gives 401", async () => {
      const user = await devLogin(t);
      const other = await devLogin(t, user.email);
      expect((await api(t, 'DELETE', `/auth/sessions/${user.sessionId}`, { token: other.accessToken })).status).toBe(200);
      expectRestError(await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } }), 401, INVALID_REFRESH);
    });

    test('a refresh token authenticates nothing but /auth/refresh', async () => {
      const user = await devLogin(t);
      expectRestError(await myPermissions(t, { token: user.refreshToken }), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.myPermissions, {}, bearer(user.refreshToken)), AUTH_REQUIRED);
    });
  });

  // ---------------------------------------------------------------------- switch account
  describe('switch account', () => {
    test('a member of two accounts switches; the session keeps the account across refresh', async () => {
      const owner = await devLogin(t);
      const joined = await joinAccount(t, owner, await devLogin(t), { role: 'moderator' });
      const ownAccount = (await devLogin(t, joined.email)).accountId!;
      expect(ownAccount).not.toBe(owner.accountId);
      // joinAccount already switched this session into the owner's account.
      const before = await myPermissions(t, { token: joined.accessToken });
      expect(before.body.data).toMatchObject({ context: 'jwt', account_id: owner.accountId });
      expect((before.body.data as { permissions: string[] }).permissions).toContain('chat:read');
      expect((before.body.data as { permissions: string[] }).permissions).not.toContain('tokens:create');

      const res = await api(t, 'POST', '/auth/switch-account', { token: joined.accessToken, body: { account_id: ownAccount } });
      expect(res.status).toBe(200);
      const data = res.body.data as Record<string, string>;
      expect(Object.keys(data).sort()).toEqual(SESSION_TOKEN_KEYS);
      expect(data).toMatchObject({ session_id: joined.sessionId, user_id: joined.userId, account_id: ownAccount });
      expect(data.access_token).not.toBe(joined.accessToken);
      expect(data.refresh_token).not.toBe(joined.refreshToken);
      const after = await myPermissions(t, { token: data.access_token });
      expect(after.body.data).toMatchObject({ context: 'jwt', user_id: joined.userId, account_id: ownAccount });
      expect((after.body.data as { permissions: string[] }).permissions).toContain('tokens:create');

      const refreshed = await api(t, 'POST', '/auth/refresh', { body: { refresh_token: data.refresh_token } });
      expect(refreshed.status).toBe(200);
      expect(refreshed.body.data).toMatchObject({ session_id: joined.sessionId, account_id: ownAccount });
      const afterRefresh = await myPermissions(t, { token: (refreshed.body.data as { access_token: string }).access_token });
      expect(afterRefresh.body.data).toMatchObject({ account_id: ownAccount });

      // GraphQL twin, back to the owner's account.
      const viaGql = expectGqlData(await gql(t.url, Q.switchAccount, { id: owner.accountId }, bearer((refreshed.body.data as { access_token: string }).access_token)));
      expect(viaGql.switchAccount).toEqual({
        accessToken: expect.stringMatching(JWT),
        refreshToken: expect.stringMatching(JWT),
        expiresAt: expect.stringMatching(ISO),
        sessionId: joined.sessionId,
        userId: joined.userId,
        accountId: owner.accountId,
      });
      const back = await myPermissions(t, { token: (viaGql.switchAccount as { accessToken: string }).accessToken });
      expect(back.body.data).toMatchObject({ account_id: owner.accountId });
    });

    test('an account the caller is not a member of gives 404 "Account not found" on REST and GraphQL', async () => {
      const user = await devLogin(t);
      const stranger = await devLogin(t);
      for (const accountId of [stranger.accountId!, randomUUID()]) {
        expectRestError(await api(t, 'POST', '/auth/switch-account', { token: user.accessToken, body: { account_id: accountId } }), 404, ACCOUNT_NOT_FOUND);
        expectGqlError(await gql(t.url, Q.switchAccount, { id: accountId }, bearer(user.accessToken)), ACCOUNT_NOT_FOUND);
      }
      // The session still names its own account.
      expect((await myPermissions(t, { token: user.accessToken })).body.data).toMatchObject({ account_id: user.accountId });
    });

    test('a user API key gives 403 "Switching accounts requires a user session"', async () => {
      const owner = await devLogin(t);
      const member = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
      const { token } = await t.app.authStore.mint({
        kind: 'user_api_key',
        accountId: member.accountId,
        userId: member.userId,
        createdBy: member.userId,
        label: 'switch',
        permissions: ['events:read'],
      });
      expect((await myPermissions(t, { token })).body.data).toMatchObject({ context: 'user_api_key', user_id: member.userId });
      const ownAccount = (await devLogin(t, member.email)).accountId!;
      expectRestError(await api(t, 'POST', '/auth/switch-account', { token, body: { account_id: ownAccount } }), 403, SWITCH_NEEDS_SESSION);
      expectGqlError(await gql(t.url, Q.switchAccount, { id: ownAccount }, bearer(token)), SWITCH_NEEDS_SESSION);
    });

    test('anonymous gives 401 and a malformed account id 400', async () => {
      expectRestError(await api(t, 'POST', '/auth/switch-account', { body: { account_id: randomUUID() } }), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.switchAccount, { id: randomUUID() }), AUTH_REQUIRED);
      const user = await devLogin(t);
      const bad = await api(t, 'POST', '/auth/switch-account', { token: user.accessToken, body: { account_id: 'nope' } });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('VALIDATION_ERROR');
    });
  });

  // ---------------------------------------------------------------------- sessions
  describe('session list and revocation', () => {
    test('REST and GraphQL list the open sessions; current marks only the calling one', async () => {
      const a = await devLogin(t);
      const b = await devLogin(t, a.email);
      const rest = await api(t, 'GET', '/auth/sessions', { token: a.accessToken });
      expect(rest.status).toBe(200);
      const list = rest.body.data as Record<string, unknown>[];
      expect(list).toHaveLength(2);
      for (const s of list) expect(Object.keys(s).sort()).toEqual(SESSION_KEYS);
      expect(list.map((s) => s.id)).toEqual([b.sessionId, a.sessionId]); // newest first
      expect(list.map((s) => [s.id, s.current])).toEqual([
        [b.sessionId, false],
        [a.sessionId, true],
      ]);
      expect(list[1]).toMatchObject({ created_at: expect.stringMatching(ISO), last_used_at: expect.stringMatching(ISO), expires_at: expect.stringMatching(ISO) });
      expect(rest.body).toMatchObject({ _meta: { total: 2 } });

      const viaGql = expectGqlData(await gql(t.url, Q.sessions, {}, bearer(b.accessToken)));
      const gqlList = viaGql.sessions as { id: string; current: boolean }[];
      expect(gqlList.map((s) => [s.id, s.current])).toEqual([
        [b.sessionId, true],
        [a.sessionId, false],
      ]);
      // Another user sees none of them.
      const stranger = await devLogin(t);
      const theirs = await api(t, 'GET', '/auth/sessions', { token: stranger.accessToken });
      expect((theirs.body.data as { id: string }[]).map((s) => s.id)).toEqual([stranger.sessionId]);
    });

    test('revoking an own session (REST, then GraphQL) ends its access token at once and is audited', async () => {
      const a = await devLogin(t);
      const b = await devLogin(t, a.email);
      const c = await devLogin(t, a.email);
      expect((await myPermissions(t, { token: b.accessToken })).status).toBe(200);

      const res = await api(t, 'DELETE', `/auth/sessions/${b.sessionId}`, { token: a.accessToken });
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { success: true } });
      expectRestError(await myPermissions(t, { token: b.accessToken }), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.myPermissions, {}, bearer(b.accessToken)), AUTH_REQUIRED);

      expect(expectGqlData(await gql(t.url, Q.revokeSession, { id: c.sessionId }, bearer(a.accessToken)))).toEqual({ revokeSession: true });
      expectRestError(await myPermissions(t, { token: c.accessToken }), 401, AUTH_REQUIRED);

      const list = await api(t, 'GET', '/auth/sessions', { token: a.accessToken });
      expect((list.body.data as { id: string }[]).map((s) => s.id)).toEqual([a.sessionId]);

      // Revoking an already revoked session: nothing left to revoke.
      expectRestError(await api(t, 'DELETE', `/auth/sessions/${b.sessionId}`, { token: a.accessToken }), 404, SESSION_NOT_FOUND);

      const audit = await api(t, 'GET', '/me/audit-log', { token: a.accessToken, query: { type: 'user:session_revoked' } });
      expect(audit.status).toBe(200);
      const items = (audit.body as unknown as { items: { type: string; metadata: { session_id: string } }[] }).items;
      expect(items.map((i) => i.metadata.session_id).sort()).toEqual([b.sessionId, c.sessionId].sort());
      expect(items[0]).toMatchObject({ scope: 'user', type: 'user:session_revoked', user_id: a.userId, actor_id: a.userId });
      expect(audit.body).toMatchObject({ total: 2 });
    });

    test('a session can revoke itself', async () => {
      const a = await devLogin(t);
      expect((await api(t, 'DELETE', `/auth/sessions/${a.sessionId}`, { token: a.accessToken })).status).toBe(200);
      expectRestError(await myPermissions(t, { token: a.accessToken }), 401, AUTH_REQUIRED);
    });

    test('another user\'s or an unknown session gives 404 "Session not found" on REST and GraphQL', async () => {
      const a = await devLogin(t);
      const victim = await devLogin(t);
      for (const id of [victim.sessionId, randomUUID()]) {
        expectRestError(await api(t, 'DELETE', `/auth/sessions/${id}`, { token: a.accessToken }), 404, SESSION_NOT_FOUND);
        expectGqlError(await gql(t.url, Q.revokeSession, { id }, bearer(a.accessToken)), SESSION_NOT_FOUND);
      }
      expect((await myPermissions(t, { token: victim.accessToken })).status).toBe(200);
    });

    (services.postgres ? test : test.skip)('revocation is effective on every node sharing the database', async () => {
      // startTestApp creates (and on stop drops) its own scratch database only; the explicit
      // database_url makes node B use node A's database, which B's stop() leaves alone.
      const b = await startTestApp({ database_url: t.app.config.database_url, rate_limits: { enabled: false } });
      try {
        expect(b.app.config.database_url).toBe(t.app.config.database_url);
        const user = await devLogin(t);
        const other = await devLogin(t, user.email);
        const onB = await myPermissions(b, { token: user.accessToken });
        expect(onB.status).toBe(200);
        expect(onB.body.data).toMatchObject({ context: 'jwt', user_id: user.userId, account_id: user.accountId });
        expect((await api(t, 'DELETE', `/auth/sessions/${user.sessionId}`, { token: other.accessToken })).status).toBe(200);
        expectRestError(await myPermissions(b, { token: user.accessToken }), 401, AUTH_REQUIRED);
        expectRestError(await api(b, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } }), 401, INVALID_REFRESH);
        expect((await myPermissions(b, { token: other.accessToken })).status).toBe(200);
      } finally {
        await b.stop();
      }
      // Node A's database survived node B's stop.
      expect((await devLogin(t)).userId).toMatch(UUID);
    });
  });

  // ---------------------------------------------------------------------- ws-token
  describe('ws-token', () => {
    test('REST and GraphQL mint a ws JWT (no session id) that opens /v1/ws and is refused on REST', async () => {
      const user = await devLogin(t);
      const res = await api(t, 'POST', '/auth/ws-token', { token: user.accessToken });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { ws_token: expect.stringMatching(JWT), expires_at: expect.stringMatching(ISO) } });
      const { ws_token: wsToken, expires_at: expiresAt } = res.body.data as { ws_token: string; expires_at: string };
      expect(driftFrom(expiresAt, 900)).toBeLessThan(10_000);
      const payload = claims(wsToken);
      expect(payload).toMatchObject({ use: 'ws', sub: user.userId, account_id: user.accountId });
      expect(payload).not.toHaveProperty('session_id');

      const viaGql = expectGqlData(await gql(t.url, Q.issueWsToken, {}, bearer(user.accessToken)));
      const gqlToken = viaGql.issueWsToken as { wsToken: string; expiresAt: string };
      expect(gqlToken).toEqual({ wsToken: expect.stringMatching(JWT), expiresAt: expect.stringMatching(ISO) });
      expect(claims(gqlToken.wsToken)).toMatchObject({ use: 'ws', sub: user.userId });
      expect(claims(gqlToken.wsToken)).not.toHaveProperty('session_id');

      const s = await wsSession(`${t.wsUrl}?token=${encodeURIComponent(wsToken)}`);
      const channel = `events:${user.accountId}`;
      expect(await subscribe(s, channel)).toEqual({ type: 'subscribed', channel });

      expectRestError(await myPermissions(t, { token: wsToken }), 401, AUTH_REQUIRED);
      expectRestError(await myPermissions(t, { query: { token: wsToken } }), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.myPermissions, {}, bearer(gqlToken.wsToken)), AUTH_REQUIRED);
    });

    test('anonymous gives 401', async () => {
      expectRestError(await api(t, 'POST', '/auth/ws-token'), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.issueWsToken), AUTH_REQUIRED);
    });

    test('a popout (raw token in ?token= or the session cookie) gets 403 FORBIDDEN, same message on both protocols', async () => {
      const owner = await devLogin(t);
      const popout = await createPopout(t, owner, { permissions: ['events:read'] });
      const sessionJwt = await exchange(t, popout.token);
      expectRestError(await api(t, 'POST', '/auth/ws-token', { query: { token: popout.token } }), 403, FIRST_PARTY_ONLY);
      expectRestError(await api(t, 'POST', '/auth/ws-token', { headers: cookie(sessionJwt) }), 403, FIRST_PARTY_ONLY);
      expectGqlError(await gql(t.url, Q.issueWsToken, {}, {}, popout.token), FIRST_PARTY_ONLY);
      expectGqlError(await gql(t.url, Q.issueWsToken, {}, cookie(sessionJwt)), FIRST_PARTY_ONLY);
    });
  });

  // ---------------------------------------------------------------------- popout tokens
  describe('popout tokens', () => {
    test('REST: an administrator creates one: 201, the lm_pop_ token shown once, user_id = creator (not the owner)', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const res = await api(t, 'POST', '/tokens', { token: admin.accessToken, body: { label: 'Chat popout', permissions: ['events:read', 'chat:read'] } });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 201,
        body: {
          data: {
            id: expect.stringMatching(UUID),
            token: expect.stringMatching(POPOUT_TOKEN),
            account_id: owner.accountId,
            user_id: admin.userId,
            created_by: admin.userId,
            label: 'Chat popout',
            permissions: expect.arrayContaining(['events:read', 'chat:read']),
            expires_at: null,
            revoked_at: null,
            last_used_at: null,
            created_at: expect.stringMatching(ISO),
          },
          _links: { self: expect.stringMatching(/^\/v1\/tokens\/[0-9a-f-]{36}$/) },
        },
      });
      const data = res.body.data as { id: string; token: string; user_id: string; permissions: string[] };
      expect(data.token).toHaveLength(71);
      expect(data.permissions).toHaveLength(2);
      expect(data.user_id).not.toBe(owner.userId);
      expect(res.body).toMatchObject({ _links: { self: `/v1/tokens/${data.id}` } });

      // The token acts as its creator, in the creator's active account.
      const perms = await myPermissions(t, { query: { token: data.token } });
      expect(perms.body.data).toEqual({
        context: 'popout',
        user_id: admin.userId,
        account_id: owner.accountId,
        permissions: ['chat:read', 'events:read'],
        admin_permissions: [],
        user_permissions: [],
      });
    });

    test('GraphQL: createPopoutToken binds to the creator (not the owner) and shows the token once', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const res = expectGqlData(await gql(t.url, Q.createPopout, { input: { label: 'gql', permissions: ['events:read', 'chat:read'] } }, bearer(admin.accessToken)));
      const created = res.createPopoutToken as { token: string; popoutToken: Record<string, unknown> };
      expect(created.token).toMatch(POPOUT_TOKEN);
      expect(created.token).toHaveLength(71);
      expect(created.popoutToken).toEqual({
        id: expect.stringMatching(UUID),
        accountId: owner.accountId,
        userId: admin.userId,
        createdBy: admin.userId,
        label: 'gql',
        permissions: expect.arrayContaining(['events:read', 'chat:read']),
        expiresAt: null,
        revokedAt: null,
        lastUsedAt: null,
        createdAt: expect.stringMatching(ISO),
      });
      expect(created.popoutToken.permissions).toHaveLength(2);
      expect(created.popoutToken.userId).not.toBe(owner.userId);
      const perms = await myPermissions(t, { query: { token: created.token } });
      expect(perms.body.data).toEqual({
        context: 'popout',
        user_id: admin.userId,
        account_id: owner.accountId,
        permissions: ['chat:read', 'events:read'],
        admin_permissions: [],
        user_permissions: [],
      });
      const listed = expectGqlData(await gql(t.url, '{ popoutTokens { id userId } }', {}, bearer(owner.accessToken)));
      expect(listed.popoutTokens).toContainEqual({ id: created.popoutToken.id, userId: admin.userId });
      expect(JSON.stringify(listed)).not.toContain(created.token);
    });

    test('GET /v1/tokens lists the account\'s popout tokens without the secret', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const first = await createPopout(t, admin, { label: 'one', permissions: ['events:read'] });
      const second = await createPopout(t, owner, { label: 'two', permissions: ['chat:read'] });
      expect((await myPermissions(t, { query: { token: first.token } })).status).toBe(200);
      const list = await api(t, 'GET', '/tokens', { token: owner.accessToken });
      expect(list.status).toBe(200);
      const rows = list.body.data as Record<string, unknown>[];
      for (const r of rows) expect(Object.keys(r).sort()).toEqual(POPOUT_KEYS);
      expect(rows.map((r) => r.id)).toEqual([second.id, first.id]); // newest first, this account only
      expect(rows[0]).toEqual({
        id: second.id,
        account_id: owner.accountId,
        user_id: owner.userId,
        created_by: owner.userId,
        label: 'two',
        permissions: ['chat:read'],
        expires_at: null,
        revoked_at: null,
        last_used_at: null,
        created_at: expect.stringMatching(ISO),
      });
      expect(rows[1]).toMatchObject({ id: first.id, user_id: admin.userId, created_by: admin.userId, label: 'one', permissions: ['events:read'] });
      const text = JSON.stringify(list.body);
      for (const secret of [first.token, second.token]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice('lm_pop_'.length));
      }
      // Another account sees none of them.
      const stranger = await devLogin(t);
      expect((await api(t, 'GET', '/tokens', { token: stranger.accessToken })).body.data).toEqual([]);
    });

    test('a named user_id of another member binds the token to that member (GraphQL, then REST)', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const viaGql = expectGqlData(await gql(t.url, Q.createPopout, { input: { permissions: ['events:read'], userId: owner.userId } }, bearer(admin.accessToken)));
      expect((viaGql.createPopoutToken as { popoutToken: unknown }).popoutToken).toMatchObject({ userId: owner.userId, createdBy: admin.userId });
      const ok = await api(t, 'POST', '/tokens', { token: admin.accessToken, body: { permissions: ['events:read'], user_id: owner.userId } });
      expect(ok.status).toBe(201);
      expect(ok.body.data).toMatchObject({ user_id: owner.userId, created_by: admin.userId });
    });

    test('a user_id that is not a member gives 404 "Member not found" on REST and GraphQL', async () => {
      const { admin } = await ownerWithAdmin(t);
      const outsider = await devLogin(t);
      for (const userId of [outsider.userId, randomUUID()]) {
        expectRestError(await api(t, 'POST', '/tokens', { token: admin.accessToken, body: { permissions: ['events:read'], user_id: userId } }), 404, MEMBER_NOT_FOUND);
        expectGqlError(await gql(t.url, Q.createPopout, { input: { permissions: ['events:read'], userId } }, bearer(admin.accessToken)), MEMBER_NOT_FOUND);
      }
    });

    test('expires_at in the past gives 400 VALIDATION_ERROR "expires_at cannot be in the past", identical on REST and GraphQL', async () => {
      const owner = await devLogin(t);
      for (const past of [new Date(Date.now() - 60_000).toISOString(), '2000-01-01T00:00:00Z']) {
        expectRestError(await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { permissions: ['events:read'], expires_at: past } }), 400, PAST_EXPIRY);
        expectGqlError(await gql(t.url, Q.createPopout, { input: { permissions: ['events:read'], expiresAt: past } }, bearer(owner.accessToken)), PAST_EXPIRY);
      }
      expect((await api(t, 'GET', '/tokens', { token: owner.accessToken })).body.data).toEqual([]);
    });

    test('expires_at in the future is kept, null means never (GraphQL, then REST)', async () => {
      const owner = await devLogin(t);
      const future = new Date(Date.now() + 3_600_000).toISOString();
      const viaGql = expectGqlData(await gql(t.url, Q.createPopout, { input: { permissions: ['events:read'], expiresAt: future } }, bearer(owner.accessToken)));
      const gqlExpiry = (viaGql.createPopoutToken as { popoutToken: { expiresAt: string } }).popoutToken.expiresAt;
      expect(new Date(gqlExpiry).getTime()).toBe(new Date(future).getTime());
      const ok = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { permissions: ['events:read'], expires_at: future } });
      expect(ok.status).toBe(201);
      expect(new Date((ok.body.data as { expires_at: string }).expires_at).getTime()).toBe(new Date(future).getTime());
      const never = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { permissions: ['events:read'], expires_at: null } });
      expect(never.status).toBe(201);
      expect(never.body.data).toMatchObject({ expires_at: null });
    });

    test.each([['nope:read'], ['events:*'], ['*'], ['*:*'], ['ideas:read'], ['events']])(
      'permission %s gives 400 "Invalid permission: <perm>" on REST and GraphQL',
      async (permission) => {
        const owner = await devLogin(t);
        expectRestError(await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { permissions: ['events:read', permission] } }), 400, invalidPermission(permission));
        expectGqlError(await gql(t.url, Q.createPopout, { input: { permissions: ['events:read', permission] } }, bearer(owner.accessToken)), invalidPermission(permission));
      },
    );

    test('a permission the creator\'s role lacks gives 403 FORBIDDEN on REST and GraphQL', async () => {
      const { admin } = await ownerWithAdmin(t); // administrators lack plan:read, plan:edit, account:delete
      for (const permission of ['plan:read', 'account:delete']) {
        expectRestError(await api(t, 'POST', '/tokens', { token: admin.accessToken, body: { permissions: ['events:read', permission] } }), 403, cannotGrant(permission));
        expectGqlError(await gql(t.url, Q.createPopout, { input: { permissions: ['events:read', permission] } }, bearer(admin.accessToken)), cannotGrant(permission));
      }
    });

    test('a member without tokens:create gets 403 "Missing permission: tokens:create"', async () => {
      const owner = await devLogin(t);
      const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
      const missing = { error: 'FORBIDDEN', message: 'Missing permission: tokens:create' };
      expectRestError(await api(t, 'POST', '/tokens', { token: viewer.accessToken, body: { permissions: ['events:read'] } }), 403, missing);
      expectGqlError(await gql(t.url, Q.createPopout, { input: { permissions: ['events:read'] } }, bearer(viewer.accessToken)), missing);
    });

    test('a popout, overlay, widget or extension token calling POST /v1/tokens gets 403 FORBIDDEN', async () => {
      const owner = await devLogin(t);
      const popout = await createPopout(t, owner, { permissions: ['events:read', 'tokens:create'] });
      const sessionJwt = await exchange(t, popout.token);
      const minted = async (kind: 'overlay' | 'widget' | 'extension') =>
        (
          await t.app.authStore.mint({
            kind,
            accountId: owner.accountId,
            createdBy: owner.userId,
            subjectId: randomUUID(),
            ...(kind === 'extension' ? { extensionId: randomUUID() } : {}),
          })
        ).token;
      const callers: [string, Parameters<typeof api>[3], [Record<string, string>, string | undefined]][] = [
        ['popout ?token=', { query: { token: popout.token } }, [{}, popout.token]],
        ['popout cookie', { headers: cookie(sessionJwt) }, [cookie(sessionJwt), undefined]],
      ];
      for (const kind of ['overlay', 'widget', 'extension'] as const) {
        const token = await minted(kind);
        callers.push([`${kind} bearer`, { token }, [bearer(token), undefined]]);
      }
      for (const [name, options, [headers, queryToken]] of callers) {
        const rest = await api(t, 'POST', '/tokens', { ...options, body: { permissions: ['events:read'] } });
        expect({ name, status: rest.status, body: rest.body }).toEqual({ name, status: 403, body: FIRST_PARTY_ONLY });
        const viaGql = await gql(t.url, Q.createPopout, { input: { permissions: ['events:read'] } }, headers, queryToken);
        expectGqlError(viaGql, FIRST_PARTY_ONLY);
      }
    });
  });

  // ---------------------------------------------------------------------- exchange
  describe('popout exchange', () => {
    test('REST: the session JWT, ~15 minutes, the account, and the Secure httpOnly cookie (test env)', async () => {
      const owner = await devLogin(t);
      const popout = await createPopout(t, owner, { permissions: ['events:read'] });
      const res = await fetch(`${t.url}/v1/auth/popout/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: popout.token }) });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { token: string; expires_at: string; account_id: string } };
      expect(body).toEqual({ data: { token: expect.stringMatching(JWT), expires_at: expect.stringMatching(ISO), account_id: owner.accountId } });
      expect(driftFrom(body.data.expires_at, 900)).toBeLessThan(10_000);
      expect(claims(body.data.token)).toMatchObject({ use: 'access', ctx: 'popout', popout_token_id: popout.id, account_id: owner.accountId });
      expect(claims(body.data.token)).not.toHaveProperty('session_id');
      expect(res.headers.getSetCookie()).toHaveLength(1);
      expectPopoutCookie(res.headers.get('set-cookie'), body.data.token, true);
    });

    test('GraphQL exchangePopoutToken answers the same fields and sets the cookie too', async () => {
      const owner = await devLogin(t);
      const popout = await createPopout(t, owner, { permissions: ['events:read'] });
      const res = await fetch(`${t.url}/v1/gql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: Q.exchange, variables: { token: popout.token } }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { exchangePopoutToken: { token: string; expiresAt: string; accountId: string } }; errors?: unknown };
      expect(body.errors).toBeUndefined();
      const session = body.data.exchangePopoutToken;
      expect(session).toEqual({ token: expect.stringMatching(JWT), expiresAt: expect.stringMatching(ISO), accountId: owner.accountId });
      expect(driftFrom(session.expiresAt, 900)).toBeLessThan(10_000);
      expectPopoutCookie(res.headers.get('set-cookie'), session.token, true);
      expect((await myPermissions(t, { headers: cookie(session.token) })).body.data).toMatchObject({ context: 'popout', account_id: owner.accountId });
    });

    test('revoked, expired, unknown or non-popout tokens give 401 "Invalid or expired popout token" on both protocols', async () => {
      const owner = await devLogin(t);
      const revoked = await createPopout(t, owner, { permissions: ['events:read'] });
      expect((await api(t, 'DELETE', `/tokens/${revoked.id}`, { token: owner.accessToken })).status).toBe(200);
      const expired = await t.app.authStore.mint({
        kind: 'popout',
        accountId: owner.accountId,
        userId: owner.userId,
        createdBy: owner.userId,
        permissions: ['events:read'],
        expiresAt: new Date(Date.now() - 1000),
      });
      const overlay = await t.app.authStore.mint({ kind: 'overlay', accountId: owner.accountId, createdBy: owner.userId, subjectId: randomUUID() });
      const live = await createPopout(t, owner, { permissions: ['events:read'] });
      const sessionJwt = await exchange(t, live.token);
      const cases: [string, string][] = [
        ['revoked', revoked.token],
        ['expired', expired.token],
        ['unknown', `lm_pop_${randomBytes(32).toString('hex')}`],
        ['malformed popout', `lm_pop_${randomBytes(8).toString('hex')}`],
        ['overlay token', overlay.token],
        ['user access JWT', owner.accessToken],
        ['refresh JWT', owner.refreshToken],
        ['popout session JWT', sessionJwt],
        ['garbage', 'hello'],
      ];
      for (const [name, token] of cases) {
        const res = await fetch(`${t.url}/v1/auth/popout/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
        expect({ name, status: res.status, body: await res.json(), cookie: res.headers.get('set-cookie') }).toEqual({ name, status: 401, body: INVALID_POPOUT, cookie: null });
        expectGqlError(await gql(t.url, Q.exchange, { token }), INVALID_POPOUT);
      }
      // The expired one is also refused as a raw credential.
      expectRestError(await myPermissions(t, { query: { token: expired.token } }), 401, AUTH_REQUIRED);
    });
  });

  // ---------------------------------------------------------------------- popout session
  describe('popout session', () => {
    test('the cookie alone resolves to the popout context with the token\'s permissions', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const popout = await createPopout(t, admin, { permissions: ['events:read', 'chat:read'] });
      const sessionJwt = await exchange(t, popout.token);
      const expected = {
        context: 'popout',
        user_id: admin.userId,
        account_id: owner.accountId,
        permissions: ['chat:read', 'events:read'],
        admin_permissions: [],
        user_permissions: [],
      };
      const viaCookie = await myPermissions(t, { headers: cookie(sessionJwt) });
      expect(viaCookie.status).toBe(200);
      expect(viaCookie.body.data).toEqual(expected);
      expect((await myPermissions(t, { query: { token: popout.token } })).body.data).toEqual(expected);
      const viaGql = expectGqlData(await gql(t.url, Q.myPermissions, {}, cookie(sessionJwt)));
      expect(viaGql.myPermissions).toEqual({
        context: 'popout',
        userId: admin.userId,
        accountId: owner.accountId,
        permissions: ['chat:read', 'events:read'],
        adminPermissions: [],
        userPermissions: [],
      });
      // Cannot escalate to the delegated user's role: a route beyond the subset is 403.
      const beyond = await api(t, 'GET', '/tokens', { headers: cookie(sessionJwt) });
      expectRestError(beyond, 403, { error: 'FORBIDDEN', message: 'Missing permission: tokens:read' });
      // The session JWT is honoured only as the cookie on REST (a JWT in ?token= is ignored there).
      expectRestError(await myPermissions(t, { query: { token: sessionJwt } }), 401, AUTH_REQUIRED);
    });

    test('the first-party gate: a popout cannot list, revoke or switch sessions (403 on REST and GraphQL)', async () => {
      const owner = await devLogin(t);
      const popout = await createPopout(t, owner, { permissions: ['events:read'] });
      const sessionJwt = await exchange(t, popout.token);
      for (const options of [{ headers: cookie(sessionJwt) }, { query: { token: popout.token } }]) {
        expectRestError(await api(t, 'GET', '/auth/sessions', options), 403, FIRST_PARTY_ONLY);
        expectRestError(await api(t, 'DELETE', `/auth/sessions/${owner.sessionId}`, options), 403, FIRST_PARTY_ONLY);
        expectRestError(await api(t, 'POST', '/auth/switch-account', { ...options, body: { account_id: owner.accountId } }), 403, FIRST_PARTY_ONLY);
      }
      expectGqlError(await gql(t.url, Q.sessions, {}, cookie(sessionJwt)), FIRST_PARTY_ONLY);
      expectGqlError(await gql(t.url, Q.revokeSession, { id: owner.sessionId }, cookie(sessionJwt)), FIRST_PARTY_ONLY);
      expectGqlError(await gql(t.url, Q.switchAccount, { id: owner.accountId }, {}, popout.token), FIRST_PARTY_ONLY);
      // The owner's session was not touched.
      expect((await myPermissions(t, { token: owner.accessToken })).status).toBe(200);
    });

    test('GET /v1/auth/popout/session: a popout, a user JWT, and anonymous', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const popout = await createPopout(t, admin, { permissions: ['events:read'] });
      const sessionJwt = await exchange(t, popout.token);
      const viaCookie = await api(t, 'GET', '/auth/popout/session', { headers: cookie(sessionJwt) });
      expect({ status: viaCookie.status, body: viaCookie.body }).toEqual({ status: 200, body: { data: { account_id: owner.accountId, user_id: admin.userId } } });
      const viaRaw = await api(t, 'GET', '/auth/popout/session', { query: { token: popout.token } });
      expect(viaRaw.body).toEqual({ data: { account_id: owner.accountId, user_id: admin.userId } });
      const viaUser = await api(t, 'GET', '/auth/popout/session', { token: owner.accessToken });
      expect({ status: viaUser.status, body: viaUser.body }).toEqual({ status: 200, body: { data: { account_id: owner.accountId, user_id: owner.userId } } });
      expectRestError(await api(t, 'GET', '/auth/popout/session'), 401, AUTH_REQUIRED);
    });

    test('popout ws-token: 401 without credentials, 403 with a user JWT, 200 with the cookie (REST and GraphQL)', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const popout = await createPopout(t, admin, { permissions: ['events:read', 'chat:read'] });
      const sessionJwt = await exchange(t, popout.token);

      expectRestError(await api(t, 'POST', '/auth/popout/ws-token'), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.issuePopoutWsToken), AUTH_REQUIRED);
      expectRestError(await api(t, 'POST', '/auth/popout/ws-token', { token: owner.accessToken }), 403, POPOUT_SESSION_ONLY);
      expectGqlError(await gql(t.url, Q.issuePopoutWsToken, {}, bearer(owner.accessToken)), POPOUT_SESSION_ONLY);

      const res = await api(t, 'POST', '/auth/popout/ws-token', { headers: cookie(sessionJwt) });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { ws_token: expect.stringMatching(JWT), expires_at: expect.stringMatching(ISO) } });
      const wsToken = (res.body.data as { ws_token: string }).ws_token;
      expect(driftFrom((res.body.data as { expires_at: string }).expires_at, 900)).toBeLessThan(10_000);
      const payload = claims(wsToken);
      expect(payload).toMatchObject({ use: 'ws', ctx: 'popout', popout_token_id: popout.id, account_id: owner.accountId });
      expect(payload).not.toHaveProperty('session_id');
      expect([...(payload.account_permissions as string[])].sort()).toEqual(['chat:read', 'events:read']);

      const viaGql = expectGqlData(await gql(t.url, Q.issuePopoutWsToken, {}, cookie(sessionJwt)));
      const gqlToken = viaGql.issuePopoutWsToken as { wsToken: string; expiresAt: string };
      expect(gqlToken).toEqual({ wsToken: expect.stringMatching(JWT), expiresAt: expect.stringMatching(ISO) });
      expect(claims(gqlToken.wsToken)).toMatchObject({ use: 'ws', ctx: 'popout' });
      expect(claims(gqlToken.wsToken)).not.toHaveProperty('session_id');

      // Opens /v1/ws with exactly the popout's subset.
      const s = await wsSession(`${t.wsUrl}?token=${encodeURIComponent(wsToken)}`);
      expect(await subscribe(s, `events:${owner.accountId}`)).toEqual({ type: 'subscribed', channel: `events:${owner.accountId}` });
      expect(await subscribe(s, `chat:${owner.accountId}`)).toEqual({ type: 'subscribed', channel: `chat:${owner.accountId}` });
      expect(await subscribe(s, `history:${owner.accountId}`)).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel: `history:${owner.accountId}` });

      // Refused on REST and GraphQL.
      expectRestError(await myPermissions(t, { token: wsToken }), 401, AUTH_REQUIRED);
      expectRestError(await myPermissions(t, { query: { token: wsToken } }), 401, AUTH_REQUIRED);
      expectRestError(await myPermissions(t, { headers: cookie(wsToken) }), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.myPermissions, {}, bearer(wsToken)), AUTH_REQUIRED);
    });
  });

  // ---------------------------------------------------------------------- revocation
  describe('popout revocation', () => {
    test('after DELETE /v1/tokens/{id} the raw token, the cookie session and the popout ws token are all refused', async () => {
      const { owner, admin } = await ownerWithAdmin(t);
      const popout = await createPopout(t, admin, { permissions: ['events:read'] });
      const sessionJwt = await exchange(t, popout.token);
      const wsToken = await popoutWsToken(t, sessionJwt);
      const wsUrl = `${t.wsUrl}?token=${encodeURIComponent(wsToken)}`;
      const sessionWsUrl = `${t.wsUrl}?token=${encodeURIComponent(sessionJwt)}`;

      expect((await myPermissions(t, { query: { token: popout.token } })).status).toBe(200);
      expect((await myPermissions(t, { headers: cookie(sessionJwt) })).status).toBe(200);
      (await wsSession(wsUrl)).close();
      (await wsSession(sessionWsUrl)).close();

      const revoke = await api(t, 'DELETE', `/tokens/${popout.id}`, { token: owner.accessToken });
      expect({ status: revoke.status, body: revoke.body }).toEqual({ status: 200, body: { success: true } });

      expectRestError(await myPermissions(t, { query: { token: popout.token } }), 401, AUTH_REQUIRED);
      expectRestError(await myPermissions(t, { headers: cookie(sessionJwt) }), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'GET', '/auth/popout/session', { headers: cookie(sessionJwt) }), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'POST', '/auth/popout/ws-token', { headers: cookie(sessionJwt) }), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.myPermissions, {}, cookie(sessionJwt)), AUTH_REQUIRED);
      for (const url of [wsUrl, sessionWsUrl, `${t.wsUrl}?token=${popout.token}`]) {
        const refused = await wsRefused(url);
        expect(refused).toEqual({ status: 401, body: { error: 'UNAUTHORIZED', message: expect.any(String) } });
      }
      expectRestError(await api(t, 'POST', '/auth/popout/exchange', { body: { token: popout.token } }), 401, INVALID_POPOUT);

      const list = await api(t, 'GET', '/tokens', { token: owner.accessToken });
      expect((list.body.data as { id: string; revoked_at: string | null }[]).find((r) => r.id === popout.id)).toMatchObject({ revoked_at: expect.stringMatching(ISO) });
      expectRestError(await api(t, 'DELETE', `/tokens/${popout.id}`, { token: owner.accessToken }), 404, { error: 'NOT_FOUND', message: 'Popout token not found' });
    });
  });

  // ---------------------------------------------------------------------- role cap
  describe("a popout never holds more than its creator's role", () => {
    test('shrinking the creator\'s role shrinks the popout (raw token, cookie session and WebSocket)', async () => {
      const owner = await devLogin(t);
      const roleName = `Popout maker ${randomUUID().slice(0, 8)}`;
      const creator = await joinAccount(t, owner, await devLogin(t), { roleName, permissions: ['tokens:create', 'events:read', 'chat:read'] });
      const roles = await api(t, 'GET', '/account/roles', { token: owner.accessToken });
      const role = (roles.body.data as { id: string; name: string }[]).find((r) => r.name === roleName)!;
      expect(role).toBeDefined();

      const popout = await createPopout(t, creator, { permissions: ['events:read', 'chat:read'] });
      expect(popout.user_id).toBe(creator.userId);
      const sessionJwt = await exchange(t, popout.token);
      const before = { context: 'popout', user_id: creator.userId, account_id: owner.accountId, permissions: ['chat:read', 'events:read'], admin_permissions: [], user_permissions: [] };
      expect((await myPermissions(t, { query: { token: popout.token } })).body.data).toEqual(before);
      expect((await myPermissions(t, { headers: cookie(sessionJwt) })).body.data).toEqual(before);
      const wsTokenBefore = await popoutWsToken(t, sessionJwt);

      const patched = await api(t, 'PATCH', `/account/roles/${role.id}`, { token: owner.accessToken, body: { permissions: ['tokens:create', 'events:read'] } });
      expect(patched.status).toBe(200);
      expect([...(patched.body.data as { permissions: string[] }).permissions].sort()).toEqual(['events:read', 'tokens:create']);

      const after = { ...before, permissions: ['events:read'] };
      expect((await myPermissions(t, { query: { token: popout.token } })).body.data).toEqual(after);
      expect((await myPermissions(t, { headers: cookie(sessionJwt) })).body.data).toEqual(after);
      expect(expectGqlData(await gql(t.url, Q.myPermissions, {}, cookie(sessionJwt))).myPermissions).toMatchObject({ permissions: ['events:read'] });

      // A WebSocket token minted before the change is capped too, and one minted after carries the smaller subset.
      const s = await wsSession(`${t.wsUrl}?token=${encodeURIComponent(wsTokenBefore)}`);
      expect(await subscribe(s, `events:${owner.accountId}`)).toEqual({ type: 'subscribed', channel: `events:${owner.accountId}` });
      expect(await subscribe(s, `chat:${owner.accountId}`)).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel: `chat:${owner.accountId}` });
      expect(claims(await popoutWsToken(t, sessionJwt)).account_permissions).toEqual(['events:read']);
      // The stored row still names what was asked for; the grant is what shrank.
      const list = await api(t, 'GET', '/tokens', { token: owner.accessToken });
      expect([...((list.body.data as { id: string; permissions: string[] }[]).find((r) => r.id === popout.id)!.permissions)].sort()).toEqual(['chat:read', 'events:read']);
    });
  });
});

describe('popout cookie in development', () => {
  const t = useTestApp({ env: 'development', rate_limits: { enabled: false } });

  test('the exchange cookie has no Secure attribute, all else equal (REST and GraphQL)', async () => {
    const owner = await devLogin(t);
    const popout = await createPopout(t, owner, { permissions: ['events:read'] });
    const rest = await fetch(`${t.url}/v1/auth/popout/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: popout.token }) });
    expect(rest.status).toBe(200);
    const body = (await rest.json()) as { data: { token: string } };
    expectPopoutCookie(rest.headers.get('set-cookie'), body.data.token, false);

    const viaGql = await fetch(`${t.url}/v1/gql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: Q.exchange, variables: { token: popout.token } }),
    });
    const gqlBody = (await viaGql.json()) as { data: { exchangePopoutToken: { token: string } } };
    expectPopoutCookie(viaGql.headers.get('set-cookie'), gqlBody.data.exchangePopoutToken.token, false);
  });
});
