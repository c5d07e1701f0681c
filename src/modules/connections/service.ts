/**
 * Connections of the active account to the streaming platforms: one ConnectionStatus per channel
 * platform and the OAuth credential modes (Part 1 "Feature and account types"). A connection
 * exists iff it is connected or flagged for reconnection; `isConnected` is true only for a stored
 * connection without the flag. OAuth with the real platforms does not run here: the operator path
 * (`recordConnection`) stores what a callback would. Login connections and their assignments are
 * not stored by this release, so the login fields are false (the "no login grant" case).
 */
import type { Knex } from 'knex';
import { randomUUID } from 'node:crypto';
import type { components } from '../../../generated/openapi';
import { hasPermission, requireAccountId, requireUserId, type AuthContext } from '../../auth/context';
import type { SecretBox } from '../../auth/secrets';
import type { ProviderConfig } from '../../config/config';
import { AppError, messages } from '../../errors';
import type { Camelize } from '../../http/mapping';
import type { ModuleApis } from '../contract';
import { connectionMessages } from './errors';
import { allPlatforms, channelPlatforms, credentialModes, integrationPlatforms, loginSendPlatforms, platformTypes, type ChannelPlatform, type ConnectionType, type CredentialKind, type Platform } from './platforms';
import type { AccountConnection, ConnectionsRepo, GrantRef, LoginConnectionRecord } from './repo';
import type { ConnectionStatus, LoginAssignment, PlatformCredentialMode, PlatformSwitches } from './types';

/** A user's login connection as the spec shows it (`me.login_connections`, the connection list); accounts reads it through index.ts. */
export type LoginConnection = Camelize<components['schemas']['LoginConnection']>;

/** A login connection as the wire shows it: without its owner. */
const publicLogin = ({ userId: _owner, ...login }: LoginConnectionRecord): LoginConnection => login;

/** The login fields: false without a login grant, without a user, or on a platform not sent to through one. */
function statusOf(platform: ChannelPlatform, row: AccountConnection | undefined, login: { reconnectRequired: boolean } | undefined): ConnectionStatus {
  const grant = loginSendPlatforms.has(platform) ? login : undefined;
  return {
    platform,
    isConnected: Boolean(row) && !row!.reconnectRequired,
    reconnectRequired: Boolean(row?.reconnectRequired),
    expiresAt: row?.expiresAt ?? null,
    loginConnected: Boolean(grant) && !grant!.reconnectRequired,
    loginReconnectRequired: Boolean(grant?.reconnectRequired),
  };
}

const grantTable = { channel: 'account_connections', bot: 'account_bot_connections' } as const;
/** A stored grant: a login connection's, or an account's channel or bot connection's. */
export type GrantOf = { type: 'login'; id: string } | { type: CredentialKind; accountId: string; platform: string };
const grantRef = (of: GrantOf): GrantRef => (of.type === 'login' ? { table: 'login_connections', id: of.id } : { table: grantTable[of.type], accountId: of.accountId, platform: of.platform });

/** A provider grant in clear, only ever in memory (stored sealed). */
export interface ProviderGrant {
  accessToken: string;
  refreshToken: string | null;
  expiresAt: Date | null;
  scopes: string[];
}

export function createConnectionsService(deps: {
  repo: ConnectionsRepo;
  knex: Knex;
  audit: Pick<ModuleApis['audit'], 'record'>;
  systemApps: readonly string[];
  secrets: SecretBox;
  providers: readonly ProviderConfig[];
  /** Plan quota `max_integrations`: a new connection (not a reconnect of the same platform) needs a free slot. */
  quotas: Pick<ModuleApis['plans']['quotas'], 'admit'>;
  /**
   * Publishes an assignment's outcome on `login-assignments:{id}` once it committed (the socket
   * relay delivers it as `login-assignment:assigned` / `login-assignment:removed`); absent: none.
   */
  publish?: (channel: string, message: string) => Promise<void>;
}) {
  const { repo, knex, audit, secrets } = deps;
  const offered = (purpose: ConnectionType) => new Set(deps.providers.filter((p) => p.purposes.includes(purpose)).map((p) => p.slug));
  const sealGrant = (grant: ProviderGrant) => ({
    access_token_sealed: secrets.seal(grant.accessToken),
    refresh_token_sealed: grant.refreshToken ? secrets.seal(grant.refreshToken) : null,
    token_expires_at: grant.expiresAt,
    scopes: grant.scopes.join(' '),
  });
  const configured = new Set(deps.systemApps);

  /** The outcome of one assignment on its public channel: its id, provider and state only (no user or account ids). */
  async function announce(id: string, provider: string, status: 'assigned' | 'removed'): Promise<void> {
    await deps.publish?.(`login-assignments:${id}`, JSON.stringify({ event_type: `login-assignment:${status}`, data: { id, provider, status, at: new Date().toISOString() } })).catch(() => undefined);
  }

  async function statuses(accountId: string, userId: string | null): Promise<ConnectionStatus[]> {
    const [rows, grants] = await Promise.all([repo.ofAccount(accountId), userId ? repo.assignmentsWithState(accountId, userId) : Promise.resolve([])]);
    return channelPlatforms.map((p) => statusOf(p, rows.find((r) => r.platform === p), grants.find((g) => g.provider === p)));
  }

  /** The user an assignment operation acts for: the caller, or another user with the permission. */
  function targetUser(ctx: AuthContext, userId: string | null | undefined, permission: string): string {
    const target = userId ?? ctx.userId;
    if (!target) throw AppError.validation(connectionMessages.userRequired);
    if (target !== ctx.userId && !hasPermission(ctx, permission)) throw AppError.forbidden(messages.missingPermission(permission));
    return target;
  }

  async function ownLogin(ctx: AuthContext, id: string): Promise<LoginConnectionRecord> {
    const row = await repo.loginConnection(id);
    if (!row || row.userId !== requireUserId(ctx)) throw AppError.notFound(connectionMessages.loginConnectionNotFound);
    return row;
  }

  /** A platform's switches, with the sub-switches it does not support reported off. */
  const supported = (row: PlatformSwitches): PlatformSwitches => {
    const types = platformTypes[row.platform as Platform] ?? [];
    return {
      platform: row.platform,
      enabled: row.enabled,
      loginEnabled: row.loginEnabled && types.includes('login'),
      channelEnabled: row.channelEnabled && types.includes('channel'),
      botEnabled: row.botEnabled && types.includes('bot'),
    };
  };
  const key = { login: 'loginEnabled', channel: 'channelEnabled', bot: 'botEnabled' } as const;

  return {
    statuses: (ctx: AuthContext) => statuses(requireAccountId(ctx), ctx.userId),

    /** The user who signed in before as this provider subject, if any. */
    loginUserOf: (provider: string, subject: string): Promise<string | null> => repo.loginUserOf(provider, subject),

    /**
     * Stores a sign-in's grant as the user's login connection for `(provider, subject)`: created
     * on a first sign-in, its tokens replaced (and reconnect flag cleared) on later ones. The
     * tokens are sealed before they reach the database. Answers the connection's id.
     */
    async storeLoginGrant(input: { userId: string; provider: string; subject: string; displayName: string | null; grant: ProviderGrant }): Promise<string> {
      return knex.transaction(async (trx) => {
        const id = await repo.upsertLoginConnection(trx, {
          id: randomUUID(),
          user_id: input.userId,
          provider: input.provider,
          platform_user_id: input.subject,
          display_name: input.displayName,
          reconnect_required: false,
        });
        await repo.storeGrant(trx, id, sealGrant(input.grant));
        return id;
      });
    },

    /**
     * A sign-in through a platform's provider makes that login the user's for the account the
     * session opens on, unless they already chose one there: without it the first chat send of a
     * user who just signed in with the platform would ask them to connect the login they used.
     */
    async assignSignedInLogin(input: { accountId: string; userId: string; loginConnectionId: string; provider: string }): Promise<void> {
      if (!(platformTypes[input.provider as Platform] ?? []).includes('login')) return;
      if (!(await repo.isMember(input.accountId, input.userId))) return;
      if ((await repo.assignments(input.accountId, input.userId)).some((a) => a.provider === input.provider)) return;
      await knex.transaction(async (trx) => {
        await repo.upsertAssignment(trx, { id: randomUUID(), account_id: input.accountId, user_id: input.userId, login_connection_id: input.loginConnectionId, provider: input.provider });
        await audit.record({ scope: 'account', type: 'account:login_assigned', accountId: input.accountId, userId: input.userId, actorId: input.userId, metadata: { target_user_id: input.userId, provider: input.provider, login_connection_id: input.loginConnectionId } }, trx);
      });
    },

    /** A login connection's grant, opened (the platform adapters and refresh use it); null without one. */
    async loginGrant(id: string): Promise<(ProviderGrant & { userId: string; provider: string; reconnectRequired: boolean }) | null> {
      const row = await repo.sealedGrant(id);
      if (!row?.accessTokenSealed) return null;
      return {
        userId: row.userId,
        provider: row.provider,
        reconnectRequired: row.reconnectRequired,
        accessToken: secrets.open(row.accessTokenSealed),
        refreshToken: row.refreshTokenSealed ? secrets.open(row.refreshTokenSealed) : null,
        expiresAt: row.tokenExpiresAt ? new Date(row.tokenExpiresAt) : null,
        scopes: row.scopes ? row.scopes.split(' ').filter(Boolean) : [],
      };
    },

    /** Replaces a login connection's grant after a refresh. */
    async replaceLoginGrant(id: string, grant: ProviderGrant): Promise<void> {
      await repo.storeGrant(knex, id, sealGrant(grant));
    },

    /** The provider refused a refresh: the connection needs the user to sign in again. */
    flagLoginReconnect: (id: string): Promise<void> => repo.flagLoginReconnect(id),

    /** Stores a channel or bot connection made through the sign-in flow, its grant sealed. */
    async storeAccountGrant(input: { accountId: string; platform: string; type: CredentialKind; subject: string; actorId: string | null; grant: ProviderGrant }): Promise<void> {
      const { token_expires_at, ...sealed } = sealGrant(input.grant);
      await knex.transaction(async (trx) => {
        await deps.quotas.admit(trx, 'integrations', input.accountId, { table: grantTable[input.type], where: { platform: input.platform } });
        await repo.storeAccountGrant(trx, grantTable[input.type], { account_id: input.accountId, platform: input.platform, subject: input.subject, ...sealed, expires_at: token_expires_at });
        await audit.record({ scope: 'account', type: 'account:connection_connected', accountId: input.accountId, userId: input.actorId, actorId: input.actorId, metadata: { platform: input.platform, type: input.type, platform_id: input.subject } }, trx);
      });
    },

    /** A channel or bot connection's grant, opened; null without a stored grant. */
    async accountGrant(accountId: string, platform: string, type: CredentialKind): Promise<(ProviderGrant & { reconnectRequired: boolean }) | null> {
      const row = await repo.accountGrant(grantTable[type], accountId, platform);
      if (!row?.accessTokenSealed) return null;
      return {
        reconnectRequired: row.reconnectRequired,
        accessToken: secrets.open(row.accessTokenSealed),
        refreshToken: row.refreshTokenSealed ? secrets.open(row.refreshTokenSealed) : null,
        expiresAt: row.expiresAt ? new Date(row.expiresAt) : null,
        scopes: row.scopes ? row.scopes.split(' ').filter(Boolean) : [],
      };
    },

    async replaceAccountGrant(accountId: string, platform: string, type: CredentialKind, grant: ProviderGrant): Promise<void> {
      const { token_expires_at, ...sealed } = sealGrant(grant);
      await repo.replaceAccountGrant(grantTable[type], accountId, platform, { ...sealed, access_token_sealed: sealed.access_token_sealed, expires_at: token_expires_at });
    },

    /**
     * Claims the refresh of one grant for `ttlMs` across every node sharing the database: the
     * claim (to release) or null when another node holds one. Replacing or flagging the grant
     * ends the claim; so does its expiry, for a node that died holding it.
     */
    claimGrantRefresh: (ref: GrantOf, ttlMs: number): Promise<Date | null> => {
      const now = new Date();
      return repo.claimRefresh(grantRef(ref), now, new Date(now.getTime() + ttlMs));
    },
    releaseGrantRefresh: (ref: GrantOf, claim: Date): Promise<void> => repo.releaseRefresh(grantRef(ref), claim),

    /** Grants the background refresh should look at (signin's `refreshDue`), soonest expiry first. */
    dueGrants: (before: Date, limit: number) => repo.dueGrants(before, limit),

    flagAccountReconnect: (accountId: string, platform: string, type: CredentialKind): Promise<void> => repo.flagAccountReconnect(grantTable[type], accountId, platform),

    /** Deletes a channel or bot connection (after the caller revoked its grant); false when there was none. */
    async removeAccountGrant(accountId: string, platform: string, type: CredentialKind, actorId: string | null): Promise<boolean> {
      return knex.transaction(async (trx) => {
        if (!(await repo.removeAccountGrant(trx, grantTable[type], accountId, platform))) return false;
        await audit.record({ scope: 'account', type: 'account:connection_disconnected', accountId, userId: actorId, actorId, metadata: { platform, type } }, trx);
        return true;
      });
    },

    loginConnectionsOf: (userId: string): Promise<LoginConnection[]> => repo.loginConnectionsOf(userId),

    async recordLoginConnection(ctx: AuthContext, userId: string, input: { provider: string; platformUserId: string; displayName?: string | null; reconnectRequired?: boolean | null }): Promise<LoginConnection> {
      if (!(await repo.userExists(userId))) throw AppError.notFound(connectionMessages.userNotFound);
      const id = await knex.transaction(async (trx) => {
        const rowId = await repo.upsertLoginConnection(trx, {
          id: randomUUID(),
          user_id: userId,
          provider: input.provider,
          platform_user_id: input.platformUserId,
          display_name: input.displayName ?? null,
          reconnect_required: Boolean(input.reconnectRequired),
        });
        await audit.record({ scope: 'system', type: 'system:login_connection_recorded', userId, actorId: ctx.userId, metadata: { login_connection_id: rowId, provider: input.provider, reconnect_required: Boolean(input.reconnectRequired) } }, trx);
        return rowId;
      });
      return publicLogin((await repo.loginConnection(id))!);
    },

    async flagged(ctx: AuthContext): Promise<LoginConnection[]> {
      return (await repo.loginConnectionsOf(requireUserId(ctx))).filter((r) => r.reconnectRequired);
    },

    async assignments(ctx: AuthContext, userId: string | null | undefined): Promise<LoginAssignment[]> {
      const accountId = requireAccountId(ctx);
      return repo.assignments(accountId, targetUser(ctx, userId, 'login-assignments:read'));
    },

    async assign(ctx: AuthContext, input: { loginConnectionId: string; provider: string; userId?: string | null }): Promise<LoginAssignment> {
      const accountId = requireAccountId(ctx);
      const userId = targetUser(ctx, input.userId, 'login-assignments:create');
      if (!(await repo.isMember(accountId, userId))) throw AppError.notFound(connectionMessages.notAMember);
      const login = await repo.loginConnection(input.loginConnectionId);
      if (!login || login.userId !== userId || login.provider !== input.provider) throw AppError.notFound(connectionMessages.loginConnectionNotFound);
      const assigned = await knex.transaction(async (trx) => {
        const row = await repo.upsertAssignment(trx, { id: randomUUID(), account_id: accountId, user_id: userId, login_connection_id: login.id, provider: login.provider });
        await audit.record({ scope: 'account', type: 'account:login_assigned', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { target_user_id: userId, provider: login.provider, login_connection_id: login.id } }, trx);
        return row;
      });
      await announce(assigned.id, assigned.provider, 'assigned');
      return assigned;
    },

    async unassign(ctx: AuthContext, provider: string, userId: string | null | undefined): Promise<void> {
      const accountId = requireAccountId(ctx);
      const target = targetUser(ctx, userId, 'login-assignments:delete');
      const removed = await knex.transaction(async (trx) => {
        const id = await repo.removeAssignment(trx, accountId, target, provider);
        if (!id) throw AppError.notFound(connectionMessages.loginAssignmentNotFound);
        await audit.record({ scope: 'account', type: 'account:login_unassigned', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { target_user_id: target, provider } }, trx);
        return id;
      });
      await announce(removed, provider, 'removed');
    },

    async disconnect(ctx: AuthContext, id: string): Promise<void> {
      const row = await ownLogin(ctx, id);
      await knex.transaction(async (trx) => {
        await repo.deleteLoginConnection(trx, row);
        await audit.record({ scope: 'user', type: 'user:login_connection_removed', userId: row.userId, actorId: row.userId, metadata: { login_connection_id: id, provider: row.provider } }, trx);
      });
    },

    async setPrimary(ctx: AuthContext, id: string): Promise<LoginConnection[]> {
      const row = await ownLogin(ctx, id);
      await knex.transaction((trx) => repo.setPrimary(trx, row.userId, id));
      return repo.loginConnectionsOf(row.userId);
    },

    /** Platforms a user can sign in or run a bot with: the switches allow it and a provider is configured for it. */
    async enabledPlatforms(): Promise<string[]> {
      const login = offered('login');
      const bot = offered('bot');
      return (await repo.switches())
        .map(supported)
        .filter((s) => s.enabled && !integrationPlatforms.has(s.platform) && ((s.loginEnabled && login.has(s.platform)) || (s.botEnabled && bot.has(s.platform))))
        .map((s) => s.platform);
    },

    /**
     * Providers offered for a connection type: platforms whose switches allow it and that have a
     * provider configured for that purpose (config `auth.providers`), then (login) the configured
     * login providers that are not platforms, which no platform switch governs.
     */
    async enabledProviders(type: ConnectionType): Promise<string[]> {
      const slugs = offered(type);
      const platforms = (await repo.switches())
        .map(supported)
        .filter((s) => s.enabled && s[key[type]] && slugs.has(s.platform))
        .map((s) => s.platform);
      const others = [...slugs].filter((slug) => !(allPlatforms as readonly string[]).includes(slug)).sort();
      return [...platforms, ...others];
    },

    async setSwitches(ctx: AuthContext, platform: Platform, patch: { enabled?: boolean | null; loginEnabled?: boolean | null; channelEnabled?: boolean | null; botEnabled?: boolean | null }) {
      const columns = {
        ...(typeof patch.enabled === 'boolean' ? { enabled: patch.enabled } : {}),
        ...(typeof patch.loginEnabled === 'boolean' ? { login_enabled: patch.loginEnabled } : {}),
        ...(typeof patch.channelEnabled === 'boolean' ? { channel_enabled: patch.channelEnabled } : {}),
        ...(typeof patch.botEnabled === 'boolean' ? { bot_enabled: patch.botEnabled } : {}),
      };
      await knex.transaction(async (trx) => {
        await repo.setSwitches(trx, platform, columns);
        await audit.record({ scope: 'system', type: 'system:platform_switches_updated', userId: ctx.userId, actorId: ctx.userId, metadata: { platform, ...columns } }, trx);
      });
      return supported((await repo.switches()).find((r) => r.platform === platform)!);
    },

    credentialModes(): PlatformCredentialMode[] {
      return credentialModes.map((m) => ({ ...m, systemConfigured: configured.has(m.platform) }));
    },

    /** The channels an account connected, by platform (public statistics settings name them). */
    async accountChannels(accountId: string): Promise<{ platform: string; platformChannelId: string }[]> {
      return repo.channelsOfAccount(accountId);
    },

    async recordConnection(ctx: AuthContext, accountId: string, platform: ChannelPlatform, input: { platformChannelId: string; expiresAt?: string | null; reconnectRequired?: boolean | null }): Promise<ConnectionStatus> {
      if (!(await repo.accountExists(accountId))) throw AppError.notFound(connectionMessages.accountNotFound);
      await knex.transaction(async (trx) => {
        await deps.quotas.admit(trx, 'integrations', accountId, { table: 'account_connections', where: { platform } });
        await repo.upsert(trx, { account_id: accountId, platform, platform_channel_id: input.platformChannelId, expires_at: input.expiresAt ?? null, reconnect_required: Boolean(input.reconnectRequired) });
        await audit.record(
          { scope: 'system', type: 'system:connection_recorded', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { platform, platform_channel_id: input.platformChannelId, reconnect_required: Boolean(input.reconnectRequired) } },
          trx,
        );
      });
      return (await statuses(accountId, null)).find((s) => s.platform === platform)!;
    },

    async removeConnection(ctx: AuthContext, accountId: string, platform: ChannelPlatform): Promise<void> {
      if (!(await repo.accountExists(accountId))) throw AppError.notFound(connectionMessages.accountNotFound);
      await knex.transaction(async (trx) => {
        if (await repo.remove(trx, accountId, platform)) {
          await audit.record({ scope: 'system', type: 'system:connection_removed', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { platform } }, trx);
        }
      });
    },
  };
}

export type ConnectionsService = ReturnType<typeof createConnectionsService>;
