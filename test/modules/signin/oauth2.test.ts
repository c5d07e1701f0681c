/**
 * The `oauth2` provider kind against a real OAuth 2.0-only authorization server
 * (@node-oauth/oauth2-server, test/helpers/oauth2-server.ts): no discovery and no ID token, the
 * endpoints named in config, the subject read from userinfo. Driven as a browser drives it (the
 * provider's login and consent forms, redirects, cookies): sign-in and session, the refusals
 * (state, replayed code, PKCE), a refresh the provider refuses found by the background sweep,
 * channel and bot connections with revocation at the provider on disconnect, one refresh of a
 * grant when two nodes need it at once (two sign-in services over one database on both stores; on
 * PostgreSQL also a second app node), and platform_b's live chat poller carrying the channel token.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createApp, type App } from '../../../src/app';
import { loadConfig } from '../../../src/config/config';
import { createLogger } from '../../../src/infra/logger';
import { createFlowCodec, FLOW_COOKIE } from '../../../src/modules/signin/flow-cookie';
import { createProviderClient } from '../../../src/modules/signin/providers';
import { createSigninRepo } from '../../../src/modules/signin/repo';
import { createSigninService } from '../../../src/modules/signin/service';
import { services, startTestApp, type TestApp } from '../../helpers/app';
import { OAUTH2_CLIENT_ID, OAUTH2_CLIENT_SECRET, startTestOAuth2Server, type TestOAuth2Server } from '../../helpers/oauth2-server';
import { Browser } from '../../helpers/oidc';
import { startFakePlatform, type FakePlatform } from '../../helpers/fake-platform';
import { api } from '../../helpers/users';

const BACK = 'http://127.0.0.1:9/signed-in';
const SLUG = 'platform_a';

let as: TestOAuth2Server;
let fake: FakePlatform;
let t: TestApp;
/** The nodes of a cluster share their secret keys (as production's configured keys): grants are sealed with them. */
const sharedKey = { id: 'oauth2-test', key: randomBytes(32).toString('base64') };

beforeAll(async () => {
  as = await startTestOAuth2Server();
  fake = await startFakePlatform();
  const provider = { kind: 'oauth2', ...as.endpoints, client_id: OAUTH2_CLIENT_ID, client_secret: OAUTH2_CLIENT_SECRET, scopes: ['profile', 'email'] };
  t = await startTestApp({
    secrets: { encryption_keys: [sharedKey] },
    auth: {
      redirect_allow_list: [BACK],
      providers: [
        { ...provider, slug: SLUG, purposes: ['login', 'channel', 'bot'] },
        { ...provider, slug: 'platform_b', purposes: ['channel'] },
      ],
    },
    // platform_b's live chat poller runs against the fake platform (the last describe).
    chat: { request_timeout_ms: 2000, platforms: { platform_b: { api_url: fake.apiUrl('platform_b'), poll_interval_ms: 50 } } },
  });
  as.register([SLUG, 'platform_b'].map((slug) => `${t.url}/v1/auth/callback/${slug}`));
});

afterAll(async () => {
  await t?.stop();
  await fake?.close();
  await as?.stop();
});

const loginUrl = () => `${t.url}/v1/auth/login/${SLUG}?redirect_uri=${encodeURIComponent(BACK)}`;
const fragment = (url: string) => new URLSearchParams(new URL(url).hash.slice(1));
const userCount = async () => Number((await t.app.db.knex('users').count<{ n: string }[]>({ n: '*' }))[0]!.n);
const refreshes = () => as.tokenRequests.filter((r) => r.grantType === 'refresh_token');

async function exchange(code: string) {
  return api(t, 'POST', '/auth/login/exchange', { body: { login_code: code } });
}

/** A whole sign-in as `login`: the service, the provider's login and consent forms, back with a login code. */
async function signIn(login: string, browser = new Browser()) {
  const { url } = await browser.navigate(loginUrl(), { stopAt: BACK, login });
  expect(fragment(url).get('error')).toBeNull();
  const pair = await exchange(fragment(url).get('login_code')!);
  expect(pair.status).toBe(200);
  return { browser, ...(pair.body.data as { access_token: string; user_id: string; account_id: string }) };
}

/** Up to the provider's redirect back to the service (not followed). */
async function upToCallback(browser: Browser, login: string): Promise<string> {
  return (await browser.navigate(loginUrl(), { stopAt: `${t.url}/v1/auth/callback/`, login })).url;
}

describe('sign-in with an OAuth 2.0-only provider', () => {
  let firstUser: string;

  test('the authorization request carries PKCE S256 and state, and no nonce (no ID token to bind it to)', async () => {
    const res = await new Browser().request(loginUrl());
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(as.endpoints.authorization_endpoint);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('code_challenge')).toBeTruthy();
    expect(to.searchParams.get('state')).toBeTruthy();
    expect(to.searchParams.get('nonce')).toBeNull();
    expect(to.searchParams.get('scope')).toBe('profile email');
  });

  test('first sign-in: the subject from userinfo, a new user and owned account, a session that works', async () => {
    const before = await userCount();
    const pair = await signIn('olga');
    firstUser = pair.user_id;
    expect(await userCount()).toBe(before + 1);
    expect(await t.app.db.knex('accounts').where({ owner_id: firstUser }).select('id')).toHaveLength(1);
    const link = await t.app.db.knex('login_connections').where({ provider: SLUG, platform_user_id: 'olga' }).first('id', 'user_id', 'display_name', 'access_token_sealed');
    expect(link).toMatchObject({ user_id: firstUser, display_name: 'OAuth2 olga' });
    const grant = (await t.app.modules.connections.loginGrant(link.id))!;
    expect(as.accessTokenLive(grant.accessToken)).toBe(true);
    expect(grant.refreshToken).toMatch(/^rt_/);
    expect(link.access_token_sealed).not.toContain(grant.accessToken);

    const me = await api(t, 'GET', '/tokens/me', { token: pair.access_token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ context: 'jwt', user_id: firstUser });
    expect(as.tokenRequests.at(-1)).toEqual({ grantType: 'authorization_code', status: 200 });
  });

  test('a repeat sign-in (the provider session reused, consent only) is the same user, no second account', async () => {
    const browser = new Browser();
    await signIn('olga', browser);
    const before = await userCount();
    const again = await signIn('unused', browser);
    expect(again.user_id).toBe(firstUser);
    expect(await userCount()).toBe(before);
    expect(await t.app.db.knex('accounts').where({ owner_id: firstUser }).select('id')).toHaveLength(1);
    expect(await t.app.db.knex('login_connections').where({ provider: SLUG, platform_user_id: 'olga' }).select('id')).toHaveLength(1);
  });

  test('a state that differs from the cookie\'s is state_mismatch, and the provider is not asked for tokens', async () => {
    const browser = new Browser();
    const callback = new URL(await upToCallback(browser, 'pavel'));
    const asked = as.tokenRequests.length;
    callback.searchParams.set('state', 'forged');
    const res = await browser.request(callback.href);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${BACK}#error=state_mismatch`);
    expect(as.tokenRequests.length).toBe(asked);
  });

  test('a replayed authorization code (in a new flow) is refused by the provider: provider_error, nothing created', async () => {
    const first = new Browser();
    const used = new URL(await upToCallback(first, 'quinn'));
    expect(fragment((await first.request(used.href)).headers.get('location')!).get('login_code')).toBeTruthy();
    const before = await userCount();
    const second = new Browser();
    const fresh = new URL(await upToCallback(second, 'quinn-2'));
    fresh.searchParams.set('code', used.searchParams.get('code')!);
    const res = await second.request(fresh.href);
    expect(res.headers.get('location')).toBe(`${BACK}#error=provider_error`);
    expect(as.tokenRequests.at(-1)).toEqual({ grantType: 'authorization_code', status: 400 });
    expect(await userCount()).toBe(before);
  });

  test('a PKCE verifier that does not match the challenge is refused by the provider: provider_error, nothing created', async () => {
    const browser = new Browser();
    const callback = await upToCallback(browser, 'rosa');
    const codec = createFlowCodec(t.app.config.auth.jwt_secret);
    const flow = (await codec.open(browser.cookies(t.url).get(FLOW_COOKIE)!))!;
    browser.cookies(t.url).set(FLOW_COOKIE, await codec.seal({ ...flow, verifier: 'x'.repeat(43) }));
    const before = await userCount();
    const res = await browser.request(callback);
    expect(res.headers.get('location')).toBe(`${BACK}#error=provider_error`);
    expect(as.tokenRequests.at(-1)).toEqual({ grantType: 'authorization_code', status: 400 });
    expect(await userCount()).toBe(before);
    expect(await t.app.db.knex('login_connections').where({ provider: SLUG, platform_user_id: 'rosa' }).select('id')).toHaveLength(0);
  });
});

describe('grants of an OAuth 2.0-only provider: connections, refresh, revocation', () => {
  let owner: Awaited<ReturnType<typeof signIn>>;
  const auth = () => ({ authorization: `Bearer ${owner.access_token}` });
  const status = async () => (await api(t, 'GET', '/connections/status', { token: owner.access_token })).body.data.find((s: { platform: string }) => s.platform === SLUG);
  const loginRow = async () => (await t.app.db.knex('login_connections').where({ user_id: owner.user_id, provider: SLUG }).first('id')).id as string;

  beforeAll(async () => {
    owner = await signIn('stan');
  });

  test('GET /v1/connections/{platform}/connect runs the flow and stores the channel grant on the active account', async () => {
    const { url } = await new Browser().navigate(`${t.url}/v1/connections/${SLUG}/connect?type=channel&redirect_uri=${encodeURIComponent(BACK)}`, { stopAt: BACK, login: 'stan-channel', headers: auth() });
    expect(Object.fromEntries(fragment(url))).toEqual({ connected: SLUG, type: 'channel' });
    expect(await status()).toMatchObject({ is_connected: true, reconnect_required: false, login_connected: true });
    expect(await t.app.db.knex('account_connections').where({ account_id: owner.account_id, platform: SLUG }).first('platform_channel_id')).toEqual({ platform_channel_id: 'stan-channel' });
    const grant = (await t.app.modules.connections.accountGrant(owner.account_id, SLUG, 'channel'))!;
    expect(as.accessTokenLive(grant.accessToken)).toBe(true);
  });

  test('two sign-in services (each its own in-process dedup) over one database refreshing the same grant at once: the token endpoint is asked once', async () => {
    // A second node: its own sign-in service (its own in-process dedup, its own provider client) over the same database.
    const quiet = createLogger({ level: 'warn', service: 'test', env: 'test', version: '0' }, new Writable({ write: (_c, _e, done) => done() }));
    const m = t.app.modules;
    const other = createSigninService({
      config: t.app.config,
      log: quiet,
      repo: createSigninRepo(t.app.db.knex),
      codec: createFlowCodec(t.app.config.auth.jwt_secret),
      providers: new Map(t.app.config.auth.providers.map((p) => [p.slug, createProviderClient(p)])),
      accounts: m.accounts,
      sessions: m.sessions,
      connections: m.connections,
      notifications: m.notifications,
      accountOwner: (accountId) => m.accounts.principals.accountOwner(accountId),
    });
    const before = (await m.connections.accountGrant(owner.account_id, SLUG, 'channel'))!;
    await t.app.db.knex('account_connections').where({ account_id: owner.account_id, platform: SLUG }).update({ expires_at: new Date(Date.now() + 30_000) });
    const asked = refreshes().length;
    as.tokenDelayMs = 300;
    let answers;
    try {
      answers = await Promise.all([m.signin.accountGrantToken(owner.account_id, SLUG, 'channel'), other.accountGrantToken(owner.account_id, SLUG, 'channel')]);
    } finally {
      as.tokenDelayMs = 0;
    }
    expect(refreshes().slice(asked)).toEqual([{ grantType: 'refresh_token', status: 200 }]);
    const after = (await m.connections.accountGrant(owner.account_id, SLUG, 'channel'))!;
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(answers).toEqual([
      { token: after.accessToken, reconnect: false },
      { token: after.accessToken, reconnect: false },
    ]);
    expect(await t.app.db.knex('account_connections').where({ account_id: owner.account_id, platform: SLUG }).first('refresh_claimed_until')).toEqual({ refresh_claimed_until: null });
    expect(as.accessTokenLive(after.accessToken)).toBe(true);
  });

  (services.postgres ? test : test.skip)('PostgreSQL: a second app node on the same database refreshing the same grant at once: one token request', async () => {
    const c = t.app.config;
    const node: App = await createApp(
      loadConfig({
        env: {},
        overrides: {
          env: 'test',
          port: 0,
          log: { level: 'silent' },
          database_url: c.database_url,
          data_dir: 'memory://',
          redis_url: c.redis_url,
          redis_prefix: c.redis_prefix,
          jobs: { node_id: 'oauth2-node-b' },
          secrets: { encryption_keys: [sharedKey] },
          auth: { redirect_allow_list: c.auth.redirect_allow_list, providers: c.auth.providers },
        },
      }),
    );
    try {
      await t.app.db.knex('account_connections').where({ account_id: owner.account_id, platform: SLUG }).update({ expires_at: new Date(Date.now() + 30_000) });
      const asked = refreshes().length;
      as.tokenDelayMs = 300;
      let answers;
      try {
        answers = await Promise.all([t.app.modules.signin.accountGrantToken(owner.account_id, SLUG, 'channel'), node.modules.signin.accountGrantToken(owner.account_id, SLUG, 'channel')]);
      } finally {
        as.tokenDelayMs = 0;
      }
      expect(refreshes().slice(asked)).toEqual([{ grantType: 'refresh_token', status: 200 }]);
      const after = (await t.app.modules.connections.accountGrant(owner.account_id, SLUG, 'channel'))!;
      expect(answers).toEqual([
        { token: after.accessToken, reconnect: false },
        { token: after.accessToken, reconnect: false },
      ]);
    } finally {
      await node.close();
    }
  });

  test('the background sweep leaves a grant another node is refreshing to that node, without waiting', async () => {
    const m = t.app.modules;
    const ref = { type: 'channel' as const, accountId: owner.account_id, platform: SLUG };
    await t.app.db.knex('account_connections').where({ account_id: owner.account_id, platform: SLUG }).update({ expires_at: new Date(Date.now() + 60_000) });
    const claim = await m.connections.claimGrantRefresh(ref, 20_000);
    expect(claim).toBeInstanceOf(Date);
    expect(await m.connections.claimGrantRefresh(ref, 20_000)).toBeNull();
    const asked = refreshes().length;
    const started = Date.now();
    await m.signin.service.refreshDue();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(refreshes().length).toBe(asked);
    await m.connections.releaseGrantRefresh(ref, claim!);
    await m.signin.service.refreshDue();
    expect(refreshes().slice(asked)).toEqual([{ grantType: 'refresh_token', status: 200 }]);
  });

  test('refresh refused at the provider: the sweep flags the login and channel grants and notifies the owner', async () => {
    const id = await loginRow();
    const login = (await t.app.modules.connections.loginGrant(id))!;
    const channel = (await t.app.modules.connections.accountGrant(owner.account_id, SLUG, 'channel'))!;
    // The user revokes the app at the provider.
    as.revoke(login.refreshToken!);
    as.revoke(channel.refreshToken!);
    await t.app.db.knex('login_connections').where({ id }).update({ token_expires_at: new Date(Date.now() + 60_000) });
    await t.app.db.knex('account_connections').where({ account_id: owner.account_id, platform: SLUG }).update({ expires_at: new Date(Date.now() + 60_000) });
    const asked = refreshes().length;
    expect(await t.app.modules.signin.service.refreshDue()).toBeGreaterThanOrEqual(2);
    expect(refreshes().slice(asked)).toEqual([
      { grantType: 'refresh_token', status: 400 },
      { grantType: 'refresh_token', status: 400 },
    ]);
    expect(await status()).toMatchObject({ is_connected: false, reconnect_required: true, login_connected: false, login_reconnect_required: true });
    const notes = await t.app.db.knex('notifications').where({ user_id: owner.user_id, type: 'connection_reconnect_required' }).select('data');
    expect(notes).toHaveLength(2);
    // A flagged grant is left alone by the next sweep: the provider is not asked again.
    await t.app.modules.signin.service.refreshDue();
    expect(refreshes().length).toBe(asked + 2);
    // Signing in again heals the login grant; connecting again heals the channel.
    await signIn('stan');
    expect((await t.app.db.knex('login_connections').where({ id }).first('reconnect_required')).reconnect_required).toBe(false);
  });

  test('POST /v1/connections/{platform}/connect (bot), then DELETE revokes at the provider (RFC 7009) and removes it', async () => {
    const browser = new Browser();
    const started = await browser.request(`${t.url}/v1/connections/${SLUG}/connect`, { method: 'POST', json: { type: 'bot', redirect_uri: BACK }, headers: auth() });
    expect(started.status).toBe(200);
    const authorizationUrl = ((await started.json()) as { data: { authorization_url: string } }).data.authorization_url;
    expect(new URL(authorizationUrl).searchParams.get('prompt')).toBe('login');
    const { url } = await browser.navigate(authorizationUrl, { stopAt: BACK, login: 'stan-bot' });
    expect(Object.fromEntries(fragment(url))).toEqual({ connected: SLUG, type: 'bot' });
    const grant = (await t.app.modules.connections.accountGrant(owner.account_id, SLUG, 'bot'))!;
    expect(as.accessTokenLive(grant.accessToken)).toBe(true);

    const revokedBefore = as.revocations.length;
    const res = await api(t, 'DELETE', `/connections/${SLUG}`, { token: owner.access_token, query: { type: 'bot' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect(as.revocations.slice(revokedBefore)).toEqual([grant.refreshToken, grant.accessToken]);
    expect(as.accessTokenLive(grant.accessToken)).toBe(false);
    expect((await fetch(as.endpoints.userinfo_endpoint, { headers: { authorization: `Bearer ${grant.accessToken}` } })).status).toBe(401);
    expect(await t.app.db.knex('account_bot_connections').where({ account_id: owner.account_id }).select('platform')).toHaveLength(0);
    expect((await api(t, 'DELETE', `/connections/${SLUG}`, { token: owner.access_token, query: { type: 'bot' } })).status).toBe(404);
  });
});

describe('platform_b\'s live chat poller uses the channel connection\'s grant', () => {
  /** Polls `check` every 50 ms until it holds (the test's own timeout bounds it). */
  async function until(check: () => boolean | Promise<boolean>): Promise<void> {
    while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const polls = () => fake.requests.filter((r) => r.platform === 'platform_b' && r.method === 'GET');

  test('the live chat look-up and every poll carry the channel token; a flagged grant stops the polling', async () => {
    const owner = await signIn('uma');
    const channel = 'uma-b';
    const live = 'live-uma';
    fake.liveChats.set(`platform_b:${channel}`, live);
    fake.liveChatItems.set(live, [{ id: 'pb-uma-1', author: { channel_id: 'viewer-1', name: 'viewer1' }, message: 'hello from the video chat' }]);
    const { url } = await new Browser().navigate(`${t.url}/v1/connections/platform_b/connect?type=channel&redirect_uri=${encodeURIComponent(BACK)}`, {
      stopAt: BACK,
      login: channel,
      headers: { authorization: `Bearer ${owner.access_token}` },
    });
    expect(Object.fromEntries(fragment(url))).toEqual({ connected: 'platform_b', type: 'channel' });
    const grant = (await t.app.modules.connections.accountGrant(owner.account_id, 'platform_b', 'channel'))!;

    const stored = async () => t.app.db.knex('chat_messages').where({ account_id: owner.account_id, platform: 'platform_b' }).select('platform_message_id', 'live_chat_id');
    await until(async () => (await stored()).length > 0);
    expect(await stored()).toEqual([{ platform_message_id: 'pb-uma-1', live_chat_id: live }]);
    await until(() => polls().some((r) => r.path === `/live-chats/${live}/messages`));
    const seen = polls().map((r) => [r.path, r.authorization]);
    expect(seen[0]).toEqual([`/channels/${channel}/live-chat`, `Bearer ${grant.accessToken}`]);
    expect(new Set(seen.map(([, authorization]) => authorization))).toEqual(new Set([`Bearer ${grant.accessToken}`]));

    // The provider refuses the refresh: the grant is flagged, and the poller stops asking the platform.
    as.revoke(grant.refreshToken!);
    await t.app.db.knex('account_connections').where({ account_id: owner.account_id, platform: 'platform_b' }).update({ expires_at: new Date(Date.now() + 1000) });
    await until(async () => (await t.app.modules.connections.accountGrant(owner.account_id, 'platform_b', 'channel'))!.reconnectRequired);
    await new Promise((resolve) => setTimeout(resolve, 200));
    fake.reset();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(polls()).toEqual([]);
    expect(fake.unexpected).toEqual([]);
  });
});
