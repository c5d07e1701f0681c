/**
 * Operators over users and accounts: search (REST and GraphQL twins), detail, suspension (no
 * sign-in, no keys, open sockets close) and restore, the per-user overrides, user roles, the
 * account's plan, members, usage and overrides, gates and audit rows.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, within } from '../helpers/ws';

const operatorEmail = `operator-${randomUUID()}@example.test`;

describe('operators', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] } });
  const sockets = closeSocketsAfterEach();
  let ops: LoggedIn;
  const asOps = () => ({ authorization: `Bearer ${ops.accessToken}` });

  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
  });

  async function auditTypes(type: string): Promise<Record<string, any>[]> {
    const res = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken, query: { type } });
    expect(res.status).toBe(200);
    return res.body.items as Record<string, any>[];
  }

  test('an operator finds a user by e-mail, id or name on both protocols, paged', async () => {
    const tag = randomUUID().slice(0, 8);
    const user = await devLogin(t, `Find-${tag}@example.test`, `Findable ${tag}`);
    const byEmail = await api(t, 'GET', '/admin/users', { token: ops.accessToken, query: { q: `find-${tag}@EXAMPLE` } });
    expect(byEmail.status).toBe(200);
    expect(byEmail.body.data).toEqual([
      { id: user.userId, email: `find-${tag}@example.test`, display_name: `Findable ${tag}`, avatar_url: null, owned_account_count: 1, suspended_at: null, suspended_reason: null, created_at: expect.any(String) },
    ]);
    expect(byEmail.body._meta).toEqual({ total: 1, page: 1, limit: 25, pages: 1 });
    const byId = await api(t, 'GET', '/admin/users', { token: ops.accessToken, query: { q: user.userId } });
    expect(byId.body.data.map((u: { id: string }) => u.id)).toEqual([user.userId]);
    const byName = await gql(t.url, 'query($q: String) { adminUsers(q: $q, limit: 5) { items { id email displayName } total page limit pages } }', { q: `findable ${tag}` }, asOps());
    expect(byName.body.data!.adminUsers).toEqual({ items: [{ id: user.userId, email: `find-${tag}@example.test`, displayName: `Findable ${tag}` }], total: 1, page: 1, limit: 5, pages: 1 });
    // Wildcards are literal.
    const wild = await api(t, 'GET', '/admin/users', { token: ops.accessToken, query: { q: '%' } });
    expect(wild.body.data).toEqual([]);
    const all = await api(t, 'GET', '/admin/users', { token: ops.accessToken, query: { limit: '1' } });
    expect(all.body._meta.total).toBeGreaterThanOrEqual(2);
    expect(all.body.data).toHaveLength(1);

    const detail = await api(t, 'GET', `/admin/users/${user.userId}`, { token: ops.accessToken });
    expect(detail.body.data).toMatchObject({ id: user.userId, max_accounts: 3, max_accounts_override: null, developer_override: false, is_developer: false, user_roles: ['Member'], admin_roles: [] });
    expect(detail.body.data.accounts).toEqual([{ account_id: user.accountId, name: `Findable ${tag}'s account`, role: 'owner', is_owner: true, suspended_at: null }]);
    const missing = await api(t, 'GET', `/admin/users/${randomUUID()}`, { token: ops.accessToken });
    expect([missing.status, missing.body]).toEqual([404, { error: 'NOT_FOUND', message: 'User not found' }]);
    const gMissing = await gql(t.url, 'query($id: UUID!) { adminUser(id: $id) { id } }', { id: randomUUID() }, asOps());
    expect(gMissing.body.errors?.[0]).toMatchObject({ message: 'User not found', extensions: { code: 'NOT_FOUND' } });
  });

  test('a user without the admin permission is refused on both protocols', async () => {
    const user = await devLogin(t);
    const res = await api(t, 'GET', '/admin/users', { token: user.accessToken });
    expect([res.status, res.body]).toEqual([403, { error: 'FORBIDDEN', message: 'Missing permission: users:read' }]);
    const g = await gql(t.url, '{ adminAccounts { total } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.errors?.[0]).toMatchObject({ message: 'Missing permission: accounts:read', extensions: { code: 'FORBIDDEN' } });
    const s = await api(t, 'POST', `/admin/users/${user.userId}/suspend`, { token: user.accessToken, body: {} });
    expect([s.status, s.body]).toEqual([403, { error: 'FORBIDDEN', message: 'Missing permission: users:edit' }]);
  });

  test('a suspended user cannot sign in or use keys, and their open socket closes; restore lets them back', async () => {
    const user = await devLogin(t);
    const key = await api(t, 'POST', '/api-keys', { token: user.accessToken, body: { label: 'k', permissions: ['account:read'] } });
    expect(key.status).toBe(201);
    const personal = key.body.data.key as string;
    expect((await api(t, 'GET', '/account', { token: personal })).status).toBe(200);

    const socket = await connect(t.wsUrl, { headers: { authorization: `Bearer ${user.accessToken}` } });
    sockets.push(socket);

    const found = await api(t, 'GET', '/admin/users', { token: ops.accessToken, query: { q: user.email } });
    expect(found.body.data[0].id).toBe(user.userId);
    const res = await api(t, 'POST', `/admin/users/${user.userId}/suspend`, { token: ops.accessToken, body: { reason: ' spam ' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: user.userId, suspended_at: expect.any(String), suspended_reason: 'spam' });

    expect(await socket.nextMatching((m) => m.type === 'error', 5000)).toMatchObject({ type: 'error', code: 'TOKEN_REVOKED' });
    expect((await within(socket.closed, 5000, 'the socket to close')).code).toBe(4002);

    expect((await api(t, 'GET', '/me', { token: user.accessToken })).status).toBe(401);
    expect((await api(t, 'GET', '/account', { token: personal })).status).toBe(401);
    const login = await api(t, 'POST', '/auth/dev/login', { body: { email: user.email, display_name: 'x' } });
    expect([login.status, login.body]).toEqual([403, { error: 'FORBIDDEN', message: 'User is suspended' }]);
    const refresh = await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } });
    expect(refresh.status).toBe(401);

    const again = await api(t, 'POST', `/admin/users/${user.userId}/suspend`, { token: ops.accessToken, body: {} });
    expect([again.status, again.body]).toEqual([409, { error: 'CONFLICT', message: 'User is already suspended' }]);
    const self = await api(t, 'POST', `/admin/users/${ops.userId}/suspend`, { token: ops.accessToken });
    expect([self.status, self.body]).toEqual([409, { error: 'CONFLICT', message: 'You cannot suspend yourself' }]);

    const restored = await gql(t.url, 'mutation($id: UUID!) { adminRestoreUser(id: $id) { id suspendedAt suspendedReason } }', { id: user.userId }, asOps());
    expect(restored.body.data!.adminRestoreUser).toEqual({ id: user.userId, suspendedAt: null, suspendedReason: null });
    expect((await api(t, 'GET', '/account', { token: personal })).status).toBe(200);
    expect((await devLogin(t, user.email)).userId).toBe(user.userId);
    const notSuspended = await gql(t.url, 'mutation($id: UUID!) { adminRestoreUser(id: $id) { id } }', { id: user.userId }, asOps());
    expect(notSuspended.body.errors?.[0]).toMatchObject({ message: 'User is not suspended', extensions: { code: 'CONFLICT' } });

    const suspended = await auditTypes('system:user_suspended');
    expect(suspended.find((i) => i.user_id === user.userId)).toMatchObject({ actor_id: ops.userId, metadata: { reason: 'spam' } });
    expect((await auditTypes('system:user_restored')).some((i) => i.user_id === user.userId)).toBe(true);
  });

  test('the GraphQL suspension closes the socket too', async () => {
    const user = await devLogin(t);
    const socket = await connect(t.wsUrl, { headers: { authorization: `Bearer ${user.accessToken}` } });
    sockets.push(socket);
    const g = await gql(t.url, 'mutation($id: UUID!) { adminSuspendUser(id: $id, reason: "abuse") { id suspendedReason } }', { id: user.userId }, asOps());
    expect(g.body.data!.adminSuspendUser).toEqual({ id: user.userId, suspendedReason: 'abuse' });
    expect(await socket.nextMatching((m) => m.type === 'error', 5000)).toMatchObject({ type: 'error', code: 'TOKEN_REVOKED' });
  });

  test('overrides: max_accounts_override and the developer override, REST and GraphQL', async () => {
    const user = await devLogin(t);
    const res = await api(t, 'PATCH', `/admin/users/${user.userId}/overrides`, { token: ops.accessToken, body: { max_accounts_override: 7, developer_override: true } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ max_accounts: 7, max_accounts_override: 7, developer_override: true, is_developer: true });
    const me = await api(t, 'GET', '/me', { token: user.accessToken });
    expect(me.body.data).toMatchObject({ max_accounts: 7, is_developer: true });
    const bad = await api(t, 'PATCH', `/admin/users/${user.userId}/overrides`, { token: ops.accessToken, body: { max_accounts_override: -1 } });
    expect(bad.status).toBe(400);
    const g = await gql(t.url, 'mutation($id: UUID!, $i: AdminUserOverridesInput!) { adminUpdateUserOverrides(id: $id, input: $i) { maxAccounts maxAccountsOverride developerOverride } }', { id: user.userId, i: { maxAccountsOverride: null } }, asOps());
    expect(g.body.data!.adminUpdateUserOverrides).toEqual({ maxAccounts: 3, maxAccountsOverride: null, developerOverride: true });
    const gBad = await gql(t.url, 'mutation($id: UUID!, $i: AdminUserOverridesInput!) { adminUpdateUserOverrides(id: $id, input: $i) { maxAccounts } }', { id: user.userId, i: { maxAccountsOverride: 5000 } }, asOps());
    expect(gBad.body.errors?.[0]).toMatchObject({ extensions: { code: 'VALIDATION_ERROR' } });
    const missing = await api(t, 'PATCH', `/admin/users/${randomUUID()}/overrides`, { token: ops.accessToken, body: { developer_override: false } });
    expect([missing.status, missing.body]).toEqual([404, { error: 'NOT_FOUND', message: 'User not found' }]);
    expect((await auditTypes('system:user_overrides_updated')).filter((i) => i.user_id === user.userId)).toHaveLength(2);
  });

  test('user roles: the list, and Restricted replacing Member takes the ideas permissions away', async () => {
    const list = await api(t, 'GET', '/admin/user-roles', { token: ops.accessToken });
    expect(list.status).toBe(200);
    const roles = list.body.data as { id: string; name: string; assigned_to_every_user: boolean }[];
    expect(roles.map((r) => r.name)).toEqual(['Member', 'Moderator', 'Restricted']);
    const byName = (n: string) => roles.find((r) => r.name === n)!.id;
    const g = await gql(t.url, '{ adminUserRoles { name assignedToEveryUser } }', {}, asOps());
    expect(g.body.data!.adminUserRoles).toEqual(roles.map((r) => ({ name: r.name, assignedToEveryUser: r.assigned_to_every_user })));

    const user = await devLogin(t);
    const set = await api(t, 'PUT', `/admin/users/${user.userId}/user-roles`, { token: ops.accessToken, body: { role_ids: [byName('Restricted')] } });
    expect(set.status).toBe(200);
    expect(set.body.data.map((r: { name: string }) => r.name)).toEqual(['Restricted']);
    // The user's next token carries what Restricted grants.
    const again = await devLogin(t, user.email);
    const perms = await api(t, 'GET', '/tokens/me', { token: again.accessToken });
    expect(JSON.stringify(perms.body)).toContain('ideas:read');
    expect(JSON.stringify(perms.body)).not.toContain('ideas:create');

    const gSet = await gql(t.url, 'mutation($id: UUID!, $r: [UUID!]!) { adminSetUserRoles(id: $id, roleIds: $r) { name } }', { id: user.userId, r: [byName('Member'), byName('Moderator')] }, asOps());
    expect(gSet.body.data!.adminSetUserRoles).toEqual([{ name: 'Member' }, { name: 'Moderator' }]);
    const unknown = await api(t, 'PUT', `/admin/users/${user.userId}/user-roles`, { token: ops.accessToken, body: { role_ids: [randomUUID()] } });
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'NOT_FOUND', message: 'User role not found' }]);
    const row = (await auditTypes('system:user_roles_updated')).find((i) => i.user_id === user.userId && i.metadata.added_role_ids.includes(byName('Moderator')));
    expect(row?.metadata).toEqual({ added_role_ids: [byName('Member'), byName('Moderator')], removed_role_ids: [byName('Restricted')] });
  });

  test('accounts: search, detail with plan, members and usage, overrides', async () => {
    const tag = randomUUID().slice(0, 8);
    const owner = await devLogin(t, `acct-${tag}@example.test`, `Acct ${tag}`);
    const byOwner = await api(t, 'GET', '/admin/accounts', { token: ops.accessToken, query: { q: `acct-${tag}@` } });
    expect(byOwner.body.data).toEqual([
      { id: owner.accountId, name: `Acct ${tag}'s account`, owner_id: owner.userId, owner_email: `acct-${tag}@example.test`, owner_display_name: `Acct ${tag}`, plan: 'free', member_count: 1, suspended_at: null, suspended_reason: null, created_at: expect.any(String) },
    ]);
    const g = await gql(t.url, 'query($q: String) { adminAccounts(q: $q) { items { id name plan } total } }', { q: owner.accountId }, asOps());
    expect(g.body.data!.adminAccounts).toEqual({ items: [{ id: owner.accountId, name: `Acct ${tag}'s account`, plan: 'free' }], total: 1 });

    const detail = await api(t, 'GET', `/admin/accounts/${owner.accountId}`, { token: ops.accessToken });
    expect(detail.status).toBe(200);
    expect(detail.body.data.plan_detail).toMatchObject({ slug: 'free', name: 'Free' });
    expect(detail.body.data.members).toEqual([expect.objectContaining({ user_id: owner.userId, role: 'owner', is_owner: true })]);
    expect(detail.body.data.usage.map((u: { quota: string }) => u.quota)).toEqual(['overlays', 'widgets', 'integrations', 'storage_bytes', 'sounds']);
    expect(detail.body.data.usage[0]).toEqual({ quota: 'overlays', used: 0, limit: expect.any(Number) });
    const gDetail = await gql(t.url, 'query($id: UUID!) { adminAccount(id: $id) { planDetail { slug } members { userId isOwner } usage { quota used limit } } }', { id: owner.accountId }, asOps());
    expect(gDetail.body.data!.adminAccount).toEqual({
      planDetail: { slug: 'free' },
      members: [{ userId: owner.userId, isOwner: true }],
      usage: detail.body.data.usage,
    });

    await api(t, 'PUT', `/admin/accounts/${owner.accountId}/feature-overrides/feature:events`, { token: ops.accessToken, body: { enabled: false } });
    const overrides = await api(t, 'GET', `/admin/accounts/${owner.accountId}/overrides`, { token: ops.accessToken });
    expect(overrides.body.data).toEqual({ account_id: owner.accountId, feature_overrides: [{ feature_key: 'feature:events', enabled: false }], chat_retention_days: null, owner_max_accounts_override: null, owner_developer_override: false });
    const gOverrides = await gql(t.url, 'query($id: UUID!) { adminAccountOverrides(id: $id) { featureOverrides { featureKey enabled } ownerDeveloperOverride } }', { id: owner.accountId }, asOps());
    expect(gOverrides.body.data!.adminAccountOverrides).toEqual({ featureOverrides: [{ featureKey: 'feature:events', enabled: false }], ownerDeveloperOverride: false });

    const missing = await api(t, 'GET', `/admin/accounts/${randomUUID()}`, { token: ops.accessToken });
    expect([missing.status, missing.body]).toEqual([404, { error: 'NOT_FOUND', message: 'Account not found' }]);
  });

  test('a suspended account: its service key and tokens stop, members lose it, sockets close; restore brings them back', async () => {
    const owner = await devLogin(t);
    const service = await api(t, 'POST', '/service-keys', { token: owner.accessToken, body: { label: 's', permissions: ['account:read'] } });
    expect(service.status).toBe(201);
    const serviceKey = service.body.data.key as string;
    const overlayId = randomUUID();
    const { token: overlayToken } = await t.app.authStore.mint({ kind: 'overlay', accountId: owner.accountId, subjectId: overlayId });
    const overlaySocket = await connect(`${t.wsUrl}?token=${encodeURIComponent(overlayToken)}`);
    const ownerSocket = await connect(t.wsUrl, { headers: { authorization: `Bearer ${owner.accessToken}` } });
    sockets.push(overlaySocket, ownerSocket);

    const res = await api(t, 'POST', `/admin/accounts/${owner.accountId}/suspend`, { token: ops.accessToken, body: { reason: 'chargeback' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: owner.accountId, suspended_reason: 'chargeback', suspended_at: expect.any(String) });

    expect(await overlaySocket.nextMatching((m) => m.type === 'error', 5000)).toMatchObject({ code: 'TOKEN_REVOKED' });
    expect(await ownerSocket.nextMatching((m) => m.type === 'error', 5000)).toMatchObject({ code: 'TOKEN_REVOKED' });
    const refused = await api(t, 'GET', '/account', { token: serviceKey });
    expect(refused.status).toBe(401);
    await expect(connect(`${t.wsUrl}?token=${encodeURIComponent(overlayToken)}`)).rejects.toMatchObject({ status: 401, body: expect.stringContaining('Account suspended') });
    const member = await api(t, 'GET', '/account', { token: owner.accessToken });
    expect(member.status).not.toBe(200);
    const again = await gql(t.url, 'mutation($id: UUID!) { adminSuspendAccount(id: $id) { id } }', { id: owner.accountId }, asOps());
    expect(again.body.errors?.[0]).toMatchObject({ message: 'Account is already suspended', extensions: { code: 'CONFLICT' } });

    const restored = await gql(t.url, 'mutation($id: UUID!) { adminRestoreAccount(id: $id) { id suspendedAt } }', { id: owner.accountId }, asOps());
    expect(restored.body.data!.adminRestoreAccount).toEqual({ id: owner.accountId, suspendedAt: null });
    expect((await api(t, 'GET', '/account', { token: serviceKey })).status).toBe(200);
    expect((await api(t, 'GET', '/account', { token: owner.accessToken })).status).toBe(200);
    const notSuspended = await api(t, 'POST', `/admin/accounts/${owner.accountId}/restore`, { token: ops.accessToken });
    expect([notSuspended.status, notSuspended.body]).toEqual([409, { error: 'CONFLICT', message: 'Account is not suspended' }]);
    expect((await auditTypes('system:account_suspended')).find((i) => i.account_id === owner.accountId)).toMatchObject({ actor_id: ops.userId, metadata: { reason: 'chargeback' } });
    expect((await auditTypes('system:account_restored')).some((i) => i.account_id === owner.accountId)).toBe(true);
  });
});
