/**
 * Operators delete a user (DELETE /v1/admin/users/{id}, GraphQL adminDeleteUser; admin
 * `users:delete`): the user's personal data goes in one transaction (their row, sessions, keys,
 * memberships, the accounts they own alone, mail kept for them, client addresses of audit rows),
 * every credential is refused at once and open sockets close; authorship stays without an author;
 * the audit row names them by id only. The refusals (oneself, a system admin, an owner of an
 * account with other members, an unknown id, no permission) answer the same on both protocols.
 */
import { randomUUID } from 'node:crypto';
import { tokenHash } from '../../src/auth/credentials';
import { gql, services, startTestApp, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, within, type TestSocket } from '../helpers/ws';

type Json = Record<string, any>;
const operatorEmail = `operator-${randomUUID()}@example.test`;
const DELETE_USER = 'mutation($id: UUID!) { adminDeleteUser(id: $id) }';

describe('operators delete users', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] } });
  const sockets = closeSocketsAfterEach();
  let ops: LoggedIn;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
  });

  /** A signed-up user with what stands on them: a personal API key and an open socket on their session. */
  async function userWithCredentials(name: string): Promise<{ user: LoggedIn; key: string; socket: TestSocket }> {
    const user = await devLogin(t, `${name}-${randomUUID()}@example.test`, `${name} ${randomUUID().slice(0, 6)}`);
    const created = await api(t, 'POST', '/api-keys', { token: user.accessToken, body: { label: 'k', permissions: ['account:read'] } });
    expect(created.status).toBe(201);
    const key = created.body.data.key as string;
    expect((await api(t, 'GET', '/account', { token: key })).status).toBe(200);
    const socket = await connect(t.wsUrl, { headers: bearer(user.accessToken) });
    sockets.push(socket);
    return { user, key, socket };
  }

  /** Everything that stood on the user is refused, and operators no longer find them. */
  async function expectGone(user: LoggedIn, key: string, socket: TestSocket): Promise<void> {
    expect(await socket.nextMatching((m) => m.type === 'error', 5000)).toMatchObject({ type: 'error', code: 'TOKEN_REVOKED' });
    expect((await within(socket.closed, 5000, 'the socket to close')).code).toBe(4002);
    expect((await api(t, 'GET', '/me', { token: user.accessToken })).status).toBe(401);
    expect((await api(t, 'GET', '/account', { token: key })).status).toBe(401);
    expect((await gql(t.url, '{ me { id } }', {}, bearer(key))).body.errors?.[0]).toMatchObject({ extensions: { code: 'UNAUTHORIZED' } });
    expect((await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } })).status).toBe(401);
    const search = await api(t, 'GET', '/admin/users', { token: ops.accessToken, query: { q: user.email } });
    expect([search.status, search.body.data]).toEqual([200, []]);
    const byId = await gql(t.url, 'query($q: String) { adminUsers(q: $q) { total } }', { q: user.userId }, bearer(ops.accessToken));
    expect(byId.body.data).toEqual({ adminUsers: { total: 0 } });
    const detail = await api(t, 'GET', `/admin/users/${user.userId}`, { token: ops.accessToken });
    expect([detail.status, detail.body]).toEqual([404, { error: 'NOT_FOUND', message: 'User not found' }]);
  }

  async function deletedRow(userId: string): Promise<Json> {
    const log = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken, query: { type: 'system:user_deleted' } });
    expect(log.status).toBe(200);
    const rows = (log.body.items as Json[]).filter((i) => i.user_id === userId);
    expect(rows).toHaveLength(1);
    return rows[0]!;
  }

  test('REST: the user, their session, key, socket, account, mail and audit addresses go; authorship stays; a repeat is 404', async () => {
    const { user, key, socket } = await userWithCredentials('leaver');
    const idea = await api(t, 'POST', '/ideas', { token: user.accessToken, body: { title: `Idea ${randomUUID().slice(0, 8)}`, description: 'Kept after its author leaves.' } });
    expect(idea.status).toBe(201);
    // Mail kept for them: one to their user, one to their address only.
    const knex = t.app.db.knex;
    await t.app.modules.mail.queueForUser(user.userId, 'team_invite', { accountName: 'A', inviterName: 'B', roleName: 'viewer' });
    await t.app.modules.mail.queue('team_invite', { address: user.email.toUpperCase(), name: null }, { accountName: 'A', inviterName: 'B', roleName: 'viewer' });
    const mailBefore = Number(((await knex('mail_outbox').whereRaw('lower(to_address) = lower(?)', [user.email]).count({ n: '*' }).first()) as { n: unknown }).n);
    expect(mailBefore).toBe(2);
    // The login was audited with the client's address.
    expect(await knex('audit_log').where({ user_id: user.userId, type: 'user:login' }).whereNotNull('ip_address').first('id')).toBeDefined();

    const res = await api(t, 'DELETE', `/admin/users/${user.userId}`, { token: ops.accessToken });
    expect([res.status, res.body]).toEqual([200, { success: true }]);
    await expectGone(user, key, socket);

    // The account they owned alone went with them; their idea stays, with no author.
    const account = await api(t, 'GET', `/admin/accounts/${user.accountId}`, { token: ops.accessToken });
    expect(account.status).toBe(404);
    const kept = await api(t, 'GET', `/ideas/${idea.body.data.id}`, { token: ops.accessToken });
    expect(kept.status).toBe(200);
    expect(kept.body.data).toMatchObject({ id: idea.body.data.id, author_id: null, author: null });
    // Nothing of theirs is left in the tables that held it.
    for (const [table, where] of [
      ['users', { id: user.userId }],
      ['sessions', { user_id: user.userId }],
      ['credentials', { user_id: user.userId }],
      ['account_members', { user_id: user.userId }],
      ['accounts', { owner_id: user.userId }],
    ] as const) {
      expect([table, await knex(table).where(where).first()]).toEqual([table, undefined]);
    }
    expect(await knex('mail_outbox').where({ user_id: user.userId }).orWhereRaw('lower(to_address) = lower(?)', [user.email]).first()).toBeUndefined();
    const traces = (await knex('audit_log').where({ user_id: user.userId }).orWhere({ actor_id: user.userId }).select('type', 'ip_address', 'user_agent')) as Json[];
    expect(traces.length).toBeGreaterThan(0);
    for (const row of traces) expect([row.type, row.ip_address, row.user_agent]).toEqual([row.type, null, null]);

    // Audited by id, with what went counted, and none of the personal data.
    const row = await deletedRow(user.userId);
    expect(row).toMatchObject({ scope: 'system', actor_id: ops.userId, metadata: { dissolved_account_ids: [user.accountId], erased: { mail_messages: 2, sessions: 1 } } });
    expect(row.metadata.erased.tokens).toBeGreaterThanOrEqual(1);
    const text = JSON.stringify(row);
    expect(text).not.toContain(user.email);
    expect(text.toLowerCase()).not.toContain(user.email.split('@')[0]!.toLowerCase());

    const again = await api(t, 'DELETE', `/admin/users/${user.userId}`, { token: ops.accessToken });
    expect([again.status, again.body]).toEqual([404, { error: 'NOT_FOUND', message: 'User not found' }]);
  });

  test('GraphQL twin: the same erasure and the same answers', async () => {
    const { user, key, socket } = await userWithCredentials('gqlleaver');
    const g = await gql(t.url, DELETE_USER, { id: user.userId }, bearer(ops.accessToken));
    expect(g.body).toEqual({ data: { adminDeleteUser: true } });
    await expectGone(user, key, socket);
    expect((await deletedRow(user.userId)).metadata).toMatchObject({ dissolved_account_ids: [user.accountId] });
    const again = await gql(t.url, DELETE_USER, { id: user.userId }, bearer(ops.accessToken));
    expect(again.body.errors?.[0]).toMatchObject({ message: 'User not found', extensions: { code: 'NOT_FOUND' } });
  });

  test('a member of someone else\'s account is deleted from it; the account and its owner stay', async () => {
    const owner = await devLogin(t);
    const member = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    // The member owns their own account alone: it goes, the shared one stays.
    const res = await api(t, 'DELETE', `/admin/users/${member.userId}`, { token: ops.accessToken });
    expect(res.status).toBe(200);
    const members = await api(t, 'GET', '/account/members', { token: owner.accessToken });
    expect(members.status).toBe(200);
    expect((members.body.data as Json[]).map((m) => m.user_id)).toEqual([owner.userId]);
    expect((await api(t, 'GET', '/me', { token: member.accessToken })).status).toBe(401);
  });

  test('refusals answer the same on both protocols and change nothing', async () => {
    const same = async (id: string, status: number, error: string, message: string) => {
      const rest = await api(t, 'DELETE', `/admin/users/${id}`, { token: ops.accessToken });
      expect([rest.status, rest.body]).toEqual([status, { error, message }]);
      const g = await gql(t.url, DELETE_USER, { id }, bearer(ops.accessToken));
      expect(g.body.data ?? null).toBeNull();
      expect(g.body.errors?.[0]).toMatchObject({ message, extensions: { code: error } });
    };
    await same(randomUUID(), 404, 'NOT_FOUND', 'User not found');
    await same(ops.userId, 409, 'CONFLICT', 'You cannot delete yourself');

    // A system admin (any admin role) is kept until their admin roles are taken away.
    const admin = await devLogin(t);
    const role = await api(t, 'POST', '/admin/admin-roles', { token: ops.accessToken, body: { name: `readers-${randomUUID()}`, permissions: ['users:read'] } });
    expect(role.status).toBe(201);
    expect((await api(t, 'PUT', `/admin/admin-roles/${role.body.data.id}/members/${admin.userId}`, { token: ops.accessToken })).status).toBe(200);
    await same(admin.userId, 409, 'CONFLICT', 'Cannot delete a system admin: take away their admin roles first');
    expect((await api(t, 'DELETE', `/admin/admin-roles/${role.body.data.id}/members/${admin.userId}`, { token: ops.accessToken })).status).toBe(200);
    expect((await api(t, 'DELETE', `/admin/users/${admin.userId}`, { token: ops.accessToken })).status).toBe(200);

    // The owner of an account with other members: refused, nothing deleted, everything still works.
    const owner = await devLogin(t);
    const member = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    await same(owner.userId, 409, 'CONFLICT', 'Cannot delete user: they own 1 account(s) with other members. Dissolve those accounts or remove their members first.');
    expect((await api(t, 'GET', '/me', { token: owner.accessToken })).status).toBe(200);
    expect((await api(t, 'GET', '/me', { token: member.accessToken })).status).toBe(200);
    expect((await api(t, 'GET', `/admin/users/${owner.userId}`, { token: ops.accessToken })).body.data).toMatchObject({ id: owner.userId, owned_account_count: 1 });
    // Once the member is gone, the owner can be deleted (their account with them).
    expect((await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken })).status).toBe(200);
    expect((await api(t, 'DELETE', `/admin/users/${owner.userId}`, { token: ops.accessToken })).status).toBe(200);
    expect((await api(t, 'GET', `/admin/accounts/${owner.accountId}`, { token: ops.accessToken })).status).toBe(404);
  });

  test('the permission: an operator holding users:read and users:edit but not users:delete is refused, as a plain user is', async () => {
    const target = await devLogin(t);
    const plain = await devLogin(t);
    const limited = await devLogin(t);
    const role = await api(t, 'POST', '/admin/admin-roles', { token: ops.accessToken, body: { name: `editors-${randomUUID()}`, permissions: ['users:read', 'users:edit'] } });
    expect((await api(t, 'PUT', `/admin/admin-roles/${role.body.data.id}/members/${limited.userId}`, { token: ops.accessToken })).status).toBe(200);
    const refreshed = await api(t, 'POST', '/auth/refresh', { body: { refresh_token: limited.refreshToken } });
    const token = refreshed.body.data.access_token as string;
    expect((await api(t, 'GET', `/admin/users/${target.userId}`, { token })).status).toBe(200);

    for (const caller of [token, plain.accessToken]) {
      const rest = await api(t, 'DELETE', `/admin/users/${target.userId}`, { token: caller });
      expect([rest.status, rest.body]).toEqual([403, { error: 'FORBIDDEN', message: 'Missing permission: users:delete' }]);
      const g = await gql(t.url, DELETE_USER, { id: target.userId }, bearer(caller));
      expect(g.body.errors?.[0]).toMatchObject({ message: 'Missing permission: users:delete', extensions: { code: 'FORBIDDEN' } });
    }
    const anonymous = await api(t, 'DELETE', `/admin/users/${target.userId}`);
    expect(anonymous.status).toBe(401);
    expect((await api(t, 'GET', '/me', { token: target.accessToken })).status).toBe(200);
  });

  (services.postgres && services.redis ? describe : describe.skip)('two nodes on one PostgreSQL and Redis', () => {
    test('deleted through node A: node B drops the cached key, refuses every credential and closes the socket it holds', async () => {
      const b = await startTestApp({ database_url: t.app.config.database_url, redis_prefix: t.app.config.redis_prefix, auth: { bootstrap_admins: [operatorEmail] } });
      try {
        const user = await devLogin(t);
        const created = await api(t, 'POST', '/api-keys', { token: user.accessToken, body: { label: 'two-node', permissions: ['account:read'] } });
        const key = created.body.data.key as string;
        // Node B verifies (and caches) the key; a cache write that times out is made again by the next look-up.
        let cachedOnB: string | null = null;
        for (let attempt = 0; attempt < 5 && cachedOnB === null; attempt += 1) {
          expect((await api(b, 'GET', '/account', { token: key })).status).toBe(200);
          cachedOnB = await b.app.cache.get(`apikey:${tokenHash(key)}`);
        }
        expect(cachedOnB).not.toBeNull();
        const socket = await connect(b.wsUrl, { headers: bearer(user.accessToken) });
        sockets.push(socket);

        expect((await api(t, 'DELETE', `/admin/users/${user.userId}`, { token: ops.accessToken })).status).toBe(200);
        expect(await socket.nextMatching((m) => m.type === 'error', 5000)).toMatchObject({ type: 'error', code: 'TOKEN_REVOKED' });
        expect(await b.app.cache.get(`apikey:${tokenHash(key)}`)).toBeNull();
        expect((await api(b, 'GET', '/account', { token: key })).status).toBe(401);
        expect((await api(b, 'GET', '/me', { token: user.accessToken })).status).toBe(401);
      } finally {
        await b.stop();
      }
    });
  });
});
