/**
 * API keys, through real HTTP and GraphQL: the assignable-scope registry, personal and
 * service keys through every row of the key lifecycle, authentication by key (header only,
 * expiry, deletion and rotation, the owner's role cap, member-leaves), the audit events, operator
 * management, admin-provisioned system keys, and (on PostgreSQL + Redis) a key deleted through
 * node A refused by node B on the very next request.
 */
import { randomUUID } from 'node:crypto';
import { tokenHash } from '../../src/auth/credentials';
import { accountPermissions, userPermissions } from '../../src/auth/registry';
import { gql, services, startTestApp, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type ApiResult, type LoggedIn } from '../helpers/users';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const USR_KEY = /^lm_usr_[0-9a-f]{64}$/;
const SVC_KEY = /^lm_svc_[0-9a-f]{64}$/;
const SYS_KEY = /^lm_sys_[0-9a-f]{64}$/;

const AUTH_REQUIRED = { error: 'UNAUTHORIZED', message: 'Authentication required' };
const PAST_EXPIRY = { error: 'VALIDATION_ERROR', message: 'expires_at cannot be in the past' };
const LABEL_REQUIRED = { error: 'VALIDATION_ERROR', message: 'Label is required' };
const KEY_NOT_FOUND = { error: 'NOT_FOUND', message: 'API key not found' };
const SERVICE_NOT_FOUND = { error: 'NOT_FOUND', message: 'Service key not found' };
const invalidPermission = (p: string) => ({ error: 'VALIDATION_ERROR', message: `Invalid permission: ${p}` });
const cannotGrant = (p: string) => ({ error: 'FORBIDDEN', message: `Cannot grant permissions you do not hold: ${p}` });
const ownerCannotHold = (p: string) => ({ error: 'FORBIDDEN', message: `Cannot grant permissions the key owner does not hold: ${p}` });
const DENY_LIST = ['apikeys:create', 'apikeys:edit', 'tokens:create', 'account:delete'];

const PERSONAL_KEYS = ['account_id', 'created_at', 'expires_at', 'id', 'key', 'key_prefix', 'label', 'last_used_at', 'permissions', 'user_id'];
const SERVICE_KEYS = ['account_id', 'created_at', 'created_by', 'expires_at', 'id', 'key', 'key_prefix', 'label', 'last_used_at', 'permissions', 'updated_at'];

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function expectRestError(res: ApiResult, status: number, body: { error: string; message: string }): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body });
}

type GqlResult = Awaited<ReturnType<typeof gql>>;

function expectGqlError(res: GqlResult, body: { error: string; message: string }): void {
  expect(res.status).toBeLessThan(500);
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]).toMatchObject({ message: body.message, extensions: { code: body.error } });
}

const API_KEY_FIELDS = 'id userId accountId keyPrefix label permissions createdAt expiresAt lastUsedAt';
const SERVICE_KEY_FIELDS = 'id accountId createdBy keyPrefix label permissions createdAt updatedAt expiresAt lastUsedAt';
const ADMIN_KEY_FIELDS = 'id kind accountId userId createdBy keyPrefix label permissions createdAt expiresAt lastUsedAt';
const Q = {
  registry: 'query($kind: ApiKeyKind!) { apiKeyAssignablePermissions(kind: $kind) { key label category } }',
  userApiKeys: `query { userApiKeys { ${API_KEY_FIELDS} } }`,
  serviceKeys: `query { accountServiceKeys { ${SERVICE_KEY_FIELDS} } }`,
  createUserApiKey: `mutation($input: CreateUserApiKeyInput!) { createUserApiKey(input: $input) { key apiKey { ${API_KEY_FIELDS} } } }`,
  updateUserApiKey: `mutation($id: UUID!, $label: String!) { updateUserApiKey(id: $id, label: $label) { ${API_KEY_FIELDS} } }`,
  rotateUserApiKey: `mutation($id: UUID!) { rotateUserApiKey(id: $id) { key apiKey { ${API_KEY_FIELDS} } } }`,
  deleteUserApiKey: 'mutation($id: UUID!) { deleteUserApiKey(id: $id) { success id } }',
  createServiceKey: `mutation($input: CreateAccountServiceKeyInput!) { createAccountServiceKey(input: $input) { key serviceKey { ${SERVICE_KEY_FIELDS} } } }`,
  updateServiceKey: `mutation($id: UUID!, $label: String!) { updateAccountServiceKey(id: $id, label: $label) { ${SERVICE_KEY_FIELDS} } }`,
  rotateServiceKey: `mutation($id: UUID!) { rotateAccountServiceKey(id: $id) { key serviceKey { ${SERVICE_KEY_FIELDS} } } }`,
  deleteServiceKey: 'mutation($id: UUID!) { deleteAccountServiceKey(id: $id) { success id } }',
  adminAccountApiKeys: `query($id: UUID!) { adminAccountApiKeys(accountId: $id) { ${ADMIN_KEY_FIELDS} } }`,
  adminUserApiKeys: `query($id: UUID!) { adminUserApiKeys(userId: $id) { ${ADMIN_KEY_FIELDS} } }`,
  adminUpdateApiKey: `mutation($kind: AdminApiKeyKind!, $id: UUID!, $label: String!, $permissions: [String!]!) { adminUpdateApiKey(kind: $kind, id: $id, label: $label, permissions: $permissions) { ${ADMIN_KEY_FIELDS} } }`,
  adminRotateApiKey: `mutation($kind: AdminApiKeyKind!, $id: UUID!) { adminRotateApiKey(kind: $kind, id: $id) { key apiKey { ${ADMIN_KEY_FIELDS} } } }`,
  adminDeleteApiKey: 'mutation($kind: AdminApiKeyKind!, $id: UUID!) { adminDeleteApiKey(kind: $kind, id: $id) }',
  adminSystemKeyPermissions: 'query { adminSystemKeyPermissions { permission category } }',
} as const;

const future = (days = 30) => new Date(Date.now() + days * 86_400_000).toISOString();

describe('API keys', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  const me = (token: string) => api(t, 'GET', '/tokens/me', { token });

  async function createPersonal(user: LoggedIn, body: Record<string, unknown>): Promise<Record<string, any>> {
    const res = await api(t, 'POST', '/api-keys', { token: user.accessToken, body });
    if (res.status !== 201) throw new Error(`create personal key: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Record<string, any>;
  }

  async function createService(user: LoggedIn, body: Record<string, unknown>): Promise<Record<string, any>> {
    const res = await api(t, 'POST', '/service-keys', { token: user.accessToken, body });
    if (res.status !== 201) throw new Error(`create service key: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Record<string, any>;
  }

  async function operator(): Promise<LoggedIn> {
    const first = await devLogin(t);
    await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
    return devLogin(t, first.email);
  }

  async function auditTypes(accountId: string | null, type: string): Promise<Record<string, any>[]> {
    const q = t.app.db.knex('audit_log').where({ type });
    if (accountId) void q.where({ account_id: accountId });
    return (await q) as Record<string, any>[];
  }

  // ------------------------------------------------------------------ registry

  describe('the assignable-scope registry', () => {
    test('personal: the account permissions plus the ten ideas:*, minus the deny-list; service: account only; developer: extension-dev:*', async () => {
      const owner = await devLogin(t);
      const sizes: Record<string, number> = {};
      for (const kind of ['personal', 'service', 'developer']) {
        const res = await api(t, 'GET', '/api-keys/permissions', { token: owner.accessToken, query: { kind } });
        expect(res.status).toBe(200);
        const list = res.body.data as { key: string; label: string; category: string }[];
        sizes[kind] = list.length;
        for (const entry of list) {
          expect(Object.keys(entry).sort()).toEqual(['category', 'key', 'label']);
          expect(entry.category).toBe(entry.key.split(':')[0]);
          expect(entry.label.length).toBeGreaterThan(0);
          expect(DENY_LIST).not.toContain(entry.key);
          expect(entry.key).not.toContain('*');
        }
        const viaGql = await gql(t.url, Q.registry, { kind: kind.toUpperCase() }, bearer(owner.accessToken));
        expect(viaGql.body.data?.apiKeyAssignablePermissions).toEqual(list);
      }
      expect(accountPermissions).toHaveLength(124);
      expect(userPermissions).toHaveLength(10);
      expect(sizes).toEqual({ personal: 124 + 10 - 4, service: 124 - 4, developer: 7 });
      const personal = (await api(t, 'GET', '/api-keys/permissions', { token: owner.accessToken, query: { kind: 'personal' } })).body.data as { key: string }[];
      expect(personal.map((e) => e.key)).toEqual(expect.arrayContaining(['ideas:read', 'ideas:comment_vote', 'events:read', 'apikeys:read', 'apikeys:delete']));
      const developer = (await api(t, 'GET', '/api-keys/permissions', { token: owner.accessToken, query: { kind: 'developer' } })).body.data as { key: string }[];
      expect(developer.every((e) => e.key.startsWith('extension-dev:'))).toBe(true);
    });

    test('a missing or other kind gives 400 VALIDATION_ERROR', async () => {
      const owner = await devLogin(t);
      for (const query of [{}, { kind: 'system' }, { kind: 'PERSONALS' }] as Record<string, string>[]) {
        const res = await api(t, 'GET', '/api-keys/permissions', { token: owner.accessToken, query });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('VALIDATION_ERROR');
      }
      const res = await gql(t.url, Q.registry, { kind: 'SYSTEM' }, bearer(owner.accessToken));
      expect(res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    });

    test('anonymous gets 401; a member without apikeys:read gets 403', async () => {
      expectRestError(await api(t, 'GET', '/api-keys/permissions', { query: { kind: 'personal' } }), 401, AUTH_REQUIRED);
      const owner = await devLogin(t);
      const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
      const res = await api(t, 'GET', '/api-keys/permissions', { token: viewer.accessToken, query: { kind: 'personal' } });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('FORBIDDEN');
    });
  });

  // ------------------------------------------------------------------ personal keys

  describe('personal keys', () => {
    test('create: the full key once, the record fields, _links.self { href }, only the hash stored, user:api_key_created', async () => {
      const owner = await devLogin(t);
      const res = await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: '  CI  ', permissions: ['events:read', 'ideas:read', 'events:read'] } });
      expect(res.status).toBe(201);
      const data = res.body.data as Record<string, any>;
      expect(Object.keys(data).sort()).toEqual(PERSONAL_KEYS);
      expect(data).toMatchObject({ user_id: owner.userId, account_id: owner.accountId, label: 'CI', permissions: ['events:read', 'ideas:read'], expires_at: null, last_used_at: null });
      expect(data.id).toMatch(UUID);
      expect(data.created_at).toMatch(ISO);
      expect(data.key).toMatch(USR_KEY);
      expect(data.key).toHaveLength(71);
      expect(data.key_prefix).toBe(data.key.slice(0, 15));
      expect((res.body as any)._links).toEqual({ self: { href: `/v1/api-keys/${data.id}` } });

      const stored = await t.app.db.knex('credentials').where({ id: data.id }).first();
      expect(stored.token_hash).toBe(tokenHash(data.key));
      expect(JSON.stringify(stored)).not.toContain(data.key);

      const list = await api(t, 'GET', '/api-keys', { token: owner.accessToken });
      expect(list.status).toBe(200);
      const listed = (list.body.data as Record<string, any>[]).find((k) => k.id === data.id)!;
      expect(listed).not.toHaveProperty('key');
      expect(listed.key_prefix).toBe(data.key_prefix);

      const [audit] = await auditTypes(owner.accountId, 'user:api_key_created');
      expect(audit).toMatchObject({ scope: 'user', user_id: owner.userId, account_id: owner.accountId });
      expect(JSON.stringify(audit)).not.toContain(data.key);
    });

    test('the key authenticates as its owner in its account with exactly its scopes (header only)', async () => {
      const owner = await devLogin(t);
      const key = await createPersonal(owner, { label: 'scoped', permissions: ['events:read', 'members:read', 'ideas:read'] });
      const res = await me(key.key);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        context: 'user_api_key',
        user_id: owner.userId,
        account_id: owner.accountId,
        permissions: ['events:read', 'members:read'],
        admin_permissions: [],
        user_permissions: ['ideas:read'],
      });
      expect((await api(t, 'GET', '/account/members', { token: key.key })).status).toBe(200);
      expect((await api(t, 'GET', '/account/roles', { token: key.key })).status).toBe(403);
      // Never ?token=: a key in the query is not honoured.
      expectRestError(await api(t, 'GET', '/tokens/me', { query: { token: key.key } }), 401, AUTH_REQUIRED);
      // last_used_at is recorded (in the background, at most once a minute).
      await new Promise((resolve) => setTimeout(resolve, 200));
      const row = await t.app.db.knex('credentials').where({ id: key.id }).first();
      expect(row.last_used_at).not.toBeNull();
    });

    test('validation order: the registry first (400 Invalid permission), then the creator-subset rule (403)', async () => {
      const owner = await devLogin(t);
      const moderator = await joinAccount(t, owner, await devLogin(t), { roleName: `keys-${randomUUID().slice(0, 8)}`, permissions: ['apikeys:read', 'apikeys:create', 'events:read'] });
      for (const denied of DENY_LIST) {
        expectRestError(await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'x', permissions: ['events:read', denied] } }), 400, invalidPermission(denied));
      }
      expectRestError(await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'x', permissions: ['nope:read'] } }), 400, invalidPermission('nope:read'));
      expectRestError(await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'x', permissions: ['events:*'] } }), 400, invalidPermission('events:*'));
      // Unknown before beyond: the 400 wins even when a scope beyond the caller comes first.
      expectRestError(await api(t, 'POST', '/api-keys', { token: moderator.accessToken, body: { label: 'x', permissions: ['members:read', 'bogus:x'] } }), 400, invalidPermission('bogus:x'));
      expectRestError(await api(t, 'POST', '/api-keys', { token: moderator.accessToken, body: { label: 'x', permissions: ['events:read', 'members:read'] } }), 403, cannotGrant('members:read'));
      expectGqlError(await gql(t.url, Q.createUserApiKey, { input: { label: 'x', permissions: ['members:read'] } }, bearer(moderator.accessToken)), cannotGrant('members:read'));
      expectGqlError(await gql(t.url, Q.createUserApiKey, { input: { label: 'x', permissions: ['tokens:create'] } }, bearer(owner.accessToken)), invalidPermission('tokens:create'));
      expect((await api(t, 'POST', '/api-keys', { token: moderator.accessToken, body: { label: 'ok', permissions: ['events:read'] } })).status).toBe(201);
      // A service key gets only account permissions.
      expectRestError(await api(t, 'POST', '/service-keys', { token: owner.accessToken, body: { label: 'x', permissions: ['ideas:read'] } }), 400, invalidPermission('ideas:read'));
    });

    test('label required; expires_at in the past refused; a future expiry kept; an expired key gives 401', async () => {
      const owner = await devLogin(t);
      expectRestError(await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: '   ', permissions: [] } }), 400, LABEL_REQUIRED);
      const past = new Date(Date.now() - 60_000).toISOString();
      expectRestError(await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'x', permissions: [], expires_at: past } }), 400, PAST_EXPIRY);
      expectGqlError(await gql(t.url, Q.createUserApiKey, { input: { label: 'x', permissions: [], expiresAt: past } }, bearer(owner.accessToken)), PAST_EXPIRY);
      expectRestError(await api(t, 'POST', '/service-keys', { token: owner.accessToken, body: { label: 'x', permissions: [], expires_at: past } }), 400, PAST_EXPIRY);
      const expires = future();
      const key = await createPersonal(owner, { label: 'expiring', permissions: ['events:read'], expires_at: expires });
      expect(new Date(key.expires_at).getTime()).toBe(new Date(expires).getTime());
      expect((await me(key.key)).status).toBe(200);
      await t.app.db.knex('credentials').where({ id: key.id }).update({ expires_at: new Date(Date.now() - 1000) });
      await t.app.cache.del(`apikey:${tokenHash(key.key)}`);
      expectRestError(await me(key.key), 401, AUTH_REQUIRED);
    });

    test('rename (label only; scopes immutable for the owner); rotate in place; delete; each on REST and GraphQL', async () => {
      const owner = await devLogin(t);
      const key = await createPersonal(owner, { label: 'before', permissions: ['events:read'] });

      const renamed = await api(t, 'PATCH', `/api-keys/${key.id}`, { token: owner.accessToken, body: { label: 'after' } });
      expect(renamed.status).toBe(200);
      expect(renamed.body.data).toMatchObject({ id: key.id, label: 'after', permissions: ['events:read'] });
      expect(renamed.body.data).not.toHaveProperty('key');
      const invalidBody = await api(t, 'PATCH', `/api-keys/${key.id}`, { token: owner.accessToken, body: { label: 'x', permissions: ['members:read'] } });
      expect(invalidBody.status).toBe(400);
      expectRestError(await api(t, 'PATCH', `/api-keys/${key.id}`, { token: owner.accessToken, body: { label: '' } }), 400, LABEL_REQUIRED);
      const viaGql = await gql(t.url, Q.updateUserApiKey, { id: key.id, label: 'gql' }, bearer(owner.accessToken));
      expect(viaGql.body.data?.updateUserApiKey).toMatchObject({ id: key.id, label: 'gql' });

      const rotated = await api(t, 'POST', `/api-keys/${key.id}/rotate`, { token: owner.accessToken });
      expect(rotated.status).toBe(200);
      const next = rotated.body.data as Record<string, any>;
      expect(Object.keys(next).sort()).toEqual(PERSONAL_KEYS);
      expect(next).toMatchObject({ id: key.id, label: 'gql', permissions: ['events:read'], expires_at: null, created_at: key.created_at });
      expect(next.key).toMatch(USR_KEY);
      expect(next.key).not.toBe(key.key);
      expect((rotated.body as any)._links).toEqual({ self: { href: `/v1/api-keys/${key.id}` } });
      expectRestError(await me(key.key), 401, AUTH_REQUIRED);
      expect((await me(next.key)).status).toBe(200);
      const [audit] = await auditTypes(owner.accountId, 'user:api_key_rotated');
      expect(audit.metadata).toEqual({ key_id: key.id, old_key_prefix: key.key_prefix, new_key_prefix: next.key_prefix });

      const again = await gql(t.url, Q.rotateUserApiKey, { id: key.id }, bearer(owner.accessToken));
      const third = again.body.data?.rotateUserApiKey as { key: string; apiKey: { id: string } };
      expect(third.apiKey.id).toBe(key.id);
      expect(third.key).toMatch(USR_KEY);
      expectRestError(await me(next.key), 401, AUTH_REQUIRED);

      const deleted = await api(t, 'DELETE', `/api-keys/${key.id}`, { token: owner.accessToken });
      expect(deleted).toMatchObject({ status: 200, body: { success: true, id: key.id } });
      expectRestError(await me(third.key), 401, AUTH_REQUIRED);
      expect(await t.app.db.knex('credentials').where({ id: key.id }).first()).toBeUndefined();
      expectRestError(await api(t, 'DELETE', `/api-keys/${key.id}`, { token: owner.accessToken }), 404, KEY_NOT_FOUND);
      expectGqlError(await gql(t.url, Q.deleteUserApiKey, { id: key.id }, bearer(owner.accessToken)), KEY_NOT_FOUND);

      const other = await gql(t.url, Q.createUserApiKey, { input: { label: 'g', permissions: ['events:read'] } }, bearer(owner.accessToken));
      const created = other.body.data?.createUserApiKey as { key: string; apiKey: Record<string, unknown> };
      expect(created.key).toMatch(USR_KEY);
      expect(created.apiKey).toMatchObject({ userId: owner.userId, accountId: owner.accountId, label: 'g', permissions: ['events:read'], expiresAt: null, lastUsedAt: null });
      const listed = await gql(t.url, Q.userApiKeys, {}, bearer(owner.accessToken));
      expect(listed.body.data?.userApiKeys).toEqual([created.apiKey]);
      const gone = await gql(t.url, Q.deleteUserApiKey, { id: created.apiKey.id }, bearer(owner.accessToken));
      expect(gone.body.data?.deleteUserApiKey).toEqual({ success: true, id: created.apiKey.id });
      expectRestError(await me(created.key), 401, AUTH_REQUIRED);
    });

    test("another user's key, or one of another account, is 404 API key not found; the list holds only the caller's keys", async () => {
      const owner = await devLogin(t);
      const member = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
      const ownerKey = await createPersonal(owner, { label: 'mine', permissions: ['events:read'] });
      for (const [method, path, body] of [
        ['PATCH', `/api-keys/${ownerKey.id}`, { label: 'x' }],
        ['POST', `/api-keys/${ownerKey.id}/rotate`, undefined],
        ['DELETE', `/api-keys/${ownerKey.id}`, undefined],
      ] as const) {
        expectRestError(await api(t, method, path, { token: member.accessToken, body }), 404, KEY_NOT_FOUND);
      }
      expectRestError(await api(t, 'DELETE', `/api-keys/${randomUUID()}`, { token: owner.accessToken }), 404, KEY_NOT_FOUND);
      const list = await api(t, 'GET', '/api-keys', { token: member.accessToken });
      expect(list.body.data).toEqual([]);
      expect((await me(ownerKey.key)).status).toBe(200);
    });

    test("a key's scopes shrink with its owner's role and return with it", async () => {
      const owner = await devLogin(t);
      const roleName = `shrink-${randomUUID().slice(0, 8)}`;
      const member = await joinAccount(t, owner, await devLogin(t), { roleName, permissions: ['apikeys:create', 'events:read', 'members:read'] });
      const key = await createPersonal(member, { label: 'k', permissions: ['events:read', 'members:read'] });
      expect((await me(key.key)).body.data).toMatchObject({ permissions: ['events:read', 'members:read'] });
      const roles = (await api(t, 'GET', '/account/roles', { token: owner.accessToken })).body.data as { id: string; name: string }[];
      const role = roles.find((r) => r.name === roleName)!;
      expect((await api(t, 'PATCH', `/account/roles/${role.id}`, { token: owner.accessToken, body: { permissions: ['apikeys:create', 'events:read'] } })).status).toBe(200);
      expect((await me(key.key)).body.data).toMatchObject({ permissions: ['events:read'] });
      expect((await api(t, 'GET', '/account/members', { token: key.key })).status).toBe(403);
      await api(t, 'PATCH', `/account/roles/${role.id}`, { token: owner.accessToken, body: { permissions: ['apikeys:create', 'events:read', 'members:read'] } });
      expect((await me(key.key)).body.data).toMatchObject({ permissions: ['events:read', 'members:read'] });
    });

    test("a personal key's auth context is built once per key row and grant version, shared frozen, and rebuilt when either changes", async () => {
      const owner = await devLogin(t);
      const roleName = `memo-${randomUUID().slice(0, 8)}`;
      const member = await joinAccount(t, owner, await devLogin(t), { roleName, permissions: ['apikeys:create', 'apikeys:edit', 'events:read', 'members:read'] });
      const key = await createPersonal(member, { label: 'memo', permissions: ['events:read', 'members:read'] });
      const resolve = async () => (await t.app.credentials.resolve({ authorization: `Bearer ${key.key}`, transport: 'http' })).context;
      // The first answers may come from grants not kept yet; once kept, one object serves them all.
      await resolve();
      await resolve();
      const first = await resolve();
      expect(await resolve()).toBe(first);
      expect([...first.permissions].sort()).toEqual(['events:read', 'members:read']);
      expect(() => (first.permissions as Set<string>).add('members:edit')).toThrow(TypeError);
      expect(() => (first.permissions as Set<string>).delete('events:read')).toThrow(TypeError);
      expect(first.permissions.has('members:edit')).toBe(false);
      // The owner's role shrinks: a new context with the smaller grant.
      const roles = (await api(t, 'GET', '/account/roles', { token: owner.accessToken })).body.data as { id: string; name: string }[];
      const role = roles.find((r) => r.name === roleName)!;
      expect((await api(t, 'PATCH', `/account/roles/${role.id}`, { token: owner.accessToken, body: { permissions: ['apikeys:create', 'apikeys:edit', 'events:read'] } })).status).toBe(200);
      const shrunk = await resolve();
      expect(shrunk).not.toBe(first);
      expect([...shrunk.permissions]).toEqual(['events:read']);
      // The key's own row changes (its label): a new context too.
      expect((await api(t, 'PATCH', `/api-keys/${key.id}`, { token: member.accessToken, body: { label: 'renamed' } })).status).toBe(200);
      const renamed = await resolve();
      expect(renamed.label).toBe('renamed');
      expect([...renamed.permissions]).toEqual(['events:read']);
    });

    test('a personal key may not manage keys (deny-listed scopes) and a service key is refused on first-party operations', async () => {
      const owner = await devLogin(t);
      const personal = await createPersonal(owner, { label: 'p', permissions: ['apikeys:read', 'apikeys:delete'] });
      expect((await api(t, 'GET', '/api-keys', { token: personal.key })).status).toBe(200);
      expect((await api(t, 'POST', '/api-keys', { token: personal.key, body: { label: 'x', permissions: [] } })).status).toBe(403);
      const service = await createService(owner, { label: 's', permissions: ['apikeys:read', 'events:read'] });
      const res = await api(t, 'GET', '/api-keys', { token: service.key });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('FORBIDDEN');
      expect((await api(t, 'GET', '/service-keys', { token: service.key })).status).toBe(200);
    });
  });

  // ------------------------------------------------------------------ service keys

  describe('service keys', () => {
    test('create, list, rename, rotate, delete with their audit events, on REST and GraphQL', async () => {
      const owner = await devLogin(t);
      const res = await api(t, 'POST', '/service-keys', { token: owner.accessToken, body: { label: 'deploy', permissions: ['events:read', 'events:create'], expires_at: null } });
      expect(res.status).toBe(201);
      const key = res.body.data as Record<string, any>;
      expect(Object.keys(key).sort()).toEqual(SERVICE_KEYS);
      expect(key).toMatchObject({ account_id: owner.accountId, created_by: owner.userId, label: 'deploy', permissions: ['events:read', 'events:create'], expires_at: null });
      expect(key.key).toMatch(SVC_KEY);
      expect(key.updated_at).toMatch(ISO);
      expect((res.body as any)._links).toEqual({ self: { href: `/v1/service-keys/${key.id}` } });
      expect((await me(key.key)).body.data).toEqual({
        context: 'service_key',
        user_id: null,
        account_id: owner.accountId,
        permissions: ['events:create', 'events:read'],
        admin_permissions: [],
        user_permissions: [],
      });

      const renamed = await api(t, 'PATCH', `/service-keys/${key.id}`, { token: owner.accessToken, body: { label: 'deploy-2' } });
      expect(renamed.body.data).toMatchObject({ id: key.id, label: 'deploy-2', created_by: owner.userId });
      const rotated = await api(t, 'POST', `/service-keys/${key.id}/rotate`, { token: owner.accessToken });
      const next = rotated.body.data as Record<string, any>;
      expect(Object.keys(next).sort()).toEqual(SERVICE_KEYS);
      expect(next).toMatchObject({ id: key.id, label: 'deploy-2', permissions: key.permissions });
      expectRestError(await me(key.key), 401, AUTH_REQUIRED);
      expect((await me(next.key)).status).toBe(200);

      const list = await gql(t.url, Q.serviceKeys, {}, bearer(owner.accessToken));
      expect(list.body.data?.accountServiceKeys).toEqual([expect.objectContaining({ id: key.id, label: 'deploy-2', createdBy: owner.userId })]);

      const deleted = await api(t, 'DELETE', `/service-keys/${key.id}`, { token: owner.accessToken });
      expect(deleted).toMatchObject({ status: 200, body: { success: true, id: key.id } });
      expectRestError(await me(next.key), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'DELETE', `/service-keys/${key.id}`, { token: owner.accessToken }), 404, SERVICE_NOT_FOUND);

      const created = (await gql(t.url, Q.createServiceKey, { input: { label: 'g', permissions: ['events:read'] } }, bearer(owner.accessToken))).body.data?.createAccountServiceKey as {
        key: string;
        serviceKey: Record<string, any>;
      };
      expect(created.key).toMatch(SVC_KEY);
      expect((await gql(t.url, Q.updateServiceKey, { id: created.serviceKey.id, label: 'h' }, bearer(owner.accessToken))).body.data?.updateAccountServiceKey).toMatchObject({ label: 'h' });
      const rotatedGql = (await gql(t.url, Q.rotateServiceKey, { id: created.serviceKey.id }, bearer(owner.accessToken))).body.data?.rotateAccountServiceKey as { key: string };
      expect(rotatedGql.key).toMatch(SVC_KEY);
      expect((await gql(t.url, Q.deleteServiceKey, { id: created.serviceKey.id }, bearer(owner.accessToken))).body.data?.deleteAccountServiceKey).toEqual({ success: true, id: created.serviceKey.id });
      expectRestError(await me(rotatedGql.key), 401, AUTH_REQUIRED);

      const types = ['account:service_key_created', 'account:service_key_updated', 'account:service_key_rotated', 'account:service_key_revoked'];
      for (const type of types) {
        const rows = await auditTypes(owner.accountId, type);
        expect(rows.length).toBe(2);
        expect(rows[0]).toMatchObject({ scope: 'account', account_id: owner.accountId, actor_id: owner.userId });
      }
      const [rotation] = await auditTypes(owner.accountId, 'account:service_key_rotated');
      expect(rotation.metadata).toEqual({ key_id: expect.any(String), old_key_prefix: expect.stringMatching(/^lm_svc_/), new_key_prefix: expect.stringMatching(/^lm_svc_/) });
    });

    test("a key of another account is 404 Service key not found", async () => {
      const a = await devLogin(t);
      const b = await devLogin(t);
      const key = await createService(a, { label: 'a', permissions: ['events:read'] });
      expectRestError(await api(t, 'PATCH', `/service-keys/${key.id}`, { token: b.accessToken, body: { label: 'x' } }), 404, SERVICE_NOT_FOUND);
      expectRestError(await api(t, 'POST', `/service-keys/${key.id}/rotate`, { token: b.accessToken }), 404, SERVICE_NOT_FOUND);
      expectRestError(await api(t, 'DELETE', `/service-keys/${key.id}`, { token: b.accessToken }), 404, SERVICE_NOT_FOUND);
      expect((await me(key.key)).status).toBe(200);
    });
  });

  // ------------------------------------------------------------------ member leaves

  describe('a member leaving the account', () => {
    test('their personal keys are purged at once; service keys they created survive with created_by null; popout tokens keep working', async () => {
      const owner = await devLogin(t);
      const member = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
      const personal = await createPersonal(member, { label: 'p', permissions: ['events:read'] });
      const service = await createService(member, { label: 's', permissions: ['events:read'] });
      const popout = await api(t, 'POST', '/tokens', { token: member.accessToken, body: { label: 'pop', permissions: ['events:read'] } });
      expect(popout.status).toBe(201);
      expect((await me(personal.key)).status).toBe(200);

      expect((await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken })).status).toBe(200);

      expectRestError(await me(personal.key), 401, AUTH_REQUIRED);
      expect(await t.app.db.knex('credentials').where({ id: personal.id }).first()).toBeUndefined();
      expect((await me(service.key)).status).toBe(200);
      const services = (await api(t, 'GET', '/service-keys', { token: owner.accessToken })).body.data as Record<string, any>[];
      expect(services.find((k) => k.id === service.id)).toMatchObject({ created_by: null });
      const popouts = (await api(t, 'GET', '/tokens', { token: owner.accessToken })).body.data as Record<string, any>[];
      expect(popouts.find((p) => p.id === (popout.body.data as any).id)).toMatchObject({ created_by: null });
    });

    test('leaving voluntarily purges the same way; keys in other accounts are untouched', async () => {
      const owner = await devLogin(t);
      const member = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
      const inOwn = await createPersonal(await devLogin(t, member.email), { label: 'own', permissions: ['events:read'] });
      const there = await createPersonal(member, { label: 'there', permissions: ['events:read'] });
      expect((await api(t, 'POST', '/account/leave', { token: member.accessToken })).status).toBe(200);
      expectRestError(await me(there.key), 401, AUTH_REQUIRED);
      expect((await me(inOwn.key)).status).toBe(200);
    });
  });

  // ------------------------------------------------------------------ operators

  describe('operator management', () => {
    test('lists both kinds by account and personal keys by user; needs account-apikeys:read', async () => {
      const op = await operator();
      const owner = await devLogin(t);
      const personal = await createPersonal(owner, { label: 'p', permissions: ['events:read'] });
      const service = await createService(owner, { label: 's', permissions: ['events:read'] });
      const byAccount = await api(t, 'GET', `/admin/accounts/${owner.accountId}/api-keys`, { token: op.accessToken });
      expect(byAccount.status).toBe(200);
      const keys = byAccount.body.data as Record<string, any>[];
      expect(keys.map((k) => [k.id, k.kind]).sort()).toEqual([[personal.id, 'PERSONAL'], [service.id, 'SERVICE']].sort());
      expect(keys.find((k) => k.kind === 'PERSONAL')).toMatchObject({ user_id: owner.userId, created_by: null, account_id: owner.accountId });
      expect(keys.find((k) => k.kind === 'SERVICE')).toMatchObject({ user_id: null, created_by: owner.userId });
      for (const k of keys) expect(k).not.toHaveProperty('key');
      const byUser = await api(t, 'GET', `/admin/users/${owner.userId}/api-keys`, { token: op.accessToken });
      expect((byUser.body.data as { id: string }[]).map((k) => k.id)).toEqual([personal.id]);
      const viaGql = await gql(t.url, Q.adminAccountApiKeys, { id: owner.accountId }, bearer(op.accessToken));
      expect((viaGql.body.data?.adminAccountApiKeys as unknown[]).length).toBe(2);
      const userGql = await gql(t.url, Q.adminUserApiKeys, { id: owner.userId }, bearer(op.accessToken));
      expect(userGql.body.data?.adminUserApiKeys).toEqual([expect.objectContaining({ id: personal.id, kind: 'PERSONAL' })]);

      const res = await api(t, 'GET', `/admin/accounts/${owner.accountId}/api-keys`, { token: owner.accessToken });
      expect(res.status).toBe(403);
    });

    test('system admins (any admin role) implicitly hold every account-apikeys:*', async () => {
      const first = await devLogin(t);
      const roleId = randomUUID();
      await t.app.db.knex('admin_roles').insert({ id: roleId, name: `narrow-${roleId.slice(0, 8)}`, is_system: false, permissions: JSON.stringify(['admin:access', 'users:read']) });
      await t.app.db.knex('admin_role_assignments').insert({ user_id: first.userId, role_id: roleId });
      const admin = await devLogin(t, first.email);
      const owner = await devLogin(t);
      const service = await createService(owner, { label: 's', permissions: ['events:read'] });
      expect((await api(t, 'GET', `/admin/accounts/${owner.accountId}/api-keys`, { token: admin.accessToken })).status).toBe(200);
      expect((await api(t, 'POST', `/admin/api-keys/service/${service.id}/rotate`, { token: admin.accessToken })).status).toBe(200);
      const perms = (await me(admin.accessToken)).body.data as { admin_permissions: string[] };
      expect(perms.admin_permissions).toEqual(expect.arrayContaining(['account-apikeys:read', 'account-apikeys:edit', 'account-apikeys:rotate', 'account-apikeys:delete']));
      // A user without any admin role holds none of them.
      expect((await api(t, 'GET', `/admin/accounts/${owner.accountId}/api-keys`, { token: owner.accessToken })).status).toBe(403);
    });

    test('edit: label and scopes against the kind registry, personal capped at the owner, blank label refused; system:api_key_updated', async () => {
      const op = await operator();
      const owner = await devLogin(t);
      const member = await joinAccount(t, owner, await devLogin(t), { roleName: `op-${randomUUID().slice(0, 8)}`, permissions: ['apikeys:create', 'events:read', 'chat:read'] });
      const personal = await createPersonal(member, { label: 'p', permissions: ['events:read'] });
      const service = await createService(owner, { label: 's', permissions: ['events:read'] });

      expectRestError(await api(t, 'PATCH', `/admin/api-keys/personal/${personal.id}`, { token: op.accessToken, body: { label: 'x', permissions: ['apikeys:create'] } }), 400, invalidPermission('apikeys:create'));
      expectRestError(await api(t, 'PATCH', `/admin/api-keys/service/${service.id}`, { token: op.accessToken, body: { label: 'x', permissions: ['ideas:read'] } }), 400, invalidPermission('ideas:read'));
      expectRestError(await api(t, 'PATCH', `/admin/api-keys/personal/${personal.id}`, { token: op.accessToken, body: { label: 'x', permissions: ['members:edit'] } }), 403, ownerCannotHold('members:edit'));
      expectRestError(await api(t, 'PATCH', `/admin/api-keys/personal/${personal.id}`, { token: op.accessToken, body: { label: ' ', permissions: [] } }), 400, LABEL_REQUIRED);
      expectRestError(await api(t, 'PATCH', `/admin/api-keys/service/${personal.id}`, { token: op.accessToken, body: { label: 'x', permissions: [] } }), 404, KEY_NOT_FOUND);

      const edited = await api(t, 'PATCH', `/admin/api-keys/personal/${personal.id}`, { token: op.accessToken, body: { label: 'edited', permissions: ['events:read', 'chat:read', 'ideas:read'] } });
      expect(edited.status).toBe(200);
      expect(edited.body.data).toMatchObject({ id: personal.id, kind: 'PERSONAL', label: 'edited', permissions: ['events:read', 'chat:read', 'ideas:read'] });
      // The scope change reaches the very next request (the cached look-up was dropped).
      expect((await me(personal.key)).body.data).toMatchObject({ permissions: ['chat:read', 'events:read'], user_permissions: ['ideas:read'] });

      const viaGql = await gql(t.url, Q.adminUpdateApiKey, { kind: 'SERVICE', id: service.id, label: 'svc', permissions: ['members:read'] }, bearer(op.accessToken));
      expect(viaGql.body.data?.adminUpdateApiKey).toMatchObject({ id: service.id, kind: 'SERVICE', label: 'svc', permissions: ['members:read'] });
      expect((await me(service.key)).body.data).toMatchObject({ permissions: ['members:read'] });
      expectGqlError(await gql(t.url, Q.adminUpdateApiKey, { kind: 'SERVICE', id: service.id, label: '', permissions: [] }, bearer(op.accessToken)), LABEL_REQUIRED);

      const rows = await auditTypes(null, 'system:api_key_updated');
      expect(rows.filter((r) => r.metadata.key_id === personal.id || r.metadata.key_id === service.id)).toHaveLength(2);
      expect(rows.find((r) => r.metadata.key_id === personal.id)).toMatchObject({ scope: 'system', actor_id: op.userId, account_id: owner.accountId });
    });

    test('rotate: the new secret once ({ key, api_key } or { key, service_key }), the old refused; system:api_key_rotated', async () => {
      const op = await operator();
      const owner = await devLogin(t);
      const personal = await createPersonal(owner, { label: 'p', permissions: ['events:read'] });
      const service = await createService(owner, { label: 's', permissions: ['events:read'] });
      const p = await api(t, 'POST', `/admin/api-keys/personal/${personal.id}/rotate`, { token: op.accessToken });
      expect(p.status).toBe(200);
      expect(Object.keys(p.body.data as object).sort()).toEqual(['api_key', 'key']);
      expect((p.body.data as any).api_key).toMatchObject({ id: personal.id, kind: 'PERSONAL' });
      expectRestError(await me(personal.key), 401, AUTH_REQUIRED);
      expect((await me((p.body.data as any).key)).status).toBe(200);
      const s = await api(t, 'POST', `/admin/api-keys/service/${service.id}/rotate`, { token: op.accessToken });
      expect(Object.keys(s.body.data as object).sort()).toEqual(['key', 'service_key']);
      expect((s.body.data as any).key).toMatch(SVC_KEY);
      expectRestError(await me(service.key), 401, AUTH_REQUIRED);
      const g = await gql(t.url, Q.adminRotateApiKey, { kind: 'PERSONAL', id: personal.id }, bearer(op.accessToken));
      const rotated = g.body.data?.adminRotateApiKey as { key: string; apiKey: { id: string } };
      expect(rotated.key).toMatch(USR_KEY);
      expect(rotated.apiKey.id).toBe(personal.id);
      expectRestError(await me((p.body.data as any).key), 401, AUTH_REQUIRED);
      const rows = (await auditTypes(null, 'system:api_key_rotated')).filter((r) => r.metadata.key_id === personal.id);
      expect(rows).toHaveLength(2);
      expect(rows[0].metadata).toMatchObject({ key_id: personal.id, old_key_prefix: expect.stringMatching(/^lm_usr_/), new_key_prefix: expect.stringMatching(/^lm_usr_/) });
      expect(rows[0]).toMatchObject({ scope: 'system', actor_id: op.userId });
    });

    test('delete: hard, refused at once, idempotent not-found; system:api_key_revoked', async () => {
      const op = await operator();
      const owner = await devLogin(t);
      const personal = await createPersonal(owner, { label: 'p', permissions: ['events:read'] });
      const service = await createService(owner, { label: 's', permissions: ['events:read'] });
      expect(await api(t, 'DELETE', `/admin/api-keys/personal/${personal.id}`, { token: op.accessToken })).toMatchObject({ status: 200, body: { success: true } });
      expectRestError(await me(personal.key), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'DELETE', `/admin/api-keys/personal/${personal.id}`, { token: op.accessToken }), 404, KEY_NOT_FOUND);
      expectRestError(await api(t, 'DELETE', `/admin/api-keys/personal/${randomUUID()}`, { token: op.accessToken }), 404, KEY_NOT_FOUND);
      expectRestError(await api(t, 'DELETE', `/admin/api-keys/personal/${service.id}`, { token: op.accessToken }), 404, KEY_NOT_FOUND);
      expect((await gql(t.url, Q.adminDeleteApiKey, { kind: 'SERVICE', id: service.id }, bearer(op.accessToken))).body.data?.adminDeleteApiKey).toBe(true);
      expectRestError(await me(service.key), 401, AUTH_REQUIRED);
      expectGqlError(await gql(t.url, Q.adminDeleteApiKey, { kind: 'SERVICE', id: service.id }, bearer(op.accessToken)), KEY_NOT_FOUND);
      const rows = (await auditTypes(null, 'system:api_key_revoked')).filter((r) => [personal.id, service.id].includes(r.metadata.key_id));
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatchObject({ scope: 'system', actor_id: op.userId, account_id: owner.accountId });
      expect(await api(t, 'DELETE', `/admin/api-keys/personal/${personal.id}`, { token: owner.accessToken })).toMatchObject({ status: 403 });
    });

    test('a permission that is no permission name is refused by the spec before the key is looked up, worded as the registry refuses it', async () => {
      const op = await operator();
      const res = await api(t, 'PATCH', `/admin/api-keys/personal/${randomUUID()}`, { token: op.accessToken, body: { label: 'x', permissions: ['events:read', 'Events Read!'] } });
      expect(res).toMatchObject({ status: 400, body: { error: 'VALIDATION_ERROR', message: 'Invalid permission: Events Read!' } });
      expect(res.body.details).toBeUndefined();
    });

    test('GraphQL offers operators the kinds REST routes (PERSONAL, SERVICE), so DEVELOPER is refused by the schema on both protocols', async () => {
      const op = await operator();
      const kinds = await gql(t.url, '{ __type(name: "AdminApiKeyKind") { enumValues { name } } }', {}, bearer(op.accessToken));
      expect((kinds.body.data as { __type: { enumValues: { name: string }[] } }).__type.enumValues.map((v) => v.name)).toEqual(['PERSONAL', 'SERVICE']);
      const id = randomUUID();
      expect(await api(t, 'DELETE', `/admin/api-keys/developer/${id}`, { token: op.accessToken })).toMatchObject({ status: 400, body: { error: 'VALIDATION_ERROR' } });
      const viaGql = await gql(t.url, Q.adminDeleteApiKey, { kind: 'DEVELOPER', id }, bearer(op.accessToken));
      expect(viaGql.status).toBe(400);
      expect(viaGql.body.errors?.[0]?.message).toMatch(/AdminApiKeyKind/);
    });
  });

  // ------------------------------------------------------------------ system keys

  describe('system keys', () => {
    test('the assignable registry: admin, account and user scopes minus the deny-list, on REST and GraphQL', async () => {
      const op = await operator();
      const res = await api(t, 'GET', '/admin/system-key-permissions', { token: op.accessToken });
      expect(res.status).toBe(200);
      const list = res.body.data as { permission: string; category: string }[];
      const keys = list.map((e) => e.permission);
      expect(new Set(keys).size).toBe(keys.length);
      for (const denied of DENY_LIST) expect(keys).not.toContain(denied);
      expect(keys).toEqual(expect.arrayContaining(['admin:access', 'audit:ingest', 'account-apikeys:rotate', 'events:read', 'ideas:read']));
      const viaGql = await gql(t.url, Q.adminSystemKeyPermissions, {}, bearer(op.accessToken));
      expect(viaGql.body.data?.adminSystemKeyPermissions).toEqual(list);
    });

    test('provisioned keys: the full key once, only the hash stored, verified beside static ones, refused once deleted', async () => {
      const op = await operator();
      expectRestError(await api(t, 'POST', '/admin/system-keys', { token: op.accessToken, body: { label: 'bot', permissions: ['apikeys:create'] } }), 400, invalidPermission('apikeys:create'));
      expectRestError(await api(t, 'POST', '/admin/system-keys', { token: op.accessToken, body: { label: 'bot', permissions: ['*:*'] } }), 400, invalidPermission('*:*'));
      expectRestError(await api(t, 'POST', '/admin/system-keys', { token: op.accessToken, body: { label: '', permissions: [] } }), 400, LABEL_REQUIRED);
      const res = await api(t, 'POST', '/admin/system-keys', { token: op.accessToken, body: { label: 'bot', permissions: ['audit:ingest', 'events:*'] } });
      expect(res.status).toBe(201);
      const key = res.body.data as Record<string, any>;
      expect(key.key).toMatch(SYS_KEY);
      expect(key).toMatchObject({ label: 'bot', permissions: ['audit:ingest', 'events:*'], created_by: op.userId });
      expect((res.body as any)._links).toEqual({ self: { href: `/v1/admin/system-keys/${key.id}` } });
      const stored = await t.app.db.knex('credentials').where({ id: key.id }).first();
      expect(stored.token_hash).toBe(tokenHash(key.key));
      expect(await me(key.key)).toMatchObject({ status: 200, body: { data: { context: 'system_key', permissions: ['audit:ingest', 'events:*'] } } });
      const listed = await api(t, 'GET', '/admin/system-keys', { token: op.accessToken });
      expect((listed.body.data as { id: string }[]).map((k) => k.id)).toContain(key.id);
      expect(await api(t, 'DELETE', `/admin/system-keys/${key.id}`, { token: op.accessToken })).toMatchObject({ status: 200, body: { success: true } });
      expectRestError(await me(key.key), 401, AUTH_REQUIRED);
      expectRestError(await api(t, 'DELETE', `/admin/system-keys/${key.id}`, { token: op.accessToken }), 404, { error: 'NOT_FOUND', message: 'System key not found' });
      // Audited like the other key operations: who, which key (prefix, label, scopes), never the key itself.
      const created = await t.app.db.knex('audit_log').where({ type: 'system:system_key_created' }).whereRaw("metadata->>'key_id' = ?", [key.id]);
      expect(created).toHaveLength(1);
      expect(created[0]).toMatchObject({ scope: 'system', actor_id: op.userId });
      expect(created[0].metadata).toEqual({ key_id: key.id, key_prefix: expect.any(String), label: 'bot', permissions: ['audit:ingest', 'events:*'] });
      const revoked = await t.app.db.knex('audit_log').where({ type: 'system:system_key_revoked' }).whereRaw("metadata->>'key_id' = ?", [key.id]);
      expect(revoked).toHaveLength(1);
      expect(revoked[0]).toMatchObject({ scope: 'system', actor_id: op.userId });
      expect(JSON.stringify([...created, ...revoked])).not.toContain(key.key);
    });
  });
});

describe('static system keys and rate limits', () => {
  const sys = systemKey('static', ['events:*', '*:*']);
  const t = useTestApp({ auth: { system_keys: [sys.config] } });

  test('*:* grants only its literal string; no rate-limit headers for system keys, 1200 for API keys', async () => {
    const res = await api(t, 'GET', '/tokens/me', { token: sys.key });
    expect(res.status).toBe(200);
    const ingest = await api(t, 'POST', '/internal/audit-ingest', { token: sys.key, body: { user_id: randomUUID(), type: 'user:login' } });
    expect(ingest.status).toBe(403);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    const owner = await devLogin(t);
    const created = await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'rl', permissions: ['events:read'] } });
    const key = (created.body.data as { key: string }).key;
    const keyed = await api(t, 'GET', '/tokens/me', { token: key });
    expect(keyed.headers.get('x-ratelimit-limit')).toBe('1200');
  });
});

(services.postgres && services.redis ? describe : describe.skip)('two nodes on one PostgreSQL and Redis', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test('a key deleted (or rotated) through node A is refused by node B on the very next request', async () => {
    const b = await startTestApp({ database_url: t.app.config.database_url, redis_prefix: t.app.config.redis_prefix, rate_limits: { enabled: false } });
    try {
      const owner = await devLogin(t);
      const created = await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'two-node', permissions: ['events:read'] } });
      const key = created.body.data as { id: string; key: string };
      // Node B verifies (and caches) the key. A cache write that times out (250 ms, a loaded
      // machine) is dropped by design and made again by the next look-up, so B is asked until it holds it.
      let cachedOnB: string | null = null;
      for (let attempt = 0; attempt < 5 && cachedOnB === null; attempt += 1) {
        expect((await api(b, 'GET', '/tokens/me', { token: key.key })).status).toBe(200);
        cachedOnB = await b.app.cache.get(`apikey:${tokenHash(key.key)}`);
      }
      expect(cachedOnB).not.toBeNull();

      const rotated = await api(t, 'POST', `/api-keys/${key.id}/rotate`, { token: owner.accessToken });
      const next = (rotated.body.data as { key: string }).key;
      expectRestError(await api(b, 'GET', '/tokens/me', { token: key.key }), 401, AUTH_REQUIRED);
      expect((await api(b, 'GET', '/tokens/me', { token: next })).status).toBe(200);

      expect((await api(t, 'DELETE', `/api-keys/${key.id}`, { token: owner.accessToken })).status).toBe(200);
      expectRestError(await api(b, 'GET', '/tokens/me', { token: next }), 401, AUTH_REQUIRED);
    } finally {
      await b.stop();
    }
  });
});
