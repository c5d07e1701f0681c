/**
 * Accounts, part 2 (accounts-helpers.ts holds what the parts share): invites answered through
 * notification actions, delivery preferences (Part 2 "Notifications"), creating, dissolving and
 * leaving accounts, and the first-party gate against popout, overlay, widget and extension tokens.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, joinAccount, switchTo, type ApiResult, type LoggedIn } from '../helpers/users';
import { accountsKit, ADMINISTRATOR, MODERATOR, sorted, bearer, uniqueName, expectRestError, expectSameFailure, expectGqlData, Q, toGqlNotification } from './accounts-helpers';

describe('accounts, roles, members, invites and notifications', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  const { login, rolesByName, notificationsOf, invite, myPermissions } = accountsKit(t);
  describe('invites and notifications', () => {
    test('invite → unread invite notification → accept_invite: member with exactly the moderator permissions, notification accepted', async () => {
      const owner = await login('inv-owner');
      const invitee = await login('inv-invitee');
      const roles = await rolesByName(owner);
      const res = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: invitee.userId, role: 'moderator' } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        data: {
          id: expect.any(String),
          account_id: owner.accountId,
          user_id: invitee.userId,
          email: null,
          role_id: roles.moderator.id,
          role: 'moderator',
          invited_by: owner.userId,
          created_at: expect.any(String),
        },
        _links: { self: expect.any(String) },
      });
      const inviteId = (res.body.data as any).id;
      const pending = await api(t, 'GET', '/account/invites', { token: owner.accessToken });
      expect(pending.status).toBe(200);
      expect(pending.body.data).toEqual([res.body.data]);

      const list = await api(t, 'GET', '/notifications', { token: invitee.accessToken });
      expect(list.status).toBe(200);
      const notes = list.body.data as any[];
      expect(notes).toHaveLength(1);
      const [notification] = notes;
      expect(notification).toEqual({
        id: expect.any(String),
        type: 'invite',
        data: expect.objectContaining({ accountId: owner.accountId, inviteId, role: 'moderator' }),
        status: 'unread',
        created_at: expect.any(String),
        read_at: null,
      });
      const viaGql = expectGqlData(await gql(t.url, Q.notifications, {}, bearer(invitee.accessToken)));
      expect(viaGql.notifications).toMatchObject({ total: 1, page: 1, pages: 1, items: [toGqlNotification(notification)] });
      // The owner, who was not invited, has no notification.
      expect(await notificationsOf(owner)).toEqual([]);

      const accepted = await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action: 'accept_invite' } });
      expect(accepted.status).toBe(200);
      expect(accepted.body.data).toMatchObject({ id: notification.id, type: 'invite', status: 'accepted' });
      expect((await notificationsOf(invitee))[0]).toMatchObject({ id: notification.id, status: 'accepted' });

      const members = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(members.find((m) => m.user_id === invitee.userId)).toMatchObject({ role: 'moderator', role_id: roles.moderator.id, is_owner: false });
      expect((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data).toEqual([]);

      const switched = await switchTo(t, invitee, owner.accountId!);
      const perms = await myPermissions(switched.accessToken);
      expect(perms).toMatchObject({ context: 'jwt', user_id: invitee.userId, account_id: owner.accountId });
      expect(sorted(perms.permissions)).toEqual(sorted(MODERATOR));

      // A second action on the answered notification: 409.
      for (const action of ['accept_invite', 'decline_invite']) {
        const again = await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action } });
        expectRestError(again, 409, 'CONFLICT', 'Invite is no longer valid');
      }
    });

    test('decline_invite deletes the invite row and marks the notification declined', async () => {
      const owner = await login('decline-owner');
      const invitee = await login('decline-invitee');
      const { invite: created, notification } = await invite(owner, invitee, 'viewer');
      expect(((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data as any[]).map((i) => i.id)).toEqual([created.id]);

      const declined = await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action: 'decline_invite' } });
      expect(declined.status).toBe(200);
      expect(declined.body.data).toMatchObject({ id: notification.id, status: 'declined' });
      expect((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data).toEqual([]);
      expect((await notificationsOf(invitee)).find((n) => n.id === notification.id)).toMatchObject({ status: 'declined' });
      const members = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(members.map((m) => m.user_id)).toEqual([owner.userId]);
      expectRestError(
        await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action: 'accept_invite' } }),
        409,
        'CONFLICT',
        'Invite is no longer valid',
      );
      // Declined, the user can be invited again.
      expect((await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: invitee.userId, role: 'viewer' } })).status).toBe(201);
    });

    test('an unknown action 400 (notification untouched); someone else\'s or an unknown notification 404', async () => {
      const owner = await login('action-owner');
      const invitee = await login('action-invitee');
      const { notification } = await invite(owner, invitee, 'viewer');
      const invalidAction = await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action: 'frobnicate' } });
      expectSameFailure(
        invalidAction,
        await gql(t.url, Q.notificationAction, { id: notification.id, action: 'frobnicate' }, bearer(invitee.accessToken)),
        400,
        'VALIDATION_ERROR',
      );
      expect(invalidAction.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Unknown action: frobnicate', details: { fields: [{ field: 'action', message: 'Unknown action: frobnicate' }] } });
      // Refused before the look-up on both protocols: an unknown notification does not turn it into a 404.
      expectSameFailure(
        await api(t, 'POST', `/notifications/${randomUUID()}/action`, { token: invitee.accessToken, body: { action: 'frobnicate' } }),
        await gql(t.url, Q.notificationAction, { id: randomUUID(), action: 'frobnicate' }, bearer(invitee.accessToken)),
        400,
        'VALIDATION_ERROR',
      );
      expect((await notificationsOf(invitee))[0]).toMatchObject({ id: notification.id, status: 'unread' });

      for (const [who, id] of [
        [owner, notification.id],
        [invitee, randomUUID()],
      ] as const) {
        expectSameFailure(
          await api(t, 'POST', `/notifications/${id}/action`, { token: who.accessToken, body: { action: 'accept_invite' } }),
          await gql(t.url, Q.notificationAction, { id, action: 'accept_invite' }, bearer(who.accessToken)),
          404,
          'NOT_FOUND',
          'Notification not found',
        );
      }
      expect((await notificationsOf(invitee))[0]).toMatchObject({ id: notification.id, status: 'unread' });
    });

    test('invite errors: existing member 409, invited twice 409, unknown user 404, unknown role 404, the owner role 400', async () => {
      const owner = await login('inv-err-owner');
      const member = await joinAccount(t, owner, await login('inv-err-member'), { role: 'viewer' });
      const invitee = await login('inv-err-invitee');
      await invite(owner, invitee, 'moderator');

      const cases: [Record<string, string>, number, string, string][] = [
        [{ user_id: member.userId, role: 'moderator' }, 409, 'CONFLICT', 'User is already a member'],
        [{ user_id: owner.userId, role: 'moderator' }, 409, 'CONFLICT', 'User is already a member'],
        [{ user_id: invitee.userId, role: 'viewer' }, 409, 'CONFLICT', 'User is already invited'],
        [{ user_id: randomUUID(), role: 'moderator' }, 404, 'NOT_FOUND', 'User not found'],
        [{ user_id: (await login('inv-err-other')).userId, role: 'no-such-role' }, 404, 'NOT_FOUND', 'Role not found'],
        [{ user_id: (await login('inv-err-own')).userId, role: 'owner' }, 400, 'VALIDATION_ERROR', 'The owner role cannot be assigned'],
      ];
      for (const [body, status, code, message] of cases) {
        const rest = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body });
        const graphql = await gql(t.url, Q.createInvite, { input: { userId: body.user_id, role: body.role } }, bearer(owner.accessToken));
        expectSameFailure(rest, graphql, status, code, message);
      }
      // Only the one good invite exists, and the invitee got exactly one notification.
      expect(((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data as any[]).map((i) => i.user_id)).toEqual([invitee.userId]);
      expect(await notificationsOf(invitee)).toHaveLength(1);
    });

    test('inviting needs members:create: a viewer gets 403', async () => {
      const owner = await login('inv-gate-owner');
      const viewer = await joinAccount(t, owner, await login('inv-gate-viewer'), { role: 'viewer' });
      const target = await login('inv-gate-target');
      expectSameFailure(
        await api(t, 'POST', '/account/invites', { token: viewer.accessToken, body: { user_id: target.userId, role: 'viewer' } }),
        await gql(t.url, Q.createInvite, { input: { userId: target.userId, role: 'viewer' } }, bearer(viewer.accessToken)),
        403,
        'FORBIDDEN',
        'Missing permission: members:create',
      );
      expect(await notificationsOf(target)).toEqual([]);
    });

    test('DELETE /account/invites/{id} withdraws the invite and its notification; the notification cannot be acted on', async () => {
      const owner = await login('withdraw-owner');
      const invitee = await login('withdraw-invitee');
      const { invite: created, notification } = await invite(owner, invitee, 'moderator');
      const res = await api(t, 'DELETE', `/account/invites/${created.id}`, { token: owner.accessToken });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      expect((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data).toEqual([]);
      expect((await notificationsOf(invitee)).find((n) => n.data?.inviteId === created.id)).toBeUndefined();
      // The notification went with the invite, so it is unknown now.
      expectRestError(
        await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action: 'accept_invite' } }),
        404,
        'NOT_FOUND',
        'Notification not found',
      );
      expect(((await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[]).map((m) => m.user_id)).toEqual([owner.userId]);
      // Already withdrawn (or never existed): 404.
      expectSameFailure(
        await api(t, 'DELETE', `/account/invites/${created.id}`, { token: owner.accessToken }),
        await gql(t.url, Q.cancelInvite, { id: created.id }, bearer(owner.accessToken)),
        404,
        'NOT_FOUND',
      );

      // GraphQL: create, list, withdraw.
      const second = expectGqlData(await gql(t.url, Q.createInvite, { input: { userId: invitee.userId, role: 'viewer' } }, bearer(owner.accessToken)));
      expect(second.createAccountInvite).toMatchObject({ accountId: owner.accountId, userId: invitee.userId, role: 'viewer', invitedBy: owner.userId });
      const listed = expectGqlData(await gql(t.url, Q.invites, {}, bearer(owner.accessToken)));
      expect(listed.accountInvites).toEqual([second.createAccountInvite]);
      expect((await notificationsOf(invitee)).filter((n) => n.data?.inviteId === second.createAccountInvite.id)).toHaveLength(1);
      expect(expectGqlData(await gql(t.url, Q.cancelInvite, { id: second.createAccountInvite.id }, bearer(owner.accessToken)))).toEqual({ cancelAccountInvite: true });
      expect(await notificationsOf(invitee)).toEqual([]);
    });

    test('GraphQL notificationAction mirrors REST: accept, then the same conflict; decline on another invite', async () => {
      const owner = await login('gql-act-owner');
      const invitee = await login('gql-act-invitee');
      const { notification } = await invite(owner, invitee, 'moderator');
      const accepted = expectGqlData(await gql(t.url, Q.notificationAction, { id: notification.id, action: 'accept_invite' }, bearer(invitee.accessToken)));
      expect(accepted.notificationAction).toMatchObject({ id: notification.id, type: 'invite', status: 'accepted', data: expect.objectContaining({ accountId: owner.accountId, role: 'moderator' }) });
      const members = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(members.find((m) => m.user_id === invitee.userId)).toMatchObject({ role: 'moderator' });
      expectSameFailure(
        await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action: 'decline_invite' } }),
        await gql(t.url, Q.notificationAction, { id: notification.id, action: 'accept_invite' }, bearer(invitee.accessToken)),
        409,
        'CONFLICT',
        'Invite is no longer valid',
      );

      const otherOwner = await login('gql-act-other');
      const { invite: second, notification: secondNote } = await invite(otherOwner, invitee, 'viewer');
      const declined = expectGqlData(await gql(t.url, Q.notificationAction, { id: secondNote.id, action: 'decline_invite' }, bearer(invitee.accessToken)));
      expect(declined.notificationAction).toMatchObject({ id: secondNote.id, status: 'declined' });
      expect(((await api(t, 'GET', '/account/invites', { token: otherOwner.accessToken })).body.data as any[]).map((i) => i.id)).not.toContain(second.id);
      const accounts = (await api(t, 'GET', '/accounts', { token: invitee.accessToken })).body.data as any[];
      expect(accounts.map((a) => a.id).sort()).toEqual([invitee.accountId, owner.accountId].sort());
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('notification preferences', () => {
    test('GET lists every type with channel and locked; invite is locked on in_app_email; GraphQL agrees', async () => {
      const user = await login('prefs-list');
      const res = await api(t, 'GET', '/notifications/preferences', { token: user.accessToken });
      expect(res.status).toBe(200);
      const prefs = res.body.data as any[];
      expect(new Set(prefs.map((p) => p.type)).size).toBe(prefs.length);
      for (const p of prefs) {
        expect(p).toEqual({ type: expect.any(String), channel: expect.any(String), locked: expect.any(Boolean) });
        expect(['off', 'in_app', 'email', 'in_app_email']).toContain(p.channel);
      }
      expect(prefs.find((p) => p.type === 'invite')).toEqual({ type: 'invite', channel: 'in_app_email', locked: true });
      expect(prefs.find((p) => p.type === 'member_joined')).toEqual({ type: 'member_joined', channel: expect.any(String), locked: false });
      const viaGql = expectGqlData(await gql(t.url, Q.preferences, {}, bearer(user.accessToken)));
      expect(viaGql.notificationPreferences).toEqual(prefs);
    });

    test('PATCH member_joined { channel: email } → 200 and persists, per user', async () => {
      const user = await login('prefs-set');
      const other = await login('prefs-other');
      const before = ((await api(t, 'GET', '/notifications/preferences', { token: other.accessToken })).body.data as any[]).find((p) => p.type === 'member_joined');
      const res = await api(t, 'PATCH', '/notifications/preferences/member_joined', { token: user.accessToken, body: { channel: 'email' } });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ type: 'member_joined', channel: 'email', locked: false });
      const listed = (await api(t, 'GET', '/notifications/preferences', { token: user.accessToken })).body.data as any[];
      expect(listed.find((p) => p.type === 'member_joined')).toEqual({ type: 'member_joined', channel: 'email', locked: false });
      const viaGql = expectGqlData(await gql(t.url, Q.preferences, {}, bearer(user.accessToken)));
      expect(viaGql.notificationPreferences).toEqual(listed);
      // Another user is unaffected.
      const otherNow = ((await api(t, 'GET', '/notifications/preferences', { token: other.accessToken })).body.data as any[]).find((p) => p.type === 'member_joined');
      expect(otherNow).toEqual(before);

      // GraphQL sets it back to off, then in_app_email.
      for (const channel of ['off', 'in_app_email']) {
        const set = expectGqlData(await gql(t.url, Q.updatePreference, { type: 'member_joined', channel }, bearer(user.accessToken)));
        expect(set.updateNotificationPreference).toEqual({ type: 'member_joined', channel, locked: false });
        const now = (await api(t, 'GET', '/notifications/preferences', { token: user.accessToken })).body.data as any[];
        expect(now.find((p) => p.type === 'member_joined').channel).toBe(channel);
      }
    });

    test.each([
      ['an unknown channel', 'member_joined', 'sms', 400, 'VALIDATION_ERROR', 'Unknown channel: sms'],
      ['the locked invite type', 'invite', 'email', 400, 'VALIDATION_ERROR', 'Notification type invite cannot be changed'],
      ['the locked invite type, off', 'invite', 'off', 400, 'VALIDATION_ERROR', 'Notification type invite cannot be changed'],
      ['an unknown type', 'no_such_type', 'email', 404, 'NOT_FOUND', 'Unknown notification type: no_such_type'],
    ])('PATCH with %s: identical failure on REST and GraphQL', async (_label, type, channel, status, code, message) => {
      const user = await login('prefs-bad');
      const before = (await api(t, 'GET', '/notifications/preferences', { token: user.accessToken })).body.data;
      expectSameFailure(
        await api(t, 'PATCH', `/notifications/preferences/${type}`, { token: user.accessToken, body: { channel } }),
        await gql(t.url, Q.updatePreference, { type, channel }, bearer(user.accessToken)),
        status,
        code,
        message,
      );
      expect((await api(t, 'GET', '/notifications/preferences', { token: user.accessToken })).body.data).toEqual(before);
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('accounts', () => {
    test('POST /accounts creates a second account owned by the caller; /accounts lists both; /me counts 2', async () => {
      const user = await login('acct-create');
      const name = uniqueName('Second');
      const res = await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        data: { id: expect.any(String), name, owner_id: user.userId, plan: 'free', role: 'owner', created_at: expect.any(String), updated_at: expect.any(String) },
        _links: { self: expect.any(String) },
      });
      const created = res.body.data as any;
      expect(created.id).not.toBe(user.accountId);

      const listed = await api(t, 'GET', '/accounts', { token: user.accessToken });
      expect(listed.status).toBe(200);
      expect((listed.body.data as any[]).map((a) => [a.id, a.owner_id, a.role])).toEqual([
        [user.accountId, user.userId, 'owner'],
        [created.id, user.userId, 'owner'],
      ]);
      const me = await api(t, 'GET', '/me', { token: user.accessToken });
      expect(me.status).toBe(200);
      expect(me.body.data).toMatchObject({ id: user.userId, email: user.email, active_account_id: user.accountId, owned_account_count: 2 });

      // The new account has the four default roles, and the caller is its owner.
      const switched = await switchTo(t, user, created.id);
      expect(Object.keys(await rolesByName(switched))).toEqual(['owner', 'administrator', 'moderator', 'viewer']);
      const members = (await api(t, 'GET', '/account/members', { token: switched.accessToken })).body.data as any[];
      expect(members).toEqual([expect.objectContaining({ user_id: user.userId, role: 'owner', is_owner: true })]);

      // GraphQL createAccount, me and myAccounts.
      const third = expectGqlData(await gql(t.url, Q.createAccount, { input: { name: 'Third' } }, bearer(user.accessToken)));
      expect(third.createAccount).toMatchObject({ name: 'Third', ownerId: user.userId, role: 'owner' });
      const meGql = expectGqlData(await gql(t.url, Q.me, {}, bearer(user.accessToken)));
      expect(meGql.me).toMatchObject({ id: user.userId, activeAccountId: user.accountId, ownedAccountCount: 3 });
      const mine = expectGqlData(await gql(t.url, Q.myAccounts, {}, bearer(user.accessToken)));
      expect(mine.myAccounts.map((a: any) => a.id)).toEqual([user.accountId, created.id, third.createAccount.id]);
    });

    test('with the global system:account_creation switch off: 403 FEATURE_DISABLED on both protocols', async () => {
      const user = await login('acct-flag');
      const features = t.app.modules.features;
      await features.setGlobal('system:account_creation', false);
      try {
        expectSameFailure(
          await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'blocked' } }),
          await gql(t.url, Q.createAccount, { input: { name: 'blocked' } }, bearer(user.accessToken)),
          403,
          'FEATURE_DISABLED',
        );
      } finally {
        await features.setGlobal('system:account_creation', true);
      }
      const me = await api(t, 'GET', '/me', { token: user.accessToken });
      expect((me.body.data as any).owned_account_count).toBe(1);
      expect((await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'allowed' } })).status).toBe(201);
    });

    test('DELETE /account: an administrator, any key and a non-owner holding account:delete get 403; the owner dissolves it and members lose it at once', async () => {
      const first = await login('dissolve-owner');
      const created = await api(t, 'POST', '/accounts', { token: first.accessToken, body: { name: uniqueName('doomed') } });
      const doomedId = (created.body.data as any).id;
      const owner = await switchTo(t, first, doomedId);
      const admin = await joinAccount(t, owner, await login('dissolve-admin'), { role: 'administrator' });
      expect(sorted((await myPermissions(admin.accessToken)).permissions)).toEqual(sorted(ADMINISTRATOR));

      expectSameFailure(
        await api(t, 'DELETE', '/account', { token: admin.accessToken }),
        await gql(t.url, Q.dissolveAccount, {}, bearer(admin.accessToken)),
        403,
        'FORBIDDEN',
        'Missing permission: account:delete',
      );
      // The owner's own keys: a read-only one, and one with every scope a personal key may hold
      // (account:delete is on every kind's deny-list, so none can ever hold it).
      const assignable = await api(t, 'GET', '/api-keys/permissions?kind=personal', { token: owner.accessToken });
      expect(assignable.status).toBe(200);
      const everyScope = (assignable.body.data as { key: string }[]).map((p) => p.key);
      expect(everyScope.length).toBeGreaterThan(100);
      expect(everyScope).not.toContain('account:delete');
      for (const permissions of [['events:read'], everyScope]) {
        const made = await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: uniqueName('dissolve-key'), permissions } });
        expect(made.status).toBe(201);
        const key = (made.body.data as any).key as string;
        expectSameFailure(
          await api(t, 'DELETE', '/account', { token: key }),
          await gql(t.url, Q.dissolveAccount, {}, bearer(key)),
          403,
          'FORBIDDEN',
          'Missing permission: account:delete',
        );
      }
      // A custom role may list account:delete; dissolution still checks ownership.
      const holder = await joinAccount(t, owner, await login('dissolve-holder'), { roleName: uniqueName('deleters'), permissions: ['account:delete', 'account:read'] });
      expectSameFailure(
        await api(t, 'DELETE', '/account', { token: holder.accessToken }),
        await gql(t.url, Q.dissolveAccount, {}, bearer(holder.accessToken)),
        403,
        'FORBIDDEN',
        'Only the account owner can dissolve the account',
      );
      expect((await api(t, 'GET', '/account', { token: owner.accessToken })).status).toBe(200);

      const res = await api(t, 'DELETE', '/account', { token: owner.accessToken });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });

      for (const session of [admin, owner]) {
        expectRestError(await api(t, 'GET', '/account/members', { token: session.accessToken }), 401, 'UNAUTHORIZED', 'No active account');
        expect(await myPermissions(session.accessToken)).toMatchObject({ account_id: null, permissions: [] });
        expect(((await api(t, 'GET', '/me', { token: session.accessToken })).body.data as any).active_account_id).toBeNull();
        const accounts = (await api(t, 'GET', '/accounts', { token: session.accessToken })).body.data as any[];
        expect(accounts.map((a) => a.id)).not.toContain(doomedId);
      }
      expect(((await api(t, 'GET', '/me', { token: owner.accessToken })).body.data as any).owned_account_count).toBe(1);
      // Switching back into it is impossible.
      const back = await api(t, 'POST', '/auth/switch-account', { token: first.accessToken, body: { account_id: doomedId } });
      expectRestError(back, 404, 'NOT_FOUND', 'Account not found');
    });

    test('GraphQL dissolveAccount by the owner: true', async () => {
      const first = await login('dissolve-gql');
      const created = await api(t, 'POST', '/accounts', { token: first.accessToken, body: { name: uniqueName('gql-doomed') } });
      const owner = await switchTo(t, first, (created.body.data as any).id);
      expect(expectGqlData(await gql(t.url, Q.dissolveAccount, {}, bearer(owner.accessToken)))).toEqual({ dissolveAccount: true });
      const accounts = (await api(t, 'GET', '/accounts', { token: first.accessToken })).body.data as any[];
      expect(accounts.map((a) => a.id)).toEqual([first.accountId]);
    });

    test('POST /account/leave: a member leaves (its personal key for that account stops: 401); the owner gets 409', async () => {
      const owner = await login('leave-owner');
      const memberLogin = await login('leave-member');
      const member = await joinAccount(t, owner, memberLogin, { role: 'moderator' });
      const { token: key } = await t.app.authStore.mint({
        kind: 'user_api_key',
        accountId: owner.accountId,
        userId: member.userId,
        createdBy: member.userId,
        label: 'leave-test',
        permissions: ['events:read', 'members:read'],
      });
      const before = await api(t, 'GET', '/tokens/me', { token: key });
      expect(before.status).toBe(200);
      expect(before.body.data).toMatchObject({ context: 'user_api_key', user_id: member.userId, account_id: owner.accountId });
      expect((await api(t, 'GET', '/account/members', { token: key })).status).toBe(200);

      const res = await api(t, 'POST', '/account/leave', { token: member.accessToken });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });

      expectRestError(await api(t, 'GET', '/tokens/me', { token: key }), 401, 'UNAUTHORIZED', 'Authentication required');
      expectRestError(await api(t, 'GET', '/account/members', { token: key }), 401, 'UNAUTHORIZED', 'Authentication required');
      expectRestError(await api(t, 'GET', '/account/members', { token: member.accessToken }), 401, 'UNAUTHORIZED', 'No active account');
      const members = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(members.map((m) => m.user_id)).toEqual([owner.userId]);
      const accounts = (await api(t, 'GET', '/accounts', { token: member.accessToken })).body.data as any[];
      expect(accounts.map((a) => a.id)).toEqual([memberLogin.accountId]);

      expectSameFailure(
        await api(t, 'POST', '/account/leave', { token: owner.accessToken }),
        await gql(t.url, Q.leaveAccount, {}, bearer(owner.accessToken)),
        409,
        'CONFLICT',
        'The account owner cannot leave the account; dissolve it instead',
      );
      expect((await api(t, 'GET', '/account', { token: owner.accessToken })).status).toBe(200);
    });

    test('GraphQL leaveAccount by a member: true, and the membership is gone', async () => {
      const owner = await login('leave-gql-owner');
      const member = await joinAccount(t, owner, await login('leave-gql-member'), { role: 'viewer' });
      expect(expectGqlData(await gql(t.url, Q.leaveAccount, {}, bearer(member.accessToken)))).toEqual({ leaveAccount: true });
      const members = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(members.map((m) => m.user_id)).toEqual([owner.userId]);
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('first-party gate', () => {
    type Credential = { header?: string; query?: string };
    let owner: LoggedIn;
    let credentials: Record<'popout' | 'overlay' | 'widget' | 'extension', Credential>;
    let preferencesBefore: unknown;
    let popoutCreation: ApiResult;
    const ZERO_ID = '00000000-0000-4000-8000-000000000000';

    beforeAll(async () => {
      owner = await login('gate-owner');
      preferencesBefore = (await api(t, 'GET', '/notifications/preferences', { token: owner.accessToken })).body.data;
      const store = t.app.authStore;
      const accountId = owner.accountId!;
      popoutCreation = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { label: 'gate', permissions: ['events:read', 'members:read'] } });
      // The test below asserts the creation itself; should it fail, the gate is still exercised
      // with an equivalent popout token minted directly, so one bug does not hide the others.
      const popoutToken =
        popoutCreation.status === 201
          ? ((popoutCreation.body.data as any).token as string)
          : (await store.mint({ kind: 'popout', accountId, userId: owner.userId, createdBy: owner.userId, label: 'gate', permissions: ['events:read', 'members:read'] })).token;
      const overlay = await store.mint({ kind: 'overlay', accountId, createdBy: owner.userId, subjectId: randomUUID() });
      const widget = await store.mint({ kind: 'widget', accountId, createdBy: owner.userId, subjectId: randomUUID() });
      const extension = await store.mint({ kind: 'extension', accountId, subjectId: randomUUID(), extensionId: randomUUID(), expiresAt: new Date(Date.now() + 900_000) });
      credentials = {
        popout: { query: popoutToken },
        overlay: { header: overlay.token },
        widget: { header: widget.token },
        extension: { header: extension.token },
      };
    });

    const operations: { name: string; method: string; path: () => string; body?: unknown; query: string; variables?: () => Record<string, unknown> }[] = [
      { name: 'createAccount', method: 'POST', path: () => '/accounts', body: { name: 'nope' }, query: Q.createAccount, variables: () => ({ input: { name: 'nope' } }) },
      { name: 'dissolveAccount', method: 'DELETE', path: () => '/account', query: Q.dissolveAccount },
      { name: 'leaveAccount', method: 'POST', path: () => '/account/leave', query: Q.leaveAccount },
      { name: 'me', method: 'GET', path: () => '/me', query: Q.me },
      { name: 'notifications', method: 'GET', path: () => '/notifications', query: Q.notifications },
      { name: 'notificationPreferences', method: 'GET', path: () => '/notifications/preferences', query: Q.preferences },
      {
        name: 'updateNotificationPreference',
        method: 'PATCH',
        path: () => '/notifications/preferences/member_joined',
        body: { channel: 'off' },
        query: Q.updatePreference,
        variables: () => ({ type: 'member_joined', channel: 'off' }),
      },
      {
        name: 'notificationAction',
        method: 'POST',
        path: () => `/notifications/${ZERO_ID}/action`,
        body: { action: 'accept_invite' },
        query: Q.notificationAction,
        variables: () => ({ id: ZERO_ID, action: 'accept_invite' }),
      },
      { name: 'sessions', method: 'GET', path: () => '/auth/sessions', query: Q.sessions },
    ];
    test('the popout token comes from POST /v1/tokens: 201 with the full lm_pop_ token', () => {
      expect({ status: popoutCreation.status, error: popoutCreation.body.error }).toEqual({ status: 201, error: undefined });
      expect(popoutCreation.body.data).toMatchObject({
        token: expect.stringMatching(/^lm_pop_[0-9a-f]{64}$/),
        account_id: owner.accountId,
        user_id: owner.userId,
        created_by: owner.userId,
        label: 'gate',
        permissions: ['events:read', 'members:read'],
        revoked_at: null,
      });
    });

    const kinds = ['popout', 'overlay', 'widget', 'extension'] as const;
    const rows = operations.flatMap((op) => kinds.map((kind) => [op.name, kind, op] as const));

    test.each(rows)('%s with a %s token: 403 FORBIDDEN, same code and message on GraphQL', async (_name, kind, op) => {
      const credential = credentials[kind];
      const rest = await api(t, op.method, op.path(), {
        ...(credential.header ? { token: credential.header } : {}),
        ...(credential.query ? { query: { token: credential.query } } : {}),
        ...(op.body !== undefined ? { body: op.body } : {}),
      });
      const graphql = await gql(t.url, op.query, op.variables?.() ?? {}, credential.header ? bearer(credential.header) : {}, credential.query);
      expectSameFailure(rest, graphql, 403, 'FORBIDDEN');
    });

    test('the same credentials are live (they do reach a non-first-party route), and nothing was changed by the refused calls', async () => {
      const popoutMe = await api(t, 'GET', '/tokens/me', { query: { token: credentials.popout.query! } });
      expect(popoutMe.status).toBe(200);
      expect(popoutMe.body.data).toMatchObject({ context: 'popout', account_id: owner.accountId });
      for (const kind of ['overlay', 'widget', 'extension'] as const) {
        const res = await api(t, 'GET', '/tokens/me', { token: credentials[kind].header! });
        expect(res.status).toBe(200);
        expect((res.body.data as any).context).toBe(kind);
      }
      // The owner's account still exists, the owner still owns exactly one account, and its preference is unchanged.
      expect((await api(t, 'GET', '/account', { token: owner.accessToken })).status).toBe(200);
      expect(((await api(t, 'GET', '/me', { token: owner.accessToken })).body.data as any).owned_account_count).toBe(1);
      expect((await api(t, 'GET', '/notifications/preferences', { token: owner.accessToken })).body.data).toEqual(preferencesBefore);
      // And a user session passes the gate on the same routes.
      expect((await api(t, 'GET', '/me', { token: owner.accessToken })).status).toBe(200);
      expect((await api(t, 'GET', '/auth/sessions', { token: owner.accessToken })).status).toBe(200);
      expect(expectGqlData(await gql(t.url, Q.sessions, {}, bearer(owner.accessToken))).sessions.length).toBeGreaterThanOrEqual(1);
    });
  });
});
