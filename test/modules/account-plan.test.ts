/**
 * The active account's name and plan: rename (`account:edit`) and the plan with usage against
 * every quota (`plan:read`: owners hold it, administrators do not), REST and GraphQL twins.
 */
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount } from '../helpers/users';

describe('account name, plan and usage', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test('the owner renames the account; blank is refused; audited', async () => {
    const owner = await devLogin(t);
    const res = await api(t, 'PATCH', '/account', { token: owner.accessToken, body: { name: '  Studio Night  ' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: owner.accountId, name: 'Studio Night', role: 'owner' });
    expect((await api(t, 'GET', '/account', { token: owner.accessToken })).body.data.name).toBe('Studio Night');
    const blank = await api(t, 'PATCH', '/account', { token: owner.accessToken, body: { name: '   ' } });
    expect([blank.status, blank.body]).toEqual([400, { error: 'VALIDATION_ERROR', message: 'name must not be blank' }]);
    const g = await gql(t.url, 'mutation { updateAccount(input: { name: "Day Show" }) { name role } }', {}, { authorization: `Bearer ${owner.accessToken}` });
    expect(g.body.data!.updateAccount).toEqual({ name: 'Day Show', role: 'owner' });
    const gBlank = await gql(t.url, 'mutation { updateAccount(input: { name: " " }) { name } }', {}, { authorization: `Bearer ${owner.accessToken}` });
    expect(gBlank.body.errors?.[0]).toMatchObject({ message: 'name must not be blank', extensions: { code: 'VALIDATION_ERROR' } });
    const log = await api(t, 'GET', '/account/audit-log', { token: owner.accessToken, query: { type: 'account:updated' } });
    expect(log.body.items.map((i: { metadata: unknown }) => i.metadata)).toEqual([
      { name: 'Day Show', previous_name: 'Studio Night' },
      { name: 'Studio Night', previous_name: expect.any(String) },
    ]);

    const viewer = await devLogin(t);
    const asViewer = await joinAccount(t, owner, viewer, { role: 'viewer' });
    const refused = await api(t, 'PATCH', '/account', { token: asViewer.accessToken, body: { name: 'Mine' } });
    expect([refused.status, refused.body]).toEqual([403, { error: 'FORBIDDEN', message: 'Missing permission: account:edit' }]);
  });

  test('the plan and usage against every quota; an overlay counts; administrators lack plan:read', async () => {
    const owner = await devLogin(t);
    const before = await api(t, 'GET', '/account/plan', { token: owner.accessToken });
    expect(before.status).toBe(200);
    expect(before.body.data.plan).toEqual({ id: expect.any(String), slug: 'free', name: 'Free' });
    const usage = before.body.data.usage as { quota: string; used: number; limit: number }[];
    expect(usage.map((u) => u.quota)).toEqual(['overlays', 'widgets', 'integrations', 'storage_bytes', 'sounds']);
    expect(usage.every((u) => u.used === 0 && u.limit >= 0)).toBe(true);

    expect((await api(t, 'POST', '/overlays', { token: owner.accessToken, body: { name: 'Alerts' } })).status).toBe(201);
    const g = await gql(t.url, '{ accountPlan { plan { slug } usage { quota used limit } } }', {}, { authorization: `Bearer ${owner.accessToken}` });
    const plan = g.body.data!.accountPlan as { plan: unknown; usage: unknown[] };
    expect(plan.plan).toEqual({ slug: 'free' });
    expect(plan.usage[0]).toEqual({ quota: 'overlays', used: 1, limit: usage[0]!.limit });
    const after = await api(t, 'GET', '/account/plan', { token: owner.accessToken });
    expect(after.body.data.usage).toEqual(plan.usage);

    const admin = await devLogin(t);
    const asAdmin = await joinAccount(t, owner, admin, { role: 'administrator' });
    const refused = await api(t, 'GET', '/account/plan', { token: asAdmin.accessToken });
    expect([refused.status, refused.body]).toEqual([403, { error: 'FORBIDDEN', message: 'Missing permission: plan:read' }]);
  });
});
