/**
 * Notifications (Part 2, "Notifications"): marking one or all read, the unread count (REST and
 * GraphQL twins), `member_joined` / `member_removed`, sent per the recipients' preferences, and
 * the user's own socket channel `notifications:{user_id}` that pushes each new one.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

type Note = { id: string; type: string; status: string; read_at: string | null; data: Record<string, unknown> };

describe('notifications: read state and member notices', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  const bearer = (u: LoggedIn) => ({ authorization: `Bearer ${u.accessToken}` });
  const notes = async (u: LoggedIn): Promise<Note[]> => (await api(t, 'GET', '/notifications', { token: u.accessToken })).body.data as Note[];
  const unread = async (u: LoggedIn): Promise<number> => {
    const res = await api(t, 'GET', '/notifications/unread-count', { token: u.accessToken });
    expect(res.status).toBe(200);
    const g = await gql(t.url, '{ notificationUnreadCount }', {}, bearer(u));
    expect(g.body.data!.notificationUnreadCount).toBe(res.body.data.unread);
    return res.body.data.unread as number;
  };

  test('member_joined reaches the owner; mark one read, then all; counts follow; answered invites keep their status', async () => {
    const owner = await devLogin(t);
    const first = await devLogin(t);
    const second = await devLogin(t);
    expect(await unread(owner)).toBe(0);
    await joinAccount(t, owner, first, { role: 'moderator' });
    await joinAccount(t, owner, second, { role: 'viewer' });

    const list = await notes(owner);
    expect(list.map((n) => n.type)).toEqual(['member_joined', 'member_joined']);
    expect(list[1]!.data).toEqual({ accountId: owner.accountId, accountName: expect.any(String), userId: first.userId, displayName: first.email.split('@')[0], role: 'moderator' });
    expect(await unread(owner)).toBe(2);

    const one = await api(t, 'POST', `/notifications/${list[0]!.id}/read`, { token: owner.accessToken });
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: list[0]!.id, status: 'read', read_at: expect.any(String) });
    const twice = await gql(t.url, 'mutation($id: UUID!) { markNotificationRead(id: $id) { status readAt } }', { id: list[0]!.id }, bearer(owner));
    expect(twice.body.data!.markNotificationRead).toEqual({ status: 'read', readAt: one.body.data.read_at });
    expect(await unread(owner)).toBe(1);

    const foreign = await api(t, 'POST', `/notifications/${list[1]!.id}/read`, { token: first.accessToken });
    expect([foreign.status, foreign.body]).toEqual([404, { error: 'NOT_FOUND', message: 'Notification not found' }]);
    const g404 = await gql(t.url, 'mutation($id: UUID!) { markNotificationRead(id: $id) { id } }', { id: randomUUID() }, bearer(owner));
    expect(g404.body.errors?.[0]).toMatchObject({ message: 'Notification not found', extensions: { code: 'NOT_FOUND' } });

    const all = await api(t, 'POST', '/notifications/read-all', { token: owner.accessToken });
    expect(all.body).toEqual({ success: true, updated: 1 });
    expect(await unread(owner)).toBe(0);
    const none = await gql(t.url, 'mutation { markAllNotificationsRead }', {}, bearer(owner));
    expect(none.body.data!.markAllNotificationsRead).toBe(0);

    // The members' own invite notifications were answered (accepted): read-all leaves them so.
    await api(t, 'POST', '/notifications/read-all', { token: first.accessToken });
    expect((await notes(first)).find((n) => n.type === 'invite')!.status).toBe('accepted');
  });

  test('a read invite can still be accepted', async () => {
    const owner = await devLogin(t);
    const invitee = await devLogin(t);
    expect((await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: invitee.userId, role: 'viewer' } })).status).toBe(201);
    const [invite] = await notes(invitee);
    await api(t, 'POST', `/notifications/${invite!.id}/read`, { token: invitee.accessToken });
    const accepted = await api(t, 'POST', `/notifications/${invite!.id}/action`, { token: invitee.accessToken, body: { action: 'accept_invite' } });
    expect(accepted.body.data.status).toBe('accepted');
  });

  test('member_removed reaches the removed user; preferences decide (off sends nothing)', async () => {
    const owner = await devLogin(t);
    const member = await devLogin(t);
    await joinAccount(t, owner, member, { role: 'viewer' });
    expect((await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken })).status).toBe(200);
    const removed = (await notes(member)).find((n) => n.type === 'member_removed');
    expect(removed?.data).toEqual({ accountId: owner.accountId, accountName: expect.any(String), removedBy: owner.userId });

    // The owner turns member_joined off: the next join writes nothing for them.
    expect((await api(t, 'PATCH', '/notifications/preferences/member_joined', { token: owner.accessToken, body: { channel: 'off' } })).status).toBe(200);
    const before = (await notes(owner)).length;
    const another = await devLogin(t);
    await joinAccount(t, owner, another, { role: 'viewer' });
    expect((await notes(owner)).length).toBe(before);
    // The removed user turns member_removed off before a second removal.
    await api(t, 'PATCH', '/notifications/preferences/member_removed', { token: another.accessToken, body: { channel: 'off' } });
    await api(t, 'DELETE', `/account/members/${another.userId}`, { token: owner.accessToken });
    expect((await notes(another)).some((n) => n.type === 'member_removed')).toBe(false);
  });

  describe('the socket channel notifications:{user_id}', () => {
    const opened = closeSocketsAfterEach();
    async function socketOf(token: string): Promise<TestSocket> {
      const s = await connect(t.wsUrl, { headers: { authorization: `Bearer ${token}` } });
      opened.push(s);
      expect((await s.next()).type).toBe('welcome');
      return s;
    }

    test('pushes each new notification to its user, as the list shows it, once the change commits', async () => {
      const owner = await devLogin(t);
      const invitee = await devLogin(t);
      const s = await socketOf(invitee.accessToken);
      const channel = `notifications:${invitee.userId}`;
      s.send({ type: 'subscribe', channel });
      expect(await s.next()).toEqual({ type: 'subscribed', channel });
      expect((await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: invitee.userId, role: 'viewer' } })).status).toBe(201);
      const frame = (await s.nextMatching((m) => m.type === 'event', 5000)) as unknown as { channel: string; event_type: string; data: Note };
      const [listed] = await notes(invitee);
      expect(frame).toMatchObject({ channel, event_type: 'notification:created', data: listed });
      expect(frame.data.type).toBe('invite');
    });

    test('only the user’s own session subscribes: another user, the user’s API key and anonymous sockets are refused', async () => {
      const user = await devLogin(t);
      const other = await devLogin(t);
      const channel = `notifications:${user.userId}`;
      const key = await api(t, 'POST', '/api-keys', { token: user.accessToken, body: { label: `notes-${randomUUID().slice(0, 8)}`, permissions: ['events:read'] } });
      expect(key.status).toBe(201);
      for (const token of [other.accessToken, key.body.data.key as string]) {
        const s = await socketOf(token);
        s.send({ type: 'subscribe', channel });
        expect(await s.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel });
      }
      const anonymous = await connect(t.wsUrl);
      opened.push(anonymous);
      expect((await anonymous.next()).type).toBe('welcome');
      anonymous.send({ type: 'subscribe', channel });
      expect(await anonymous.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' });
    });
  });
});
