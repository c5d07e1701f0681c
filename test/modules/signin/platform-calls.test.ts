/**
 * Grants in use, against a real OpenID provider (oidc-provider) and the
 * fake chat platform: a dashboard connects a channel and a bot the way a browser can (a JSON start
 * with its Bearer session, then a navigation to the provider), a new user who signed in with a
 * platform sends and moderates chat as themself, and the fake platform receives the user's login
 * token, the account's bot token (a credential with no user) and platform_b's channel token.
 */
import { gql, startTestApp, type TestApp } from '../../helpers/app';
import { startFakePlatform, type FakePlatform } from '../../helpers/fake-platform';
import { Browser, CLIENT_ID, CLIENT_SECRET, startTestProvider, type TestProvider } from '../../helpers/oidc';
import { api } from '../../helpers/users';
import { FLOW_COOKIE } from '../../../src/modules/signin/flow-cookie';

const BACK = 'http://127.0.0.1:9/dashboard/connected';
const DASHBOARD = 'http://127.0.0.1:9';

let idp: TestProvider;
let fake: FakePlatform;
let t: TestApp;

beforeAll(async () => {
  idp = await startTestProvider();
  fake = await startFakePlatform();
  const base = { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, kind: 'oidc', issuer: idp.issuer, scopes: ['openid', 'email', 'profile'] };
  t = await startTestApp({
    http: { cors_origins: [DASHBOARD] },
    auth: {
      redirect_allow_list: [BACK],
      providers: [
        { ...base, slug: 'platform_a', purposes: ['login', 'channel', 'bot'] },
        { ...base, slug: 'platform_b', purposes: ['channel'] },
      ],
    },
    chat: {
      request_timeout_ms: 2000,
      platforms: {
        platform_a: { api_url: fake.apiUrl('platform_a') },
        // No live chat poller here (test/modules/signin/oauth2.test.ts covers its token): its
        // look-ups every 5 s would interleave with the requests a test expects.
        platform_b: { api_url: fake.apiUrl('platform_b'), poll_interval_ms: 0 },
        platform_c: { api_url: fake.apiUrl('platform_c') },
      },
    },
  });
  await idp.register(['platform_a', 'platform_b'].map((slug) => `${t.url}/v1/auth/callback/${slug}`));
});

afterAll(async () => {
  await t?.stop();
  await fake?.close();
  await idp?.stop();
});

afterEach(() => {
  expect(fake.unexpected).toEqual([]);
  fake.reset();
});

const fragment = (url: string) => Object.fromEntries(new URLSearchParams(new URL(url).hash.slice(1)));

/** A new user signs in with platform_a as `login` and gets a session, as the dashboard would. */
async function signIn(login: string) {
  const browser = new Browser();
  const { url } = await browser.navigate(`${t.url}/v1/auth/login/platform_a?redirect_uri=${encodeURIComponent(BACK)}`, { stopAt: BACK, login });
  const res = await api(t, 'POST', '/auth/login/exchange', { body: { login_code: fragment(url).login_code } });
  expect(res.status).toBe(200);
  return { browser, token: res.body.data.access_token as string, accountId: res.body.data.account_id as string, userId: res.body.data.user_id as string };
}

/** What a dashboard page does: a JSON start with its session, then a navigation to the provider. */
async function connectFromDashboard(browser: Browser, token: string, platform: string, type: string, login: string) {
  const started = await browser.request(`${t.url}/v1/connections/${platform}/connect`, {
    method: 'POST',
    json: { type, redirect_uri: BACK },
    headers: { authorization: `Bearer ${token}`, origin: DASHBOARD },
  });
  expect(started.status).toBe(200);
  const body = (await started.json()) as { data: { authorization_url: string } };
  expect(browser.cookies(t.url).get(FLOW_COOKIE)).toBeTruthy();
  const { url } = await browser.navigate(body.data.authorization_url, { stopAt: BACK, login });
  return { started, authorizationUrl: body.data.authorization_url, back: url };
}

describe('a dashboard connects a channel and a bot (POST /v1/connections/{platform}/connect)', () => {
  test('the JSON start answers the provider URL and the flow cookie; the browser completes the flow by navigation alone', async () => {
    const owner = await signIn('dash-owner');
    // The creator's own channel: the provider reuses the session they signed in with.
    const { started, authorizationUrl, back } = await connectFromDashboard(owner.browser, owner.token, 'platform_a', 'channel', 'unused');
    // CORS for the dashboard's origin, with credentials, so the browser keeps the cookie.
    expect(started.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(started.headers.get('access-control-allow-credentials')).toBe('true');
    const cookie = started.headers.getSetCookie().find((c) => c.startsWith(`${FLOW_COOKIE}=`))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    const to = new URL(authorizationUrl);
    expect(to.origin).toBe(idp.issuer);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('redirect_uri')).toBe(`${t.url}/v1/auth/callback/platform_a`);
    // No credential of the service in any URL of the flow.
    expect(authorizationUrl).not.toContain(owner.token);
    expect(back).not.toContain(owner.token);
    expect(fragment(back)).toEqual({ connected: 'platform_a', type: 'channel' });
    const status = await api(t, 'GET', '/connections/status', { token: owner.token });
    expect(status.body.data.find((s: { platform: string }) => s.platform === 'platform_a')).toMatchObject({ is_connected: true, login_connected: true });
    expect(await t.app.db.knex('account_connections').where({ account_id: owner.accountId, platform: 'platform_a' }).first('platform_channel_id')).toEqual({ platform_channel_id: 'dash-owner' });
  });

  test('refusals: no session 401, outside the allow-list 400 (no cookie), unknown purpose 404', async () => {
    const owner = await signIn('dash-owner-2');
    const anonymous = await new Browser().request(`${t.url}/v1/connections/platform_a/connect`, { method: 'POST', json: { type: 'bot', redirect_uri: BACK } });
    expect(anonymous.status).toBe(401);
    const outside = await new Browser().request(`${t.url}/v1/connections/platform_a/connect`, { method: 'POST', json: { type: 'bot', redirect_uri: 'http://evil.example/x' }, headers: { authorization: `Bearer ${owner.token}` } });
    expect(outside.status).toBe(400);
    expect(await outside.json()).toEqual({ error: 'VALIDATION_ERROR', message: 'redirect_uri is not allowed' });
    expect(outside.headers.getSetCookie()).toEqual([]);
    const noBot = await api(t, 'POST', '/connections/platform_b/connect', { token: owner.token, body: { type: 'bot', redirect_uri: BACK } });
    expect(noBot.status).toBe(404);
    const badType = await api(t, 'POST', '/connections/platform_a/connect', { token: owner.token, body: { type: 'login', redirect_uri: BACK } });
    expect(badType.status).toBe(400);
  });
});

describe('platform calls carry the acting grant\'s token', () => {
  let owner: Awaited<ReturnType<typeof signIn>>;
  let channelB: string;

  beforeAll(async () => {
    owner = await signIn('caller-owner');
    await connectFromDashboard(owner.browser, owner.token, 'platform_a', 'channel', 'unused');
    await connectFromDashboard(owner.browser, owner.token, 'platform_b', 'channel', 'unused');
    channelB = 'caller-owner';
    // A bot is another identity: the provider asks for a login (prompt=login) although the creator has a session there.
    const bot = await connectFromDashboard(owner.browser, owner.token, 'platform_a', 'bot', 'caller-bot');
    expect(new URL(bot.authorizationUrl).searchParams.get('prompt')).toBe('login');
    expect(fragment(bot.back)).toEqual({ connected: 'platform_a', type: 'bot' });
  });

  const loginToken = async () => {
    const row = await t.app.db.knex('login_connections').where({ user_id: owner.userId, provider: 'platform_a' }).first('id');
    return (await t.app.modules.connections.loginGrant(row.id))!.accessToken;
  };

  test('a user who signed in with platform_a sends and moderates as themself: the platform gets their login token', async () => {
    const sent = await api(t, 'POST', '/chat/send', { token: owner.token, body: { platform: 'platform_a', message: 'hello' } });
    expect(sent.body.data).toEqual({ sent: true, message_id: expect.any(String), platform: 'platform_a' });
    const userToken = await loginToken();
    expect(fake.sent('platform_a')).toEqual([
      expect.objectContaining({ path: '/channels/caller-owner/chat/messages', body: { sender_id: 'caller-owner', message: 'hello' }, authorization: `Bearer ${userToken}` }),
    ]);
    const g = await gql(t.url, 'mutation($i: ModerationInput!) { moderateChat(input: $i) { success } }', { i: { action: 'ban', platform: 'platform_a', userId: 'troll' } }, { authorization: `Bearer ${owner.token}` });
    expect(g.body.data?.moderateChat).toEqual({ success: true });
    expect(fake.moderated('platform_a')).toEqual([expect.objectContaining({ body: expect.objectContaining({ action: 'ban', user_id: 'troll', moderator_id: 'caller-owner' }), authorization: `Bearer ${userToken}` })]);
    // The bot's and the channel's tokens are not the user's.
    const bot = (await t.app.modules.connections.accountGrant(owner.accountId, 'platform_a', 'bot'))!.accessToken;
    expect(bot).not.toBe(userToken);
  });

  test('a credential with no user (a service key) acts as the account\'s bot connection: the platform gets the bot token', async () => {
    const key = await api(t, 'POST', '/service-keys', { token: owner.token, body: { label: 'chat bot', permissions: ['chat:write', 'chat:timeout'] } });
    expect(key.status).toBe(201);
    const svc = key.body.data.key as string;
    const sent = await api(t, 'POST', '/chat/send', { token: svc, body: { platform: 'platform_a', message: 'from the bot' } });
    expect(sent.body.data).toMatchObject({ sent: true });
    const moderated = await api(t, 'POST', '/chat/moderate', { token: svc, body: { action: 'timeout', platform: 'platform_a', user_id: 'spammer', duration_secs: 60 } });
    expect(moderated.body.data).toMatchObject({ success: true });
    const bot = (await t.app.modules.connections.accountGrant(owner.accountId, 'platform_a', 'bot'))!.accessToken;
    expect(fake.sent('platform_a')).toEqual([expect.objectContaining({ body: { sender_id: 'caller-bot', message: 'from the bot' }, authorization: `Bearer ${bot}` })]);
    expect(fake.moderated('platform_a')).toEqual([expect.objectContaining({ body: expect.objectContaining({ action: 'timeout', moderator_id: 'caller-bot' }), authorization: `Bearer ${bot}` })]);

    // Without a bot connection the same key is told so, and nothing reaches the platform.
    expect((await api(t, 'DELETE', '/connections/platform_a', { token: owner.token, query: { type: 'bot' } })).status).toBe(200);
    fake.reset();
    const noBot = await api(t, 'POST', '/chat/send', { token: svc, body: { platform: 'platform_a', message: 'again' } });
    expect(noBot.body.data).toEqual({ sent: false, error_code: 'login_reconnect_required', error: 'Connect a platform_a bot to send chat without a signed-in user', platform: 'platform_a' });
    expect(fake.sent('platform_a')).toEqual([]);
  });

  test('platform_b sends through the channel connection: live chat look-up and send carry the channel token', async () => {
    fake.liveChats.set(`platform_b:${channelB}`, 'live-b');
    const sent = await api(t, 'POST', '/chat/send', { token: owner.token, body: { platform: 'platform_b', message: 'to the video chat' } });
    expect(sent.body.data).toMatchObject({ sent: true, platform: 'platform_b' });
    const channel = (await t.app.modules.connections.accountGrant(owner.accountId, 'platform_b', 'channel'))!.accessToken;
    expect(fake.requests.filter((r) => r.platform === 'platform_b').map((r) => [r.method, r.path, r.authorization])).toEqual([
      ['GET', `/channels/${channelB}/live-chat`, `Bearer ${channel}`],
      ['POST', `/channels/${channelB}/chat/messages`, `Bearer ${channel}`],
    ]);
  });

  test('a login grant the provider no longer refreshes: the send is login_reconnect_required, nothing reaches the platform', async () => {
    const row = await t.app.db.knex('login_connections').where({ user_id: owner.userId, provider: 'platform_a' }).first('id');
    const grant = (await t.app.modules.connections.loginGrant(row.id))!;
    await fetch(`${idp.issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}` },
      body: new URLSearchParams({ token: grant.refreshToken! }).toString(),
    });
    await t.app.db.knex('login_connections').where({ id: row.id }).update({ token_expires_at: new Date(Date.now() + 10_000) });
    const sent = await api(t, 'POST', '/chat/send', { token: owner.token, body: { platform: 'platform_a', message: 'hi' } });
    expect(sent.body.data).toEqual({ sent: false, error_code: 'login_reconnect_required', error: 'Your platform_a login needs to be reconnected', platform: 'platform_a' });
    expect(fake.sent('platform_a')).toEqual([]);
    const status = await api(t, 'GET', '/connections/status', { token: owner.token });
    expect(status.body.data.find((s: { platform: string }) => s.platform === 'platform_a')).toMatchObject({ login_connected: false, login_reconnect_required: true });
  });
});
