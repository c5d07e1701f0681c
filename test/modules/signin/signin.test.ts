/**
 * Provider sign-in end to end against a real OpenID provider (oidc-provider) on a
 * loopback port, driven as a browser drives it: redirects, cookies, the provider's login and
 * consent forms. The browser is sent back to an allow-listed page that is never fetched; the
 * outcome is read from its fragment, as a dashboard would.
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/infra/logger';
import { createFlowCodec, FLOW_COOKIE } from '../../../src/modules/signin/flow-cookie';
import { gql, startTestApp, type TestApp } from '../../helpers/app';
import { Browser, CLIENT_ID, CLIENT_SECRET, startTestProvider, type TestProvider } from '../../helpers/oidc';

const BACK = 'http://127.0.0.1:9/signed-in';

let idp: TestProvider;
let t: TestApp;
const lines: string[] = [];

beforeAll(async () => {
  idp = await startTestProvider();
  const base = { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, purposes: ['login'] };
  const log = createLogger(
    { level: 'trace', service: 'test', env: 'test', version: '0' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  t = await startTestApp(
    {
      auth: {
        redirect_allow_list: [BACK],
        providers: [
          { ...base, slug: 'idp', kind: 'oidc', issuer: idp.issuer, scopes: ['openid', 'email', 'profile'] },
          { ...base, slug: 'idp_tamper', kind: 'oidc', issuer: idp.issuer, token_endpoint: idp.tamperTokenEndpoint },
          {
            ...base,
            slug: 'idp_oauth2',
            kind: 'oauth2',
            issuer: idp.issuer,
            authorization_endpoint: `${idp.issuer}/auth`,
            token_endpoint: `${idp.issuer}/token`,
            userinfo_endpoint: `${idp.issuer}/me`,
            revocation_endpoint: `${idp.issuer}/token/revocation`,
            scopes: ['openid'],
          },
          { ...base, slug: 'idp_down', kind: 'oidc', issuer: 'http://127.0.0.1:1' },
          { ...base, slug: 'platform_a', kind: 'oidc', issuer: idp.issuer, purposes: ['login', 'channel', 'bot'] },
        ],
      },
    },
    { log },
  );
  await idp.register(['idp', 'idp_tamper', 'idp_oauth2', 'idp_down', 'platform_a'].map((slug) => `${t.url}/v1/auth/callback/${slug}`));
});

afterAll(async () => {
  await t?.stop();
  await idp?.stop();
});

const loginUrl = (slug: string, back = BACK) => `${t.url}/v1/auth/login/${slug}?redirect_uri=${encodeURIComponent(back)}`;
const fragment = (url: string) => new URLSearchParams(new URL(url).hash.slice(1));

/** Runs a sign-in up to the provider's redirect back to the service (not followed). */
async function upToCallback(browser: Browser, slug: string, login = 'alice'): Promise<string> {
  const { url } = await browser.navigate(loginUrl(slug), { stopAt: `${t.url}/v1/auth/callback/`, login });
  return url;
}

async function exchange(code: string) {
  const res = await fetch(`${t.url}/v1/auth/login/exchange`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ login_code: code }) });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, string | null>; error?: string; message?: string } };
}

async function signIn(slug: string, login: string) {
  const browser = new Browser();
  const { url } = await browser.navigate(loginUrl(slug), { stopAt: BACK, login });
  const code = fragment(url).get('login_code');
  expect(fragment(url).get('error')).toBeNull();
  expect(code).toBeTruthy();
  return { browser, code: code! };
}

const userCount = async () => Number((await t.app.db.knex('users').count<{ n: string }[]>({ n: '*' }))[0]!.n);

describe('provider sign-in (OpenID Connect)', () => {
  let firstUser: string;

  test('first sign-in creates the user and an owned account; the code buys a session that works', async () => {
    const before = await userCount();
    const { code } = await signIn('idp', 'alice');
    const pair = await exchange(code);
    expect(pair.status).toBe(200);
    expect(pair.body.data).toEqual({
      access_token: expect.stringMatching(/^lm_/),
      refresh_token: expect.stringMatching(/^lm_/),
      expires_at: expect.any(String),
      session_id: expect.any(String),
      user_id: expect.any(String),
      account_id: expect.any(String),
    });
    firstUser = pair.body.data!.user_id!;
    expect(await userCount()).toBe(before + 1);
    const owned = await t.app.db.knex('accounts').where({ owner_id: firstUser }).select('id');
    expect(owned).toHaveLength(1);

    const me = await fetch(`${t.url}/v1/tokens/me`, { headers: { authorization: `Bearer ${pair.body.data!.access_token}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { data: { context: string } }).data.context).toBe('jwt');

    const login = await t.app.db.knex('audit_log').where({ user_id: firstUser, type: 'user:login' }).first('metadata');
    expect(login).toBeDefined();
  });

  test('a repeat sign-in is the same user, with no second account', async () => {
    const before = await userCount();
    const { code } = await signIn('idp', 'alice');
    const pair = await exchange(code);
    expect(pair.body.data!.user_id).toBe(firstUser);
    expect(await userCount()).toBe(before);
    expect(await t.app.db.knex('accounts').where({ owner_id: firstUser }).select('id')).toHaveLength(1);
  });

  test('the grant is stored as a login connection, sealed: the database holds no token in clear', async () => {
    const rows = await t.app.db.knex('login_connections').where({ user_id: firstUser, provider: 'idp' }).select('*');
    expect(rows).toHaveLength(1);
    const grant = await t.app.modules.connections.loginGrant(rows[0].id);
    expect(grant?.accessToken).toEqual(expect.any(String));
    expect(grant?.refreshToken).toEqual(expect.any(String));
    expect(rows[0].access_token_sealed).toMatch(/^v1\./);
    const dump = JSON.stringify(await Promise.all(['login_connections', 'login_codes', 'sessions', 'audit_log', 'signin_flows'].map((table) => t.app.db.knex(table).select('*'))));
    expect(dump).not.toContain(grant!.accessToken);
    expect(dump).not.toContain(grant!.refreshToken!);
  });

  test('a login code is good once; an unknown one is refused', async () => {
    const { code } = await signIn('idp', 'bob');
    expect((await exchange(code)).status).toBe(200);
    expect(await exchange(code)).toEqual({ status: 400, body: { error: 'INVALID_LOGIN_CODE', message: 'Invalid or expired login code' } });
    expect((await exchange('not-a-code')).body.error).toBe('INVALID_LOGIN_CODE');
  });

  test('GraphQL exchangeLoginCode answers the same pair, and the same refusal', async () => {
    const { code } = await signIn('idp', 'carol');
    const query = 'mutation($c: String!) { exchangeLoginCode(loginCode: $c) { accessToken refreshToken userId accountId sessionId expiresAt } }';
    const ok = await gql(t.url, query, { c: code });
    expect(ok.body.data?.exchangeLoginCode).toMatchObject({ accessToken: expect.stringMatching(/^lm_/) });
    const again = await gql(t.url, query, { c: code });
    expect(again.body.errors?.[0]).toMatchObject({ message: 'Invalid or expired login code', extensions: { code: 'INVALID_LOGIN_CODE' } });
  });

  test('the login redirect carries PKCE S256, state and nonce, and sets the flow cookie', async () => {
    const res = await new Browser().request(loginUrl('idp'));
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin).toBe(idp.issuer);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('code_challenge')).toBeTruthy();
    expect(to.searchParams.get('state')).toBeTruthy();
    expect(to.searchParams.get('nonce')).toBeTruthy();
    expect(to.searchParams.get('redirect_uri')).toBe(`${t.url}/v1/auth/callback/idp`);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${FLOW_COOKIE}=`))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Max-Age=600/i);
    expect(cookie).toMatch(/Path=\/v1\//);
  });

  test.each([
    ['another port', 'http://127.0.0.1:8/signed-in'],
    ['another host', 'http://evil.example/signed-in'],
    ['another scheme', 'https://127.0.0.1:9/signed-in'],
    ['a path that only starts alike', 'http://127.0.0.1:9/signed-in-evil'],
    ['a path outside', 'http://127.0.0.1:9/other'],
    ['a fragment', 'http://127.0.0.1:9/signed-in#x'],
    ['not a URL', 'javascript:alert(1)'],
  ])('a redirect_uri outside the allow-list (%s) is 400, never a redirect', async (_name, back) => {
    const res = await new Browser().request(loginUrl('idp', back));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.json()).toMatchObject({ error: 'VALIDATION_ERROR' });
  });

  test('a redirect_uri outside the allow-list answers the documented message', async () => {
    const res = await new Browser().request(loginUrl('idp', 'http://evil.example/signed-in'));
    expect(await res.json()).toEqual({ error: 'VALIDATION_ERROR', message: 'redirect_uri is not allowed' });
  });

  test('a path under the allow-listed one is allowed', async () => {
    const res = await new Browser().request(loginUrl('idp', `${BACK}/deeper?x=1`));
    expect(res.status).toBe(302);
  });

  test('an unknown provider is 404', async () => {
    expect((await new Browser().request(loginUrl('nobody'))).status).toBe(404);
  });

  test('a callback without the flow cookie is 400 (nowhere safe to go back to)', async () => {
    const callback = await upToCallback(new Browser(), 'idp');
    const res = await new Browser().request(callback);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.json()).toEqual({ error: 'VALIDATION_ERROR', message: 'Sign-in expired or not started here' });
  });

  test('a state that differs from the cookie\'s is state_mismatch', async () => {
    const browser = new Browser();
    const callback = new URL(await upToCallback(browser, 'idp'));
    callback.searchParams.set('state', 'forged');
    const res = await browser.request(callback.href);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${BACK}#error=state_mismatch`);
  });

  test('a replayed callback (same cookie, state, nonce and code) is state_mismatch, and creates nothing', async () => {
    const browser = new Browser();
    const callback = await upToCallback(browser, 'idp', 'dave');
    const cookie = browser.cookies(t.url).get(FLOW_COOKIE)!;
    const first = await browser.request(callback);
    expect(fragment(first.headers.get('location')!).get('login_code')).toBeTruthy();
    const before = await userCount();
    browser.cookies(t.url).set(FLOW_COOKIE, cookie);
    const replay = await browser.request(callback);
    expect(replay.headers.get('location')).toBe(`${BACK}#error=state_mismatch`);
    expect(await userCount()).toBe(before);
  });

  test('a replayed authorization code (in a new flow) is refused by the provider: provider_error', async () => {
    const first = new Browser();
    const used = new URL(await upToCallback(first, 'idp', 'erin'));
    expect((await first.request(used.href)).status).toBe(302);
    const second = new Browser();
    const fresh = new URL(await upToCallback(second, 'idp', 'erin'));
    fresh.searchParams.set('code', used.searchParams.get('code')!);
    const res = await second.request(fresh.href);
    expect(res.headers.get('location')).toBe(`${BACK}#error=provider_error`);
  });

  test('a PKCE verifier that does not match the challenge is refused by the provider: provider_error', async () => {
    const browser = new Browser();
    const callback = await upToCallback(browser, 'idp');
    const codec = createFlowCodec(t.app.config.auth.jwt_secret);
    const flow = (await codec.open(browser.cookies(t.url).get(FLOW_COOKIE)!))!;
    browser.cookies(t.url).set(FLOW_COOKIE, await codec.seal({ ...flow, verifier: 'x'.repeat(43) }));
    const res = await browser.request(callback);
    expect(res.headers.get('location')).toBe(`${BACK}#error=provider_error`);
  });

  test.each([
    ['an expired ID token', { exp: Math.floor(Date.now() / 1000) - 3600 }],
    ['an ID token for another audience', { aud: 'someone-else' }],
  ])('%s is refused: provider_error, nothing created', async (_name, tamper) => {
    const before = await userCount();
    idp.tamper = tamper;
    try {
      const { url } = await new Browser().navigate(loginUrl('idp_tamper'), { stopAt: BACK, login: 'frank' });
      expect(fragment(url).get('error')).toBe('provider_error');
    } finally {
      idp.tamper = null;
    }
    expect(await userCount()).toBe(before);
  });

  test('an ID token replayed from an earlier sign-in (its nonce) is refused: provider_error', async () => {
    await signIn('idp_tamper', 'grace');
    const earlier = idp.lastIdToken!;
    expect(earlier).toBeTruthy();
    idp.tamper = { replaceWith: earlier };
    try {
      const { url } = await new Browser().navigate(loginUrl('idp_tamper'), { stopAt: BACK, login: 'grace' });
      expect(fragment(url).get('error')).toBe('provider_error');
    } finally {
      idp.tamper = null;
    }
  });

  test('the user refusing at the provider is access_denied', async () => {
    const browser = new Browser();
    const callback = new URL(await upToCallback(browser, 'idp'));
    const denied = new URL(callback.pathname, t.url);
    denied.searchParams.set('error', 'access_denied');
    denied.searchParams.set('state', callback.searchParams.get('state')!);
    const res = await browser.request(denied.href);
    expect(res.headers.get('location')).toBe(`${BACK}#error=access_denied`);
  });

  test('a provider that cannot be reached: 502 PROVIDER_UNAVAILABLE at the start, nothing created', async () => {
    const before = await userCount();
    const res = await new Browser().request(loginUrl('idp_down'));
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ error: 'PROVIDER_UNAVAILABLE', message: 'The sign-in provider is unavailable' });
    expect(await userCount()).toBe(before);
  });

  test('a provider that goes down before the code exchange: provider_error, nothing created', async () => {
    const browser = new Browser();
    const callback = await upToCallback(browser, 'idp', 'heidi');
    const before = await userCount();
    idp.down();
    try {
      const res = await browser.request(callback);
      expect(res.headers.get('location')).toBe(`${BACK}#error=provider_error`);
    } finally {
      idp.up();
    }
    expect(await userCount()).toBe(before);
  });

  test('tokens and codes never reach the logs', async () => {
    const rows = await t.app.db.knex('login_connections').whereNotNull('access_token_sealed').select('id');
    const log = lines.join('');
    expect(log).toContain('/v1/auth/callback/idp');
    expect(log).toContain('code=[redacted]');
    for (const row of rows) {
      const grant = (await t.app.modules.connections.loginGrant(row.id))!;
      expect(log).not.toContain(grant.accessToken);
      if (grant.refreshToken) expect(log).not.toContain(grant.refreshToken);
    }
    expect(log).not.toMatch(/login_code=[A-Za-z0-9_-]{20}/);
  });
});

describe('provider sign-in (OAuth 2.0: the subject from userinfo)', () => {
  test('signs in and opens a session', async () => {
    const { code } = await signIn('idp_oauth2', 'ivan');
    const pair = await exchange(code);
    expect(pair.status).toBe(200);
    const link = await t.app.db.knex('login_connections').where({ provider: 'idp_oauth2', platform_user_id: 'ivan' }).first('user_id');
    expect(link.user_id).toBe(pair.body.data!.user_id);
  });
});

describe('channel and bot connections through the same flow; grants refreshed before expiry', () => {
  let token: string;
  let accountId: string;
  let userId: string;
  const auth = () => ({ authorization: `Bearer ${token}` });
  const connectUrl = (type: string) => `${t.url}/v1/connections/platform_a/connect?type=${type}&redirect_uri=${encodeURIComponent(BACK)}`;
  const status = async () => {
    const res = await fetch(`${t.url}/v1/connections/status`, { headers: auth() });
    return ((await res.json()) as { data: { platform: string; is_connected: boolean; reconnect_required: boolean }[] }).data.find((s) => s.platform === 'platform_a')!;
  };
  /** The provider refuses this refresh token from now on (RFC 7009 at the provider itself). */
  const revokeAtProvider = (value: string) =>
    fetch(`${idp.issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}` },
      body: new URLSearchParams({ token: value }).toString(),
    });

  beforeAll(async () => {
    const { code } = await signIn('idp', 'owner-1');
    const pair = (await exchange(code)).body.data!;
    token = pair.access_token!;
    accountId = pair.account_id!;
    userId = pair.user_id!;
  });

  test('connecting needs a session with connections:create', async () => {
    const res = await new Browser().request(connectUrl('channel'));
    expect(res.status).toBe(401);
  });

  test('the provider flow stores the channel grant (sealed) on the active account', async () => {
    const { url } = await new Browser().navigate(connectUrl('channel'), { stopAt: BACK, login: 'channel-1', headers: auth() });
    expect(Object.fromEntries(fragment(url))).toEqual({ connected: 'platform_a', type: 'channel' });
    expect(await status()).toMatchObject({ is_connected: true, reconnect_required: false });
    const row = await t.app.db.knex('account_connections').where({ account_id: accountId, platform: 'platform_a' }).first('*');
    expect(row.platform_channel_id).toBe('channel-1');
    const grant = (await t.app.modules.connections.accountGrant(accountId, 'platform_a', 'channel'))!;
    expect(JSON.stringify(row)).not.toContain(grant.accessToken);
    expect((await t.app.modules.signin.accountGrantToken(accountId, 'platform_a', 'channel')).token).toBe(grant.accessToken);
  });

  test('a bot connection is stored apart from the channel connection', async () => {
    const { url } = await new Browser().navigate(connectUrl('bot'), { stopAt: BACK, login: 'bot-1', headers: auth() });
    expect(fragment(url).get('type')).toBe('bot');
    expect(await t.app.db.knex('account_bot_connections').where({ account_id: accountId, platform: 'platform_a' }).first('platform_user_id')).toEqual({ platform_user_id: 'bot-1' });
  });

  test('a grant close to expiry is refreshed at the provider before it is used', async () => {
    const before = (await t.app.modules.connections.accountGrant(accountId, 'platform_a', 'channel'))!;
    await t.app.db.knex('account_connections').where({ account_id: accountId, platform: 'platform_a' }).update({ expires_at: new Date(Date.now() + 30_000) });
    const used = await t.app.modules.signin.accountGrantToken(accountId, 'platform_a', 'channel');
    expect(used.token).toEqual(expect.any(String));
    expect(used.token).not.toBe(before.accessToken);
    const after = (await t.app.modules.connections.accountGrant(accountId, 'platform_a', 'channel'))!;
    expect(after.accessToken).toBe(used.token);
    expect(after.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 600_000);
  });

  test('a refresh the provider refuses flags reconnectRequired and notifies the owner', async () => {
    const grant = (await t.app.modules.connections.accountGrant(accountId, 'platform_a', 'channel'))!;
    expect((await revokeAtProvider(grant.refreshToken!)).status).toBe(200);
    await t.app.db.knex('account_connections').where({ account_id: accountId, platform: 'platform_a' }).update({ expires_at: new Date(Date.now() + 30_000) });
    expect(await t.app.modules.signin.accountGrantToken(accountId, 'platform_a', 'channel')).toEqual({ token: null, reconnect: true });
    expect(await status()).toMatchObject({ is_connected: false, reconnect_required: true });
    const notes = await t.app.db.knex('notifications').where({ user_id: userId, type: 'connection_reconnect_required' }).select('data');
    expect(notes).toHaveLength(1);
  });

  test('a login grant whose refresh is refused is flagged (loginReconnectRequired) and its user notified', async () => {
    const row = await t.app.db.knex('login_connections').where({ user_id: userId, provider: 'idp' }).first('id');
    const grant = (await t.app.modules.connections.loginGrant(row.id))!;
    await revokeAtProvider(grant.refreshToken!);
    await t.app.db.knex('login_connections').where({ id: row.id }).update({ token_expires_at: new Date(Date.now() - 1000) });
    expect(await t.app.modules.signin.grantToken(row.id)).toEqual({ token: null, reconnect: true });
    expect((await t.app.db.knex('login_connections').where({ id: row.id }).first('reconnect_required')).reconnect_required).toBe(true);
    expect(await t.app.db.knex('notifications').where({ user_id: userId, type: 'connection_reconnect_required' }).select('id')).toHaveLength(2);
    // Signing in again heals it.
    await signIn('idp', 'owner-1');
    expect((await t.app.db.knex('login_connections').where({ id: row.id }).first('reconnect_required')).reconnect_required).toBe(false);
  });

  test('disconnecting revokes the grant at the provider (RFC 7009), then deletes the connection', async () => {
    const { url } = await new Browser().navigate(connectUrl('bot'), { stopAt: BACK, login: 'bot-2', headers: auth() });
    expect(fragment(url).get('connected')).toBe('platform_a');
    const grant = (await t.app.modules.connections.accountGrant(accountId, 'platform_a', 'bot'))!;
    expect((await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${grant.accessToken}` } })).status).toBe(200);
    const res = await fetch(`${t.url}/v1/connections/platform_a?type=bot`, { method: 'DELETE', headers: auth() });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true });
    expect((await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${grant.accessToken}` } })).status).toBe(401);
    expect(await t.app.db.knex('account_bot_connections').where({ account_id: accountId }).select('platform')).toHaveLength(0);
    const again = await fetch(`${t.url}/v1/connections/platform_a?type=bot`, { method: 'DELETE', headers: auth() });
    expect(again.status).toBe(404);
    expect(await again.json()).toEqual({ error: 'NOT_FOUND', message: 'Connection not found' });
  });
});
