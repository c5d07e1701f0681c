/**
 * The background grant refresh (job `signin.grant-refresh`) against a real
 * OpenID provider whose access tokens live 605 s: 5 s after it is issued a token is within the
 * sweep's 10-minute horizon, so the sweep (every second here) refreshes login, channel and bot
 * grants without any platform call; a refresh the provider refuses flags the grant and notifies
 * the owner, also without a call.
 */
import { startTestApp, type TestApp } from '../../helpers/app';
import { Browser, CLIENT_ID, CLIENT_SECRET, startTestProvider, type TestProvider } from '../../helpers/oidc';
import { api } from '../../helpers/users';

const BACK = 'http://127.0.0.1:9/signed-in';

let idp: TestProvider;
let t: TestApp;

beforeAll(async () => {
  idp = await startTestProvider({ accessTokenTtl: 605 });
  t = await startTestApp({
    jobs: { poll_interval_ms: 500, periods: { 'signin.grant-refresh': 1 } },
    auth: {
      redirect_allow_list: [BACK],
      providers: [{ slug: 'platform_a', kind: 'oidc', issuer: idp.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, scopes: ['openid', 'email', 'profile'], purposes: ['login', 'channel', 'bot'] }],
    },
  });
  await idp.register([`${t.url}/v1/auth/callback/platform_a`]);
});

afterAll(async () => {
  await t?.stop();
  await idp?.stop();
});

const fragment = (url: string) => Object.fromEntries(new URLSearchParams(new URL(url).hash.slice(1)));

/** Polls `check` every 200 ms until it holds (the test's own timeout bounds it). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 200));
}

const revokeAtProvider = (token: string) =>
  fetch(`${idp.issuer}/token/revocation`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}` },
    body: new URLSearchParams({ token }).toString(),
  });

describe('grants are refreshed in the background, before they expire', () => {
  let token: string;
  let accountId: string;
  let userId: string;
  let loginId: string;

  beforeAll(async () => {
    const browser = new Browser();
    const signedIn = await browser.navigate(`${t.url}/v1/auth/login/platform_a?redirect_uri=${encodeURIComponent(BACK)}`, { stopAt: BACK, login: 'sweep-owner' });
    const pair = await api(t, 'POST', '/auth/login/exchange', { body: { login_code: fragment(signedIn.url).login_code } });
    ({ access_token: token, account_id: accountId, user_id: userId } = pair.body.data);
    // The bot from another browser profile: its login at the provider (prompt=login) would end the
    // creator's provider session there, and this provider binds refresh tokens issued without
    // offline_access to that session.
    for (const [type, from] of [['channel', browser], ['bot', new Browser()]] as const) {
      const started = await from.request(`${t.url}/v1/connections/platform_a/connect`, { method: 'POST', json: { type, redirect_uri: BACK }, headers: { authorization: `Bearer ${token}` } });
      const { url } = await from.navigate(((await started.json()) as { data: { authorization_url: string } }).data.authorization_url, { stopAt: BACK, login: `sweep-${type}` });
      expect(fragment(url)).toEqual({ connected: 'platform_a', type });
    }
    loginId = (await t.app.db.knex('login_connections').where({ user_id: userId, provider: 'platform_a' }).first('id')).id;
  });

  const grants = async () => ({
    login: (await t.app.modules.connections.loginGrant(loginId))!,
    channel: (await t.app.modules.connections.accountGrant(accountId, 'platform_a', 'channel'))!,
    bot: (await t.app.modules.connections.accountGrant(accountId, 'platform_a', 'bot'))!,
  });

  test('login, channel and bot tokens are replaced by the sweep, with no platform call, and the new ones work at the provider', async () => {
    const before = await grants();
    await until(async () => {
      const now = await grants();
      return now.login.accessToken !== before.login.accessToken && now.channel.accessToken !== before.channel.accessToken && now.bot.accessToken !== before.bot.accessToken;
    });
    const after = await grants();
    for (const kind of ['login', 'channel', 'bot'] as const) {
      expect(after[kind].expiresAt!.getTime()).toBeGreaterThan(before[kind].expiresAt!.getTime());
      expect(after[kind].reconnectRequired).toBe(false);
      const me = await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${after[kind].accessToken}` } });
      expect(me.status).toBe(200);
    }
    const status = await api(t, 'GET', '/connections/status', { token });
    expect(status.body.data.find((s: { platform: string }) => s.platform === 'platform_a')).toMatchObject({ is_connected: true, reconnect_required: false, login_connected: true, login_reconnect_required: false });
  }, 60_000);

  test('a refresh the provider refuses: the sweep flags the channel and the login grant and notifies the owner', async () => {
    // Revoke whichever refresh token is current until the sweep meets a refused one (it may rotate one first).
    await until(async () => {
      const now = await grants();
      if (now.channel.reconnectRequired && now.login.reconnectRequired) return true;
      if (!now.channel.reconnectRequired) await revokeAtProvider(now.channel.refreshToken!);
      if (!now.login.reconnectRequired) await revokeAtProvider(now.login.refreshToken!);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return false;
    });
    const status = await api(t, 'GET', '/connections/status', { token });
    expect(status.body.data.find((s: { platform: string }) => s.platform === 'platform_a')).toMatchObject({ is_connected: false, reconnect_required: true, login_connected: false, login_reconnect_required: true });
    const notes = await t.app.db.knex('notifications').where({ user_id: userId, type: 'connection_reconnect_required' }).select('data');
    expect(notes.length).toBeGreaterThanOrEqual(2);
    // A flagged grant is left alone: the bot's, not revoked, is still refreshed.
    const botBefore = (await grants()).bot.accessToken;
    await until(async () => (await grants()).bot.accessToken !== botBefore);
    expect((await grants()).bot.reconnectRequired).toBe(false);
  }, 60_000);
});
