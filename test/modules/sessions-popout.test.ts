/**
 * Popout tokens and sessions over real HTTP, GraphQL and WebSocket, part 2 of the sessions suites
 * (sessions-helpers.ts holds what the parts share; Part 1, "Popout tokens and sessions",
 * "First-party gate", the /v1/auth/popout/* and /v1/tokens rows of the REST table): popout tokens,
 * their exchange for a cookie session, the popout WebSocket token, revocation re-checked on every
 * request, and the creator's live role capping a popout. Runs embedded and against PostgreSQL + Redis.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount } from '../helpers/users';
import { UUID, JWT, POPOUT_TOKEN, ISO, AUTH_REQUIRED, INVALID_POPOUT, MEMBER_NOT_FOUND, PAST_EXPIRY, FIRST_PARTY_ONLY, POPOUT_SESSION_ONLY, invalidPermission, cannotGrant, POPOUT_KEYS, Q, bearer, cookie, claims, expectRestError, expectGqlError, expectGqlData, driftFrom, wsSession, wsRefused, subscribe, expectPopoutCookie, createPopout, exchange, popoutWsToken, myPermissions, ownerWithAdmin } from './sessions-helpers';

// ------------------------------------------------------------------------------------ tests

describe('sessions, tokens and popouts', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, });

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
