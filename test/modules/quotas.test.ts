/**
 * Plan quotas where resources are created, over real HTTP and GraphQL: `max_overlays`
 * on overlay and widget create (each kind counted apart), `max_integrations` on connection create
 * (a reconnect of a platform already connected takes no new slot), the same PLAN_LIMIT_REACHED
 * code and message on both protocols, and two creates at once never passing a quota together
 * (the account row is the lock). Upload and storage quotas are in sounds.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const operatorEmail = `ops-${randomUUID()}@example.test`;
const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] }, rate_limits: { enabled: false } });
let ops: LoggedIn;
beforeAll(async () => {
  ops = await devLogin(t, operatorEmail);
});

/** A fresh account on a plan of its own with these limits (every account feature on). */
async function accountOnPlan(limits: { max_overlays: number; max_integrations: number }): Promise<LoggedIn> {
  const user = await devLogin(t);
  const plan = await api(t, 'POST', '/admin/plans', {
    token: ops.accessToken,
    body: {
      slug: `quota-${randomUUID().slice(0, 8)}`,
      name: 'Quota test',
      price_monthly: 0,
      price_yearly: 0,
      is_public: false,
      sort_order: 9,
      max_storage_bytes: 1_000_000,
      max_upload_size_bytes: 1_000_000,
      chat_retention_days: 0,
      max_setting_presets: 0,
      max_sounds: 1,
      max_sound_file_size: 1_000,
      max_sound_storage_bytes: 1_000,
      ...limits,
    },
  });
  expect(plan.status).toBe(201);
  const id = (plan.body.data as { id: string }).id;
  const features = ['feature:overlays', 'feature:widgets', 'feature:connections'].map((feature_key) => ({ feature_key, enabled: true }));
  expect((await api(t, 'PUT', `/admin/plans/${id}/features`, { token: ops.accessToken, body: { features } })).status).toBe(200);
  expect((await api(t, 'PUT', `/admin/accounts/${user.accountId}/plan`, { token: ops.accessToken, body: { plan_id: id } })).status).toBe(200);
  return user;
}

const bearer = (user: LoggedIn) => ({ authorization: `Bearer ${user.accessToken}` });
const count = async (table: string, accountId: string) => Number(((await t.app.db.knex(table).where({ account_id: accountId }).count({ n: '*' }).first()) as { n: string | number }).n);

describe('max_overlays', () => {
  test('overlays: the last allowed one passes, one more is 403 PLAN_LIMIT_REACHED on REST and GraphQL alike', async () => {
    const user = await accountOnPlan({ max_overlays: 2, max_integrations: 1 });
    expect((await api(t, 'POST', '/overlays', { token: user.accessToken, body: { name: 'One' } })).status).toBe(201);
    const second = await gql(t.url, 'mutation($i: CreateOverlayInput!) { createOverlay(input: $i) { id name version settings } }', { i: { name: 'Two', settings: { color: 'red' } } }, bearer(user));
    expect(second.body.data?.createOverlay).toMatchObject({ name: 'Two', version: 1, settings: { color: 'red' } });
    const rest = await api(t, 'POST', '/overlays', { token: user.accessToken, body: { name: 'Three' } });
    expect(rest.status).toBe(403);
    expect(rest.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Overlay limit reached: your plan allows 2 overlay(s)' });
    const graph = await gql(t.url, 'mutation { createOverlay(input: { name: "Three" }) { id } }', {}, bearer(user));
    expect(graph.body.errors?.[0]).toMatchObject({ message: 'Overlay limit reached: your plan allows 2 overlay(s)', extensions: { code: 'PLAN_LIMIT_REACHED' } });
    expect(await count('overlays', user.accountId!)).toBe(2);
    // Widgets are counted apart: the account may still create max_overlays of them.
    expect((await api(t, 'POST', '/widgets', { token: user.accessToken, body: { name: 'W1' } })).status).toBe(201);
    // Deleting one frees its slot.
    const list = await api(t, 'GET', '/overlays', { token: user.accessToken });
    await api(t, 'DELETE', `/overlays/${(list.body.data as { id: string }[])[0]!.id}`, { token: user.accessToken });
    expect((await api(t, 'POST', '/overlays', { token: user.accessToken, body: { name: 'Again' } })).status).toBe(201);
  });

  test('widgets: a plan of 0 refuses the first one', async () => {
    const user = await accountOnPlan({ max_overlays: 0, max_integrations: 1 });
    const rest = await api(t, 'POST', '/widgets', { token: user.accessToken, body: { name: 'W', type: 'goal_bar' } });
    expect(rest.status).toBe(403);
    expect(rest.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Widget limit reached: your plan allows 0 widget(s)' });
    const graph = await gql(t.url, 'mutation { createWidget(input: { name: "W" }) { id } }', {}, bearer(user));
    expect(graph.body.errors?.[0]).toMatchObject({ message: 'Widget limit reached: your plan allows 0 widget(s)', extensions: { code: 'PLAN_LIMIT_REACHED' } });
    expect(await count('widgets', user.accountId!)).toBe(0);
  });

  test('concurrent creates cannot pass the quota together', async () => {
    const user = await accountOnPlan({ max_overlays: 1, max_integrations: 1 });
    const overlays = await Promise.all([0, 1, 2].map((i) => api(t, 'POST', '/overlays', { token: user.accessToken, body: { name: `O${i}` } })));
    expect(overlays.map((r) => r.status).sort()).toEqual([201, 403, 403]);
    const widgets = await Promise.all([0, 1].map((i) => api(t, 'POST', '/widgets', { token: user.accessToken, body: { name: `W${i}` } })));
    expect(widgets.map((r) => r.status).sort()).toEqual([201, 403]);
    expect(await count('overlays', user.accountId!)).toBe(1);
    expect(await count('widgets', user.accountId!)).toBe(1);
  });
});

describe('max_integrations', () => {
  const record = (accountId: string, platform: string) =>
    api(t, 'PUT', `/admin/accounts/${accountId}/connections/${platform}`, { token: ops.accessToken, body: { platform_channel_id: `ch-${randomUUID().slice(0, 8)}`, expires_at: null, reconnect_required: false } });

  test('a new connection past the quota is 403; reconnecting a connected platform takes no new slot; removing one frees it', async () => {
    const user = await accountOnPlan({ max_overlays: 1, max_integrations: 2 });
    expect((await record(user.accountId!, 'platform_a')).status).toBe(200);
    expect((await record(user.accountId!, 'platform_b')).status).toBe(200);
    const third = await record(user.accountId!, 'platform_c');
    expect(third.status).toBe(403);
    expect(third.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Integration limit reached: your plan allows 2 connection(s)' });
    // The same platform again is a reconnect (its row is rewritten), not a new integration.
    expect((await record(user.accountId!, 'platform_a')).status).toBe(200);
    expect(await count('account_connections', user.accountId!)).toBe(2);
    expect((await api(t, 'DELETE', `/admin/accounts/${user.accountId}/connections/platform_b`, { token: ops.accessToken })).status).toBeLessThan(300);
    expect((await record(user.accountId!, 'platform_c')).status).toBe(200);
  });

  test('concurrent connection creates cannot pass the quota together', async () => {
    const user = await accountOnPlan({ max_overlays: 1, max_integrations: 1 });
    const results = await Promise.all(['platform_a', 'platform_b', 'platform_c'].map((p) => record(user.accountId!, p)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 403, 403]);
    expect(await count('account_connections', user.accountId!)).toBe(1);
  });
});
