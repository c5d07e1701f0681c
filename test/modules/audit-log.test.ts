/**
 * The audit log, part 1 of the audit suites (audit-helpers.ts holds what the parts share; Part 2,
 * "Audit log"; Part 1, "Authorization"): who reads GET /v1/me/audit-log, /v1/account/audit-log
 * and /v1/admin/audit-log and their GraphQL twins (myAuditLog, accountAuditLog, adminAuditLog),
 * and which rows each one shows. Everything goes through real HTTP; rows come from the operations
 * that record them (dev login, roles, invites, popout tokens) or from the ingest endpoint. The one
 * exception is a system-scope row, which no HTTP operation records yet: it is seeded with
 * `audit.service.record()`.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { ingestKey, wildcardKey, starKey, readerKey, UNAUTHORIZED, NO_ACTIVE_ACCOUNT, MISSING_AUDIT_LOG_READ, UUID_RE, MY_LOG, ACCOUNT_LOG, ADMIN_LOG, bearer, newEmail, displayNameOf, accountNameOf, sortedNames, toGqlPage, expectGqlError, expectOkGql, okPage, auditKit } from './audit-helpers';

describe('audit log', () => {
  const t = useTestApp({
    rate_limits: { enabled: false },
    auth: { system_keys: [ingestKey.config, wildcardKey.config, starKey.config, readerKey.config] },
  });
  const { myLog, accountLog, adminLog, loginWithClient, createRole, createPopout, operator } = auditKit(t);

  // ---------------------------------------------------------------- GET /v1/me/audit-log

  describe('GET /v1/me/audit-log', () => {
    test('a dev login records user:login with the client ip and user agent; the caller sees only their own user-scope rows', async () => {
      const email = newEmail('me-log');
      const login = await loginWithClient(email, { ip: '203.0.113.7', userAgent: 'audit-test-agent/1.0' });
      const user = await devLogin(t, email); // second login: a second user:login row (default test UA and ip)
      const other = await devLogin(t, newEmail('me-other'));
      // An account-scope row naming the user: must never show up in their user log.
      await createRole(user, 'Account row role');
      const page = okPage(await myLog(user.accessToken));
      expect(page).toMatchObject({ total: 3, page: 1, limit: 50, total_pages: 1 });
      expect(page.items.map((i) => i.type)).toEqual(['user:login', 'user:login', 'user:account_created']);
      for (const item of page.items) {
        expect(item).toMatchObject({ scope: 'user', user_id: user.userId });
        expect(item.id).toMatch(UUID_RE);
      }
      expect(page.items.some((i) => i.user_id === other.userId)).toBe(false);
      const firstLogin = page.items[1]!;
      expect(firstLogin).toMatchObject({
        type: 'user:login',
        scope: 'user',
        user_id: login.userId,
        account_id: null,
        ip_address: '203.0.113.7',
        user_agent: 'audit-test-agent/1.0',
      });
      expect(firstLogin.resolved_names).toContainEqual({ id: user.userId, kind: 'user', display_name: displayNameOf(user) });
      // The account creation row names the new account in its metadata and resolves it.
      const created = page.items[2]!;
      expect(created.metadata).toMatchObject({ account_id: user.accountId });
      expect(sortedNames(created.resolved_names)).toEqual(
        sortedNames([
          { id: user.userId, kind: 'user', display_name: displayNameOf(user) },
          { id: user.accountId!, kind: 'account', display_name: accountNameOf(user) },
        ]),
      );
      // newest first
      const times = page.items.map((i) => Date.parse(i.created_at));
      expect([...times].sort((a, b) => b - a)).toEqual(times);

      // The other user sees only their own two rows.
      const others = okPage(await myLog(other.accessToken));
      expect(others.total).toBe(2);
      expect(others.items.every((i) => i.user_id === other.userId && i.scope === 'user')).toBe(true);
    });

    test('GraphQL myAuditLog answers the same page in camelCase', async () => {
      const user = await devLogin(t, newEmail('me-gql'));
      await createRole(user, 'Gql role');
      const rest = okPage(await myLog(user.accessToken));
      expect(rest.total).toBe(2);
      const viaGql = expectOkGql(await gql(t.url, MY_LOG, {}, bearer(user.accessToken)), 'myAuditLog');
      expect(viaGql).toEqual(toGqlPage(rest));
    });

    test("the user's own API key reads the same rows", async () => {
      const user = await devLogin(t, newEmail('me-key'));
      const { token } = await t.app.authStore.mint({ kind: 'user_api_key', userId: user.userId, accountId: user.accountId, createdBy: user.userId, label: 'audit key', permissions: [] });
      const viaJwt = okPage(await myLog(user.accessToken));
      const viaKey = okPage(await myLog(token));
      expect(viaKey).toEqual(viaJwt);
      expect(viaKey.total).toBe(2);
      const viaGql = expectOkGql(await gql(t.url, MY_LOG, {}, bearer(token)), 'myAuditLog');
      expect(viaGql).toEqual(toGqlPage(viaJwt));
    });

    describe('every non-user context gets 401 UNAUTHORIZED, over REST and GraphQL', () => {
      type Presented = { header?: string; query?: string };
      const contexts: Record<string, Presented> = {};
      const contextKinds: Record<string, string> = {
        'popout token (?token=)': 'popout',
        'overlay token': 'overlay',
        'shared overlay token': 'shared_overlay',
        'widget token': 'widget',
        'extension token': 'extension',
        'service key': 'service_key',
        'developer API key': 'developer_api_key',
        'system key': 'system_key',
      };

      beforeAll(async () => {
        const owner = await devLogin(t, newEmail('me-401'));
        const mint = async (kind: 'overlay' | 'shared_overlay' | 'widget' | 'extension' | 'service_key' | 'developer_api_key', permissions: string[] = []) =>
          (
            await t.app.authStore.mint({
              kind,
              accountId: kind === 'developer_api_key' ? null : owner.accountId,
              userId: kind === 'extension' ? owner.userId : null,
              createdBy: owner.userId,
              subjectId: randomUUID(),
              extensionId: kind === 'extension' ? randomUUID() : null,
              label: `audit ${kind}`,
              permissions,
            })
          ).token;
        contexts['popout token (?token=)'] = { query: await createPopout(owner) };
        contexts['overlay token'] = { header: await mint('overlay') };
        contexts['shared overlay token'] = { header: await mint('shared_overlay') };
        contexts['widget token'] = { header: await mint('widget') };
        contexts['extension token'] = { header: await mint('extension') };
        contexts['service key'] = { header: await mint('service_key', ['audit-log:read', 'events:read']) };
        contexts['developer API key'] = { header: await mint('developer_api_key', ['extension-dev:read']) };
        contexts['system key'] = { header: readerKey.key };
      });

      test.each(Object.keys(contextKinds))('%s', async (name) => {
        const presented = contexts[name]!;
        const restOptions: { token?: string; query: Record<string, string> } = { token: presented.header, query: presented.query ? { token: presented.query } : {} };
        const gqlHeaders = presented.header ? bearer(presented.header) : {};
        // The credential is live: it authenticates as its own context.
        const me = await api(t, 'GET', '/tokens/me', restOptions);
        expect(me.status).toBe(200);
        expect((me.body.data as { context: string }).context).toBe(contextKinds[name]);

        const rest = await api(t, 'GET', '/me/audit-log', restOptions);
        expect(rest.status).toBe(401);
        expect(rest.body).toEqual(UNAUTHORIZED);
        expectGqlError(await gql(t.url, MY_LOG, {}, gqlHeaders, presented.query), UNAUTHORIZED);
      });

      test('anonymous', async () => {
        const rest = await api(t, 'GET', '/me/audit-log');
        expect(rest.status).toBe(401);
        expect(rest.body).toEqual(UNAUTHORIZED);
        expectGqlError(await gql(t.url, MY_LOG), UNAUTHORIZED);
      });
    });
  });

  // ---------------------------------------------------------------- GET /v1/account/audit-log

  describe('GET /v1/account/audit-log', () => {
    test("the owner sees the active account's account-scope rows only, newest first", async () => {
      const owner = await devLogin(t, newEmail('acct-owner'));
      const member = await devLogin(t, newEmail('acct-member'));
      const stranger = await devLogin(t, newEmail('acct-stranger'));
      await createRole(stranger, 'Stranger role'); // another account's row
      await joinAccount(t, owner, member, { roleName: 'Helpers', permissions: ['events:read'] }); // role_created, member_invited, member_joined
      await createPopout(owner); // popout_token_created

      const page = okPage(await accountLog(owner.accessToken));
      expect(page).toMatchObject({ total: 4, page: 1, limit: 50, total_pages: 1 });
      expect(page.items.map((i) => i.type)).toEqual(['account:popout_token_created', 'account:member_joined', 'account:member_invited', 'account:role_created']);
      for (const item of page.items) expect(item).toMatchObject({ scope: 'account', account_id: owner.accountId });
      expect(page.items[0]).toMatchObject({ user_id: owner.userId, metadata: expect.objectContaining({ permissions: ['events:read'] }) });
      expect(page.items[1]).toMatchObject({ user_id: member.userId });
      expect(page.items[2]).toMatchObject({ user_id: owner.userId, metadata: expect.objectContaining({ target_user_id: member.userId }) });
      expect(page.items[3]).toMatchObject({ user_id: owner.userId, metadata: expect.objectContaining({ name: 'Helpers' }) });

      // The stranger's account log holds only its own row.
      const strangers = okPage(await accountLog(stranger.accessToken));
      expect(strangers.total).toBe(1);
      expect(strangers.items[0]).toMatchObject({ type: 'account:role_created', account_id: stranger.accountId, scope: 'account' });

      // The owner's user log has none of these account rows.
      const mine = okPage(await myLog(owner.accessToken));
      expect(mine.items.every((i) => i.scope === 'user')).toBe(true);

      const viaGql = expectOkGql(await gql(t.url, ACCOUNT_LOG, {}, bearer(owner.accessToken)), 'accountAuditLog');
      expect(viaGql).toEqual(toGqlPage(page));
    });

    test('an account without rows answers an empty first page', async () => {
      const owner = await devLogin(t, newEmail('acct-empty'));
      expect(okPage(await accountLog(owner.accessToken))).toEqual({ items: [], total: 0, page: 1, limit: 50, total_pages: 0 });
    });

    test('a viewer gets 403 "Missing permission: audit-log:read"', async () => {
      const owner = await devLogin(t, newEmail('acct-viewer-owner'));
      const viewer = await joinAccount(t, owner, await devLogin(t, newEmail('acct-viewer')), { role: 'viewer' });
      const rest = await accountLog(viewer.accessToken);
      expect(rest.status).toBe(403);
      expect(rest.body).toEqual(MISSING_AUDIT_LOG_READ);
      expectGqlError(await gql(t.url, ACCOUNT_LOG, {}, bearer(viewer.accessToken)), MISSING_AUDIT_LOG_READ);
    });

    test('a member granted audit-log:read reads the log; once removed, the same JWT gets 401 "No active account"', async () => {
      const owner = await devLogin(t, newEmail('acct-removed-owner'));
      const member = await joinAccount(t, owner, await devLogin(t, newEmail('acct-removed')), { roleName: 'Auditors', permissions: ['audit-log:read'] });
      const before = okPage(await accountLog(member.accessToken));
      expect(before.total).toBe(3);
      expect(before.items.every((i) => i.account_id === owner.accountId)).toBe(true);

      const removed = await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken });
      expect(removed.status).toBe(200);

      const rest = await accountLog(member.accessToken);
      expect(rest.status).toBe(401);
      expect(rest.body).toEqual(NO_ACTIVE_ACCOUNT);
      expectGqlError(await gql(t.url, ACCOUNT_LOG, {}, bearer(member.accessToken)), NO_ACTIVE_ACCOUNT);
    });

    test('anonymous gets 401 "Authentication required"', async () => {
      const rest = await api(t, 'GET', '/account/audit-log');
      expect(rest.status).toBe(401);
      expect(rest.body).toEqual(UNAUTHORIZED);
      expectGqlError(await gql(t.url, ACCOUNT_LOG), UNAUTHORIZED);
    });
  });

  // ---------------------------------------------------------------- GET /v1/admin/audit-log

  describe('GET /v1/admin/audit-log', () => {
    let op: LoggedIn;
    let subject: LoggedIn;
    let systemRowId: string;
    const marker = randomUUID();

    beforeAll(async () => {
      op = await operator();
      subject = await devLogin(t, newEmail('admin-subject')); // user rows: account_created, login
      await createRole(subject, 'Admin-visible role'); // account row with user_id = subject
      // No HTTP operation records a system-scope row yet: seed one.
      systemRowId = await t.app.modules.audit.record({ scope: 'system', type: 'system:test_marker', actorId: op.userId, metadata: { marker } });
    });

    test('an operator sees rows of every scope and every user', async () => {
      const page = okPage(await adminLog(op.accessToken, { limit: '200' }));
      expect(page.total).toBeGreaterThanOrEqual(6);
      const scopes = new Set(page.items.map((i) => i.scope));
      expect([...scopes].sort()).toEqual(['account', 'system', 'user']);
      const users = new Set(page.items.map((i) => i.user_id));
      expect(users.has(op.userId)).toBe(true);
      expect(users.has(subject.userId)).toBe(true);
      expect(page.items.map((i) => i.id)).toContain(systemRowId);

      const viaGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { limit: 200 } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(viaGql.total).toBe(page.total);
      expect(viaGql.items.map((i) => i.id)).toEqual(page.items.map((i) => i.id));
    });

    test('user_id filter: that user\'s rows of every scope; with scope=user|account only that scope', async () => {
      const all = okPage(await adminLog(op.accessToken, { user_id: subject.userId }));
      expect(all.total).toBe(3);
      expect(all.items.map((i) => `${i.scope} ${i.type}`)).toEqual(['account account:role_created', 'user user:login', 'user user:account_created']);
      expect(all.items.every((i) => i.user_id === subject.userId)).toBe(true);

      const user = okPage(await adminLog(op.accessToken, { user_id: subject.userId, scope: 'user' }));
      expect(user.items.map((i) => i.id)).toEqual(all.items.slice(1).map((i) => i.id));
      expect(user.total).toBe(2);

      const account = okPage(await adminLog(op.accessToken, { user_id: subject.userId, scope: 'account' }));
      expect(account.items.map((i) => i.id)).toEqual([all.items[0]!.id]);
      expect(account.total).toBe(1);

      const system = okPage(await adminLog(op.accessToken, { user_id: subject.userId, scope: 'system' }));
      expect(system).toEqual({ items: [], total: 0, page: 1, limit: 50, total_pages: 0 });

      const viaGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { userId: subject.userId, scope: 'user' } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(viaGql).toEqual(toGqlPage(user));
    });

    test('scope=system answers only system rows', async () => {
      const page = okPage(await adminLog(op.accessToken, { scope: 'system', limit: '200' }));
      expect(page.items.length).toBeGreaterThanOrEqual(1);
      expect(page.items.every((i) => i.scope === 'system')).toBe(true);
      const row = page.items.find((i) => i.id === systemRowId);
      expect(row).toMatchObject({ type: 'system:test_marker', user_id: null, account_id: null, actor_id: op.userId, metadata: { marker } });
      const viaGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { scope: 'system', limit: 200 } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(viaGql.items.map((i) => i.id)).toEqual(page.items.map((i) => i.id));
    });

    test('account_id filter: the same rows the account log shows its owner', async () => {
      const page = okPage(await adminLog(op.accessToken, { account_id: subject.accountId! }));
      expect(page.total).toBe(1);
      expect(page.items[0]).toMatchObject({ scope: 'account', type: 'account:role_created', account_id: subject.accountId });
      expect(page).toEqual(okPage(await accountLog(subject.accessToken)));
      const viaGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { accountId: subject.accountId } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(viaGql).toEqual(toGqlPage(page));
    });

    test('an unknown scope is a 400 VALIDATION_ERROR', async () => {
      const rest = await adminLog(op.accessToken, { scope: 'galaxy' });
      expect(rest.status).toBe(400);
      expect(rest.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Unknown scope: galaxy' });
      const viaGql = await gql(t.url, ADMIN_LOG, { filter: { scope: 'galaxy' } }, bearer(op.accessToken));
      expect(viaGql.body.data ?? null).toBeNull();
      expectGqlError(viaGql, { error: 'VALIDATION_ERROR', message: 'Unknown scope: galaxy' });
    });

    test('a non-operator gets 403 "Missing permission: audit-log:read"', async () => {
      const user = await devLogin(t, newEmail('admin-nonop'));
      const rest = await adminLog(user.accessToken);
      expect(rest.status).toBe(403);
      expect(rest.body).toEqual(MISSING_AUDIT_LOG_READ);
      expectGqlError(await gql(t.url, ADMIN_LOG, {}, bearer(user.accessToken)), MISSING_AUDIT_LOG_READ);
    });

    test('the shared string is checked per scope: account audit-log:read does not open the admin log, nor the reverse', async () => {
      // An account owner holds the account-scope audit-log:read ...
      const owner = await devLogin(t, newEmail('admin-owner'));
      const perms = await api(t, 'GET', '/tokens/me', { token: owner.accessToken });
      expect((perms.body.data as { permissions: string[] }).permissions).toContain('audit-log:read');
      expect((perms.body.data as { admin_permissions: string[] }).admin_permissions).toEqual([]);
      okPage(await accountLog(owner.accessToken));
      // ... and still gets 403 on the admin log.
      const rest = await adminLog(owner.accessToken);
      expect(rest.status).toBe(403);
      expect(rest.body).toEqual(MISSING_AUDIT_LOG_READ);
      expectGqlError(await gql(t.url, ADMIN_LOG, {}, bearer(owner.accessToken)), MISSING_AUDIT_LOG_READ);

      // An operator acting as a viewer in someone else's account holds the admin string only.
      const host = await devLogin(t, newEmail('admin-host'));
      const asViewer = await joinAccount(t, host, await operator(), { role: 'viewer' });
      const viewerPerms = await api(t, 'GET', '/tokens/me', { token: asViewer.accessToken });
      expect((viewerPerms.body.data as { admin_permissions: string[] }).admin_permissions).toContain('audit-log:read');
      expect((viewerPerms.body.data as { permissions: string[] }).permissions).not.toContain('audit-log:read');
      okPage(await adminLog(asViewer.accessToken));
      const denied = await accountLog(asViewer.accessToken);
      expect(denied.status).toBe(403);
      expect(denied.body).toEqual(MISSING_AUDIT_LOG_READ);
      expectGqlError(await gql(t.url, ACCOUNT_LOG, {}, bearer(asViewer.accessToken)), MISSING_AUDIT_LOG_READ);
    });

    test('anonymous gets 401 "Authentication required"', async () => {
      const rest = await api(t, 'GET', '/admin/audit-log');
      expect(rest.status).toBe(401);
      expect(rest.body).toEqual(UNAUTHORIZED);
      expectGqlError(await gql(t.url, ADMIN_LOG), UNAUTHORIZED);
    });
  });
});
