/**
 * Login sessions and the JWTs minted from them (Part 1, "JWT"; DESIGN.md bootstrap contract):
 * development login, refresh with rotation and replay detection, account switching, the
 * caller's session list and revocation, WebSocket-only tokens, and popout sessions exchanged
 * from popout tokens. Sessions are rows; a JWT is only as good as its row, and a revoked row is
 * announced on the bus so that the sockets it opened close on every node.
 */
import { randomUUID } from 'node:crypto';
import { requireUserId, sortedGrants, type AuthContext } from '../../auth/context';
import { parseCredential, tokenHash } from '../../auth/credentials';
import type { JwtService } from '../../auth/jwt';
import type { Revocations } from '../../auth/revocations';
import type { CredentialStore } from '../../auth/store';
import type { PopoutGrantSource, PrincipalSource } from '../../auth/verifiers';
import type { Config } from '../../config/config';
import { AppError, messages } from '../../errors';
import type { ModuleApis } from '../contract';
import { sessionMessages } from './errors';
import type { SessionRow, SessionsRepo } from './repo';
import type { PopoutSession, SessionInfo, SessionTokens, WsToken } from './types';

export type { SessionInfo, SessionTokens } from './types';


/** Popout sessions and their cookie live 15 minutes (Part 1, "Limits"). */
export const POPOUT_SESSION_TTL_SECONDS = 900;

export interface Client {
  ip: string | null;
  userAgent: string | null;
}


export interface SessionsDeps {
  config: Readonly<Config>;
  jwt: JwtService;
  store: CredentialStore;
  repo: SessionsRepo;
  principals: PrincipalSource;
  accounts: Pick<ModuleApis['accounts'], 'findOrCreateUser' | 'assignSystemAdminRole' | 'isMember'>;
  audit: Pick<ModuleApis['audit'], 'record'>;
  revocations: Revocations;
  popoutGrant: PopoutGrantSource;
}

export function createSessionsService(deps: SessionsDeps) {
  const { config, jwt, store, repo, principals, audit, revocations } = deps;

  /** Revokes a session row and, when this call revoked it, closes its sockets everywhere. */
  async function revokeSession(id: string, userId?: string): Promise<boolean> {
    const revoked = await repo.revoke(id, userId);
    if (revoked) await revocations.announce({ credential_id: id, kind: 'session' });
    return revoked;
  }

  /** An access JWT with the user's grants in the session's account, and the session's refresh JWT. */
  async function issuePair(session: Pick<SessionRow, 'id' | 'user_id' | 'account_id' | 'refresh_jti' | 'expires_at'>): Promise<SessionTokens> {
    const live = await principals.principal(session.user_id, session.account_id);
    const accountId = live.account !== null ? session.account_id : null;
    const sessionEnds = new Date(session.expires_at);
    const accessEnds = new Date(Math.min(Date.now() + config.auth.access_token_expiration * 1000, sessionEnds.getTime()));
    const access = await jwt.sign(
      {
        sub: session.user_id,
        use: 'access',
        session_id: session.id,
        account_id: accountId,
        account_permissions: live.account ?? [],
        admin_permissions: [...new Set(live.admin)].sort(),
        user_permissions: [...new Set(live.user)].sort(),
      },
      { expiresAt: accessEnds },
    );
    const refresh = await jwt.sign({ sub: session.user_id, use: 'refresh', session_id: session.id, jti: session.refresh_jti }, { expiresAt: sessionEnds });
    return {
      accessToken: access.token,
      refreshToken: refresh.token,
      expiresAt: access.expiresAt.toISOString(),
      sessionId: session.id,
      userId: session.user_id,
      accountId,
    };
  }

  /**
   * Opens a session for a signed-in user (dev login or a provider sign-in): bootstrap admins get
   * `super-admin`, `user:login` is audited with the method, and the pair is answered.
   */
  async function openSession(user: { id: string; email: string | null }, accountId: string | null, client: Client, method: 'dev_login' | 'oauth', extra: Record<string, unknown> = {}): Promise<SessionTokens> {
    if (config.auth.bootstrap_admins.some((email) => email.toLowerCase() === user.email?.toLowerCase())) {
      await deps.accounts.assignSystemAdminRole(user.id);
    }
    const session = {
      id: randomUUID(),
      user_id: user.id,
      account_id: accountId,
      refresh_jti: randomUUID(),
      ip_address: client.ip,
      user_agent: client.userAgent,
      expires_at: new Date(Date.now() + config.auth.session_expiration * 1000),
    };
    await repo.insert(session);
    await audit.record({
      scope: 'user',
      type: 'user:login',
      userId: user.id,
      actorId: user.id,
      ipAddress: client.ip,
      userAgent: client.userAgent,
      metadata: { method, session_id: session.id, ...extra },
    });
    return issuePair(session);
  }

  return {
    /** DESIGN.md: `POST /v1/auth/dev/login`, only while `auth.dev_login` is on. */
    async devLogin(input: { email: string; displayName: string }, client: Client): Promise<SessionTokens> {
      if (!config.auth.dev_login) throw AppError.notFound();
      const { user, accountId } = await deps.accounts.findOrCreateUser(input.email, input.displayName);
      return openSession(user, accountId, client, 'dev_login');
    },

    /** Revokes every session of a user (a suspension) and closes their sockets on every node. */
    async revokeAllOfUser(userId: string): Promise<number> {
      const ids = await repo.revokeAllOfUser(userId);
      for (const id of ids) await revocations.announce({ credential_id: id, kind: 'session' });
      return ids.length;
    },
    /**
     * Closes the sockets of every open session active in an account (a suspended account) without
     * revoking them: the sessions live on and may switch to another account.
     */
    async closeSocketsInAccount(accountId: string): Promise<void> {
      for (const id of await repo.openInAccount(accountId)) await revocations.announce({ credential_id: id, kind: 'session' });
    },
    /** A session for a user a provider sign-in identified (the login code exchange). */
    openSession,
    /** Rotates the refresh JWT; presenting an already rotated one revokes the session (replay). */
    async refresh(refreshToken: string): Promise<SessionTokens> {
      const invalid = () => AppError.unauthorized(sessionMessages.invalidRefresh);
      const verified = await jwt.verify(refreshToken);
      if (!verified.ok || verified.claims.use !== 'refresh' || !verified.claims.session_id || !verified.claims.jti) throw invalid();
      const { claims } = verified;
      const session = await repo.session(claims.session_id!);
      if (!session || session.user_id !== claims.sub || session.revoked_at || new Date(session.expires_at).getTime() <= Date.now()) throw invalid();
      const next = randomUUID();
      if (!(await repo.rotateRefresh(session.id, claims.jti!, next))) {
        await revokeSession(session.id);
        throw invalid();
      }
      return issuePair({ ...session, refresh_jti: next });
    },

    async switchAccount(ctx: AuthContext, accountId: string): Promise<SessionTokens> {
      if (ctx.kind !== 'jwt' || !ctx.sessionId || !ctx.userId) throw AppError.forbidden(sessionMessages.switchNeedsSession);
      if (!(await deps.accounts.isMember(ctx.userId, accountId))) throw AppError.notFound(sessionMessages.accountNotFound);
      const session = await repo.session(ctx.sessionId);
      if (!session) throw AppError.unauthorized();
      const next = randomUUID();
      if (!(await repo.rotateRefresh(session.id, session.refresh_jti, next, accountId))) throw AppError.unauthorized();
      return issuePair({ ...session, account_id: accountId, refresh_jti: next });
    },

    async list(ctx: AuthContext): Promise<SessionInfo[]> {
      return (await repo.openOfUser(requireUserId(ctx))).map((s) => ({ ...s, current: s.id === ctx.sessionId }));
    },

    async revoke(ctx: AuthContext, id: string, client: Client): Promise<void> {
      const userId = requireUserId(ctx);
      if (!(await revokeSession(id, userId))) throw AppError.notFound(sessionMessages.sessionNotFound);
      await audit.record({
        scope: 'user',
        type: 'user:session_revoked',
        userId,
        actorId: userId,
        ipAddress: client.ip,
        userAgent: client.userAgent,
        metadata: { session_id: id },
      });
    },

    /**
     * A `ws` JWT: no session id, short TTL, the caller's grants at minting (re-capped on use). It
     * names what it was minted from (`ws_session`, or `ws_key` for a personal API key) so that the
     * upgrade can refuse it, and close its sockets, once that is revoked.
     */
    async issueWsToken(ctx: AuthContext): Promise<WsToken> {
      const sub = requireUserId(ctx);
      const backing =
        ctx.kind === 'jwt' && ctx.sessionId ? { ws_session: ctx.sessionId } : ctx.kind === 'user_api_key' && ctx.credentialId ? { ws_key: ctx.credentialId } : null;
      if (!backing) throw AppError.forbidden(messages.firstPartyOnly);
      const { token, expiresAt } = await jwt.sign(
        {
          sub,
          use: 'ws',
          ...backing,
          account_id: ctx.accountId,
          account_permissions: sortedGrants(ctx.permissions),
          admin_permissions: sortedGrants(ctx.adminPermissions),
          user_permissions: sortedGrants(ctx.userPermissions),
        },
        { ttlSeconds: config.auth.ws_token_expiration },
      );
      return { wsToken: token, expiresAt: expiresAt.toISOString() };
    },

    /** Possession of a live popout token buys a 15-minute popout session JWT. */
    async exchangePopout(rawToken: string): Promise<PopoutSession> {
      const parsed = parseCredential(rawToken);
      if (!parsed || parsed.format.kind !== 'popout' || !parsed.wellFormed) throw AppError.unauthorized(sessionMessages.invalidPopout);
      const grant = await deps.popoutGrant(await store.byHash(tokenHash(rawToken)));
      if (!grant) throw AppError.unauthorized(sessionMessages.invalidPopout);
      const tokenEnds = grant.row.expires_at ? new Date(grant.row.expires_at).getTime() : Infinity;
      const { token, expiresAt } = await jwt.sign(
        { sub: grant.userId ?? grant.row.account_id!, use: 'access', ctx: 'popout', popout_token_id: grant.row.id, account_id: grant.row.account_id },
        { expiresAt: new Date(Math.min(Date.now() + POPOUT_SESSION_TTL_SECONDS * 1000, tokenEnds)) },
      );
      return { token, expiresAt: expiresAt.toISOString(), accountId: grant.row.account_id! };
    },

    /** Any authenticated context (the gate refuses Anonymous). */
    popoutSession(ctx: AuthContext): { accountId: string | null; userId: string | null } {
      return { accountId: ctx.accountId, userId: ctx.userId };
    },

    /** The popout's own permission subset, `ws` use tag, no session id. */
    async issuePopoutWsToken(ctx: AuthContext): Promise<WsToken> {
      // The popout-session gate admits popout contexts only; their binding names the token.
      const popoutTokenId = ctx.binding?.popoutTokenId;
      if (!popoutTokenId) throw AppError.unauthorized();
      const { token, expiresAt } = await jwt.sign(
        { sub: ctx.userId ?? ctx.accountId!, use: 'ws', ctx: 'popout', popout_token_id: popoutTokenId, account_id: ctx.accountId, account_permissions: sortedGrants(ctx.permissions) },
        { ttlSeconds: config.auth.ws_token_expiration },
      );
      return { wsToken: token, expiresAt: expiresAt.toISOString() };
    },

    /** Cookie attributes of the popout session (Part 1, "REST endpoints"). */
    popoutCookieOptions() {
      return { httpOnly: true, path: '/', sameSite: 'lax' as const, secure: config.env !== 'development', maxAge: POPOUT_SESSION_TTL_SECONDS * 1000 };
    },
  };
}

export type SessionsService = ReturnType<typeof createSessionsService>;
