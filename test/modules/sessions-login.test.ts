/**
 * Login sessions over real HTTP, GraphQL and WebSocket, part 1 of the sessions suites
 * (sessions-helpers.ts holds what the parts share; Part 1, "JWT", "First-party gate", the
 * /v1/auth/* rows of the REST table; DESIGN.md "Bootstrap contract"): development login, refresh
 * rotation with replay detection, account switching, the session list and revocation (on every
 * node when PostgreSQL is available) and WebSocket-only tokens. Runs embedded and against
 * PostgreSQL + Redis.
 */
import { randomUUID } from 'node:crypto';
import { gql, services, startTestApp, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount } from '../helpers/users';
import { UUID, JWT, ISO, AUTH_REQUIRED, INVALID_REFRESH, ACCOUNT_NOT_FOUND, SESSION_NOT_FOUND, SWITCH_NEEDS_SESSION, FIRST_PARTY_ONLY, SESSION_TOKEN_KEYS, SESSION_KEYS, Q, bearer, cookie, claims, expectRestError, expectGqlError, expectGqlData, driftFrom, wsSession, subscribe, createPopout, exchange, myPermissions } from './sessions-helpers';

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
    // `me` carries further documented fields (feature statuses, limits, connections).
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
});
