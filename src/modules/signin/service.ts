/**
 * Sign-in with OAuth 2.0 / OpenID Connect providers: the start that sends the browser
 * to the provider, the callback that completes the code grant and sends the browser back with a
 * one-time login code (never a token in a URL), and the exchange of that code for a session.
 * The protocol is openid-client's (providers.ts); users, sessions and grants belong to the
 * accounts, sessions and connections modules, reached through their APIs.
 *
 * What is logged of a failure is its class and message only: an error's cause may hold a
 * provider's answer, and no credential is ever logged.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { requireAccountId, requireUserId, type AuthContext } from '../../auth/context';
import type { Config } from '../../config/config';
import { AppError } from '../../errors';
import type { Logger } from '../../infra/logger';
import type { ModuleApis } from '../contract';
import type { GrantOf } from '../connections';
import type { Client, SessionTokens } from '../sessions';
import { signinMessages } from './errors';
import { FLOW_TTL_SECONDS, type Flow, type FlowCodec } from './flow-cookie';
import { isProviderRefusal, ProviderUnavailableError, type ProviderClient } from './providers';
import type { SigninRepo } from './repo';

/** A login code lives 60 seconds and is good once. */
export const LOGIN_CODE_TTL_SECONDS = 60;

export interface SigninDeps {
  config: Readonly<Config>;
  log: Logger;
  repo: SigninRepo;
  codec: FlowCodec;
  providers: ReadonlyMap<string, ProviderClient>;
  accounts: Pick<ModuleApis['accounts'], 'findOrCreateUser' | 'createUser' | 'signInUser'>;
  sessions: Pick<ModuleApis['sessions'], 'openSession'>;
  connections: Pick<
    ModuleApis['connections'],
    'loginUserOf' | 'claimGrantRefresh' | 'releaseGrantRefresh' | 'storeLoginGrant' | 'assignSignedInLogin' | 'dueGrants' | 'loginGrant' | 'replaceLoginGrant' | 'flagLoginReconnect' | 'storeAccountGrant' | 'accountGrant' | 'replaceAccountGrant' | 'flagAccountReconnect' | 'removeAccountGrant'
  >;
  notifications: Pick<ModuleApis['notifications'], 'notify'>;
  /** The owner of an account (told when its connection needs reconnecting). */
  accountOwner(accountId: string): Promise<string | null>;
}

/** A grant is refreshed when it has less than this left (or already expired). */
export const REFRESH_MARGIN_MS = 5 * 60_000;
/**
 * The background sweep (job `signin.grant-refresh`) refreshes grants with less than this left:
 * twice the use-time margin, so with a period well under 5 minutes a grant is refreshed by the
 * sweep before any platform call would have to wait for it.
 */
export const SWEEP_HORIZON_MS = 2 * REFRESH_MARGIN_MS;
/** Grants one sweep looks at (soonest expiry first); the next period takes the rest. */
export const SWEEP_BATCH = 200;

/** How long a node holds a grant's refresh: twice openid-client's wait for the provider, so a live holder is done first. */
export const REFRESH_CLAIM_MS = 20_000;
/** How often a node waiting on another's refresh reads the grant again. */
const CLAIM_POLL_MS = 100;

/** A stored grant as the refresh rule sees it, and how to replace or flag it. */
interface GrantStore {
  load(): Promise<{ accessToken: string; refreshToken: string | null; expiresAt: Date | null; reconnectRequired: boolean } | null>;
  replace(next: { accessToken: string; refreshToken: string | null; expiresAt: Date | null; scopes: string[] }): Promise<void>;
  refused(): Promise<GrantToken>;
}

/** What a platform call may use: the access token, or why there is none. */
export type GrantToken = { token: string; reconnect: false } | { token: null; reconnect: boolean };

const hash = (value: string) => createHash('sha256').update(value).digest('hex');

/** The allow-list rule: same scheme, host and port as an entry, and a path at or under its path. */
export function allowedRedirect(allowList: readonly string[], candidate: string): string | null {
  if (!URL.canParse(candidate)) return null;
  const url = new URL(candidate);
  if (url.hash || url.username || url.password || !/^https?:$/.test(url.protocol)) return null;
  const ok = allowList.some((entry) => {
    const allowed = new URL(entry);
    if (allowed.protocol !== url.protocol || allowed.host !== url.host) return false;
    const base = allowed.pathname.endsWith('/') ? allowed.pathname : `${allowed.pathname}/`;
    return url.pathname === allowed.pathname || url.pathname.startsWith(base);
  });
  return ok ? url.href : null;
}

/** Where the browser goes back to, with the outcome in the fragment (never sent to a server). */
const back = (redirectUri: string, outcome: Record<string, string>) => `${redirectUri}#${new URLSearchParams(outcome).toString()}`;

export function createSigninService(deps: SigninDeps) {
  const { config, log, repo, codec, providers } = deps;

  function provider(slug: string, purpose: 'login' | 'channel' | 'bot'): ProviderClient {
    const found = providers.get(slug);
    if (!found || !found.config.purposes.includes(purpose)) throw AppError.notFound(signinMessages.providerNotFound(slug));
    return found;
  }

  /** `<public_url>/v1/auth/callback/<slug>`; without public_url (outside production), the request's own host. */
  function callbackUrl(slug: string, host: string | undefined): string {
    const base = config.auth.public_url ?? (config.env !== 'production' && host ? `http://${host}` : null);
    if (!base) throw AppError.validation(signinMessages.publicUrlRequired);
    return new URL(`/v1/auth/callback/${slug}`, base.endsWith('/') ? base : `${base}/`).href;
  }

  /** Finds the user of `(provider, subject)` or creates one (with an owned account) on a first sign-in. */
  async function userFor(slug: string, who: { subject: string; email: string | null; emailVerified: boolean; name: string | null }) {
    const known = await deps.connections.loginUserOf(slug, who.subject);
    const existing = known ? await deps.accounts.signInUser(known) : null;
    if (existing) return existing;
    const name = who.name ?? who.email ?? `${slug} user`;
    // Only an address the provider verified may link to (or create) the user that owns it.
    return who.email && who.emailVerified ? deps.accounts.findOrCreateUser(who.email, name) : deps.accounts.createUser(name);
  }

  /** The provider refused the refresh: the grant needs the user back, who is told so. */
  async function needsReconnect(id: string, grant: { userId: string; provider: string }): Promise<GrantToken> {
    await deps.connections.flagLoginReconnect(id);
    await deps.notifications.notify({ userId: grant.userId, type: 'connection_reconnect_required', data: { provider: grant.provider, loginConnectionId: id } });
    log.info({ provider: grant.provider, login_connection_id: id }, 'login grant needs reconnection');
    return { token: null, reconnect: true };
  }

  /**
   * The refresh rule shared by login, channel and bot grants: the token while it has more than
   * `marginMs` left, else a refresh; a refusal flags the grant and tells its owner.
   *
   * One refresh per grant across nodes: the refresh is claimed in the grant's row first
   * (connections' `claimGrantRefresh`), and a node that finds it claimed reads the grant again
   * every CLAIM_POLL_MS until the holder's result is stored (or the claim ends unused, when it
   * claims it itself). A provider that rotates refresh tokens thus never sees the same one twice.
   * `wait: false` (the background sweep) leaves a grant another node is refreshing to that node.
   */
  async function fresh(slug: string, ref: GrantOf, store: GrantStore, marginMs: number, wait = true): Promise<GrantToken> {
    const giveUpAt = Date.now() + REFRESH_CLAIM_MS;
    for (;;) {
      const grant = await store.load();
      if (!grant) return { token: null, reconnect: false };
      if (grant.reconnectRequired) return { token: null, reconnect: true };
      const expiresAt = grant.expiresAt?.getTime() ?? Infinity;
      if (expiresAt - Date.now() > marginMs) return { token: grant.accessToken, reconnect: false };
      const client = providers.get(slug);
      if (!client || !grant.refreshToken) return expiresAt > Date.now() ? { token: grant.accessToken, reconnect: false } : store.refused();
      const claim = await deps.connections.claimGrantRefresh(ref, REFRESH_CLAIM_MS);
      if (claim) {
        try {
          // Another node may have stored its refresh between the read and the claim: read again.
          const current = await store.load();
          if (current?.refreshToken && !current.reconnectRequired && current.accessToken === grant.accessToken) return await refreshHeld(slug, client, current.refreshToken, expiresAt, current.accessToken, store);
        } finally {
          await deps.connections.releaseGrantRefresh(ref, claim);
        }
        continue;
      }
      // Another node is refreshing this grant: its result is read on the next turn.
      if (!wait || Date.now() >= giveUpAt) return expiresAt > Date.now() ? { token: grant.accessToken, reconnect: false } : { token: null, reconnect: false };
      await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
    }
  }

  /** The refresh itself, under this node's claim. */
  async function refreshHeld(slug: string, client: ProviderClient, refreshToken: string, expiresAt: number, accessToken: string, store: GrantStore): Promise<GrantToken> {
    try {
      const next = await client.refresh(refreshToken);
      await store.replace(next);
      return { token: next.accessToken, reconnect: false };
    } catch (error) {
      // A claim that ran out while the provider answered slowly: another node's rotation stands.
      const now = await store.load();
      if (now && now.refreshToken !== refreshToken && !now.reconnectRequired) return { token: now.accessToken, reconnect: false };
      if (await isProviderRefusal(error)) return store.refused();
      log.warn({ provider: slug, error: (error as Error).name, reason: (error as Error).message }, 'grant refresh failed');
      return expiresAt > Date.now() ? { token: accessToken, reconnect: false } : { token: null, reconnect: false };
    }
  }

  /**
   * One look-up (and refresh) per grant at a time in this process: a platform call and the sweep,
   * or two calls, asking at once share the answer instead of each waiting on the row's claim.
   */
  const inFlight = new Map<string, Promise<GrantToken>>();
  function once(key: string, run: () => Promise<GrantToken>): Promise<GrantToken> {
    const running = inFlight.get(key);
    if (running) return running;
    const started = run().finally(() => inFlight.delete(key));
    inFlight.set(key, started);
    return started;
  }

  function accountGrantToken(accountId: string, platform: string, type: 'channel' | 'bot', marginMs = REFRESH_MARGIN_MS, wait = true): Promise<GrantToken> {
    return once(`${type}:${accountId}:${platform}`, () =>
      fresh(platform, { type, accountId, platform }, {
        load: () => deps.connections.accountGrant(accountId, platform, type),
        replace: (next) => deps.connections.replaceAccountGrant(accountId, platform, type, next),
        async refused() {
          await deps.connections.flagAccountReconnect(accountId, platform, type);
          const owner = await deps.accountOwner(accountId);
          if (owner) await deps.notifications.notify({ userId: owner, type: 'connection_reconnect_required', data: { platform, type, accountId } });
          log.info({ platform, type, account_id: accountId }, 'connection needs reconnection');
          return { token: null, reconnect: true };
        },
      }, marginMs, wait),
    );
  }

  function grantToken(loginConnectionId: string, marginMs = REFRESH_MARGIN_MS, wait = true): Promise<GrantToken> {
    return once(`login:${loginConnectionId}`, async () => {
      const grant = await deps.connections.loginGrant(loginConnectionId);
      if (!grant) return { token: null, reconnect: false };
      return fresh(grant.provider, { type: 'login', id: loginConnectionId }, {
        load: () => deps.connections.loginGrant(loginConnectionId),
        replace: (next) => deps.connections.replaceLoginGrant(loginConnectionId, next),
        refused: () => needsReconnect(loginConnectionId, grant),
      }, marginMs, wait);
    });
  }

  return {
    /**
     * The access token of a channel (or bot) connection for a platform call, under the same
     * refresh rule as login grants; a refused refresh sets the connection's `reconnectRequired`
     * and notifies the account's owner.
     */
    accountGrantToken: (accountId: string, platform: string, type: 'channel' | 'bot'): Promise<GrantToken> => accountGrantToken(accountId, platform, type),

    /**
     * The background refresh (job `signin.grant-refresh`, docs/adr/005): every login, channel and
     * bot grant that expires within SWEEP_HORIZON_MS and is not flagged goes through the same rule
     * as a platform call's, so tokens are fresh before anyone needs them and a refusal flags the
     * grant and notifies its owner without waiting for a call. One grant's failure does not stop
     * the others; a grant another node is refreshing is left to it. Answers how many grants were
     * looked at.
     */
    async refreshDue(): Promise<number> {
      const due = await deps.connections.dueGrants(new Date(Date.now() + SWEEP_HORIZON_MS), SWEEP_BATCH);
      for (const grant of due) {
        try {
          if (grant.type === 'login') await grantToken(grant.id, SWEEP_HORIZON_MS, false);
          else await accountGrantToken(grant.accountId, grant.platform, grant.type, SWEEP_HORIZON_MS, false);
        } catch (error) {
          log.warn({ grant_type: grant.type, error: (error as Error).name, reason: (error as Error).message }, 'grant refresh sweep: one grant failed');
        }
      }
      return due.length;
    },

    /** GET /v1/connections/{platform}/connect: the same flow as a login, for the caller's active account. */
    async startConnect(ctx: AuthContext, platform: string, type: 'channel' | 'bot', redirectUri: string, host: string | undefined) {
      return this.startLogin(platform, redirectUri, host, type, { accountId: requireAccountId(ctx), userId: requireUserId(ctx) });
    },

    /**
     * DELETE /v1/connections/{platform}: revokes the grant at the provider when it has a
     * revocation endpoint (RFC 7009: the refresh token, then the access token), then deletes the
     * connection. A provider that cannot be reached does not keep the connection: it is logged.
     */
    async disconnect(ctx: AuthContext, platform: string, type: 'channel' | 'bot'): Promise<void> {
      const accountId = requireAccountId(ctx);
      const grant = await deps.connections.accountGrant(accountId, platform, type);
      const client = providers.get(platform);
      if (grant && client) {
        try {
          if (grant.refreshToken) await client.revoke(grant.refreshToken);
          await client.revoke(grant.accessToken);
        } catch (error) {
          log.warn({ provider: platform, error: (error as Error).name, reason: (error as Error).message }, 'grant revocation failed');
        }
      }
      if (!(await deps.connections.removeAccountGrant(accountId, platform, type, ctx.userId))) throw AppError.notFound(signinMessages.connectionNotFound);
    },

    /**
     * The access token of a login connection for a platform call, refreshed first when it expires
     * within REFRESH_MARGIN_MS. `{ token: null, reconnect: false }`: the connection holds no grant
     * (an operator-recorded one). A refresh the provider refuses flags the connection
     * (`loginReconnectRequired`) and notifies its user; a provider that cannot be reached leaves
     * it as it was (the old token while it lasts).
     */
    grantToken: (loginConnectionId: string): Promise<GrantToken> => grantToken(loginConnectionId),

    /** GET /v1/auth/login/{provider}: the provider's authorization URL and the sealed flow cookie. */
    async startLogin(slug: string, redirectUri: string, host: string | undefined, purpose: Flow['type'] = 'login', owner: { accountId: string; userId: string } | null = null): Promise<{ location: string; cookie: string }> {
      const target = allowedRedirect(config.auth.redirect_allow_list, redirectUri);
      if (!target) throw AppError.validation(signinMessages.redirectNotAllowed);
      const client = provider(slug, purpose);
      const callback = callbackUrl(slug, host);
      let started: Awaited<ReturnType<ProviderClient['authorizationUrl']>>;
      try {
        // A bot is another identity than the creator's: the provider asks for a login instead of
        // silently reusing the session the creator has there (which would connect the creator as the bot).
        started = await client.authorizationUrl(callback, purpose === 'bot' ? { prompt: 'login' } : {});
      } catch (error) {
        log.warn({ provider: slug, error: (error as Error).name, reason: (error as Error).message }, 'sign-in provider unavailable');
        throw new AppError('PROVIDER_UNAVAILABLE', signinMessages.providerNotFound(slug));
      }
      const cookie = await codec.seal({
        fid: randomUUID(),
        provider: slug,
        type: purpose,
        redirectUri: target,
        callbackUrl: callback,
        ...started.checks,
        accountId: owner?.accountId ?? null,
        userId: owner?.userId ?? null,
      });
      return { location: started.url, cookie };
    },

    /**
     * GET /v1/auth/callback/{provider}: the outcome as a redirect to the flow's `redirect_uri`;
     * 400 only when there is no valid flow cookie (nowhere safe to send the browser).
     */
    async callback(slug: string, query: Record<string, unknown>, rawQuery: string, cookie: string | undefined): Promise<{ location: string }> {
      const flow = cookie ? await codec.open(cookie) : null;
      if (!flow || flow.provider !== slug) throw AppError.validation(signinMessages.flowMissing);
      const fail = (error: 'access_denied' | 'state_mismatch' | 'provider_error') => ({ location: back(flow.redirectUri, { error }) });
      if (typeof query.error === 'string') return fail(query.error === 'access_denied' ? 'access_denied' : 'provider_error');
      if (query.state !== flow.state) return fail('state_mismatch');
      if (!(await repo.useFlow(hash(flow.fid), new Date(Date.now() + FLOW_TTL_SECONDS * 1000)))) return fail('state_mismatch');
      const client = providers.get(slug);
      if (!client) return fail('provider_error');
      const currentUrl = new URL(flow.callbackUrl);
      currentUrl.search = rawQuery;
      let signedIn: Awaited<ReturnType<ProviderClient['complete']>>;
      try {
        signedIn = await client.complete(currentUrl, flow);
      } catch (error) {
        const e = error as Error & { error?: string };
        log.warn({ provider: slug, error: e instanceof ProviderUnavailableError ? 'ProviderUnavailable' : e.name, code: e.error, reason: e.message }, 'sign-in refused');
        return fail('provider_error');
      }
      if (flow.type !== 'login') {
        if (!flow.accountId) return fail('provider_error');
        await deps.connections.storeAccountGrant({
          accountId: flow.accountId,
          platform: slug,
          type: flow.type,
          subject: signedIn.subject,
          actorId: flow.userId,
          grant: { accessToken: signedIn.accessToken, refreshToken: signedIn.refreshToken, expiresAt: signedIn.expiresAt, scopes: signedIn.scopes },
        });
        return { location: back(flow.redirectUri, { connected: slug, type: flow.type }) };
      }
      const { user, accountId } = await userFor(slug, signedIn);
      const loginConnectionId = await deps.connections.storeLoginGrant({
        userId: user.id,
        provider: slug,
        subject: signedIn.subject,
        displayName: signedIn.name,
        grant: { accessToken: signedIn.accessToken, refreshToken: signedIn.refreshToken, expiresAt: signedIn.expiresAt, scopes: signedIn.scopes },
      });
      if (accountId) await deps.connections.assignSignedInLogin({ accountId, userId: user.id, loginConnectionId, provider: slug });
      const code = randomBytes(32).toString('base64url');
      await repo.insertCode({ code_hash: hash(code), user_id: user.id, account_id: accountId, provider: slug, expires_at: new Date(Date.now() + LOGIN_CODE_TTL_SECONDS * 1000) });
      return { location: back(flow.redirectUri, { login_code: code }) };
    },

    /** POST /v1/auth/login/exchange: the session pair of the user the code was issued to. */
    async exchange(loginCode: string, client: Client): Promise<SessionTokens> {
      const row = await repo.takeCode(hash(loginCode));
      if (!row || new Date(row.expiresAt).getTime() <= Date.now()) throw new AppError('INVALID_LOGIN_CODE', signinMessages.invalidLoginCode);
      const found = await deps.accounts.signInUser(row.userId);
      if (!found) throw new AppError('INVALID_LOGIN_CODE', signinMessages.invalidLoginCode);
      const accountId = row.accountId ?? found.accountId;
      return deps.sessions.openSession(found.user, accountId, client, 'oauth', { provider: row.provider });
    },

    /** The flow cookie's attributes; `maxAge` 0 clears it. */
    flowCookieOptions(maxAgeSeconds = FLOW_TTL_SECONDS) {
      return { httpOnly: true, path: '/v1/', sameSite: 'lax' as const, secure: config.env !== 'development', maxAge: maxAgeSeconds * 1000 };
    },
  };
}

export type SigninService = ReturnType<typeof createSigninService>;
