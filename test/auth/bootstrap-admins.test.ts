/** `auth.bootstrap_admins`: the first operators of a fresh install get the super-admin role at login. */
import { randomUUID } from 'node:crypto';
import { superAdminPermissions } from '../../src/auth/registry';
import { useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

const operator = `ops-${randomUUID()}@example.test`;

describe('bootstrap admins', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operator.toUpperCase()] } });

  test('a listed e-mail logs in holding every super-admin permission and reads the admin audit log', async () => {
    const ops = await devLogin(t, operator);
    const me = await api(t, 'GET', '/tokens/me', { token: ops.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.data.admin_permissions).toEqual([...superAdminPermissions].sort());
    expect(me.body.data.admin_permissions).not.toContain('audit:ingest');
    const log = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken });
    expect(log.status).toBe(200);
    expect(log.body.items.some((i: { type: string; user_id: string }) => i.type === 'user:login' && i.user_id === ops.userId)).toBe(true);
  });

  test('anyone else holds no admin permission', async () => {
    const user = await devLogin(t);
    const me = await api(t, 'GET', '/tokens/me', { token: user.accessToken });
    expect(me.body.data.admin_permissions).toEqual([]);
    const log = await api(t, 'GET', '/admin/audit-log', { token: user.accessToken });
    expect(log.status).toBe(403);
    expect(log.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: audit-log:read' });
  });
});
