/**
 * Credentials as seen by their holder: the caller's effective permissions (a scoped credential
 * reports exactly the grants it carries, never a wildcard it does not literally hold), and the
 * popout tokens of an account (Part 1, "Popout tokens and sessions"). Revoking a popout token is
 * announced on the bus, so the sockets it (or its session and WebSocket JWTs) opened close on every node.
 */
import type { components } from '../../../generated/openapi';
import { requireAccountId, sortedGrants, type AuthContext } from '../../auth/context';
import { checkGrantable } from '../../auth/grants';
import { sortByRegistry } from '../../auth/registry';
import type { Revocations } from '../../auth/revocations';
import type { CredentialStore } from '../../auth/store';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import { schemaRows } from '../../infra/db/rows';
import type { ModuleApis } from '../contract';
import { tokenMessages } from './errors';

type Schemas = components['schemas'];

/** The caller's effective grants; `context` is the credential kind (never anonymous: the gate refused it). */
export type TokenPermissions = Camelize<Schemas['TokenPermissions']>;
export type PopoutToken = Camelize<Schemas['PopoutToken']>;
/** What both protocols send: REST's body (the spec's), or GraphQL's input, whose optional label may also be null. */
export type CreatePopoutTokenInput = Omit<Camelize<Schemas['CreatePopoutTokenBody']>, 'label'> & { label?: string | null };

/** A popout token's row (src/auth/store.ts) as its account lists it; permissions in registry order. */
const popoutOf = schemaRows('PopoutToken', { adjust: { permissions: sortByRegistry } });

export interface TokensDeps {
  store: CredentialStore;
  accounts: Pick<ModuleApis['accounts'], 'isMember'>;
  audit: Pick<ModuleApis['audit'], 'record'>;
  revocations: Revocations;
}

export function createTokensService(deps: TokensDeps) {
  return {
    myPermissions(ctx: AuthContext): TokenPermissions {
      if (ctx.kind === 'anonymous') throw AppError.unauthorized();
      return {
        context: ctx.kind,
        userId: ctx.userId,
        accountId: ctx.accountId,
        permissions: sortedGrants(ctx.permissions),
        adminPermissions: sortedGrants(ctx.adminPermissions),
        userPermissions: sortedGrants(ctx.userPermissions),
      };
    },

    async popoutTokens(ctx: AuthContext): Promise<PopoutToken[]> {
      return (await deps.store.ofAccount(requireAccountId(ctx), 'popout')).map(popoutOf.map);
    },

    /**
     * A popout token holds account permissions its creator's role grants (checked now, and
     * re-capped on every use); omitted `userId` binds it to the creator.
     */
    async createPopoutToken(ctx: AuthContext, input: CreatePopoutTokenInput): Promise<{ token: string; popoutToken: PopoutToken }> {
      const accountId = requireAccountId(ctx);
      const creator = ctx.userId;
      if (!creator) throw AppError.unauthorized();
      let expiresAt: Date | null = null;
      if (input.expiresAt !== undefined && input.expiresAt !== null) {
        expiresAt = new Date(input.expiresAt);
        if (Number.isNaN(expiresAt.getTime())) throw AppError.validation(tokenMessages.invalidExpiry);
        if (expiresAt.getTime() <= Date.now()) throw AppError.validation(tokenMessages.expiresInPast);
      }
      const permissions = checkGrantable(ctx, input.permissions);
      const userId = input.userId ?? creator;
      if (userId !== creator && !(await deps.accounts.isMember(userId, accountId))) throw AppError.notFound(tokenMessages.memberNotFound);
      const { token, row } = await deps.store.mint({
        kind: 'popout',
        accountId,
        userId,
        createdBy: creator,
        label: input.label?.trim() ?? '',
        permissions,
        expiresAt,
      });
      await deps.audit.record({
        scope: 'account',
        type: 'account:popout_token_created',
        accountId,
        userId: creator,
        actorId: creator,
        metadata: { popout_token_id: row.id, key_prefix: row.key_prefix, permissions, acting_user_id: userId },
      });
      return { token, popoutToken: popoutOf.map(row) };
    },

    async revokePopoutToken(ctx: AuthContext, id: string): Promise<void> {
      const accountId = requireAccountId(ctx);
      const row = await deps.store.byId(id);
      if (!row || row.kind !== 'popout' || row.account_id !== accountId || row.revoked_at) throw AppError.notFound(tokenMessages.popoutNotFound);
      await deps.store.revoke(id);
      // Every popout context (raw token, cookie session, ws JWT) carries the token's hash as its credentialId.
      await deps.revocations.announce({ credential_id: row.token_hash, kind: 'token' });
      await deps.audit.record({
        scope: 'account',
        type: 'account:popout_token_revoked',
        accountId,
        userId: ctx.userId,
        actorId: ctx.userId,
        metadata: { popout_token_id: id, key_prefix: row.key_prefix },
      });
    },
  };
}

export type TokensService = ReturnType<typeof createTokensService>;
