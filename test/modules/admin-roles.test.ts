/** Admin roles (Part 1 "Admin roles"): the nine REST operations and their GraphQL twins, every message. */
import { randomUUID } from 'node:crypto';
import { SUPER_ADMIN_ROLE } from '../../src/auth/registry';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const operatorEmail = `ops-${randomUUID()}@example.test`;
/** A bootstrap operator who logs in only after the system role was renamed underneath. */
const lateOperatorEmail = `late-ops-${randomUUID()}@example.test`;

describe('admin roles', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail, lateOperatorEmail] } });
  let ops: LoggedIn;
  const auth = () => ({ authorization: `Bearer ${ops.accessToken}` });

  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
  });

  const createRole = (body: Record<string, unknown>) => api(t, 'POST', '/admin/admin-roles', { token: ops.accessToken, body });

  test('the catalogue lists admin permissions with categories, without the system-key-only audit:ingest', async () => {
    const res = await api(t, 'GET', '/admin/admin-permissions', { token: ops.accessToken });
    expect(res.status).toBe(200);
    const list = res.body.data as { permission: string; category: string }[];
    expect(list[0]).toEqual({ permission: 'admin:access', category: 'admin' });
    expect(list).toContainEqual({ permission: 'admin-roles:read', category: 'admin-roles' });
    expect(list).toContainEqual({ permission: 'ideas:moderate_read', category: 'ideas' });
    expect(list.map((p) => p.permission)).not.toContain('audit:ingest');
    const g = await gql(t.url, '{ allAdminPermissions { permission category } }', {}, auth());
    expect(g.body.data!.allAdminPermissions).toEqual(list);
  });

  test('create injects admin:access and sorts; bad permission, duplicate name and blank name are refused', async () => {
    const name = `support-${randomUUID().slice(0, 8)}`;
    const res = await createRole({ name, description: 'Support desk', permissions: ['users:read', 'admin-roles:read'] });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ name, description: 'Support desk', is_system: false, permissions: ['admin-roles:read', 'admin:access', 'users:read'], member_count: 0 });
    expect(res.body._links.self).toBe(`/v1/admin/admin-roles/${res.body.data.id}`);

    const bad = await createRole({ name: `x-${randomUUID()}`, permissions: ['users:read', 'events:read'] });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Invalid permission: events:read' });
    const ingest = await createRole({ name: `x-${randomUUID()}`, permissions: ['audit:ingest'] });
    expect(ingest.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Invalid permission: audit:ingest' });

    const dup = await createRole({ name: name.toUpperCase(), permissions: [] });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ error: 'CONFLICT', message: 'Role name already in use' });

    const g = await gql(t.url, 'mutation($i: CreateAdminRoleInput!) { adminCreateRole(input: $i) { id } }', { i: { name, permissions: [] } }, auth());
    expect(g.body.errors?.[0]).toMatchObject({ message: 'Role name already in use', extensions: { code: 'CONFLICT' } });
    const gBad = await gql(t.url, 'mutation($i: CreateAdminRoleInput!) { adminCreateRole(input: $i) { id } }', { i: { name: `y-${randomUUID()}`, permissions: ['nope:nope'] } }, auth());
    expect(gBad.body.errors?.[0]).toMatchObject({ message: 'Invalid permission: nope:nope', extensions: { code: 'VALIDATION_ERROR' } });

    const g2 = await gql(t.url, 'mutation($i: CreateAdminRoleInput!) { adminCreateRole(input: $i) { name permissions isSystem memberCount description } }', { i: { name: `g-${name}`, permissions: ['plans:read'] } }, auth());
    expect(g2.body.data!.adminCreateRole).toEqual({ name: `g-${name}`, permissions: ['admin:access', 'plans:read'], isSystem: false, memberCount: 0, description: null });

    const log = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken, query: { type: 'system:admin_role_created' } });
    expect(log.body.items.some((i: { metadata: { name?: string } }) => i.metadata.name === name)).toBe(true);
  });

  test('an unknown id is `Admin role not found` on every operation and both protocols', async () => {
    const id = randomUUID();
    for (const [method, path, body] of [
      ['GET', `/admin/admin-roles/${id}`],
      ['PATCH', `/admin/admin-roles/${id}`, { name: 'x' }],
      ['DELETE', `/admin/admin-roles/${id}`],
      ['GET', `/admin/admin-roles/${id}/members`],
      ['PUT', `/admin/admin-roles/${id}/members/${ops.userId}`],
      ['DELETE', `/admin/admin-roles/${id}/members/${ops.userId}`],
    ] as [string, string, unknown?][]) {
      const res = await api(t, method, path, { token: ops.accessToken, body });
      expect([method, path, res.status, res.body]).toEqual([method, path, 404, { error: 'NOT_FOUND', message: 'Admin role not found' }]);
    }
    const g = await gql(t.url, 'query($id: UUID!) { adminRole(id: $id) { id } }', { id }, auth());
    expect(g.body.errors?.[0]).toMatchObject({ message: 'Admin role not found', extensions: { code: 'NOT_FOUND' } });
  });

  test('update is a diff: legacy strings already on the role stay, admin:access stays, description null clears', async () => {
    const created = await createRole({ name: `diff-${randomUUID()}`, description: 'd', permissions: ['users:read', 'users:edit'] });
    const id = created.body.data.id as string;
    // A legacy grant written by an older release (not in today's registry).
    await t.app.db.knex('admin_roles').where({ id }).update({ permissions: JSON.stringify(['admin:access', 'users:read', 'users:edit', 'legacy:thing']) });

    const res = await api(t, 'PATCH', `/admin/admin-roles/${id}`, { token: ops.accessToken, body: { name: '  renamed-diff  ', description: null, permissions: ['users:read', 'plans:read'] } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'renamed-diff', description: null, permissions: ['admin:access', 'legacy:thing', 'plans:read', 'users:read'] });

    // Sending the legacy string back is accepted (it is already on the role); a new unknown one is not.
    const again = await api(t, 'PATCH', `/admin/admin-roles/${id}`, { token: ops.accessToken, body: { permissions: ['legacy:thing'] } });
    expect(again.body.data.permissions).toEqual(['admin:access', 'legacy:thing']);
    const bad = await api(t, 'PATCH', `/admin/admin-roles/${id}`, { token: ops.accessToken, body: { permissions: ['other:legacy'] } });
    expect(bad.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Invalid permission: other:legacy' });

    // Omitted fields are left unchanged.
    const keep = await gql(t.url, 'mutation($id: UUID!) { adminUpdateRole(id: $id, input: { description: "back" }) { name description permissions } }', { id }, auth());
    expect(keep.body.data!.adminUpdateRole).toEqual({ name: 'renamed-diff', description: 'back', permissions: ['admin:access', 'legacy:thing'] });

    const other = await createRole({ name: `other-${randomUUID()}`, permissions: [] });
    const clash = await api(t, 'PATCH', `/admin/admin-roles/${id}`, { token: ops.accessToken, body: { name: other.body.data.name } });
    expect(clash.body).toEqual({ error: 'CONFLICT', message: 'Role name already in use' });
  });

  test('system roles are editable but not deletable', async () => {
    const roles = await api(t, 'GET', '/admin/admin-roles', { token: ops.accessToken });
    const superAdmin = (roles.body.data as { id: string; name: string; is_system: boolean; member_count: number }[]).find((r) => r.name === SUPER_ADMIN_ROLE)!;
    expect(superAdmin.is_system).toBe(true);
    expect(superAdmin.member_count).toBeGreaterThanOrEqual(1);
    const edit = await api(t, 'PATCH', `/admin/admin-roles/${superAdmin.id}`, { token: ops.accessToken, body: { description: 'Operators' } });
    expect(edit.status).toBe(200);
    expect(edit.body.data.description).toBe('Operators');
    const del = await api(t, 'DELETE', `/admin/admin-roles/${superAdmin.id}`, { token: ops.accessToken });
    expect(del.status).toBe(409);
    expect(del.body).toEqual({ error: 'CONFLICT', message: 'Cannot delete system admin role' });
    const g = await gql(t.url, 'mutation($id: UUID!) { adminDeleteRole(id: $id) }', { id: superAdmin.id }, auth());
    expect(g.body.errors?.[0]).toMatchObject({ message: 'Cannot delete system admin role', extensions: { code: 'CONFLICT' } });
  });

  test('the system role cannot be renamed or lose role management; operators can still manage roles afterwards', async () => {
    const roles = await api(t, 'GET', '/admin/admin-roles', { token: ops.accessToken });
    const superAdmin = (roles.body.data as { id: string; name: string; is_system: boolean; permissions: string[] }[]).find((r) => r.is_system)!;
    expect(superAdmin.name).toBe(SUPER_ADMIN_ROLE);
    const path = `/admin/admin-roles/${superAdmin.id}`;

    // The fuzzer's sequence: rename to "0" and strip every permission in one request.
    const strip = await api(t, 'PATCH', path, { token: ops.accessToken, body: { name: '0', permissions: [] } });
    expect(strip.status).toBe(409);
    expect(strip.body).toEqual({ error: 'CONFLICT', message: 'Cannot rename system admin role' });
    const rename = await api(t, 'PATCH', path, { token: ops.accessToken, body: { name: 'operators' } });
    expect(rename.body).toEqual({ error: 'CONFLICT', message: 'Cannot rename system admin role' });
    const empty = await api(t, 'PATCH', path, { token: ops.accessToken, body: { permissions: [] } });
    expect(empty.status).toBe(409);
    expect(empty.body).toEqual({ error: 'CONFLICT', message: 'System admin role must keep permission: admin-roles:read' });
    const noEdit = await api(t, 'PATCH', path, { token: ops.accessToken, body: { permissions: superAdmin.permissions.filter((p) => p !== 'admin-roles:edit') } });
    expect(noEdit.body).toEqual({ error: 'CONFLICT', message: 'System admin role must keep permission: admin-roles:edit' });
    const g = await gql(t.url, 'mutation($id: UUID!) { adminUpdateRole(id: $id, input: { name: "0", permissions: [] }) { id } }', { id: superAdmin.id }, auth());
    expect(g.body.errors?.[0]).toMatchObject({ message: 'Cannot rename system admin role', extensions: { code: 'CONFLICT' } });
    const gPerm = await gql(t.url, 'mutation($id: UUID!) { adminUpdateRole(id: $id, input: { permissions: ["users:read"] }) { id } }', { id: superAdmin.id }, auth());
    expect(gPerm.body.errors?.[0]).toMatchObject({ message: 'System admin role must keep permission: admin-roles:read', extensions: { code: 'CONFLICT' } });

    // Nothing was written: same name, same permissions.
    const after = await api(t, 'GET', path, { token: ops.accessToken });
    expect(after.body.data).toMatchObject({ name: SUPER_ADMIN_ROLE, is_system: true, permissions: superAdmin.permissions });

    // Still editable within the rule: the same name (trimmed) and fewer non-essential permissions are fine.
    const keep = await api(t, 'PATCH', path, { token: ops.accessToken, body: { name: ` ${SUPER_ADMIN_ROLE} `, permissions: ['admin-roles:read', 'admin-roles:create', 'admin-roles:edit', 'admin-roles:delete'] } });
    expect(keep.status).toBe(200);
    expect(keep.body.data.permissions).toEqual(['admin-roles:create', 'admin-roles:delete', 'admin-roles:edit', 'admin-roles:read', 'admin:access']);

    // A fresh operator token: role management still works through the API and repairs the role.
    const relog = await devLogin(t, operatorEmail);
    const restore = await api(t, 'PATCH', path, { token: relog.accessToken, body: { permissions: superAdmin.permissions } });
    expect(restore.status).toBe(200);
    expect(restore.body.data.permissions).toEqual(superAdmin.permissions);
    const created = await api(t, 'POST', '/admin/admin-roles', { token: relog.accessToken, body: { name: `after-${randomUUID()}`, permissions: ['users:read'] } });
    expect(created.status).toBe(201);
    const removed = await api(t, 'DELETE', `/admin/admin-roles/${created.body.data.id}`, { token: relog.accessToken });
    expect(removed.body).toEqual({ success: true });
  });

  test('bootstrap finds the system role by its flag, not its name', async () => {
    const role = (await t.app.db.knex('admin_roles').where({ is_system: true }).first('id', 'name')) as { id: string; name: string };
    // A store renamed by an older release (before the rule above).
    await t.app.db.knex('admin_roles').where({ id: role.id }).update({ name: 'renamed-by-older-release' });
    try {
      const op = await devLogin(t, lateOperatorEmail);
      expect(await t.app.db.knex('admin_role_assignments').where({ user_id: op.userId, role_id: role.id })).toHaveLength(1);
      const list = await api(t, 'GET', '/admin/admin-roles', { token: op.accessToken });
      expect(list.status).toBe(200);
    } finally {
      await t.app.db.knex('admin_roles').where({ id: role.id }).update({ name: role.name });
    }
  });

  test('every read and write path answers permissions sorted', async () => {
    const name = `sorted-${randomUUID()}`;
    const wanted = ['users:read', 'plans:edit', 'admin-roles:read', 'features:read', 'accounts:read'];
    const sorted = [...wanted, 'admin:access'].sort();
    const created = await createRole({ name, permissions: wanted });
    expect(created.body.data.permissions).toEqual(sorted);
    const id = created.body.data.id as string;
    expect((await api(t, 'GET', `/admin/admin-roles/${id}`, { token: ops.accessToken })).body.data.permissions).toEqual(sorted);
    const list = await api(t, 'GET', '/admin/admin-roles', { token: ops.accessToken });
    for (const r of list.body.data as { permissions: string[] }[]) expect(r.permissions).toEqual([...r.permissions].sort());
    const patched = await api(t, 'PATCH', `/admin/admin-roles/${id}`, { token: ops.accessToken, body: { permissions: ['users:edit', ...wanted] } });
    expect(patched.body.data.permissions).toEqual([...sorted, 'users:edit'].sort());
    const g = await gql(
      t.url,
      'query($id: UUID!) { adminRole(id: $id) { permissions } adminRoles { permissions } }',
      { id },
      auth(),
    );
    expect((g.body.data!.adminRole as { permissions: string[] }).permissions).toEqual([...sorted, 'users:edit'].sort());
    for (const r of g.body.data!.adminRoles as { permissions: string[] }[]) expect(r.permissions).toEqual([...r.permissions].sort());
    const gc = await gql(t.url, 'mutation($i: CreateAdminRoleInput!) { adminCreateRole(input: $i) { id permissions } }', { i: { name: `g-${name}`, permissions: wanted } }, auth());
    const gRole = gc.body.data!.adminCreateRole as { id: string; permissions: string[] };
    expect(gRole.permissions).toEqual(sorted);
    const gu = await gql(t.url, 'mutation($id: UUID!) { adminUpdateRole(id: $id, input: { permissions: ["plans:read", "billing:read"] }) { permissions } }', { id: gRole.id }, auth());
    expect(gu.body.data!.adminUpdateRole).toEqual({ permissions: ['admin:access', 'billing:read', 'plans:read'] });
  });

  test('assignment: true then false, members listed, effective on the next token; unassign; delete cascades', async () => {
    const user = await devLogin(t);
    const denied = await api(t, 'GET', '/admin/admin-roles', { token: user.accessToken });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: admin-roles:read' });

    const role = await createRole({ name: `readers-${randomUUID()}`, permissions: ['admin-roles:read'] });
    const roleId = role.body.data.id as string;
    const first = await api(t, 'PUT', `/admin/admin-roles/${roleId}/members/${user.userId}`, { token: ops.accessToken });
    expect(first.body).toEqual({ success: true, created: true });
    const second = await gql(t.url, 'mutation($u: UUID!, $r: UUID!) { adminAssignUserRole(userId: $u, roleId: $r) }', { u: user.userId, r: roleId }, auth());
    expect(second.body.data!.adminAssignUserRole).toBe(false);
    const unknownUser = await api(t, 'PUT', `/admin/admin-roles/${roleId}/members/${randomUUID()}`, { token: ops.accessToken });
    expect(unknownUser.body).toEqual({ error: 'NOT_FOUND', message: 'User not found' });

    const members = await api(t, 'GET', `/admin/admin-roles/${roleId}/members`, { token: ops.accessToken });
    expect(members.body.data).toEqual([{ user_id: user.userId, display_name: expect.any(String), email: user.email, avatar_url: null, assigned_at: expect.any(String) }]);
    const gm = await gql(t.url, 'query($r: UUID!) { adminRoleMembers(roleId: $r) { userId } adminRole(id: $r) { memberCount } }', { r: roleId }, auth());
    expect(gm.body.data).toEqual({ adminRoleMembers: [{ userId: user.userId }], adminRole: { memberCount: 1 } });

    // The token minted before the assignment does not carry it; the next one does, without a restart.
    expect((await api(t, 'GET', '/admin/admin-roles', { token: user.accessToken })).status).toBe(403);
    const refreshed = await api(t, 'POST', '/auth/refresh', { body: { refresh_token: user.refreshToken } });
    const next = refreshed.body.data.access_token as string;
    expect((await api(t, 'GET', '/admin/admin-roles', { token: next })).status).toBe(200);
    const g = await gql(t.url, '{ adminRoles { name } }', {}, { authorization: `Bearer ${next}` });
    expect(g.body.data!.adminRoles).toEqual(expect.arrayContaining([{ name: role.body.data.name }]));
    // Still no write permission.
    const write = await api(t, 'POST', '/admin/admin-roles', { token: next, body: { name: 'nope', permissions: [] } });
    expect(write.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: admin-roles:create' });

    const removed = await api(t, 'DELETE', `/admin/admin-roles/${roleId}/members/${user.userId}`, { token: ops.accessToken });
    expect(removed.body).toEqual({ success: true, removed: true });
    expect((await api(t, 'GET', '/admin/admin-roles', { token: next })).status).toBe(403);
    const gone = await gql(t.url, 'mutation($u: UUID!, $r: UUID!) { adminUnassignUserRole(userId: $u, roleId: $r) }', { u: user.userId, r: roleId }, auth());
    expect(gone.body.data!.adminUnassignUserRole).toBe(false);

    // Deleting a role removes its assignments with it.
    await api(t, 'PUT', `/admin/admin-roles/${roleId}/members/${user.userId}`, { token: ops.accessToken });
    const del = await api(t, 'DELETE', `/admin/admin-roles/${roleId}`, { token: ops.accessToken });
    expect(del.body).toEqual({ success: true });
    expect(await t.app.db.knex('admin_role_assignments').where({ role_id: roleId })).toEqual([]);
    const log = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken, query: { scope: 'system' } });
    const types = (log.body.items as { type: string }[]).map((i) => i.type);
    expect(types).toEqual(expect.arrayContaining(['system:admin_role_assigned', 'system:admin_role_unassigned', 'system:admin_role_deleted']));
  });
});
