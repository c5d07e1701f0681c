/**
 * Accounts, part 1 (accounts-helpers.ts holds what the parts share): the default roles of a new
 * account, custom role CRUD and its validation, and member management with its live effect on
 * sessions and personal keys (Part 1 "Authorization"). The expected permission sets are copied
 * from the specification text, never imported from src/.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, joinAccount, type LoggedIn } from '../helpers/users';
import { accountsKit, ALL_ACCOUNT_PERMISSIONS, ADMINISTRATOR_EXCLUDED, ADMINISTRATOR, MODERATOR, VIEWER, sorted, inRegistryOrder, bearer, uniqueName, expectRestError, expectGqlError, expectSameFailure, expectGqlData, Q, toGqlRole, toGqlMember } from './accounts-helpers';

describe('accounts, roles, members, invites and notifications', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  const { login, rolesByName, notificationsOf, invite, myPermissions } = accountsKit(t);
  // ----------------------------------------------------------------------------------------------
  describe('default roles', () => {
    test('sanity: the copied spec tables have the sizes the spec implies', () => {
      expect(ALL_ACCOUNT_PERMISSIONS).toHaveLength(124);
      expect(new Set(ALL_ACCOUNT_PERMISSIONS).size).toBe(124);
      expect(ADMINISTRATOR).toHaveLength(120);
      expect(new Set(MODERATOR).size).toBe(MODERATOR.length);
      expect(MODERATOR).toHaveLength(44);
      expect(VIEWER).toHaveLength(9);
      for (const p of [...MODERATOR, ...VIEWER]) expect(ALL_ACCOUNT_PERMISSIONS).toContain(p);
    });

    test('a fresh account lists owner, administrator, moderator, viewer with the spec permission sets; GraphQL agrees', async () => {
      const owner = await login('fresh-owner');
      const res = await api(t, 'GET', '/account/roles', { token: owner.accessToken });
      expect(res.status).toBe(200);
      const roles = res.body.data as any[];
      expect(roles.map((r) => [r.name, r.position])).toEqual([
        ['owner', 0],
        ['administrator', 1],
        ['moderator', 2],
        ['viewer', 3],
      ]);
      expect((res.body as any)._meta).toMatchObject({ total: 4 });
      const [ownerRole, administrator, moderator, viewer] = roles;

      expect(ownerRole).toMatchObject({ is_system: true, member_count: 1 });
      expect(ownerRole.permissions).toEqual(ALL_ACCOUNT_PERMISSIONS); // every one, in registry order
      expect(ownerRole.permissions).toHaveLength(124);

      expect(administrator).toMatchObject({ is_system: false, member_count: 0 });
      expect(administrator.permissions).toHaveLength(120);
      expect(sorted(administrator.permissions)).toEqual(sorted(ADMINISTRATOR));
      for (const p of ADMINISTRATOR_EXCLUDED) expect(administrator.permissions).not.toContain(p);

      expect(moderator).toMatchObject({ is_system: false, member_count: 0 });
      expect(sorted(moderator.permissions)).toEqual(sorted(MODERATOR));
      expect(viewer).toMatchObject({ is_system: false, member_count: 0 });
      expect(sorted(viewer.permissions)).toEqual(sorted(VIEWER));

      // Every role reports its permissions in registry order.
      for (const role of roles) expect(role.permissions).toEqual(inRegistryOrder(role.permissions));
      for (const role of roles) {
        expect(role).toEqual({
          id: expect.any(String),
          name: expect.any(String),
          position: expect.any(Number),
          is_system: expect.any(Boolean),
          permissions: expect.any(Array),
          member_count: expect.any(Number),
          created_at: expect.any(String),
          updated_at: expect.any(String),
        });
      }

      const viaGql = expectGqlData(await gql(t.url, Q.accountRoles, {}, bearer(owner.accessToken)));
      expect(viaGql.accountRoles).toEqual(roles.map(toGqlRole));
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('role CRUD', () => {
    test('create: 201 with the permissions in registry order; listed after the defaults; GraphQL create likewise', async () => {
      const owner = await login('role-owner');
      const name = uniqueName('Streamers');
      const res = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name, permissions: ['sounds:play', 'chat:read', 'events:read', 'overlays:edit'] } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        data: {
          id: expect.any(String),
          name,
          position: 4,
          is_system: false,
          permissions: ['events:read', 'overlays:edit', 'chat:read', 'sounds:play'],
          member_count: 0,
          created_at: expect.any(String),
          updated_at: expect.any(String),
        },
        _links: { self: expect.any(String) },
      });
      const listed = await rolesByName(owner);
      expect(Object.keys(listed)).toEqual(['owner', 'administrator', 'moderator', 'viewer', name]);
      expect(listed[name]).toEqual(res.body.data);

      const gqlName = uniqueName('Editors');
      const viaGql = expectGqlData(
        await gql(t.url, Q.createRole, { input: { name: gqlName, permissions: ['widgets:edit', 'events:create'] } }, bearer(owner.accessToken)),
      );
      expect(viaGql.createAccountRole).toMatchObject({ name: gqlName, position: 5, isSystem: false, permissions: ['events:create', 'widgets:edit'], memberCount: 0 });
    });

    test.each([
      ['an unknown string', 'events:fly'],
      ['a resource wildcard', 'events:*'],
      ['the bare wildcard pair', '*:*'],
      ['the bare star', '*'],
      ['an admin-scope permission', 'admin-roles:read'],
      ['a user-scoped permission', 'ideas:read'],
    ])('create with %s (%s): 400 VALIDATION_ERROR "Invalid permission: <perm>" on REST and GraphQL', async (_label, perm) => {
      const owner = await login('role-invalid');
      const name = uniqueName('bad');
      const rest = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name, permissions: ['events:read', perm] } });
      const graphql = await gql(t.url, Q.createRole, { input: { name, permissions: ['events:read', perm] } }, bearer(owner.accessToken));
      expectSameFailure(rest, graphql, 400, 'VALIDATION_ERROR', `Invalid permission: ${perm}`);
      // Nothing was created by either attempt.
      expect(Object.keys(await rolesByName(owner))).toEqual(['owner', 'administrator', 'moderator', 'viewer']);
    });

    test('update with an invalid permission: the same 400 on both protocols', async () => {
      const owner = await login('role-invalid-update');
      const created = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: uniqueName('r'), permissions: ['events:read'] } });
      const id = (created.body.data as any).id;
      const rest = await api(t, 'PATCH', `/account/roles/${id}`, { token: owner.accessToken, body: { permissions: ['chat:*'] } });
      const graphql = await gql(t.url, Q.updateRole, { id, input: { permissions: ['chat:*'] } }, bearer(owner.accessToken));
      expectSameFailure(rest, graphql, 400, 'VALIDATION_ERROR', 'Invalid permission: chat:*');
    });

    test('a duplicate name, compared case-insensitively: 409 "Role name already in use" (custom and default names, create and rename)', async () => {
      const owner = await login('role-dup');
      const name = uniqueName('Crew');
      expect((await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name, permissions: [] } })).status).toBe(201);
      for (const clash of [name.toUpperCase(), name.toLowerCase(), 'MODERATOR', 'Owner']) {
        const rest = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: clash, permissions: ['events:read'] } });
        const graphql = await gql(t.url, Q.createRole, { input: { name: clash, permissions: ['events:read'] } }, bearer(owner.accessToken));
        expectSameFailure(rest, graphql, 409, 'CONFLICT', 'Role name already in use');
      }
      const other = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: uniqueName('Other'), permissions: [] } });
      const otherId = (other.body.data as any).id;
      const rest = await api(t, 'PATCH', `/account/roles/${otherId}`, { token: owner.accessToken, body: { name: 'Viewer' } });
      const graphql = await gql(t.url, Q.updateRole, { id: otherId, input: { name: name.toUpperCase() } }, bearer(owner.accessToken));
      expectRestError(rest, 409, 'CONFLICT', 'Role name already in use');
      expectGqlError(graphql, 'CONFLICT', 'Role name already in use');
    });

    test('a member without roles:edit: 403 "Missing permission: roles:edit" (create, update); without roles:delete: 403 on delete', async () => {
      const owner = await login('role-gate-owner');
      const moderator = await joinAccount(t, owner, await login('role-gate-mod'), { role: 'moderator' });
      const roles = await rolesByName(owner);
      const body = { name: uniqueName('x'), permissions: ['events:read'] };
      expectSameFailure(
        await api(t, 'POST', '/account/roles', { token: moderator.accessToken, body }),
        await gql(t.url, Q.createRole, { input: body }, bearer(moderator.accessToken)),
        403,
        'FORBIDDEN',
        'Missing permission: roles:edit',
      );
      expectSameFailure(
        await api(t, 'PATCH', `/account/roles/${roles.viewer.id}`, { token: moderator.accessToken, body: { name: 'renamed' } }),
        await gql(t.url, Q.updateRole, { id: roles.viewer.id, input: { name: 'renamed' } }, bearer(moderator.accessToken)),
        403,
        'FORBIDDEN',
        'Missing permission: roles:edit',
      );
      expectSameFailure(
        await api(t, 'DELETE', `/account/roles/${roles.viewer.id}`, { token: moderator.accessToken }),
        await gql(t.url, Q.deleteRole, { id: roles.viewer.id }, bearer(moderator.accessToken)),
        403,
        'FORBIDDEN',
        'Missing permission: roles:delete',
      );
      // The moderator can read roles (roles:read), and nothing changed.
      const read = await api(t, 'GET', '/account/roles', { token: moderator.accessToken });
      expect(read.status).toBe(200);
      expect((read.body.data as any[]).map((r) => r.name)).toEqual(['owner', 'administrator', 'moderator', 'viewer']);
    });

    test('a caller cannot put into a role a permission it does not hold: 403 FORBIDDEN on both protocols', async () => {
      const owner = await login('grant-owner');
      const editor = await joinAccount(t, owner, await login('grant-editor'), { roleName: uniqueName('role-editor'), permissions: ['roles:edit', 'events:read'] });
      // Within its own grants it can create.
      const ok = await api(t, 'POST', '/account/roles', { token: editor.accessToken, body: { name: uniqueName('sub'), permissions: ['events:read'] } });
      expect(ok.status).toBe(201);
      expect((ok.body.data as any).permissions).toEqual(['events:read']);

      const body = { name: uniqueName('beyond'), permissions: ['events:read', 'events:create'] };
      const rest = await api(t, 'POST', '/account/roles', { token: editor.accessToken, body });
      const graphql = await gql(t.url, Q.createRole, { input: body }, bearer(editor.accessToken));
      expectSameFailure(rest, graphql, 403, 'FORBIDDEN', 'Cannot grant permissions you do not hold: events:create');

      const id = (ok.body.data as any).id;
      expectSameFailure(
        await api(t, 'PATCH', `/account/roles/${id}`, { token: editor.accessToken, body: { permissions: ['members:delete'] } }),
        await gql(t.url, Q.updateRole, { id, input: { permissions: ['members:delete'] } }, bearer(editor.accessToken)),
        403,
        'FORBIDDEN',
        'Cannot grant permissions you do not hold: members:delete',
      );
      const roles = await rolesByName(owner);
      expect(roles[body.name]).toBeUndefined();
      expect(Object.values(roles).find((r) => r.id === id).permissions).toEqual(['events:read']);
    });

    test('update renames and replaces the permissions (REST, then GraphQL)', async () => {
      const owner = await login('role-update');
      const created = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: uniqueName('before'), permissions: ['chat:read', 'chat:write'] } });
      const id = (created.body.data as any).id;
      const newName = uniqueName('after');
      const res = await api(t, 'PATCH', `/account/roles/${id}`, { token: owner.accessToken, body: { name: newName, permissions: ['sounds:read', 'events:read'] } });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ id, name: newName, position: 4, is_system: false, permissions: ['events:read', 'sounds:read'], member_count: 0 });
      const listed = await rolesByName(owner);
      expect(listed[newName]).toMatchObject({ id, permissions: ['events:read', 'sounds:read'] });
      expect(Object.keys(listed)).toHaveLength(5);

      // Only the given fields change.
      const renamedOnly = await api(t, 'PATCH', `/account/roles/${id}`, { token: owner.accessToken, body: { name: `${newName}-2` } });
      expect(renamedOnly.body.data).toMatchObject({ name: `${newName}-2`, permissions: ['events:read', 'sounds:read'] });

      const viaGql = expectGqlData(await gql(t.url, Q.updateRole, { id, input: { permissions: ['widgets:read'] } }, bearer(owner.accessToken)));
      expect(viaGql.updateAccountRole).toMatchObject({ id, name: `${newName}-2`, permissions: ['widgets:read'] });
    });

    test('the owner role: PATCH gives 409 "The owner role cannot be changed", DELETE 409 "The owner role cannot be deleted"', async () => {
      const owner = await login('owner-role');
      const ownerRole = (await rolesByName(owner)).owner;
      expectSameFailure(
        await api(t, 'PATCH', `/account/roles/${ownerRole.id}`, { token: owner.accessToken, body: { name: 'boss' } }),
        await gql(t.url, Q.updateRole, { id: ownerRole.id, input: { name: 'boss' } }, bearer(owner.accessToken)),
        409,
        'CONFLICT',
        'The owner role cannot be changed',
      );
      expectSameFailure(
        await api(t, 'PATCH', `/account/roles/${ownerRole.id}`, { token: owner.accessToken, body: { permissions: ['events:read'] } }),
        await gql(t.url, Q.updateRole, { id: ownerRole.id, input: { permissions: ['events:read'] } }, bearer(owner.accessToken)),
        409,
        'CONFLICT',
        'The owner role cannot be changed',
      );
      expectSameFailure(
        await api(t, 'DELETE', `/account/roles/${ownerRole.id}`, { token: owner.accessToken }),
        await gql(t.url, Q.deleteRole, { id: ownerRole.id }, bearer(owner.accessToken)),
        409,
        'CONFLICT',
        'The owner role cannot be deleted',
      );
      expect((await rolesByName(owner)).owner).toEqual(ownerRole);
    });

    test('deleting a role members hold: 409 "Role is assigned to 1 member(s)"; an unused role is deleted and disappears', async () => {
      const owner = await login('role-delete');
      await joinAccount(t, owner, await login('role-delete-mod'), { role: 'moderator' });
      const roles = await rolesByName(owner);
      expect(roles.moderator.member_count).toBe(1);
      expectSameFailure(
        await api(t, 'DELETE', `/account/roles/${roles.moderator.id}`, { token: owner.accessToken }),
        await gql(t.url, Q.deleteRole, { id: roles.moderator.id }, bearer(owner.accessToken)),
        409,
        'CONFLICT',
        'Role is assigned to 1 member(s)',
      );

      const unused = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: uniqueName('unused'), permissions: ['events:read'] } });
      const unusedId = (unused.body.data as any).id;
      const res = await api(t, 'DELETE', `/account/roles/${unusedId}`, { token: owner.accessToken });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      expect(Object.values(await rolesByName(owner)).map((r) => r.id)).not.toContain(unusedId);

      // GraphQL deletes the (unused) viewer role: true, and it is gone.
      expect(expectGqlData(await gql(t.url, Q.deleteRole, { id: roles.viewer.id }, bearer(owner.accessToken)))).toEqual({ deleteAccountRole: true });
      expect(Object.keys(await rolesByName(owner))).toEqual(['owner', 'administrator', 'moderator']);
    });

    test('deleting a role withdraws the pending invites that carry it; the invitee cannot join through them', async () => {
      const owner = await login('role-delete-invite');
      const invitee = await login('role-delete-invitee');
      const created = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: uniqueName('temp'), permissions: ['events:read'] } });
      const roleId = (created.body.data as any).id;
      const { invite: pending, notification } = await invite(owner, invitee, roleId);
      expect(pending.role_id).toBe(roleId);
      expect((await rolesByName(owner))[pending.role].member_count).toBe(0);

      const res = await api(t, 'DELETE', `/account/roles/${roleId}`, { token: owner.accessToken });
      expect(res.status).toBe(200);
      expect((await api(t, 'GET', '/account/invites', { token: owner.accessToken })).body.data).toEqual([]);
      // The spec says the invite is withdrawn; whether its notification is deleted too (as on
      // DELETE /account/invites/{id}) or stays and answers 409 is not fixed, so accept either.
      const left = (await notificationsOf(invitee)).find((n) => n.id === notification.id);
      const act = await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invitee.accessToken, body: { action: 'accept_invite' } });
      if (left) expectRestError(act, 409, 'CONFLICT', 'Invite is no longer valid');
      else expectRestError(act, 404, 'NOT_FOUND', 'Notification not found');
      const members = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(members.map((m) => m.user_id)).toEqual([owner.userId]);
    });

    test('an unknown role: 404 "Role not found" on update and delete', async () => {
      const owner = await login('role-unknown');
      const id = randomUUID();
      expectSameFailure(
        await api(t, 'PATCH', `/account/roles/${id}`, { token: owner.accessToken, body: { name: 'x' } }),
        await gql(t.url, Q.updateRole, { id, input: { name: 'x' } }, bearer(owner.accessToken)),
        404,
        'NOT_FOUND',
        'Role not found',
      );
      expectSameFailure(
        await api(t, 'DELETE', `/account/roles/${id}`, { token: owner.accessToken }),
        await gql(t.url, Q.deleteRole, { id }, bearer(owner.accessToken)),
        404,
        'NOT_FOUND',
        'Role not found',
      );
      // Another account's role is just as unknown.
      const stranger = await login('role-stranger');
      const foreign = (await rolesByName(stranger)).viewer.id;
      expectRestError(await api(t, 'DELETE', `/account/roles/${foreign}`, { token: owner.accessToken }), 404, 'NOT_FOUND', 'Role not found');
      expect((await rolesByName(stranger)).viewer).toBeDefined();
    });
  });

  // ----------------------------------------------------------------------------------------------
  describe('members', () => {
    test('GET /account/members lists the owner (is_owner) and joined members with their roles; GraphQL agrees', async () => {
      const owner = await login('members-owner');
      const mod = await joinAccount(t, owner, await login('members-mod'), { role: 'moderator' });
      const viewer = await joinAccount(t, owner, await login('members-viewer'), { role: 'viewer' });
      const roles = await rolesByName(owner);
      const res = await api(t, 'GET', '/account/members', { token: owner.accessToken });
      expect(res.status).toBe(200);
      const entry = (user: LoggedIn, role: string, isOwner: boolean) => ({
        user_id: user.userId,
        display_name: user.email.split('@')[0],
        email: user.email,
        avatar_url: null,
        role_id: roles[role].id,
        role,
        is_owner: isOwner,
        joined_at: expect.any(String),
      });
      expect(res.body.data).toEqual([entry(owner, 'owner', true), entry(mod, 'moderator', false), entry(viewer, 'viewer', false)]);
      expect((res.body as any)._meta).toMatchObject({ total: 3 });

      const viaGql = expectGqlData(await gql(t.url, Q.members, {}, bearer(mod.accessToken)));
      expect(viaGql.accountMembers).toEqual((res.body.data as any[]).map(toGqlMember));
    });

    test('PATCH changes a member role and the member session is capped by it at once', async () => {
      const owner = await login('patch-owner');
      const member = await joinAccount(t, owner, await login('patch-member'), { role: 'moderator' });
      expect(sorted((await myPermissions(member.accessToken)).permissions)).toEqual(sorted(MODERATOR));
      const roles = await rolesByName(owner);

      const res = await api(t, 'PATCH', `/account/members/${member.userId}`, { token: owner.accessToken, body: { role_id: roles.viewer.id } });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ user_id: member.userId, role_id: roles.viewer.id, role: 'viewer', is_owner: false });
      expect(sorted((await myPermissions(member.accessToken)).permissions)).toEqual(sorted(VIEWER));

      const viaGql = expectGqlData(await gql(t.url, Q.updateMember, { userId: member.userId, roleId: roles.administrator.id }, bearer(owner.accessToken)));
      expect(viaGql.updateAccountMember).toMatchObject({ userId: member.userId, roleId: roles.administrator.id, role: 'administrator', isOwner: false });
      const listed = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(listed.find((m) => m.user_id === member.userId)).toMatchObject({ role: 'administrator' });
    });

    test("PATCH: the owner's role 409, the owner role 400, an unknown member or role 404, a viewer 403", async () => {
      const owner = await login('patch-rules-owner');
      const member = await joinAccount(t, owner, await login('patch-rules-member'), { role: 'moderator' });
      const viewer = await joinAccount(t, owner, await login('patch-rules-viewer'), { role: 'viewer' });
      const roles = await rolesByName(owner);

      expectSameFailure(
        await api(t, 'PATCH', `/account/members/${owner.userId}`, { token: owner.accessToken, body: { role_id: roles.administrator.id } }),
        await gql(t.url, Q.updateMember, { userId: owner.userId, roleId: roles.administrator.id }, bearer(owner.accessToken)),
        409,
        'CONFLICT',
        "The owner's role cannot be changed",
      );
      expectSameFailure(
        await api(t, 'PATCH', `/account/members/${member.userId}`, { token: owner.accessToken, body: { role_id: roles.owner.id } }),
        await gql(t.url, Q.updateMember, { userId: member.userId, roleId: roles.owner.id }, bearer(owner.accessToken)),
        400,
        'VALIDATION_ERROR',
        'The owner role cannot be assigned',
      );
      const nobody = randomUUID();
      expectSameFailure(
        await api(t, 'PATCH', `/account/members/${nobody}`, { token: owner.accessToken, body: { role_id: roles.viewer.id } }),
        await gql(t.url, Q.updateMember, { userId: nobody, roleId: roles.viewer.id }, bearer(owner.accessToken)),
        404,
        'NOT_FOUND',
        'Member not found',
      );
      const noRole = randomUUID();
      expectSameFailure(
        await api(t, 'PATCH', `/account/members/${member.userId}`, { token: owner.accessToken, body: { role_id: noRole } }),
        await gql(t.url, Q.updateMember, { userId: member.userId, roleId: noRole }, bearer(owner.accessToken)),
        404,
        'NOT_FOUND',
        'Role not found',
      );
      expectSameFailure(
        await api(t, 'PATCH', `/account/members/${member.userId}`, { token: viewer.accessToken, body: { role_id: roles.viewer.id } }),
        await gql(t.url, Q.updateMember, { userId: member.userId, roleId: roles.viewer.id }, bearer(viewer.accessToken)),
        403,
        'FORBIDDEN',
        'Missing permission: members:edit',
      );
      const listed = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(listed.map((m) => [m.user_id, m.role])).toEqual([
        [owner.userId, 'owner'],
        [member.userId, 'moderator'],
        [viewer.userId, 'viewer'],
      ]);
    });

    test('DELETE removes a member: its JWT, still claiming the account, loses access at once', async () => {
      const owner = await login('remove-owner');
      const member = await joinAccount(t, owner, await login('remove-member'), { role: 'moderator' });
      expect((await api(t, 'GET', '/account/members', { token: member.accessToken })).status).toBe(200);

      const res = await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });

      expectRestError(await api(t, 'GET', '/account/members', { token: member.accessToken }), 401, 'UNAUTHORIZED', 'No active account');
      expectGqlError(await gql(t.url, Q.members, {}, bearer(member.accessToken)), 'UNAUTHORIZED', 'No active account');
      const perms = await myPermissions(member.accessToken);
      expect(perms).toMatchObject({ context: 'jwt', user_id: member.userId, account_id: null, permissions: [] });
      const me = await api(t, 'GET', '/me', { token: member.accessToken });
      expect(me.status).toBe(200);
      expect((me.body.data as any).active_account_id).toBeNull();
      const listed = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(listed.map((m) => m.user_id)).toEqual([owner.userId]);
      // Not a member any more: removing again is 404.
      expectRestError(await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken }), 404, 'NOT_FOUND', 'Member not found');
    });

    test('DELETE via GraphQL: true, and the member is gone', async () => {
      const owner = await login('remove-gql-owner');
      const member = await joinAccount(t, owner, await login('remove-gql-member'), { role: 'viewer' });
      expect(expectGqlData(await gql(t.url, Q.removeMember, { userId: member.userId }, bearer(owner.accessToken)))).toEqual({ removeAccountMember: true });
      expect((await myPermissions(member.accessToken)).account_id).toBeNull();
    });

    test('DELETE: the owner 409, an unknown member 404, a viewer (members:read without members:delete) 403', async () => {
      const owner = await login('remove-rules-owner');
      const member = await joinAccount(t, owner, await login('remove-rules-member'), { role: 'moderator' });
      const viewer = await joinAccount(t, owner, await login('remove-rules-viewer'), { roleName: uniqueName('reader'), permissions: ['members:read'] });
      expectSameFailure(
        await api(t, 'DELETE', `/account/members/${owner.userId}`, { token: owner.accessToken }),
        await gql(t.url, Q.removeMember, { userId: owner.userId }, bearer(owner.accessToken)),
        409,
        'CONFLICT',
        'The account owner cannot be removed',
      );
      const nobody = randomUUID();
      expectSameFailure(
        await api(t, 'DELETE', `/account/members/${nobody}`, { token: owner.accessToken }),
        await gql(t.url, Q.removeMember, { userId: nobody }, bearer(owner.accessToken)),
        404,
        'NOT_FOUND',
        'Member not found',
      );
      expect((await api(t, 'GET', '/account/members', { token: viewer.accessToken })).status).toBe(200);
      expectSameFailure(
        await api(t, 'DELETE', `/account/members/${member.userId}`, { token: viewer.accessToken }),
        await gql(t.url, Q.removeMember, { userId: member.userId }, bearer(viewer.accessToken)),
        403,
        'FORBIDDEN',
        'Missing permission: members:delete',
      );
      // The default viewer role lacks members:read too.
      const plainViewer = await joinAccount(t, owner, await login('remove-rules-plain'), { role: 'viewer' });
      expectRestError(await api(t, 'DELETE', `/account/members/${member.userId}`, { token: plainViewer.accessToken }), 403, 'FORBIDDEN', 'Missing permission: members:delete');
      const listed = (await api(t, 'GET', '/account/members', { token: owner.accessToken })).body.data as any[];
      expect(listed.map((m) => m.user_id)).toEqual([owner.userId, member.userId, viewer.userId, plainViewer.userId]);
    });
  });

  // ----------------------------------------------------------------------------------------------
});
