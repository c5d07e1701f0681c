/** Login connections and their per-account assignments, and the login fields of the connection statuses. */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect } from '../helpers/ws';

const operatorEmail = `ops-${randomUUID()}@example.test`;
const bearer = (u: LoggedIn) => ({ authorization: `Bearer ${u.accessToken}` });
const ASSIGN = 'mutation($c: UUID!, $p: String!, $u: UUID) { assignLoginConnection(loginConnectionId: $c, provider: $p, userId: $u) { id accountId userId loginConnectionId provider createdAt } }';
const ASSIGNMENTS = 'query($u: UUID) { accountLoginAssignments(userId: $u) { provider loginConnectionId userId } }';

const opened = closeSocketsAfterEach();

describe('login connections', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] } });
  let ops: LoggedIn;
  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
  });
  const record = (user: LoggedIn, body: Record<string, unknown>) => api(t, 'POST', `/admin/users/${user.userId}/login-connections`, { token: ops.accessToken, body });

  test('recorded connections show in me (primary first) and in flaggedConnections; setPrimary and disconnect', async () => {
    const user = await devLogin(t);
    const a = await record(user, { provider: 'platform_a', platform_user_id: 'a-1', display_name: 'A' });
    expect(a.body.data).toMatchObject({ provider: 'platform_a', platform_user_id: 'a-1', display_name: 'A', reconnect_required: false, is_primary: true });
    const c = await record(user, { provider: 'platform_c', platform_user_id: 'c-1', reconnect_required: true });
    expect(c.body.data.is_primary).toBe(false);
    const me = await api(t, 'GET', '/me', { token: user.accessToken });
    expect((me.body.data.login_connections as { id: string }[]).map((l) => l.id)).toEqual([a.body.data.id, c.body.data.id]);
    const flagged = await gql(t.url, '{ flaggedConnections { id reconnectRequired } }', {}, bearer(user));
    expect(flagged.body.data!.flaggedConnections).toEqual([{ id: c.body.data.id, reconnectRequired: true }]);

    const primary = await gql(t.url, 'mutation($id: UUID!) { setPrimaryLoginConnection(loginConnectionId: $id) { id isPrimary } }', { id: c.body.data.id }, bearer(user));
    expect(primary.body.data!.setPrimaryLoginConnection).toEqual([{ id: c.body.data.id, isPrimary: true }, { id: a.body.data.id, isPrimary: false }]);

    const stranger = await devLogin(t);
    const foreign = await gql(t.url, 'mutation($id: UUID!) { disconnectLoginConnection(loginConnectionId: $id) { success } }', { id: a.body.data.id }, bearer(stranger));
    expect(foreign.body.errors?.[0]).toMatchObject({ message: 'Login connection not found', extensions: { code: 'NOT_FOUND' } });
    const gone = await gql(t.url, 'mutation($id: UUID!) { disconnectLoginConnection(loginConnectionId: $id) { success } }', { id: c.body.data.id }, bearer(user));
    expect(gone.body.data!.disconnectLoginConnection).toEqual({ success: true });
    const after = await gql(t.url, '{ me { loginConnections { id isPrimary } } }', {}, bearer(user));
    expect(after.body.data!.me).toEqual({ loginConnections: [{ id: a.body.data.id, isPrimary: true }] });
    expect((await api(t, 'POST', `/admin/users/${randomUUID()}/login-connections`, { token: ops.accessToken, body: { provider: 'platform_a', platform_user_id: 'x' } })).body).toEqual({
      error: 'NOT_FOUND',
      message: 'User not found',
    });
  });

  test('assignments: own always, another user with login-assignments:*; the login fields of the statuses', async () => {
    const owner = await devLogin(t);
    const member = await joinAccount(t, owner, await devLogin(t), { role: 'moderator' });
    const ownerLogin = await record(owner, { provider: 'platform_a', platform_user_id: 'own-a' });
    const ownerC = await record(owner, { provider: 'platform_c', platform_user_id: 'own-c', reconnect_required: true });
    const ownerB = await record(owner, { provider: 'platform_b', platform_user_id: 'own-b' });
    const memberLogin = await record(member, { provider: 'platform_a', platform_user_id: 'mem-a' });

    const assigned = await gql(t.url, ASSIGN, { c: ownerLogin.body.data.id, p: 'platform_a' }, bearer(owner));
    expect(assigned.body.data!.assignLoginConnection).toMatchObject({ accountId: owner.accountId, userId: owner.userId, loginConnectionId: ownerLogin.body.data.id, provider: 'platform_a' });
    await gql(t.url, ASSIGN, { c: ownerC.body.data.id, p: 'platform_c' }, bearer(owner));
    await gql(t.url, ASSIGN, { c: ownerB.body.data.id, p: 'platform_b' }, bearer(owner));
    const mismatch = await gql(t.url, ASSIGN, { c: ownerLogin.body.data.id, p: 'platform_c' }, bearer(owner));
    expect(mismatch.body.errors?.[0]?.message).toBe('Login connection not found');

    // platform_a: healthy grant; platform_c: flagged grant; platform_b is not sent to through a login grant.
    const statuses = await api(t, 'GET', '/connections/status', { token: owner.accessToken });
    expect(statuses.body.data.map((s: { platform: string; login_connected: boolean; login_reconnect_required: boolean }) => [s.platform, s.login_connected, s.login_reconnect_required])).toEqual([
      ['platform_a', true, false],
      ['platform_b', false, false],
      ['platform_c', false, true],
    ]);
    // Another member's statuses show their own (absent) grants.
    const memberStatuses = await api(t, 'GET', '/connections/status', { token: member.accessToken });
    expect(memberStatuses.body.data[0]).toMatchObject({ platform: 'platform_a', login_connected: false });

    // The moderator reads and acts only for themself.
    const own = await gql(t.url, ASSIGNMENTS, {}, bearer(member));
    expect(own.body.data!.accountLoginAssignments).toEqual([]);
    const others = await gql(t.url, ASSIGNMENTS, { u: owner.userId }, bearer(member));
    expect(others.body.errors?.[0]).toMatchObject({ message: 'Missing permission: login-assignments:read', extensions: { code: 'FORBIDDEN' } });
    const forOwner = await gql(t.url, ASSIGN, { c: ownerLogin.body.data.id, p: 'platform_a', u: owner.userId }, bearer(member));
    expect(forOwner.body.errors?.[0]?.message).toBe('Missing permission: login-assignments:create');
    const removeOther = await gql(t.url, 'mutation($u: UUID) { removeLoginAssignment(provider: "platform_a", userId: $u) }', { u: owner.userId }, bearer(member));
    expect(removeOther.body.errors?.[0]?.message).toBe('Missing permission: login-assignments:delete');

    // The owner (every account permission) acts for the member.
    const forMember = await gql(t.url, ASSIGN, { c: memberLogin.body.data.id, p: 'platform_a', u: member.userId }, bearer(owner));
    expect(forMember.body.data!.assignLoginConnection).toMatchObject({ userId: member.userId, provider: 'platform_a' });
    const read = await gql(t.url, ASSIGNMENTS, { u: member.userId }, bearer(owner));
    expect(read.body.data!.accountLoginAssignments).toEqual([{ provider: 'platform_a', loginConnectionId: memberLogin.body.data.id, userId: member.userId }]);
    expect((await api(t, 'GET', '/connections/status', { token: member.accessToken })).body.data[0]).toMatchObject({ login_connected: true });
    const outsider = await devLogin(t);
    const notMember = await gql(t.url, ASSIGN, { c: memberLogin.body.data.id, p: 'platform_a', u: outsider.userId }, bearer(owner));
    expect(notMember.body.errors?.[0]?.message).toBe('User is not a member of the account');

    const removed = await gql(t.url, 'mutation { removeLoginAssignment(provider: "platform_a") }', {}, bearer(owner));
    expect(removed.body.data).toEqual({ removeLoginAssignment: true });
    const again = await gql(t.url, 'mutation { removeLoginAssignment(provider: "platform_a") }', {}, bearer(owner));
    expect(again.body.errors?.[0]).toMatchObject({ message: 'Login assignment not found', extensions: { code: 'NOT_FOUND' } });
    expect((await api(t, 'GET', '/connections/status', { token: owner.accessToken })).body.data[0]).toMatchObject({ login_connected: false, login_reconnect_required: false });
  });

  test('login-assignments:{id} carries the outcome of one assignment: assigned, then removed (id, provider and state only)', async () => {
    const owner = await devLogin(t);
    const login = await record(owner, { provider: 'platform_a', platform_user_id: `live-${randomUUID()}` });
    const first = await gql(t.url, ASSIGN, { c: login.body.data.id, p: 'platform_a' }, bearer(owner));
    const id = (first.body.data!.assignLoginConnection as { id: string }).id;
    const s = await connect(t.wsUrl);
    opened.push(s);
    expect((await s.next()).type).toBe('welcome');
    const channel = `login-assignments:${id}`;
    s.send({ type: 'subscribe', channel });
    expect(await s.next()).toEqual({ type: 'subscribed', channel });
    // Assigning again keeps the assignment (and its id).
    expect((await gql(t.url, ASSIGN, { c: login.body.data.id, p: 'platform_a' }, bearer(owner))).body.data!.assignLoginConnection).toMatchObject({ id });
    expect(await s.next()).toMatchObject({ type: 'event', channel, event_type: 'login-assignment:assigned', data: { id, provider: 'platform_a', status: 'assigned' } });
    expect((await gql(t.url, 'mutation { removeLoginAssignment(provider: "platform_a") }', {}, bearer(owner))).body.data).toEqual({ removeLoginAssignment: true });
    const removed = (await s.next()) as unknown as { event_type: string; data: Record<string, unknown> };
    expect(removed).toMatchObject({ event_type: 'login-assignment:removed', data: { id, provider: 'platform_a', status: 'removed' } });
    expect(Object.keys(removed.data).sort()).toEqual(['at', 'id', 'provider', 'status']);
  });
});
