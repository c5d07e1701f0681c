/**
 * The relying party: every OAuth 2.0 / OpenID Connect step goes through openid-client (discovery,
 * authorization URL with PKCE S256, state and nonce, the code grant with ID token validation,
 * userinfo, refresh, RFC 7009 revocation); nothing of the protocol is written here. A provider's
 * `Configuration` is discovered once and kept; a failed discovery is not kept (next call retries).
 *
 * Plain `http://` endpoints are allowed only on loopback hosts (a provider on the same machine,
 * tests); anything else must be https.
 */
import { randomUUID } from 'node:crypto';
import type * as OpenIdClient from 'openid-client';
import type { ProviderConfig } from '../../config/config';

type Client = typeof OpenIdClient;

// openid-client 6 is ESM-only and the build is CommonJS, where TypeScript would turn `import()`
// into `require()`; a Function keeps the native dynamic import (Node, tsx and jest's vm modules).
// The tag keeps V8 from sharing one compiled body across jest's per-file contexts (see sounds).
const importEsm = new Function('specifier', `return import(specifier); // ${randomUUID()}`) as (specifier: string) => Promise<Client>;
let loaded: Promise<Client> | undefined;
const openid = (): Promise<Client> =>
  (loaded ??= importEsm('openid-client').catch((error: unknown) => {
    loaded = undefined;
    throw error;
  }));

/** The provider could not be reached or did not answer as a provider (discovery, network). */
export class ProviderUnavailableError extends Error {
  constructor(readonly slug: string, cause: unknown) {
    super(`provider ${slug} is unavailable`, { cause });
    this.name = 'ProviderUnavailableError';
  }
}

/** What a completed code grant yields: who signed in, and the grant. */
export interface SignedIn {
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  accessToken: string;
  refreshToken: string | null;
  expiresAt: Date | null;
  scopes: string[];
}

export interface FlowChecks {
  state: string;
  nonce: string | null;
  verifier: string;
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);
const isLoopback = (url: string | null) => url !== null && URL.canParse(url) && new URL(url).protocol === 'http:' && LOOPBACK.has(new URL(url).hostname);
/** Seconds openid-client waits for a provider's answer. */
const TIMEOUT_SECONDS = 10;

export interface ProviderClient {
  readonly config: ProviderConfig;
  /**
   * A fresh state, nonce (oidc) and PKCE verifier, and the URL to send the browser to. `prompt`
   * (OpenID Connect `prompt`, e.g. `login`) asks the provider for a fresh login.
   */
  authorizationUrl(callbackUrl: string, options?: { prompt?: string }): Promise<{ url: string; checks: FlowChecks }>;
  /** The code grant for the provider's answer at `currentUrl`, validated against `checks`. */
  complete(currentUrl: URL, checks: FlowChecks): Promise<SignedIn>;
  refresh(refreshToken: string): Promise<Omit<SignedIn, 'subject' | 'email' | 'emailVerified' | 'name'>>;
  /** RFC 7009; false when the provider has no revocation endpoint. */
  revoke(token: string): Promise<boolean>;
}

export function createProviderClient(provider: ProviderConfig): ProviderClient {
  let configuration: Promise<OpenIdClient.Configuration> | undefined;
  const insecure = [provider.issuer, provider.authorization_endpoint, provider.token_endpoint, provider.userinfo_endpoint, provider.revocation_endpoint].some(isLoopback);
  const overrides = Object.fromEntries(
    (['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'revocation_endpoint'] as const).filter((k) => provider[k]).map((k) => [k, provider[k]!]),
  );

  async function build(): Promise<OpenIdClient.Configuration> {
    const client = await openid();
    const auth = client.ClientSecretBasic(provider.client_secret);
    let config: OpenIdClient.Configuration;
    if (provider.kind === 'oidc') {
      const discovered = await client.discovery(new URL(provider.issuer!), provider.client_id, undefined, auth, {
        timeout: TIMEOUT_SECONDS,
        ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
      });
      config = Object.keys(overrides).length ? new client.Configuration({ ...discovered.serverMetadata(), ...overrides }, provider.client_id, undefined, auth) : discovered;
    } else {
      const issuer = provider.issuer ?? new URL(provider.authorization_endpoint!).origin;
      config = new client.Configuration({ issuer, ...overrides }, provider.client_id, undefined, auth);
    }
    config.timeout = TIMEOUT_SECONDS;
    if (insecure) client.allowInsecureRequests(config);
    return config;
  }

  async function configured(): Promise<OpenIdClient.Configuration> {
    configuration ??= build().catch((error: unknown) => {
      configuration = undefined;
      throw new ProviderUnavailableError(provider.slug, error);
    });
    return configuration;
  }

  const expiry = (expiresIn: number | undefined) => (expiresIn !== undefined ? new Date(Date.now() + expiresIn * 1000) : null);

  return {
    config: provider,
    async authorizationUrl(callbackUrl, options = {}) {
      const [client, config] = await Promise.all([openid(), configured()]);
      const verifier = client.randomPKCECodeVerifier();
      const checks: FlowChecks = { state: client.randomState(), nonce: provider.kind === 'oidc' ? client.randomNonce() : null, verifier };
      const params: Record<string, string> = {
        redirect_uri: callbackUrl,
        scope: provider.scopes.join(' '),
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state: checks.state,
        ...(checks.nonce ? { nonce: checks.nonce } : {}),
        ...(options.prompt ? { prompt: options.prompt } : {}),
      };
      return { url: client.buildAuthorizationUrl(config, params).href, checks };
    },

    async complete(currentUrl, checks) {
      const [client, config] = await Promise.all([openid(), configured()]);
      const tokens = await client.authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: checks.verifier,
        expectedState: checks.state,
        ...(checks.nonce ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}),
      });
      const grant = {
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token ?? null,
        expiresAt: expiry(tokens.expiresIn()),
        scopes: (tokens.scope ?? provider.scopes.join(' ')).split(' ').filter(Boolean),
      };
      const claims = provider.kind === 'oidc' ? tokens.claims() : undefined;
      // oauth2 providers have no ID token: the subject is userinfo's (openid-client checks it against the ID token's when there is one).
      const info = provider.kind === 'oauth2' || (claims && config.serverMetadata().userinfo_endpoint && !claims.email)
        ? await client.fetchUserInfo(config, tokens.access_token, claims?.sub ?? client.skipSubjectCheck)
        : undefined;
      const subject = claims?.sub ?? info?.sub;
      if (!subject) throw new Error('the provider named no subject');
      const pick = (key: string) => (claims?.[key] ?? info?.[key]) as unknown;
      return {
        subject,
        email: typeof pick('email') === 'string' ? (pick('email') as string) : null,
        emailVerified: pick('email_verified') === true,
        name: typeof pick('name') === 'string' ? (pick('name') as string) : typeof pick('preferred_username') === 'string' ? (pick('preferred_username') as string) : null,
        ...grant,
      };
    },

    async refresh(refreshToken) {
      const [client, config] = await Promise.all([openid(), configured()]);
      const tokens = await client.refreshTokenGrant(config, refreshToken);
      return {
        accessToken: tokens.access_token,
        // A provider that does not rotate refresh tokens answers none: the old one stays valid.
        refreshToken: tokens.refresh_token ?? refreshToken,
        expiresAt: expiry(tokens.expiresIn()),
        scopes: (tokens.scope ?? provider.scopes.join(' ')).split(' ').filter(Boolean),
      };
    },

    async revoke(token) {
      const [client, config] = await Promise.all([openid(), configured()]);
      if (!config.serverMetadata().revocation_endpoint) return false;
      await client.tokenRevocation(config, token);
      return true;
    },
  };
}

/**
 * Whether a failure of openid-client means the provider refused (an OAuth error answer, an ID
 * token that did not validate) rather than could not be reached; both are `provider_error` to
 * the browser, but only a refusal of a refresh flags the grant for reconnection.
 */
export async function isProviderRefusal(error: unknown): Promise<boolean> {
  const client = await openid();
  return error instanceof client.ResponseBodyError || error instanceof client.AuthorizationResponseError;
}
