/**
 * An OAuth 2.0-only authorization server (no discovery, no ID token) on a loopback port for the
 * `oauth2` provider kind, built on @node-oauth/oauth2-server with an in-memory model: a login form
 * and a consent form (a provider session cookie between them), the token endpoint
 * (authorization_code with PKCE S256 required, refresh_token with rotation), a bearer-authenticated
 * userinfo endpoint answering `{ sub, email, name }`, and an RFC 7009 revocation endpoint. Every
 * token request and revocation is recorded, so a test can assert what the service asked for.
 *
 * Like test/helpers/oidc.ts, the server starts before the service under test (its config names the
 * endpoints), and the client's redirect URIs are registered once the service's URL is known.
 */
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OAuth2Server, { OAuthError, Request, Response, type AuthorizationCode, type AuthorizationCodeModel, type Client, type RefreshToken, type RefreshTokenModel, type Token, type User } from '@node-oauth/oauth2-server';
import { parse as parseCookie } from 'cookie';
import express, { type Request as ExpressRequest, type Response as ExpressResponse } from 'express';

export const OAUTH2_CLIENT_ID = 'creator-backend-oauth2';
export const OAUTH2_CLIENT_SECRET = 'an-oauth2-test-client-secret-0123456789';
const SESSION_COOKIE = 'as_session';

export interface TestOAuth2Server {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** The endpoints a service's `oauth2` provider config names. */
  endpoints: { authorization_endpoint: string; token_endpoint: string; userinfo_endpoint: string; revocation_endpoint: string };
  register(redirectUris: string[]): void;
  /** Token endpoint requests, in order: the grant type and whether the provider answered 200. */
  tokenRequests: { grantType: string; status: number }[];
  /** Tokens the revocation endpoint was asked to revoke (RFC 7009), in order. */
  revocations: string[];
  /** Revokes a token at the provider itself (as a user revoking the app there would). */
  revoke(token: string): void;
  /** Whether the provider still accepts this access token. */
  accessTokenLive(token: string): boolean;
  /** Delay before the token endpoint answers (ms), so concurrent refreshes overlap. */
  tokenDelayMs: number;
  stop(): Promise<void>;
}

const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));
const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const hidden = (fields: Record<string, string>) => Object.entries(fields).map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`).join('');

/** The authorization request's parameters that travel through the login and consent forms. */
const AUTHORIZE_PARAMS = ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method'] as const;

export async function startTestOAuth2Server(options: { accessTokenLifetime?: number } = {}): Promise<TestOAuth2Server> {
  const client: Client = { id: OAUTH2_CLIENT_ID, redirectUris: [], grants: ['authorization_code', 'refresh_token'] };
  const codes = new Map<string, AuthorizationCode>();
  const accessTokens = new Map<string, Token>();
  const refreshTokens = new Map<string, Token>();
  const sessions = new Map<string, string>();

  const model: AuthorizationCodeModel & RefreshTokenModel = {
    async getClient(rawId, rawSecret) {
      // HTTP Basic credentials are form-urlencoded first (RFC 6749 2.3.1; openid-client encodes
      // even '-'), which the library hands over as sent.
      const clientId = formDecode(rawId);
      const clientSecret = rawSecret === null || rawSecret === undefined ? rawSecret : formDecode(rawSecret);
      if (clientId !== OAUTH2_CLIENT_ID) return false;
      // The token endpoint authenticates the client; the authorization endpoint names it only.
      if (clientSecret !== null && clientSecret !== undefined && clientSecret !== OAUTH2_CLIENT_SECRET) return false;
      return client;
    },
    async saveAuthorizationCode(code, c, user) {
      const saved: AuthorizationCode = { ...code, client: c, user };
      codes.set(code.authorizationCode, saved);
      return saved;
    },
    getAuthorizationCode: async (code) => codes.get(code) ?? false,
    revokeAuthorizationCode: async (code) => codes.delete(code.authorizationCode),
    async saveToken(token, c, user) {
      const saved: Token = { ...token, client: c, user };
      accessTokens.set(token.accessToken, saved);
      if (token.refreshToken) refreshTokens.set(token.refreshToken, saved);
      return saved;
    },
    async getAccessToken(accessToken) {
      const token = accessTokens.get(accessToken);
      return token && (!token.accessTokenExpiresAt || token.accessTokenExpiresAt > new Date()) ? token : false;
    },
    getRefreshToken: async (refreshToken) => (refreshTokens.get(refreshToken) as RefreshToken | undefined) ?? false,
    revokeToken: async (token) => refreshTokens.delete(token.refreshToken),
    generateAccessToken: async () => `at_${randomBytes(24).toString('base64url')}`,
    generateRefreshToken: async () => `rt_${randomBytes(24).toString('base64url')}`,
    validateScope: async (_user, _client, scope) => scope ?? [],
  };

  const oauth = new OAuth2Server({
    model,
    accessTokenLifetime: options.accessTokenLifetime ?? 3600,
    authorizationCodeLifetime: 60,
    allowEmptyState: false,
    // The signed-in provider session (the login form's cookie) is the user being authorized.
    authenticateHandler: { handle: (request: Request) => userOf(request.headers?.cookie) },
  });

  function userOf(cookieHeader: string | undefined): User | false {
    const sid = parseCookie(cookieHeader ?? '')[SESSION_COOKIE];
    const login = sid ? sessions.get(sid) : undefined;
    return login ? { id: login } : false;
  }

  const requestOf = (req: ExpressRequest) =>
    new Request({ headers: req.headers as Record<string, string>, method: req.method, query: req.query as Record<string, string>, body: (req.body ?? {}) as Record<string, unknown> });

  const params = (source: Record<string, unknown>) => Object.fromEntries(AUTHORIZE_PARAMS.filter((k) => typeof source[k] === 'string').map((k) => [k, source[k] as string]));

  /** Sends the library's answer (status, headers, body) through express. */
  function send(res: ExpressResponse, response: Response): void {
    res.status(response.status ?? 200).set(response.headers ?? {});
    if (response.body !== undefined && Object.keys(response.body as object).length > 0) res.json(response.body);
    else res.end();
  }

  function oauthError(res: ExpressResponse, error: unknown): void {
    const e = error instanceof OAuthError ? error : new OAuthError(error as Error);
    res.status(e.code).set({ 'cache-control': 'no-store' }).json({ error: e.name, error_description: e.message });
  }

  const state: TestOAuth2Server = {
    origin: '',
    endpoints: { authorization_endpoint: '', token_endpoint: '', userinfo_endpoint: '', revocation_endpoint: '' },
    register(redirectUris) {
      client.redirectUris = redirectUris;
    },
    tokenRequests: [],
    revocations: [],
    revoke(token) {
      accessTokens.delete(token);
      refreshTokens.delete(token);
    },
    accessTokenLive: (token) => accessTokens.has(token) && (accessTokens.get(token)!.accessTokenExpiresAt ?? new Date(8.64e15)) > new Date(),
    tokenDelayMs: 0,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const app = express();
  app.use(express.urlencoded({ extended: false }));

  // The authorization endpoint: the login form without a provider session, else the consent form.
  app.get('/authorize', (req: ExpressRequest, res: ExpressResponse) => {
    const query = params(req.query as Record<string, unknown>);
    if (query.code_challenge_method !== 'S256' || !query.code_challenge) {
      res.status(400).type('text/plain').send('PKCE with S256 is required');
      return;
    }
    const user = userOf(req.headers.cookie);
    const body = user
      ? `<h1>Allow access?</h1><p>Signed in as ${escapeHtml(String(user.id))}</p><form method="post" action="/authorize">${hidden({ ...query, consent: 'allow' })}<button>Allow</button></form>`
      : `<h1>Sign in</h1><form method="post" action="/login">${hidden(query)}<input name="login"><input type="password" name="password"><button>Sign in</button></form>`;
    res.status(200).type('text/html').send(`<!doctype html><html><body>${body}</body></html>`);
  });

  app.post('/login', (req: ExpressRequest, res: ExpressResponse) => {
    const { login, password, ...rest } = req.body as Record<string, string>;
    if (!login || !password) {
      res.status(400).type('text/plain').send('login and password are required');
      return;
    }
    const sid = randomBytes(16).toString('hex');
    sessions.set(sid, login);
    res.cookie(SESSION_COOKIE, sid, { httpOnly: true, sameSite: 'lax', path: '/' });
    res.redirect(302, `/authorize?${new URLSearchParams(params(rest)).toString()}`);
  });

  // The consent form's submission: the library issues the code and answers the redirect.
  app.post('/authorize', async (req: ExpressRequest, res: ExpressResponse) => {
    const body = req.body as Record<string, string>;
    if (body.consent !== 'allow' && body.redirect_uri) {
      const to = new URL(body.redirect_uri);
      to.searchParams.set('error', 'access_denied');
      if (body.state) to.searchParams.set('state', body.state);
      res.redirect(302, to.href);
      return;
    }
    const response = new Response();
    try {
      await oauth.authorize(requestOf(req), response);
      send(res, response);
    } catch (error) {
      if (response.status === 302 && response.headers?.location) send(res, response);
      else oauthError(res, error);
    }
  });

  app.post('/token', async (req: ExpressRequest, res: ExpressResponse) => {
    const grantType = String((req.body as Record<string, unknown>).grant_type ?? '');
    if (state.tokenDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, state.tokenDelayMs));
    const response = new Response();
    try {
      await oauth.token(requestOf(req), response);
      state.tokenRequests.push({ grantType, status: 200 });
      send(res, response);
    } catch (error) {
      const e = error instanceof OAuthError ? error : null;
      state.tokenRequests.push({ grantType, status: e?.code ?? 500 });
      oauthError(res, error);
    }
  });

  app.get('/userinfo', async (req: ExpressRequest, res: ExpressResponse) => {
    try {
      const token = await oauth.authenticate(requestOf(req), new Response());
      const login = String(token.user.id);
      res.status(200).json({ sub: login, email: `${login}@oauth2.example.test`, name: `OAuth2 ${login}` });
    } catch (error) {
      const e = error instanceof OAuthError ? error : new OAuthError(error as Error);
      res.status(e.code).set('www-authenticate', `Bearer error="${e.name}"`).end();
    }
  });

  // RFC 7009: an authenticated client names a token; the answer is 200 whether or not it was live.
  app.post('/revoke', (req: ExpressRequest, res: ExpressResponse) => {
    const [scheme, credentials] = (req.headers.authorization ?? '').split(' ');
    const [id, secret] = scheme?.toLowerCase() === 'basic' && credentials ? Buffer.from(credentials, 'base64').toString().split(':').map(formDecode) : [];
    if (id !== OAUTH2_CLIENT_ID || secret !== OAUTH2_CLIENT_SECRET) {
      res.status(401).json({ error: 'invalid_client' });
      return;
    }
    const token = (req.body as Record<string, unknown>).token;
    if (typeof token !== 'string' || !token) {
      res.status(400).json({ error: 'invalid_request' });
      return;
    }
    state.revocations.push(token);
    state.revoke(token);
    res.status(200).end();
  });

  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  state.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.endpoints = {
    authorization_endpoint: `${state.origin}/authorize`,
    token_endpoint: `${state.origin}/token`,
    userinfo_endpoint: `${state.origin}/userinfo`,
    revocation_endpoint: `${state.origin}/revoke`,
  };
  return state;
}
