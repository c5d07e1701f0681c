/**
 * The audit log (Part 2, "Audit log"; Part 1, "Authorization"): GET /v1/me/audit-log,
 * /v1/account/audit-log and /v1/admin/audit-log with their GraphQL twins (myAuditLog,
 * accountAuditLog, adminAuditLog), and POST /v1/internal/audit-ingest. Everything goes through
 * real HTTP; rows come from the operations that record them (dev login, roles, invites, popout
 * tokens) or from the ingest endpoint. The one exception is a system-scope row, which no HTTP
 * operation records yet: it is seeded with `audit.service.record()`.
 */
import { randomUUID } from 'node:crypto';
import { gql, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type ApiResult, type LoggedIn } from '../helpers/users';

// ------------------------------------------------------------------ fixtures and helpers

const ingestKey = systemKey('audit-ingest-bot', ['audit:ingest']);
const wildcardKey = systemKey('audit-wildcard-bot', ['audit:*']);
const starKey = systemKey('star-bot', ['*:*']);
const readerKey = systemKey('audit-reader-bot', ['audit:read', 'events:read']);

const UNAUTHORIZED = { error: 'UNAUTHORIZED', message: 'Authentication required' };
const NO_ACTIVE_ACCOUNT = { error: 'UNAUTHORIZED', message: 'No active account' };
const MISSING_AUDIT_LOG_READ = { error: 'FORBIDDEN', message: 'Missing permission: audit-log:read' };
const MISSING_AUDIT_INGEST = { error: 'FORBIDDEN', message: 'Missing permission: audit:ingest' };
const PAGE_KEYS = ['items', 'limit', 'page', 'total', 'total_pages'];
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const ITEM_FIELDS = 'id scope type userId accountId actorId ipAddress userAgent metadata createdAt resolvedNames { id kind displayName }';
const PAGE_FIELDS = `items { ${ITEM_FIELDS} } total page limit totalPages`;
const MY_LOG = `query($filter: AuditLogFilter) { myAuditLog(filter: $filter) { ${PAGE_FIELDS} } }`;
const ACCOUNT_LOG = `query($filter: AuditLogFilter) { accountAuditLog(filter: $filter) { ${PAGE_FIELDS} } }`;
const ADMIN_LOG = `query($filter: AdminAuditLogFilter) { adminAuditLog(filter: $filter) { ${PAGE_FIELDS} } }`;

interface ResolvedName {
  id: string;
  kind: 'user' | 'account' | 'role';
  display_name: string;
}

interface AuditItem {
  id: string;
  scope: 'user' | 'account' | 'system';
  type: string;
  user_id: string | null;
  account_id: string | null;
  actor_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  resolved_names: ResolvedName[];
}

interface AuditPage {
  items: AuditItem[];
  total: number;
  page: number;
  limit: number;
  total_pages: number;
}

type GqlResult = Awaited<ReturnType<typeof gql>>;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const newEmail = (prefix: string) => `${prefix}-${randomUUID()}@example.test`;
const displayNameOf = (user: LoggedIn) => user.email.split('@')[0]!;
const accountNameOf = (user: LoggedIn) => `${displayNameOf(user)}'s account`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const byKindAndId = (a: ResolvedName, b: ResolvedName) => `${a.kind}:${a.id}`.localeCompare(`${b.kind}:${b.id}`);
const sortedNames = (names: ResolvedName[]) => [...names].sort(byKindAndId);

/** The GraphQL form of a REST page: same values, camelCase names. */
function toGqlPage(page: AuditPage) {
  return {
    items: page.items.map((i) => ({
      id: i.id,
      scope: i.scope,
      type: i.type,
      userId: i.user_id,
      accountId: i.account_id,
      actorId: i.actor_id,
      ipAddress: i.ip_address,
      userAgent: i.user_agent,
      metadata: i.metadata,
      createdAt: i.created_at,
      resolvedNames: i.resolved_names.map((n) => ({ id: n.id, kind: n.kind, displayName: n.display_name })),
    })),
    total: page.total,
    page: page.page,
    limit: page.limit,
    totalPages: page.total_pages,
  };
}

function expectGqlError(res: GqlResult, expected: { error: string; message: string }): void {
  expect(res.status).toBeLessThan(500);
  expect(res.body.data ?? null).toBeNull();
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]).toMatchObject({ message: expected.message, extensions: { code: expected.error } });
}

function expectOkGql(res: GqlResult, field: string): ReturnType<typeof toGqlPage> {
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
  return res.body.data![field] as ReturnType<typeof toGqlPage>;
}

/** A REST 200 page whose top-level shape is exactly `{ items, total, page, limit, total_pages }`. */
function okPage(res: ApiResult): AuditPage {
  expect(res.status).toBe(200);
  expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
  return res.body as unknown as AuditPage;
}

describe('audit log', () => {
  const t = useTestApp({
    rate_limits: { enabled: false },
    auth: { system_keys: [ingestKey.config, wildcardKey.config, starKey.config, readerKey.config] },
  });

  const myLog = (token: string, query: Record<string, string> = {}) => api(t, 'GET', '/me/audit-log', { token, query });
  const accountLog = (token: string, query: Record<string, string> = {}) => api(t, 'GET', '/account/audit-log', { token, query });
  const adminLog = (token: string, query: Record<string, string> = {}) => api(t, 'GET', '/admin/audit-log', { token, query });
  const ingest = (body: unknown, token: string | null = ingestKey.key) => api(t, 'POST', '/internal/audit-ingest', { token: token ?? undefined, body });

  /** A dev login sending its own user agent and (through the trusted loopback proxy) client ip. */
  async function loginWithClient(email: string, client: { ip: string; userAgent: string }): Promise<{ userId: string; accessToken: string; sessionId: string }> {
    const res = await api(t, 'POST', '/auth/dev/login', {
      body: { email, display_name: email.split('@')[0] },
      headers: { 'user-agent': client.userAgent, 'x-forwarded-for': client.ip },
    });
    expect(res.status).toBe(200);
    const data = res.body.data as { user_id: string; access_token: string; session_id: string };
    return { userId: data.user_id, accessToken: data.access_token, sessionId: data.session_id };
  }

  async function createRole(owner: LoggedIn, name: string, permissions: string[] = ['events:read']): Promise<string> {
    const res = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name, permissions } });
    expect(res.status).toBe(201);
    return (res.body.data as { id: string }).id;
  }

  async function createPopout(owner: LoggedIn): Promise<string> {
    const res = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { label: 'audit popout', permissions: ['events:read'] } });
    expect(res.status).toBe(201);
    return (res.body.data as { token: string }).token;
  }

  /** An operator: the super-admin role, then a fresh login so the JWT carries the admin claims. */
  async function operator(): Promise<LoggedIn> {
    const first = await devLogin(t, newEmail('operator'));
    await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
    return devLogin(t, first.email);
  }

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

  // ---------------------------------------------------------------- pagination and clamping

  describe('pagination and clamping', () => {
    interface Surface {
      rest(query: Record<string, string>): Promise<ApiResult>;
      gql(filter: Record<string, unknown>): Promise<ReturnType<typeof toGqlPage>>;
      /** Ids of the five rows, newest first. */
      ids: string[];
    }
    const surfaces: Record<string, Surface> = {};

    beforeAll(async () => {
      // me: a user with five user rows (account_created, login, three ingested)
      const user = await devLogin(t, newEmail('page-me'));
      for (const seq of [1, 2, 3]) expect((await ingest({ user_id: user.userId, type: 'user:mfa_enabled', metadata: { seq } })).status).toBe(201);
      // account: an owner with five role rows
      const owner = await devLogin(t, newEmail('page-acct'));
      for (const n of [1, 2, 3, 4, 5]) await createRole(owner, `Paging role ${n}`);
      const op = await operator();

      const mePage = okPage(await myLog(user.accessToken, { limit: '200' }));
      const accountPage = okPage(await accountLog(owner.accessToken, { limit: '200' }));
      expect(mePage.items.map((i) => [i.type, i.metadata.seq ?? null])).toEqual([
        ['user:mfa_enabled', 3],
        ['user:mfa_enabled', 2],
        ['user:mfa_enabled', 1],
        ['user:login', null],
        ['user:account_created', null],
      ]);
      expect(accountPage.items.map((i) => i.metadata.name)).toEqual(['Paging role 5', 'Paging role 4', 'Paging role 3', 'Paging role 2', 'Paging role 1']);

      surfaces.me = {
        rest: (query) => myLog(user.accessToken, query),
        gql: async (filter) => expectOkGql(await gql(t.url, MY_LOG, { filter }, bearer(user.accessToken)), 'myAuditLog'),
        ids: mePage.items.map((i) => i.id),
      };
      surfaces.account = {
        rest: (query) => accountLog(owner.accessToken, query),
        gql: async (filter) => expectOkGql(await gql(t.url, ACCOUNT_LOG, { filter }, bearer(owner.accessToken)), 'accountAuditLog'),
        ids: accountPage.items.map((i) => i.id),
      };
      surfaces.admin = {
        rest: (query) => adminLog(op.accessToken, { user_id: user.userId, ...query }),
        gql: async (filter) => expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { userId: user.userId, ...filter } }, bearer(op.accessToken)), 'adminAuditLog'),
        ids: mePage.items.map((i) => i.id),
      };
    });

    const cases: [string, Record<string, string>, { page: number; limit: number; total_pages: number; slice: [number, number] }][] = [
      ['defaults: page 1, limit 50', {}, { page: 1, limit: 50, total_pages: 1, slice: [0, 5] }],
      ['limit=2 (first page)', { limit: '2' }, { page: 1, limit: 2, total_pages: 3, slice: [0, 2] }],
      ['limit=2&page=2', { limit: '2', page: '2' }, { page: 2, limit: 2, total_pages: 3, slice: [2, 4] }],
      ['limit=2&page=3 (last, partial)', { limit: '2', page: '3' }, { page: 3, limit: 2, total_pages: 3, slice: [4, 5] }],
      ['limit=2&page=4 (beyond the end)', { limit: '2', page: '4' }, { page: 4, limit: 2, total_pages: 3, slice: [5, 5] }],
      ['limit=0 clamps to 1', { limit: '0' }, { page: 1, limit: 1, total_pages: 5, slice: [0, 1] }],
      ['limit=-5 clamps to 1', { limit: '-5' }, { page: 1, limit: 1, total_pages: 5, slice: [0, 1] }],
      ['limit=1000 clamps to 200', { limit: '1000' }, { page: 1, limit: 200, total_pages: 1, slice: [0, 5] }],
      ['page=0 counts as 1', { limit: '3', page: '0' }, { page: 1, limit: 3, total_pages: 2, slice: [0, 3] }],
    ];

    describe.each(['me', 'account', 'admin'])('%s', (surfaceName) => {
      test.each(cases)('REST %s', async (_name, query, expected) => {
        const surface = surfaces[surfaceName]!;
        const page = okPage(await surface.rest(query));
        expect({ ...page, items: page.items.map((i) => i.id) }).toEqual({
          items: surface.ids.slice(...expected.slice),
          total: 5,
          page: expected.page,
          limit: expected.limit,
          total_pages: expected.total_pages,
        });
      });

      test.each(cases)('GraphQL %s', async (_name, query, expected) => {
        const surface = surfaces[surfaceName]!;
        const filter = Object.fromEntries(Object.entries(query).map(([k, v]) => [k, Number(v)]));
        const page = await surface.gql(filter);
        expect({ ...page, items: page.items.map((i) => i.id) }).toEqual({
          items: surface.ids.slice(...expected.slice),
          total: 5,
          page: expected.page,
          limit: expected.limit,
          totalPages: expected.total_pages,
        });
      });

      test('rows are newest first', async () => {
        const page = okPage(await surfaces[surfaceName]!.rest({}));
        const times = page.items.map((i) => Date.parse(i.created_at));
        expect(times.every((time, i) => i === 0 || time <= times[i - 1]!)).toBe(true);
        expect(new Set(times).size).toBeGreaterThan(1);
      });
    });
  });

  // ---------------------------------------------------------------- filters

  describe('filters: type, from, to', () => {
    let user: LoggedIn;
    let owner: LoggedIn;
    let op: LoggedIn;
    /** The user's rows, newest first: X (mfa_disabled), W (mfa_enabled), login, account_created. */
    let rows: AuditItem[];

    beforeAll(async () => {
      user = await devLogin(t, newEmail('filter-me'));
      await sleep(40);
      expect((await ingest({ user_id: user.userId, type: 'user:mfa_enabled' })).status).toBe(201);
      await sleep(40);
      expect((await ingest({ user_id: user.userId, type: 'user:mfa_disabled' })).status).toBe(201);
      rows = okPage(await myLog(user.accessToken)).items;
      expect(rows.map((r) => r.type)).toEqual(['user:mfa_disabled', 'user:mfa_enabled', 'user:login', 'user:account_created']);
      owner = await devLogin(t, newEmail('filter-acct'));
      await createRole(owner, 'Filter role');
      await createPopout(owner);
      op = await operator();
    });

    const midpoint = (a: string, b: string) => new Date((Date.parse(a) + Date.parse(b)) / 2).toISOString();
    const ids = (page: AuditPage) => page.items.map((i) => i.id);

    test('type is an exact match on every surface', async () => {
      const me = okPage(await myLog(user.accessToken, { type: 'user:login' }));
      expect(me.total).toBe(1);
      expect(me.items.map((i) => i.type)).toEqual(['user:login']);
      expect(okPage(await myLog(user.accessToken, { type: 'user:log' })).total).toBe(0);
      expect(okPage(await myLog(user.accessToken, { type: 'USER:LOGIN' })).total).toBe(0);
      const meGql = expectOkGql(await gql(t.url, MY_LOG, { filter: { type: 'user:login' } }, bearer(user.accessToken)), 'myAuditLog');
      expect(meGql).toEqual(toGqlPage(me));

      const account = okPage(await accountLog(owner.accessToken, { type: 'account:popout_token_created' }));
      expect(account.items.map((i) => i.type)).toEqual(['account:popout_token_created']);
      expect(account.total).toBe(1);
      expect(okPage(await accountLog(owner.accessToken, { type: 'account:role' })).total).toBe(0);

      const admin = okPage(await adminLog(op.accessToken, { user_id: user.userId, type: 'user:mfa_enabled' }));
      expect(ids(admin)).toEqual([rows[1]!.id]);
      const adminGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { userId: user.userId, type: 'user:mfa_enabled' } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(adminGql).toEqual(toGqlPage(admin));
    });

    test('from and to bound created_at (RFC 3339, any offset)', async () => {
      const [x, w, login] = rows;
      const afterLogin = midpoint(login!.created_at, w!.created_at);
      const afterW = midpoint(w!.created_at, x!.created_at);

      const fromPage = okPage(await myLog(user.accessToken, { from: afterLogin }));
      expect(ids(fromPage)).toEqual([x!.id, w!.id]);
      expect(fromPage.total).toBe(2);

      const toPage = okPage(await myLog(user.accessToken, { to: afterLogin }));
      expect(ids(toPage)).toEqual(rows.slice(2).map((r) => r.id));
      expect(toPage.total).toBe(2);

      const between = okPage(await myLog(user.accessToken, { from: afterLogin, to: afterW }));
      expect(ids(between)).toEqual([w!.id]);

      // The same instant written with a +02:00 offset selects the same rows.
      const shifted = new Date(Date.parse(afterLogin) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      expect(ids(okPage(await myLog(user.accessToken, { from: shifted })))).toEqual([x!.id, w!.id]);

      const viaGql = expectOkGql(await gql(t.url, MY_LOG, { filter: { from: afterLogin, to: afterW } }, bearer(user.accessToken)), 'myAuditLog');
      expect(viaGql).toEqual(toGqlPage(between));

      const admin = okPage(await adminLog(op.accessToken, { user_id: user.userId, from: afterLogin, to: afterW }));
      expect(ids(admin)).toEqual([w!.id]);
      const account = okPage(await accountLog(owner.accessToken, { from: new Date(Date.now() + 3600_000).toISOString() }));
      expect(account.total).toBe(0);
    });

    test('from is inclusive: from=<a row\'s created_at> keeps that row', async () => {
      const w = rows[1]!;
      expect(ids(okPage(await myLog(user.accessToken, { from: w.created_at })))).toEqual([rows[0]!.id, w.id]);
    });

    test('to is inclusive: to=<a row\'s created_at> keeps that row', async () => {
      const w = rows[1]!;
      expect(ids(okPage(await myLog(user.accessToken, { to: w.created_at })))).toEqual(rows.slice(1).map((r) => r.id));
      expect(ids(okPage(await myLog(user.accessToken, { from: w.created_at, to: w.created_at })))).toEqual([w.id]);
    });

    test.each([
      ['from=yesterday', { from: 'yesterday' }],
      ['to=yesterday', { to: 'yesterday' }],
      ['from=not-a-date&to=2026-13-45T99:00:00Z', { from: 'not-a-date', to: '2026-13-45T99:00:00Z' }],
    ])('an unparseable bound is ignored, not a 400 (%s)', async (_name, query) => {
      const without = okPage(await myLog(user.accessToken));
      const page = okPage(await myLog(user.accessToken, query));
      expect(page).toEqual(without);
      expect(page.total).toBe(4);
      const viaGql = expectOkGql(await gql(t.url, MY_LOG, { filter: query }, bearer(user.accessToken)), 'myAuditLog');
      expect(viaGql).toEqual(toGqlPage(without));
      const account = okPage(await accountLog(owner.accessToken, query));
      expect(account).toEqual(okPage(await accountLog(owner.accessToken)));
      expect(account.total).toBe(2);
      const admin = okPage(await adminLog(op.accessToken, { user_id: user.userId, ...query }));
      expect(admin).toEqual(without);
    });
  });

  // ---------------------------------------------------------------- resolved_names

  describe('resolved_names', () => {
    test('the acting user, the account and the role of a role row resolve at read time; a deleted role drops out, its id stays', async () => {
      const owner = await devLogin(t, newEmail('names-owner'));
      const roleId = await createRole(owner, 'Name Check');
      const user = { id: owner.userId, kind: 'user' as const, display_name: displayNameOf(owner) };
      const account = { id: owner.accountId!, kind: 'account' as const, display_name: accountNameOf(owner) };

      const read = async () => {
        const page = okPage(await accountLog(owner.accessToken, { type: 'account:role_created' }));
        expect(page.total).toBe(1);
        return page;
      };

      const first = await read();
      expect(first.items[0]).toMatchObject({ user_id: owner.userId, account_id: owner.accountId, metadata: expect.objectContaining({ role_id: roleId }) });
      expect(sortedNames(first.items[0]!.resolved_names)).toEqual(sortedNames([user, account, { id: roleId, kind: 'role', display_name: 'Name Check' }]));
      const viaGql = expectOkGql(await gql(t.url, ACCOUNT_LOG, { filter: { type: 'account:role_created' } }, bearer(owner.accessToken)), 'accountAuditLog');
      expect(viaGql).toEqual(toGqlPage(first));

      // Renamed: the old row shows the current name.
      const renamed = await api(t, 'PATCH', `/account/roles/${roleId}`, { token: owner.accessToken, body: { name: 'Renamed Check' } });
      expect(renamed.status).toBe(200);
      const second = await read();
      expect(second.items[0]!.id).toBe(first.items[0]!.id);
      expect(sortedNames(second.items[0]!.resolved_names)).toEqual(sortedNames([user, account, { id: roleId, kind: 'role', display_name: 'Renamed Check' }]));

      // Deleted: the role is no longer resolved, the raw id stays in metadata.
      const deleted = await api(t, 'DELETE', `/account/roles/${roleId}`, { token: owner.accessToken });
      expect(deleted.status).toBe(200);
      const third = await read();
      expect(third.items[0]!.id).toBe(first.items[0]!.id);
      expect(third.items[0]!.metadata).toMatchObject({ role_id: roleId, name: 'Name Check' });
      expect(sortedNames(third.items[0]!.resolved_names)).toEqual(sortedNames([user, account]));
      const afterGql = expectOkGql(await gql(t.url, ACCOUNT_LOG, { filter: { type: 'account:role_created' } }, bearer(owner.accessToken)), 'accountAuditLog');
      expect(afterGql).toEqual(toGqlPage(third));
    });

    test('an ingested row for an unknown user keeps user_id and resolves no name for it', async () => {
      const op = await operator();
      const ghost = randomUUID();
      const res = await ingest({ user_id: ghost, type: 'user:login_failed', ip_address: '198.51.100.9' });
      expect(res.status).toBe(201);
      const page = okPage(await adminLog(op.accessToken, { user_id: ghost }));
      expect(page.total).toBe(1);
      expect(page.items[0]).toMatchObject({ id: res.body.id, user_id: ghost, scope: 'user', type: 'user:login_failed', account_id: null, resolved_names: [] });
      const viaGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { userId: ghost } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(viaGql).toEqual(toGqlPage(page));
    });

    test('a known user referenced from ingested metadata resolves, an unknown one is omitted', async () => {
      const user = await devLogin(t, newEmail('names-ingest'));
      const known = await devLogin(t, newEmail('names-known'));
      const ghost = randomUUID();
      const res = await ingest({ user_id: user.userId, type: 'user:oauth_granted', metadata: { target_user_id: known.userId, other_user_id: ghost } });
      expect(res.status).toBe(201);
      const page = okPage(await myLog(user.accessToken, { type: 'user:oauth_granted' }));
      expect(page.total).toBe(1);
      expect(page.items[0]!.metadata).toMatchObject({ target_user_id: known.userId, other_user_id: ghost });
      expect(sortedNames(page.items[0]!.resolved_names)).toEqual(
        sortedNames([
          { id: user.userId, kind: 'user', display_name: displayNameOf(user) },
          { id: known.userId, kind: 'user', display_name: displayNameOf(known) },
        ]),
      );
    });
  });

  // ---------------------------------------------------------------- POST /v1/internal/audit-ingest

  describe('POST /v1/internal/audit-ingest', () => {
    let user: LoggedIn;
    const userRows = async () => okPage(await myLog(user.accessToken, { limit: '200' }));

    beforeAll(async () => {
      user = await devLogin(t, newEmail('ingest'));
    });

    test('a system key with audit:ingest records a user-scope row without account: 201 { id }', async () => {
      const metadata = { provider: 'platform_a', attempt: 2, nested: { ok: true } };
      const res = await ingest({ user_id: user.userId, type: 'user:mfa_enabled', ip_address: '192.0.2.44', user_agent: 'auth-service/3.1', metadata });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body)).toEqual(['id']);
      expect(res.body.id).toMatch(UUID_RE);

      const page = await userRows();
      const row = page.items.find((i) => i.id === res.body.id);
      expect(row).toMatchObject({
        scope: 'user',
        type: 'user:mfa_enabled',
        user_id: user.userId,
        account_id: null,
        ip_address: '192.0.2.44',
        user_agent: 'auth-service/3.1',
      });
      expect(row!.metadata).toMatchObject(metadata);
      expect(page.items[0]!.id).toBe(res.body.id); // the newest row
      // The account never sees it.
      expect(okPage(await accountLog(user.accessToken)).items.some((i) => i.id === res.body.id)).toBe(false);
    });

    test.each(['user:login', 'user:login_failed', 'user:mfa_enabled', 'user:mfa_disabled', 'user:oauth_granted'])('type %s is accepted', async (type) => {
      const res = await ingest({ user_id: user.userId, type });
      expect(res.status).toBe(201);
      const page = okPage(await myLog(user.accessToken, { type }));
      expect(page.items.map((i) => i.id)).toContain(res.body.id);
    });

    test('audit:* also grants it', async () => {
      const res = await ingest({ user_id: user.userId, type: 'user:login_failed' }, wildcardKey.key);
      expect(res.status).toBe(201);
      expect((await userRows()).items[0]).toMatchObject({ id: res.body.id, type: 'user:login_failed', scope: 'user', account_id: null });
    });

    test('omitted metadata defaults to an empty object; null ip and user agent stay null', async () => {
      const res = await ingest({ user_id: user.userId, type: 'user:mfa_disabled', ip_address: null, user_agent: null });
      expect(res.status).toBe(201);
      const row = (await userRows()).items.find((i) => i.id === res.body.id)!;
      expect(row).toMatchObject({ ip_address: null, user_agent: null, account_id: null });
      expect(row.metadata).toEqual({});
    });

    describe('refused principals', () => {
      const body = () => ({ user_id: user.userId, type: 'user:login' });

      test('a bare *:* system key: 403 "Missing permission: audit:ingest"', async () => {
        const before = (await userRows()).total;
        const res = await ingest(body(), starKey.key);
        expect(res.status).toBe(403);
        expect(res.body).toEqual(MISSING_AUDIT_INGEST);
        expect((await userRows()).total).toBe(before);
      });

      test('a system key without it: 403 "Missing permission: audit:ingest"', async () => {
        const res = await ingest(body(), readerKey.key);
        expect(res.status).toBe(403);
        expect(res.body).toEqual(MISSING_AUDIT_INGEST);
      });

      test('anonymous: 401 "Authentication required"', async () => {
        const res = await ingest(body(), null);
        expect(res.status).toBe(401);
        expect(res.body).toEqual(UNAUTHORIZED);
      });

      test.each(['user JWT', 'super-admin operator JWT', 'user API key', 'service key'])('%s: 403 FORBIDDEN', async (kind) => {
        const owner = kind === 'super-admin operator JWT' ? await operator() : await devLogin(t, newEmail('ingest-refused'));
        let token = owner.accessToken;
        if (kind === 'user API key') {
          token = (await t.app.authStore.mint({ kind: 'user_api_key', userId: owner.userId, accountId: owner.accountId, createdBy: owner.userId, permissions: [] })).token;
        } else if (kind === 'service key') {
          token = (await t.app.authStore.mint({ kind: 'service_key', accountId: owner.accountId, createdBy: owner.userId, permissions: ['audit-log:read'] })).token;
        }
        const before = (await userRows()).total;
        const res = await ingest(body(), token);
        expect(res.status).toBe(403);
        expect(res.body.error).toBe('FORBIDDEN');
        expect(typeof res.body.message).toBe('string');
        expect((await userRows()).total).toBe(before);
      });
    });

    describe('body validation: 400 VALIDATION_ERROR, nothing recorded', () => {
      const cases: [string, () => Record<string, unknown>][] = [
        ['type account:created', () => ({ user_id: user.userId, type: 'account:created' })],
        ['type system:x', () => ({ user_id: user.userId, type: 'system:x' })],
        ['type user:other', () => ({ user_id: user.userId, type: 'user:other' })],
        ['missing type', () => ({ user_id: user.userId })],
        ['missing user_id', () => ({ type: 'user:login' })],
        ['user_id not a UUID', () => ({ user_id: 'not-a-uuid', type: 'user:login' })],
        ['metadata as an array', () => ({ user_id: user.userId, type: 'user:login', metadata: [1, 2] })],
        ['metadata as a string', () => ({ user_id: user.userId, type: 'user:login', metadata: 'hello' })],
        ['metadata as null', () => ({ user_id: user.userId, type: 'user:login', metadata: null })],
      ];

      test.each(cases)('%s', async (_name, body) => {
        const before = (await userRows()).total;
        const res = await ingest(body());
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('VALIDATION_ERROR');
        expect(typeof res.body.message).toBe('string');
        expect(res.body.message!.length).toBeGreaterThan(0);
        expect((await userRows()).total).toBe(before);
      });
    });
  });
});
