/** `me` / `updateMe` with the documented fields, and `createAccount` refusing past `maxAccounts`. */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount } from '../helpers/users';

const ME = '{ me { id activeAccountId ownedAccountCount maxAccounts isDeveloper extensionDevMode featureStatuses { key enabled reason } } }';

describe('me', () => {
  const t = useTestApp();

  test('REST and GraphQL answer the documented fields', async () => {
    const user = await devLogin(t);
    const rest = await api(t, 'GET', '/me', { token: user.accessToken });
    expect(rest.status).toBe(200);
    expect(rest.body.data).toMatchObject({ id: user.userId, active_account_id: user.accountId, owned_account_count: 1, max_accounts: 3, is_developer: false, extension_dev_mode: false });
    const statuses = rest.body.data.feature_statuses as { key: string; enabled: boolean; reason: string | null }[];
    expect(statuses).toContainEqual({ key: 'system:account_creation', enabled: true, reason: null });
    expect(statuses).toContainEqual({ key: 'feature:events', enabled: true, reason: null });
    const g = await gql(t.url, ME, {}, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.data!.me).toMatchObject({ id: user.userId, activeAccountId: user.accountId, ownedAccountCount: 1, maxAccounts: 3, isDeveloper: false, extensionDevMode: false });
    expect((g.body.data!.me as { featureStatuses: unknown[] }).featureStatuses).toHaveLength(statuses.length);
  });

  test('updateMe sets extensionDevMode and the display name; omitted fields stay; blank names are refused', async () => {
    const user = await devLogin(t);
    const res = await api(t, 'PATCH', '/me', { token: user.accessToken, body: { extension_dev_mode: true } });
    expect(res.status).toBe(200);
    expect(res.body.data.extension_dev_mode).toBe(true);
    expect(res.body._links.self).toBe('/v1/me');
    const g = await gql(t.url, 'mutation { updateMe(input: { displayName: "  New name  " }) { displayName extensionDevMode } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.data!.updateMe).toEqual({ displayName: 'New name', extensionDevMode: true });
    const blank = await api(t, 'PATCH', '/me', { token: user.accessToken, body: { display_name: '   ' } });
    expect(blank.body).toEqual({ error: 'VALIDATION_ERROR', message: 'display_name must not be blank' });
    const gBlank = await gql(t.url, 'mutation { updateMe(input: { displayName: " " }) { id } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(gBlank.body.errors?.[0]).toMatchObject({ message: 'display_name must not be blank', extensions: { code: 'VALIDATION_ERROR' } });
    const off = await gql(t.url, 'mutation { updateMe(input: { extensionDevMode: false }) { extensionDevMode displayName } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(off.body.data!.updateMe).toEqual({ extensionDevMode: false, displayName: 'New name' });
  });

  test('activeAccountId is null once the token account is no longer the user’s', async () => {
    const owner = await devLogin(t);
    const member = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    expect((await api(t, 'GET', '/me', { token: member.accessToken })).body.data.active_account_id).toBe(owner.accountId);
    await api(t, 'DELETE', `/account/members/${member.userId}`, { token: owner.accessToken });
    expect((await api(t, 'GET', '/me', { token: member.accessToken })).body.data.active_account_id).toBeNull();
    const g = await gql(t.url, '{ me { activeAccountId } }', {}, { authorization: `Bearer ${member.accessToken}` });
    expect(g.body.data!.me).toEqual({ activeAccountId: null });
  });

  test('createAccount refuses past maxAccounts with PLAN_LIMIT_REACHED on both protocols', async () => {
    const user = await devLogin(t, `limit-${randomUUID()}@example.test`);
    expect((await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'Second' } })).status).toBe(201);
    const third = await gql(t.url, 'mutation { createAccount(input: { name: "Third" }) { id } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(third.body.errors).toBeUndefined();
    const refused = await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'Fourth' } });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Account limit reached: your plan allows 3 owned account(s)' });
    const g = await gql(t.url, 'mutation { createAccount(input: { name: "Fourth" }) { id } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.errors?.[0]).toMatchObject({ message: refused.body.message, extensions: { code: 'PLAN_LIMIT_REACHED' } });
    const me = await api(t, 'GET', '/me', { token: user.accessToken });
    expect(me.body.data).toMatchObject({ owned_account_count: 3, max_accounts: 3 });
    // An operator override raises the limit.
    await t.app.db.knex('users').where({ id: user.userId }).update({ max_accounts_override: 4 });
    expect((await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'Fourth' } })).status).toBe(201);
  });
});
