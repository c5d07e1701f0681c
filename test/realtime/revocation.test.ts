/**
 * Revocation reaches WebSockets (Part 2 "Authentication" 3; Part 1 "JWT"):
 * a ws token names its backing session (never as `session_id`), so a token minted before its
 * session was revoked is refused at the upgrade with 401; a revoked session or popout token ends
 * the sockets it opened with TOKEN_REVOKED and close code 4002, on every node sharing PostgreSQL
 * and Redis (through the bus), and at the latest at the periodic re-check when a notice is lost;
 * a JWT without `exp` is refused on every transport. Real sockets; every server message is
 * validated against spec/ws-protocol/ by the `connect` helper.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT, decodeJwt } from 'jose';
import { gql, services, startTestApp, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, refusedUpgrade, within, type TestSocket } from '../helpers/ws';

const SESSION_REVOKED = { type: 'error', code: 'TOKEN_REVOKED', message: 'Session revoked' };
const TOKEN_REVOKED = { type: 'error', code: 'TOKEN_REVOKED', message: 'Token revoked' };
const REVOKED_CLOSE = 4002;

const opened = closeSocketsAfterEach();

/** Opens /v1/ws with `?token=` (or a header) and consumes the welcome. */
async function session(t: TestApp, credential: { query?: string; header?: string }): Promise<TestSocket> {
  const url = credential.query ? `${t.wsUrl}?token=${encodeURIComponent(credential.query)}` : t.wsUrl;
  const socket = await connect(url, credential.header ? { headers: { authorization: `Bearer ${credential.header}` } } : {});
  opened.push(socket);
  expect((await socket.next()).type).toBe('welcome');
  return socket;
}

async function wsToken(t: TestApp, user: LoggedIn): Promise<string> {
  const res = await api(t, 'POST', '/auth/ws-token', { token: user.accessToken });
  expect(res.status).toBe(200);
  return (res.body.data as { ws_token: string }).ws_token;
}

async function subscribed(socket: TestSocket, channel: string): Promise<void> {
  socket.send({ type: 'subscribe', channel });
  expect(await socket.next()).toEqual({ type: 'subscribed', channel });
}

/** The socket gets TOKEN_REVOKED (with `expected`'s message) and is closed with 4002. */
async function expectRevoked(socket: TestSocket, expected: typeof SESSION_REVOKED | typeof TOKEN_REVOKED, ms = 5000): Promise<void> {
  expect(await socket.nextMatching((m) => m.type === 'error', ms)).toEqual(expected);
  expect((await within(socket.closed, ms, 'the close')).code).toBe(REVOKED_CLOSE);
}

async function stillOpen(socket: TestSocket): Promise<void> {
  socket.send({ type: 'ping' });
  expect(await socket.nextMatching((m) => m.type === 'pong')).toEqual({ type: 'pong' });
}

const revokeSession = (t: TestApp, user: LoggedIn, id: string) => api(t, 'DELETE', `/auth/sessions/${id}`, { token: user.accessToken });

const popoutCookie = (jwt: string) => ({ cookie: `svc-popout-token=${jwt}` });

/** A JWT signed with the service's secret and issuer, `exp` left out when `ttlSeconds` is null. */
async function signRaw(t: TestApp, claims: Record<string, unknown>, ttlSeconds: number | null): Promise<string> {
  let jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuer('creator-backend').setIssuedAt().setJti(randomUUID());
  if (ttlSeconds !== null) jwt = jwt.setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds);
  return `lm_${await jwt.sign(new TextEncoder().encode(t.app.config.auth.jwt_secret))}`;
}

describe('WebSocket revocation on one node', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test('a ws token names its session outside session_id and stays useless on REST', async () => {
    const user = await devLogin(t);
    const token = await wsToken(t, user);
    const claims = decodeJwt(token.slice('lm_'.length));
    expect(claims).toMatchObject({ use: 'ws', ws_session: user.sessionId });
    expect(claims).not.toHaveProperty('session_id');
    expect((await api(t, 'GET', '/tokens/me', { token })).status).toBe(401);
  });

  test('a ws token minted before its session is revoked gets 401 at the upgrade', async () => {
    const user = await devLogin(t);
    const token = await wsToken(t, user);
    const before = await session(t, { query: token });
    before.close();
    expect((await revokeSession(t, user, user.sessionId)).status).toBe(200);
    const refused = await refusedUpgrade(`${t.wsUrl}?token=${encodeURIComponent(token)}`);
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 401, body: { error: 'UNAUTHORIZED', message: 'Session revoked' } });
    // The header form is refused the same way.
    const viaHeader = await refusedUpgrade(t.wsUrl, { headers: { authorization: `Bearer ${token}` } });
    expect(viaHeader.status).toBe(401);
  });

  test('revoking a session closes its open sockets (ws token and access JWT) with TOKEN_REVOKED; other sessions stay', async () => {
    const user = await devLogin(t);
    const other = await devLogin(t, user.email);
    const viaWsToken = await session(t, { query: await wsToken(t, user) });
    const viaAccessJwt = await session(t, { header: user.accessToken });
    const otherSession = await session(t, { query: await wsToken(t, other) });
    await subscribed(viaWsToken, `events:${user.accountId}`);
    expect((await revokeSession(t, other, user.sessionId)).status).toBe(200);
    await expectRevoked(viaWsToken, SESSION_REVOKED);
    await expectRevoked(viaAccessJwt, SESSION_REVOKED);
    await stillOpen(otherSession);
  });

  test('the GraphQL revokeSession mutation closes the sockets the same way', async () => {
    const user = await devLogin(t);
    const socket = await session(t, { query: await wsToken(t, user) });
    const res = await gql(t.url, 'mutation($id: UUID!) { revokeSession(id: $id) }', { id: user.sessionId }, { authorization: `Bearer ${user.accessToken}` });
    expect(res.body).toEqual({ data: { revokeSession: true } });
    await expectRevoked(socket, SESSION_REVOKED);
  });

  test('a replayed refresh token revokes the session and closes its sockets', async () => {
    const user = await devLogin(t);
    const socket = await session(t, { query: await wsToken(t, user) });
    expect((await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } })).status).toBe(200);
    expect((await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } })).status).toBe(401);
    await expectRevoked(socket, SESSION_REVOKED);
  });

  test('revoking a popout token closes the sockets of the raw token and of its ws token; the upgrade is then refused', async () => {
    const owner = await devLogin(t);
    const created = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { label: 'browser source', permissions: ['chat:read'] } });
    expect(created.status).toBe(201);
    const popout = created.body.data as { id: string; token: string };
    const exchanged = await api(t, 'POST', '/auth/popout/exchange', { body: { token: popout.token } });
    const popoutJwt = (exchanged.body.data as { token: string }).token;
    const minted = await api(t, 'POST', '/auth/popout/ws-token', { headers: popoutCookie(popoutJwt) });
    const popoutWs = (minted.body.data as { ws_token: string }).ws_token;
    const viaRaw = await session(t, { query: popout.token });
    const viaWsToken = await session(t, { query: popoutWs });
    const unrelated = await session(t, { query: await wsToken(t, owner) });
    expect((await api(t, 'DELETE', `/tokens/${popout.id}`, { token: owner.accessToken })).status).toBe(200);
    await expectRevoked(viaRaw, TOKEN_REVOKED);
    await expectRevoked(viaWsToken, TOKEN_REVOKED);
    await stillOpen(unrelated);
    expect((await refusedUpgrade(`${t.wsUrl}?token=${encodeURIComponent(popoutWs)}`)).status).toBe(401);
  });

  test('a ws token minted with a personal API key names the key and is refused once the key is revoked', async () => {
    const user = await devLogin(t);
    const { token: key, row } = await t.app.authStore.mint({ kind: 'user_api_key', accountId: user.accountId, userId: user.userId, createdBy: user.userId, permissions: ['events:read'] });
    const token = await wsToken(t, { ...user, accessToken: key });
    expect(decodeJwt(token.slice('lm_'.length))).toMatchObject({ use: 'ws', ws_key: row.token_hash });
    (await session(t, { query: token })).close();
    await t.app.authStore.revoke(row.id);
    expect((await refusedUpgrade(`${t.wsUrl}?token=${encodeURIComponent(token)}`)).status).toBe(401);
  });

  test('a ws JWT that names no backing session is refused at the upgrade', async () => {
    const user = await devLogin(t);
    const token = await signRaw(t, { sub: user.userId, use: 'ws', account_id: user.accountId, account_permissions: ['events:read'] }, 300);
    const refused = await refusedUpgrade(`${t.wsUrl}?token=${encodeURIComponent(token)}`);
    expect(refused).toMatchObject({ status: 401, body: { error: 'UNAUTHORIZED' } });
  });

  test('a JWT without exp is refused on REST, GraphQL, the upgrade and refresh', async () => {
    const user = await devLogin(t);
    const access = decodeJwt(user.accessToken.slice('lm_'.length));
    const noExp = await signRaw(t, { sub: user.userId, use: 'access', session_id: user.sessionId, account_id: user.accountId, account_permissions: access.account_permissions }, null);
    const control = await signRaw(t, { sub: user.userId, use: 'access', session_id: user.sessionId, account_id: user.accountId, account_permissions: access.account_permissions }, 300);
    expect((await api(t, 'GET', '/tokens/me', { token: control })).status).toBe(200);

    expect((await api(t, 'GET', '/tokens/me', { token: noExp })).body).toEqual({ error: 'UNAUTHORIZED', message: 'Authentication required' });
    const viaGql = await gql(t.url, '{ myPermissions { context } }', {}, { authorization: `Bearer ${noExp}` });
    expect(viaGql.body.errors?.[0]).toMatchObject({ message: 'Authentication required', extensions: { code: 'UNAUTHORIZED' } });
    expect((await refusedUpgrade(t.wsUrl, { headers: { authorization: `Bearer ${noExp}` } })).status).toBe(401);

    const wsNoExp = await signRaw(t, { sub: user.userId, use: 'ws', ws_session: user.sessionId, account_id: user.accountId }, null);
    expect((await refusedUpgrade(`${t.wsUrl}?token=${encodeURIComponent(wsNoExp)}`)).body).toMatchObject({ error: 'UNAUTHORIZED' });

    const refresh = decodeJwt(user.refreshToken.slice('lm_'.length));
    const refreshNoExp = await signRaw(t, { sub: user.userId, use: 'refresh', session_id: user.sessionId, jti: refresh.jti }, null);
    expect((await api(t, 'POST', '/auth/refresh', { body: { refresh_token: refreshNoExp } })).status).toBe(401);
  });
});

describe('the periodic re-check closes sockets whose revocation notice was lost', () => {
  const t = useTestApp({ rate_limits: { enabled: false } }, { realtimeLimits: { heartbeatTickMs: 100, revalidateMs: 300 } });

  test('a session revoked in storage without a notice ends its sockets at the next re-check', async () => {
    const user = await devLogin(t);
    const socket = await session(t, { query: await wsToken(t, user) });
    // Straight to storage: no bus notice is published.
    expect(await t.app.db.knex('sessions').where({ id: user.sessionId }).update({ revoked_at: new Date() })).toBe(1);
    await expectRevoked(socket, SESSION_REVOKED, 3000);
  });

  test('a popout token revoked in storage ends its sockets the same way', async () => {
    const owner = await devLogin(t);
    const created = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { permissions: ['chat:read'] } });
    const popout = created.body.data as { id: string; token: string };
    const socket = await session(t, { query: popout.token });
    await t.app.authStore.revoke(popout.id);
    await expectRevoked(socket, TOKEN_REVOKED, 3000);
  });
});

describe('revocation across nodes', () => {
  const shared = services.postgres && services.redis;
  const t = useTestApp({ rate_limits: { enabled: false } });

  // Two apps on one PostgreSQL database and one Redis (same key and channel prefix). The embedded
  // defaults cannot share storage or a bus between two apps, so this case needs both services.
  (shared ? test : test.skip)('a session revoked on node A closes its socket on node B, and B refuses its ws token', async () => {
    const b = await startTestApp({ database_url: t.app.config.database_url, redis_prefix: t.app.config.redis_prefix, rate_limits: { enabled: false } });
    try {
      await b.app.realtime.ready;
      const user = await devLogin(t);
      const other = await devLogin(t, user.email);
      const token = await wsToken(t, user);
      const onB = await session(b, { query: token });
      await subscribed(onB, `events:${user.accountId}`);
      const bystander = await session(b, { query: await wsToken(t, other) });
      expect((await revokeSession(t, other, user.sessionId)).status).toBe(200);
      await expectRevoked(onB, SESSION_REVOKED);
      await stillOpen(bystander);
      expect((await refusedUpgrade(`${b.wsUrl}?token=${encodeURIComponent(token)}`)).status).toBe(401);
    } finally {
      for (const s of opened.splice(0)) s.socket.terminate();
      await b.stop();
    }
  });
});
