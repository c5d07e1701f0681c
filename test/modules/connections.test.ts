/** Connection statuses and credential modes, with the operator path that records a connection. */
import { randomUUID } from 'node:crypto';
import { gql, startTestApp, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const operatorEmail = `ops-${randomUUID()}@example.test`;
const STATUS = '{ connectionStatuses { platform isConnected reconnectRequired expiresAt loginConnected loginReconnectRequired } }';

describe('connections', () => {
  // enabledProviders and enabledPlatforms also need a configured provider per platform and purpose.
  const provider = (slug: string, purposes: string[]) => ({ slug, kind: 'oidc', issuer: `https://${slug}.example`, client_id: 'c', client_secret: 's', purposes });
  const providers = [
    provider('platform_a', ['login', 'channel', 'bot']),
    provider('platform_b', ['login', 'channel', 'bot']),
    provider('platform_c', ['login', 'channel', 'bot']),
    provider('music_platform', ['channel']),
  ];
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail], providers }, connections: { system_apps: ['platform_a'] } });
  let ops: LoggedIn;
  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
  });

  test('statuses follow the recorded connections: connected, reconnect required, absent', async () => {
    const owner = await devLogin(t);
    const empty = await api(t, 'GET', '/connections/status', { token: owner.accessToken });
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual(
      ['platform_a', 'platform_b', 'platform_c'].map((platform) => ({ platform, is_connected: false, reconnect_required: false, expires_at: null, login_connected: false, login_reconnect_required: false })),
    );
    const expires = new Date(Date.now() + 3600_000).toISOString();
    const a = await api(t, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_a`, { token: ops.accessToken, body: { platform_channel_id: 'chan-1', expires_at: expires } });
    expect(a.body.data).toEqual({ platform: 'platform_a', is_connected: true, reconnect_required: false, expires_at: expires, login_connected: false, login_reconnect_required: false });
    await api(t, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_b`, { token: ops.accessToken, body: { platform_channel_id: 'chan-2', reconnect_required: true } });
    const g = await gql(t.url, STATUS, {}, { authorization: `Bearer ${owner.accessToken}` });
    expect(g.body.data!.connectionStatuses).toEqual([
      { platform: 'platform_a', isConnected: true, reconnectRequired: false, expiresAt: expires, loginConnected: false, loginReconnectRequired: false },
      { platform: 'platform_b', isConnected: false, reconnectRequired: true, expiresAt: null, loginConnected: false, loginReconnectRequired: false },
      { platform: 'platform_c', isConnected: false, reconnectRequired: false, expiresAt: null, loginConnected: false, loginReconnectRequired: false },
    ]);
    // A second PUT replaces the connection; removal is idempotent.
    await api(t, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_b`, { token: ops.accessToken, body: { platform_channel_id: 'chan-2' } });
    expect((await api(t, 'GET', '/connections/status', { token: owner.accessToken })).body.data[1]).toMatchObject({ platform: 'platform_b', is_connected: true, reconnect_required: false });
    expect((await api(t, 'DELETE', `/admin/accounts/${owner.accountId}/connections/platform_b`, { token: ops.accessToken })).body).toEqual({ success: true });
    expect((await api(t, 'DELETE', `/admin/accounts/${owner.accountId}/connections/platform_b`, { token: ops.accessToken })).body).toEqual({ success: true });
    expect((await api(t, 'GET', '/connections/status', { token: owner.accessToken })).body.data[1]).toMatchObject({ is_connected: false, reconnect_required: false });
    const missing = await api(t, 'PUT', `/admin/accounts/${randomUUID()}/connections/platform_a`, { token: ops.accessToken, body: { platform_channel_id: 'x' } });
    expect(missing.body).toEqual({ error: 'NOT_FOUND', message: 'Account not found' });
    const denied = await api(t, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_a`, { token: owner.accessToken, body: { platform_channel_id: 'x' } });
    expect(denied.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: system-connections:edit' });
  });

  test('credential modes: lower case on REST, upper case on GraphQL, SYSTEM degrades when the system app is not configured', async () => {
    const owner = await devLogin(t);
    const rest = await api(t, 'GET', '/connections/credential-modes', { token: owner.accessToken });
    expect(rest.body.data).toContainEqual({ platform: 'platform_a', kind: 'channel', mode: 'system', system_configured: true });
    expect(rest.body.data).toContainEqual({ platform: 'platform_b', kind: 'channel', mode: 'system', system_configured: false });
    expect(rest.body.data).toContainEqual({ platform: 'platform_c', kind: 'bot', mode: 'account', system_configured: false });
    expect((rest.body.data as { platform: string; kind: string }[]).some((m) => m.platform === 'platform_b' && m.kind === 'bot')).toBe(false);
    const g = await gql(t.url, '{ platformCredentialModes { platform kind mode systemConfigured } }', {}, { authorization: `Bearer ${owner.accessToken}` });
    expect(g.body.data!.platformCredentialModes).toContainEqual({ platform: 'platform_a', kind: 'CHANNEL', mode: 'SYSTEM', systemConfigured: true });
    expect((g.body.data!.platformCredentialModes as unknown[]).length).toBe((rest.body.data as unknown[]).length);
  });

  test('gates: connections:read and feature:connections; a popout token holding connections:read may read the statuses', async () => {
    const owner = await devLogin(t);
    const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    const denied = await api(t, 'GET', '/connections/status', { token: viewer.accessToken });
    expect(denied.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: connections:read' });

    const popout = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { permissions: ['connections:read'] } });
    expect(popout.status).toBe(201);
    const viaPopout = await api(t, 'GET', '/connections/status', { query: { token: popout.body.data.token } });
    expect(viaPopout.status).toBe(200);

    await api(t, 'PUT', `/admin/accounts/${owner.accountId}/feature-overrides/feature:connections`, { token: ops.accessToken, body: { enabled: false } });
    const off = await api(t, 'GET', '/connections/status', { token: owner.accessToken });
    expect(off.status).toBe(403);
    expect(off.body).toEqual({ error: 'FEATURE_DISABLED', message: 'Feature disabled: feature:connections' });
    const gOff = await gql(t.url, STATUS, {}, { authorization: `Bearer ${owner.accessToken}` });
    expect(gOff.body.errors?.[0]).toMatchObject({ message: 'Feature disabled: feature:connections', extensions: { code: 'FEATURE_DISABLED' } });
  });

  test('enabledPlatforms and enabledProviders follow the platform switches (public)', async () => {
    const platforms = async () => (await gql(t.url, '{ enabledPlatforms }')).body.data!.enabledPlatforms;
    const providers = async (type: string) => (await gql(t.url, `{ enabledProviders(connectionType: ${type}) }`)).body.data!.enabledProviders;
    expect(await platforms()).toEqual(['platform_a', 'platform_b', 'platform_c']);
    expect(await providers('login')).toEqual(['platform_a', 'platform_b', 'platform_c']);
    expect(await providers('channel')).toEqual(['music_platform', 'platform_a', 'platform_b', 'platform_c']);
    expect(await providers('bot')).toEqual(['platform_a', 'platform_c']);

    const set = (platform: string, body: Record<string, boolean>) => api(t, 'PUT', `/admin/platforms/${platform}`, { token: ops.accessToken, body });
    try {
      // platform_b has no bot: without its login sub-switch it is no longer an enabled platform.
      expect((await set('platform_b', { login_enabled: false })).body.data).toEqual({ platform: 'platform_b', enabled: true, login_enabled: false, channel_enabled: true, bot_enabled: false });
      expect(await platforms()).toEqual(['platform_a', 'platform_c']);
      // platform_c keeps its bot sub-switch: still enabled without login.
      await set('platform_c', { login_enabled: false });
      expect(await platforms()).toEqual(['platform_a', 'platform_c']);
      expect(await providers('login')).toEqual(['platform_a']);
      // The kill-switch wins over every sub-switch.
      await set('platform_a', { enabled: false });
      expect(await platforms()).toEqual(['platform_c']);
      expect(await providers('channel')).toEqual(['music_platform', 'platform_b', 'platform_c']);
      const denied = await api(t, 'PUT', '/admin/platforms/platform_a', { token: (await devLogin(t)).accessToken, body: { enabled: true } });
      expect(denied.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: platforms:edit' });
    } finally {
      await set('platform_a', { enabled: true });
      await set('platform_b', { login_enabled: true });
      await set('platform_c', { login_enabled: true });
    }
  });

  test('enabledProviders lists only platforms with a provider configured for the purpose, then other login providers', async () => {
    const other = await startTestApp({ auth: { providers: [provider('platform_a', ['login']), provider('accounts_example', ['login'])] } });
    try {
      const providersOf = async (type: string) => (await gql(other.url, `{ enabledProviders(connectionType: ${type}) }`)).body.data!.enabledProviders;
      expect(await providersOf('login')).toEqual(['platform_a', 'accounts_example']);
      expect(await providersOf('channel')).toEqual([]);
      expect((await gql(other.url, '{ enabledPlatforms }')).body.data!.enabledPlatforms).toEqual(['platform_a']);
    } finally {
      await other.stop();
    }
  });
});
