/**
 * Plans and feature flags (Part 1 "Plans", "Plan rules", "Feature and account types"; DESIGN.md
 * admin levers): every plan message, every reason, the public list, and the cache invalidation
 * across two nodes on one PostgreSQL + Redis.
 */
import { randomUUID } from 'node:crypto';
import { gql, services, startTestApp, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { connect } from '../helpers/ws';

const operatorEmail = `ops-${randomUUID()}@example.test`;

const planBody = (overrides: Record<string, unknown> = {}) => ({
  slug: `p-${randomUUID().slice(0, 8)}`,
  name: 'Test plan',
  price_monthly: 500,
  price_yearly: 5000,
  is_public: true,
  sort_order: 50,
  max_overlays: 3,
  max_storage_bytes: 5 * 1024 ** 3,
  max_upload_size_bytes: 1024,
  max_integrations: 1,
  chat_retention_days: 0,
  max_sounds: 1,
  max_sound_file_size: 1,
  max_sound_storage_bytes: 1,
  max_setting_presets: 0,
  ...overrides,
});

type Status = { key: string; enabled: boolean; reason: string | null };
const FEATURES = '{ accountFeatures { enabledFeatures featureStatuses { key enabled reason } } }';

async function statusOf(t: Pick<TestApp, 'url'>, user: LoggedIn, key: string): Promise<Status | undefined> {
  const res = await gql(t.url, FEATURES, {}, { authorization: `Bearer ${user.accessToken}` });
  return (res.body.data!.accountFeatures as { featureStatuses: Status[] }).featureStatuses.find((s) => s.key === key);
}

describe('plans and feature flags', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] } });
  let ops: LoggedIn;
  const asOps = () => ({ authorization: `Bearer ${ops.accessToken}` });

  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
  });

  test('create: defaults, every plan rule message, duplicate slug, permission', async () => {
    const body = planBody({ description: 'd', stripe_product_id: 'prod_1' });
    const created = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ slug: body.slug, currency: 'USD', max_storage_bytes: 5 * 1024 ** 3, accounts_using: 0, stripe_product_id: 'prod_1', stripe_yearly_price_id: null, max_sounds: 1 });
    expect((created.body.data.features as { enabled: boolean; feature_key: string }[]).every((f) => !f.enabled && !f.feature_key.startsWith('system:'))).toBe(true);
    expect(created.body._links.self).toBe(`/v1/admin/plans/${created.body.data.id}`);

    for (const slug of ['a', 'Bad_Slug', 'x'.repeat(41), '-lead', 'double--dash']) {
      const res = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody({ slug }) });
      expect([slug, res.status, res.body]).toEqual([slug, 400, { error: 'VALIDATION_ERROR', message: 'Invalid slug format' }]);
    }
    const price = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody({ price_yearly: -1 }) });
    expect(price.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Price cannot be negative' });
    const limit = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody({ max_sound_file_size: -1 }) });
    expect(limit.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Limit cannot be negative' });
    const dup = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody({ slug: body.slug }) });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ error: 'CONFLICT', message: 'Plan slug already in use' });

    const mutation = 'mutation($i: AdminCreatePlanInput!) { adminCreatePlan(input: $i) { slug currency maxStorageBytes accountsUsing } }';
    const gi = { slug: `g-${randomUUID().slice(0, 8)}`, name: 'G', priceMonthly: 1, priceYearly: 2, isPublic: false, sortOrder: 1, maxOverlays: 1, maxStorageBytes: 1, maxUploadSizeBytes: 1, maxIntegrations: 1, chatRetentionDays: 1, maxSettingPresets: 1 };
    const g = await gql(t.url, mutation, { i: { ...gi, currency: 'EUR' } }, asOps());
    expect(g.body.data!.adminCreatePlan).toEqual({ slug: gi.slug, currency: 'EUR', maxStorageBytes: 1, accountsUsing: 0 });
    for (const [input, message] of [
      [{ ...gi, slug: 'NOPE' }, 'Invalid slug format'],
      [{ ...gi, slug: `h-${randomUUID().slice(0, 8)}`, priceMonthly: -5 }, 'Price cannot be negative'],
      [{ ...gi, slug: `h-${randomUUID().slice(0, 8)}`, maxOverlays: -5 }, 'Limit cannot be negative'],
      [gi, 'Plan slug already in use'],
    ] as const) {
      const res = await gql(t.url, mutation, { i: input }, asOps());
      expect(res.body.errors?.[0]?.message).toBe(message);
    }

    const user = await devLogin(t);
    const denied = await api(t, 'POST', '/admin/plans', { token: user.accessToken, body: planBody() });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: plans:create' });
    const { slug: _s, ...edit } = planBody({ currency: 'USD' });
    const deniedEdit = await api(t, 'PATCH', `/admin/plans/${created.body.data.id}`, { token: user.accessToken, body: edit });
    expect(deniedEdit.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: plans:edit' });
  });

  test('update rewrites the editable set; unknown id; delete refuses a plan in use with the count', async () => {
    const created = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody({ description: 'keep?' }) });
    const id = created.body.data.id as string;
    const { slug: _slug, ...update } = planBody({ name: 'Renamed', currency: 'EUR', price_monthly: 0 });
    const res = await api(t, 'PATCH', `/admin/plans/${id}`, { token: ops.accessToken, body: update });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'Renamed', currency: 'EUR', price_monthly: 0, description: null, slug: created.body.data.slug });
    const negative = await api(t, 'PATCH', `/admin/plans/${id}`, { token: ops.accessToken, body: { ...update, max_overlays: -1 } });
    expect(negative.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Limit cannot be negative' });
    const missing = await api(t, 'PATCH', `/admin/plans/${randomUUID()}`, { token: ops.accessToken, body: update });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'NOT_FOUND', message: 'Plan not found' });
    const gMissing = await gql(
      t.url,
      'mutation($id: UUID!, $i: AdminUpdatePlanInput!) { adminUpdatePlan(id: $id, input: $i) { id } }',
      { id: randomUUID(), i: { name: 'x', priceMonthly: 0, priceYearly: 0, currency: 'USD', isPublic: true, sortOrder: 0, maxOverlays: 0, maxStorageBytes: 0, maxUploadSizeBytes: 0, maxIntegrations: 0, chatRetentionDays: 0, maxSettingPresets: 0 } },
      asOps(),
    );
    expect(gMissing.body.errors?.[0]).toMatchObject({ message: 'Plan not found', extensions: { code: 'NOT_FOUND' } });

    const plans = await gql(t.url, '{ adminPlans { id slug accountsUsing } }', {}, asOps());
    const free = (plans.body.data!.adminPlans as { id: string; slug: string; accountsUsing: number }[]).find((p) => p.slug === 'free')!;
    expect(free.accountsUsing).toBeGreaterThan(0);
    const inUse = await api(t, 'DELETE', `/admin/plans/${free.id}`, { token: ops.accessToken });
    expect(inUse.status).toBe(409);
    expect(inUse.body).toEqual({ error: 'CONFLICT', message: `Cannot delete plan: ${free.accountsUsing} account(s) still reference it. Migrate them to a different plan first.` });

    const deleted = await api(t, 'DELETE', `/admin/plans/${id}`, { token: ops.accessToken });
    expect(deleted.status).toBe(204);
    expect((await api(t, 'DELETE', `/admin/plans/${id}`, { token: ops.accessToken })).body).toEqual({ error: 'NOT_FOUND', message: 'Plan not found' });
    const other = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody() });
    const gDel = await gql(t.url, 'mutation($id: UUID!) { adminDeletePlan(id: $id) }', { id: other.body.data.id }, asOps());
    expect(gDel.body.data).toEqual({ adminDeletePlan: true });
  });

  test('public plans: only public ones, by sort order, four categories, unmapped flags off, global switch reported', async () => {
    const hidden = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody({ is_public: false, sort_order: -1 }) });
    const shown = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody({ sort_order: 2 }) });
    await api(t, 'PUT', `/admin/plans/${shown.body.data.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:bots', enabled: true }] } });
    await api(t, 'PUT', '/admin/feature-flags/feature:bots', { token: ops.accessToken, body: { enabled: false } });
    try {
      const res = await gql(t.url, '{ plans { slug sortOrder priceMonthly maxStorageBytes features { featureKey enabled globallyEnabled } } }');
      const plans = res.body.data!.plans as { slug: string; sortOrder: number; priceMonthly: string; maxStorageBytes: string; features: { featureKey: string; enabled: boolean; globallyEnabled: boolean }[] }[];
      expect(plans.map((p) => p.slug)).not.toContain(hidden.body.data.slug);
      expect(plans.map((p) => p.sortOrder)).toEqual([...plans.map((p) => p.sortOrder)].sort((a, b) => a - b));
      const mine = plans.find((p) => p.slug === shown.body.data.slug)!;
      expect(mine.priceMonthly).toBe('500');
      expect(mine.maxStorageBytes).toBe(String(5 * 1024 ** 3));
      expect(mine.features.some((f) => f.featureKey.startsWith('system:'))).toBe(false);
      expect(mine.features.find((f) => f.featureKey === 'feature:bots')).toEqual({ featureKey: 'feature:bots', enabled: true, globallyEnabled: false });
      expect(mine.features.find((f) => f.featureKey === 'feature:events')).toEqual({ featureKey: 'feature:events', enabled: false, globallyEnabled: true });
      const flagBody = await api(t, 'PUT', '/admin/feature-flags/feature:nope', { token: ops.accessToken, body: { enabled: false } });
      expect(flagBody.body).toEqual({ error: 'NOT_FOUND', message: 'Feature flag not found' });
      const sys = await api(t, 'PUT', `/admin/plans/${shown.body.data.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'system:public_stats', enabled: true }] } });
      expect(sys.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Feature flag is not an account feature' });
    } finally {
      await api(t, 'PUT', '/admin/feature-flags/feature:bots', { token: ops.accessToken, body: { enabled: true } });
    }
  });

  test('every reason: PLAN_LOCKED, ACCOUNT_OVERRIDE, GLOBAL_OFF, USER_OVERRIDE; accountFeatures leaves system flags out', async () => {
    const user = await devLogin(t);
    const all = await gql(t.url, FEATURES, {}, { authorization: `Bearer ${user.accessToken}` });
    const features = all.body.data!.accountFeatures as { enabledFeatures: string[]; featureStatuses: Status[] };
    expect(features.featureStatuses.some((s) => s.key.startsWith('system:'))).toBe(false);
    expect(features.enabledFeatures).toContain('feature:bots');
    expect(features.featureStatuses.every((s) => s.enabled && s.reason === null)).toBe(true);

    const plan = await api(t, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody() });
    await api(t, 'PUT', `/admin/plans/${plan.body.data.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:events', enabled: true }] } });
    const moved = await api(t, 'PUT', `/admin/accounts/${user.accountId}/plan`, { token: ops.accessToken, body: { plan_id: plan.body.data.id } });
    expect(moved.body.data).toEqual({ account_id: user.accountId, plan_id: plan.body.data.id, plan: plan.body.data.slug });
    expect(await statusOf(t, user, 'feature:bots')).toEqual({ key: 'feature:bots', enabled: false, reason: 'PLAN_LOCKED' });
    expect(await statusOf(t, user, 'feature:events')).toEqual({ key: 'feature:events', enabled: true, reason: null });

    const grant = await api(t, 'PUT', `/admin/accounts/${user.accountId}/feature-overrides/feature:bots`, { token: ops.accessToken, body: { enabled: true } });
    expect(grant.body.data).toEqual({ account_id: user.accountId, feature_key: 'feature:bots', enabled: true });
    expect(await statusOf(t, user, 'feature:bots')).toEqual({ key: 'feature:bots', enabled: true, reason: null });
    await api(t, 'PUT', `/admin/accounts/${user.accountId}/feature-overrides/feature:events`, { token: ops.accessToken, body: { enabled: false } });
    expect(await statusOf(t, user, 'feature:events')).toEqual({ key: 'feature:events', enabled: false, reason: 'ACCOUNT_OVERRIDE' });
    const cleared = await api(t, 'PUT', `/admin/accounts/${user.accountId}/feature-overrides/feature:events`, { token: ops.accessToken, body: { enabled: null } });
    expect(cleared.body.data.enabled).toBeNull();
    expect((await statusOf(t, user, 'feature:events'))!.enabled).toBe(true);

    await api(t, 'PUT', '/admin/feature-flags/feature:events', { token: ops.accessToken, body: { enabled: false } });
    try {
      expect(await statusOf(t, user, 'feature:events')).toEqual({ key: 'feature:events', enabled: false, reason: 'GLOBAL_OFF' });
    } finally {
      await api(t, 'PUT', '/admin/feature-flags/feature:events', { token: ops.accessToken, body: { enabled: true } });
    }

    const errors = [
      [`/admin/accounts/${randomUUID()}/plan`, { plan_id: plan.body.data.id }, 'Account not found'],
      [`/admin/accounts/${user.accountId}/plan`, { plan_id: randomUUID() }, 'Plan not found'],
      [`/admin/accounts/${user.accountId}/feature-overrides/feature:nope`, { enabled: true }, 'Feature flag not found'],
    ] as const;
    for (const [path, body, message] of errors) expect((await api(t, 'PUT', path, { token: ops.accessToken, body })).body).toEqual({ error: 'NOT_FOUND', message });

    // The per-user system:account_creation override.
    const create = () => api(t, 'POST', '/accounts', { token: user.accessToken, body: { name: 'Another' } });
    const set = (override: string) =>
      gql(t.url, 'mutation($u: UUID!, $o: AccountCreationOverride!) { adminUpdateUserAccountCreationOverride(userId: $u, override: $o) { id accountCreationOverride } }', { u: user.userId, o: override }, asOps());
    expect((await set('DENY')).body.data!.adminUpdateUserAccountCreationOverride).toEqual({ id: user.userId, accountCreationOverride: 'DENY' });
    const denied = await create();
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'FEATURE_DISABLED', message: 'Feature disabled: system:account_creation' });
    const gDenied = await gql(t.url, 'mutation { createAccount(input: { name: "x" }) { id } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(gDenied.body.errors?.[0]).toMatchObject({ message: 'Feature disabled: system:account_creation', extensions: { code: 'FEATURE_DISABLED' } });
    await api(t, 'PUT', '/admin/feature-flags/system:account_creation', { token: ops.accessToken, body: { enabled: false } });
    try {
      await set('ALLOW');
      expect((await create()).status).toBe(201);
      await set('DEFAULT');
      expect((await create()).body).toEqual({ error: 'FEATURE_DISABLED', message: 'Feature disabled: system:account_creation' });
    } finally {
      await api(t, 'PUT', '/admin/feature-flags/system:account_creation', { token: ops.accessToken, body: { enabled: true } });
    }
    const unknown = await gql(t.url, 'mutation($u: UUID!) { adminUpdateUserAccountCreationOverride(userId: $u, override: ALLOW) { id } }', { u: randomUUID() }, asOps());
    expect(unknown.body.errors?.[0]?.message).toBe('User not found');
  });

  test('a feature removed from a plan is refused on the next request (WebSocket gate)', async () => {
    const user = await devLogin(t);
    const plans = await gql(t.url, '{ adminPlans { id slug } }', {}, asOps());
    const free = (plans.body.data!.adminPlans as { id: string; slug: string }[]).find((p) => p.slug === 'free')!;
    expect((await statusOf(t, user, 'feature:events'))!.enabled).toBe(true); // cached now
    await api(t, 'PUT', `/admin/plans/${free.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:events', enabled: false }] } });
    try {
      expect(await statusOf(t, user, 'feature:events')).toEqual({ key: 'feature:events', enabled: false, reason: 'PLAN_LOCKED' });
      const socket = await connect(`${t.wsUrl}`, { headers: { authorization: `Bearer ${user.accessToken}` } });
      try {
        socket.send({ type: 'subscribe', channel: `events:${user.accountId}` });
        const refused = await socket.nextMatching((m) => m.type === 'error');
        expect(refused).toMatchObject({ code: 'FEATURE_DISABLED', message: 'Feature disabled: feature:events' });
      } finally {
        socket.close();
      }
    } finally {
      await api(t, 'PUT', `/admin/plans/${free.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:events', enabled: true }] } });
    }
  });
});

const twoNodes = services.postgres && services.redis ? describe : describe.skip;

twoNodes('plan feature cache across two nodes (PostgreSQL + Redis)', () => {
  const a = useTestApp({ auth: { bootstrap_admins: [operatorEmail] } });
  let b: TestApp;
  beforeAll(async () => {
    b = await startTestApp({ database_url: a.app.config.database_url, redis_prefix: a.app.config.redis_prefix, auth: { bootstrap_admins: [operatorEmail] } });
  });
  afterAll(async () => {
    await b?.stop();
  });

  test('every account on an updated plan sees the change on node B with its next request', async () => {
    const ops = await devLogin(a, operatorEmail);
    const users = [await devLogin(a), await devLogin(a)];
    const plan = await api(a, 'POST', '/admin/plans', { token: ops.accessToken, body: planBody() });
    await api(a, 'PUT', `/admin/plans/${plan.body.data.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:events', enabled: true }] } });
    for (const u of users) await api(a, 'PUT', `/admin/accounts/${u.accountId}/plan`, { token: ops.accessToken, body: { plan_id: plan.body.data.id } });
    // Node B reads (and memoises) the accounts' features.
    for (const u of users) expect((await statusOf(b, u, 'feature:events'))!.enabled).toBe(true);

    await api(a, 'PUT', `/admin/plans/${plan.body.data.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:events', enabled: false }] } });
    for (const u of users) expect(await statusOf(b, u, 'feature:events')).toEqual({ key: 'feature:events', enabled: false, reason: 'PLAN_LOCKED' });
    const socket = await connect(b.wsUrl, { headers: { authorization: `Bearer ${users[0]!.accessToken}` } });
    try {
      socket.send({ type: 'subscribe', channel: `events:${users[0]!.accountId}` });
      expect(await socket.nextMatching((m) => m.type === 'error')).toMatchObject({ code: 'FEATURE_DISABLED', message: 'Feature disabled: feature:events' });
    } finally {
      socket.close();
    }

    // And back on through a plan update (the full rewrite) on node A.
    await api(a, 'PUT', `/admin/plans/${plan.body.data.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:events', enabled: true }] } });
    for (const u of users) expect((await statusOf(b, u, 'feature:events'))!.enabled).toBe(true);
  });
});
