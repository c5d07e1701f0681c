/** Setting presets: the user's own CRUD with the plan quota, and the operator's payload-free list and delete. */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const operatorEmail = `ops-${randomUUID()}@example.test`;

describe('setting presets', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] } });
  let ops: LoggedIn;
  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
  });
  const save = (user: LoggedIn, body: Record<string, unknown>) => api(t, 'POST', '/me/setting-presets', { token: user.accessToken, body });

  test('CRUD of the own presets; one default per kind; another user’s preset is not found', async () => {
    const user = await devLogin(t);
    const first = await save(user, { kind: 'chat', name: 'Dark', payload: { theme: 'dark', nested: { __proto__: 1 } }, is_default: true });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ user_id: user.userId, kind: 'chat', name: 'Dark', payload: { theme: 'dark' }, is_default: true });
    expect(first.body._links.self).toBe(`/v1/me/setting-presets/${first.body.data.id}`);
    const second = await gql(
      t.url,
      'mutation($i: CreateSettingPresetInput!) { createSettingPreset(input: $i) { id isDefault payload } }',
      { i: { kind: 'chat', name: 'Light', payload: { theme: 'light' }, isDefault: true } },
      { authorization: `Bearer ${user.accessToken}` },
    );
    const secondId = (second.body.data!.createSettingPreset as { id: string }).id;
    const list = await api(t, 'GET', '/me/setting-presets', { token: user.accessToken });
    const defaults = (list.body.data as { id: string; is_default: boolean }[]).filter((p) => p.is_default).map((p) => p.id);
    expect(defaults).toEqual([secondId]);

    const renamed = await api(t, 'PATCH', `/me/setting-presets/${first.body.data.id}`, { token: user.accessToken, body: { name: 'Darker', payload: { theme: 'black' } } });
    expect(renamed.body.data).toMatchObject({ name: 'Darker', payload: { theme: 'black' }, is_default: false });
    const blank = await api(t, 'PATCH', `/me/setting-presets/${first.body.data.id}`, { token: user.accessToken, body: { name: '  ' } });
    expect(blank.body).toEqual({ error: 'VALIDATION_ERROR', message: 'name must not be blank' });

    const stranger = await devLogin(t);
    for (const [method, body] of [['PATCH', { name: 'x' }], ['DELETE', undefined]] as const) {
      const res = await api(t, method, `/me/setting-presets/${first.body.data.id}`, { token: stranger.accessToken, body });
      expect(res.body).toEqual({ error: 'NOT_FOUND', message: 'Setting preset not found' });
    }
    expect((await api(t, 'DELETE', `/me/setting-presets/${first.body.data.id}`, { token: user.accessToken })).body).toEqual({ success: true });
    const gDel = await gql(t.url, 'mutation($id: UUID!) { deleteSettingPreset(id: $id) }', { id: secondId }, { authorization: `Bearer ${user.accessToken}` });
    expect(gDel.body.data).toEqual({ deleteSettingPreset: true });
    expect((await api(t, 'GET', '/me/setting-presets', { token: user.accessToken })).body.data).toEqual([]);
  });

  test('a payload past 32768 bytes as JSON is refused on create and update, with the same message on both protocols; one at the bound is stored', async () => {
    const user = await devLogin(t);
    const auth = { authorization: `Bearer ${user.accessToken}` };
    // {"f":"…"} is 8 bytes around the filler.
    const atBound = { f: 'x'.repeat(32768 - 8) };
    const past = { f: 'x'.repeat(32768 - 7) };
    const message = 'payload must be at most 32768 bytes as JSON';
    const saved = await save(user, { kind: 'overlay', name: 'big', payload: atBound });
    expect(saved.status).toBe(201);
    const refused = await save(user, { kind: 'overlay', name: 'too big', payload: past });
    expect([refused.status, refused.body]).toEqual([400, { error: 'VALIDATION_ERROR', message, details: { fields: [{ field: 'payload', message }] } }]);
    const patched = await api(t, 'PATCH', `/me/setting-presets/${saved.body.data.id}`, { token: user.accessToken, body: { payload: past } });
    expect([patched.status, patched.body.message]).toEqual([400, message]);
    const g = await gql(t.url, 'mutation($p: JSON!) { createSettingPreset(input: { kind: "overlay", name: "too big", payload: $p }) { id } }', { p: past }, auth);
    expect(g.body.errors?.[0]).toMatchObject({ message, extensions: { code: 'VALIDATION_ERROR' } });
    const gUpdate = await gql(t.url, 'mutation($id: UUID!, $p: JSON) { updateSettingPreset(id: $id, input: { payload: $p }) { id } }', { id: saved.body.data.id, p: past }, auth);
    expect(gUpdate.body.errors?.[0]).toMatchObject({ message, extensions: { code: 'VALIDATION_ERROR' } });
    const list = await api(t, 'GET', '/me/setting-presets', { token: user.accessToken });
    expect((list.body.data as { payload: unknown }[]).map((p) => p.payload)).toEqual([atBound]);
  });

  test('the quota is the plan’s max_setting_presets (Free 5); 0 is unlimited', async () => {
    const user = await devLogin(t);
    for (let i = 0; i < 5; i++) expect((await save(user, { kind: 'overlay', name: `p${i}`, payload: {} })).status).toBe(201);
    const refused = await save(user, { kind: 'overlay', name: 'p5', payload: {} });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Setting preset limit reached: your plan allows 5 preset(s)' });
    const g = await gql(t.url, 'mutation { createSettingPreset(input: { kind: "overlay", name: "p5", payload: {} }) { id } }', {}, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.errors?.[0]).toMatchObject({ message: refused.body.message, extensions: { code: 'PLAN_LIMIT_REACHED' } });

    // Moved to a plan with max_setting_presets 0: unlimited.
    const slug = `unl-${randomUUID().slice(0, 8)}`;
    const plan = await api(t, 'POST', '/admin/plans', {
      token: ops.accessToken,
      body: { slug, name: 'Unlimited', price_monthly: 0, price_yearly: 0, is_public: false, sort_order: 9, max_overlays: 0, max_storage_bytes: 0, max_upload_size_bytes: 0, max_integrations: 0, chat_retention_days: 0, max_sounds: 0, max_sound_file_size: 0, max_sound_storage_bytes: 0, max_setting_presets: 0 },
    });
    // The user's best owned plan counts: the free plan allows 5, so move the account off it.
    await api(t, 'PUT', `/admin/accounts/${user.accountId}/plan`, { token: ops.accessToken, body: { plan_id: plan.body.data.id } });
    expect((await save(user, { kind: 'overlay', name: 'p5', payload: {} })).status).toBe(201);
  });

  test('operators list without payloads and delete with an audit row; unknown id is not found', async () => {
    const user = await devLogin(t);
    const saved = await save(user, { kind: 'chat', name: 'Secretive', payload: { token: 'do-not-show' } });
    const listed = await api(t, 'GET', `/admin/users/${user.userId}/setting-presets`, { token: ops.accessToken });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([{ id: saved.body.data.id, user_id: user.userId, kind: 'chat', name: 'Secretive', is_default: false, created_at: expect.any(String), updated_at: expect.any(String) }]);
    expect(JSON.stringify(listed.body)).not.toContain('do-not-show');
    const g = await gql(t.url, 'query($id: UUID!) { adminUserSettingPresets(id: $id) { id name } }', { id: user.userId }, { authorization: `Bearer ${ops.accessToken}` });
    expect(g.body.data!.adminUserSettingPresets).toEqual([{ id: saved.body.data.id, name: 'Secretive' }]);
    const noPayload = await gql(t.url, 'query($id: UUID!) { adminUserSettingPresets(id: $id) { payload } }', { id: user.userId }, { authorization: `Bearer ${ops.accessToken}` });
    expect(noPayload.body.errors?.length).toBeGreaterThan(0);

    const denied = await api(t, 'GET', `/admin/users/${user.userId}/setting-presets`, { token: user.accessToken });
    expect(denied.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: users:read' });
    const deniedDelete = await api(t, 'DELETE', `/admin/setting-presets/${saved.body.data.id}`, { token: user.accessToken });
    expect(deniedDelete.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: users:edit' });

    const deleted = await api(t, 'DELETE', `/admin/setting-presets/${saved.body.data.id}`, { token: ops.accessToken });
    expect(deleted.status).toBe(204);
    const again = await api(t, 'DELETE', `/admin/setting-presets/${saved.body.data.id}`, { token: ops.accessToken });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: 'NOT_FOUND', message: 'Setting preset not found' });
    const gAgain = await gql(t.url, 'mutation($id: UUID!) { adminDeleteUserSettingPreset(id: $id) }', { id: saved.body.data.id }, { authorization: `Bearer ${ops.accessToken}` });
    expect(gAgain.body.errors?.[0]).toMatchObject({ message: 'Setting preset not found', extensions: { code: 'NOT_FOUND' } });
    const log = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken, query: { type: 'system:user_setting_preset_deleted', user_id: user.userId } });
    expect(log.body.items).toHaveLength(1);
    expect(log.body.items[0]).toMatchObject({ scope: 'system', user_id: user.userId, actor_id: ops.userId, metadata: { preset_id: saved.body.data.id } });
  });
});
