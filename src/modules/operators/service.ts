/**
 * Operators over users and accounts, and the active account's plan and usage that creators read
 * (the same report). Operators: search and detail (plan, members, usage against each quota,
 * overrides), suspension and its lifting, the per-user overrides (`max_accounts_override`, the
 * developer override) and user role assignments. Every change is audited in its own transaction.
 *
 * Suspension is stored on the row (`suspended_at`) and read live: the accounts module's grant
 * reads leave a suspended user no grants and a suspended account no members, and `guard` holds
 * every other credential (account keys and tokens, popouts) to the same standing. What is open
 * when it happens closes: a suspended user's sessions are revoked, and every socket standing on a
 * suspended user's or account's credentials receives TOKEN_REVOKED through the revocation notices.
 *
 * Deletion erases: in one transaction the user's traces outside their rows go (privacy module),
 * then their row, whose foreign keys take sessions, keys and tokens, sign-in links, notifications,
 * memberships, role assignments and the accounts they own alone with it (authorship elsewhere
 * becomes null), with the audit row. It refuses, before writing anything, while they own an
 * account with other members (one rule: nobody else's workspace goes with them), and for oneself
 * and system admins. What stood on them is read before the rows go and announced once committed,
 * as on suspension: the revocation notices close their sockets and drop the cached key look-ups on
 * every node (the access version, bumped by the delete, already makes the next request re-read).
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { ANONYMOUS, requireAccountId, type AuthContext } from '../../auth/context';
import type { CredentialResolver } from '../../auth/credentials';
import type { Revocations } from '../../auth/revocations';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import { pageOf, type Page, type PageRequest } from '../../paging';
import type { ModuleApis } from '../contract';
import { operatorMessages } from './errors';
import type { AccountRecord, OperatorsRepo, UserRecord } from './repo';

type Schemas = components['schemas'];
export type AdminUserSummary = Camelize<Schemas['AdminUserSummary']>;
export type AdminUserDetail = Camelize<Schemas['AdminUserDetail']>;
export type AdminAccountSummary = Camelize<Schemas['AdminAccountSummary']>;
export type AdminAccountDetail = Camelize<Schemas['AdminAccountDetail']>;
export type AdminAccountOverrides = Camelize<Schemas['AdminAccountOverrides']>;
export type UserRoleInfo = Camelize<Schemas['UserRoleInfo']>;
export type QuotaUsage = Camelize<Schemas['QuotaUsage']>;
export type AccountPlanUsage = Camelize<Schemas['AccountPlanUsage']>;

/** Credential kinds whose verification already reads the user's and account's standing (accounts `principal`). */
const STANDING_READ_BY_PRINCIPAL = new Set<AuthContext['kind']>(['anonymous', 'system_key', 'jwt', 'user_api_key']);

export interface OperatorsDeps {
  repo: OperatorsRepo;
  knex: Knex;
  audit: Pick<ModuleApis['audit'], 'record'>;
  accounts: Pick<ModuleApis['accounts'], 'standing' | 'maxAccounts' | 'hasDeveloperProfile'>;
  sessions: Pick<ModuleApis['sessions'], 'revokeAllOfUser' | 'closeSocketsInAccount'>;
  features: Pick<ModuleApis['features'], 'invalidate'>;
  quotas: Pick<ModuleApis['plans']['quotas'], 'limits' | 'usage'>;
  sounds: Pick<ModuleApis['sounds'], 'accountUsage'>;
  revocations: Revocations;
  privacy: Pick<ModuleApis['privacy'], 'eraseUserTraces'>;
}

const summaryOf = (user: UserRecord): AdminUserSummary => ({
  id: user.id,
  email: user.email,
  displayName: user.displayName,
  avatarUrl: user.avatarUrl,
  ownedAccountCount: user.ownedAccountCount,
  suspendedAt: user.suspendedAt,
  suspendedReason: user.suspendedReason,
  createdAt: user.createdAt,
});

const reasonOf = (reason: string | null | undefined): string | null => (reason?.trim() ? reason.trim() : null);

export function createOperatorsService(deps: OperatorsDeps) {
  const { repo, knex, audit, accounts, sessions, revocations } = deps;

  const record = (ctx: AuthContext, type: string, trx: Knex.Transaction, target: { userId?: string; accountId?: string }, metadata: Record<string, unknown> = {}) =>
    audit.record({ scope: 'system', type, userId: target.userId ?? ctx.userId, accountId: target.accountId ?? null, actorId: ctx.userId, metadata }, trx);

  async function userDetail(id: string): Promise<AdminUserDetail> {
    const user = await repo.user(id);
    if (!user) throw AppError.notFound(operatorMessages.userNotFound);
    const [memberships, roles, maxAccounts, profile] = await Promise.all([repo.memberships(id), repo.roleNames(id), accounts.maxAccounts(id), accounts.hasDeveloperProfile(id)]);
    return {
      ...summaryOf(user),
      maxAccounts,
      maxAccountsOverride: user.maxAccountsOverride,
      developerOverride: user.developerOverride,
      isDeveloper: profile || user.developerOverride,
      userRoles: roles.user,
      adminRoles: roles.admin,
      accounts: memberships,
    };
  }

  async function accountOrThrow(id: string): Promise<AccountRecord> {
    const account = await repo.account(id);
    if (!account) throw AppError.notFound(operatorMessages.accountNotFound);
    return account;
  }

  /** Closes every socket standing on these token hashes, on every node. */
  async function closeTokens(hashes: readonly string[]): Promise<void> {
    for (const hash of hashes) await revocations.announce({ credential_id: hash, kind: 'token' });
  }

  /** Usage against every quota of the account's plan. */
  async function usage(accountId: string): Promise<QuotaUsage[]> {
    const [limits, counted, sounds] = await Promise.all([deps.quotas.limits(accountId), deps.quotas.usage(accountId), deps.sounds.accountUsage(accountId)]);
    return [
      { quota: 'overlays', used: counted.overlays, limit: limits.maxOverlays },
      { quota: 'widgets', used: counted.widgets, limit: limits.maxOverlays },
      { quota: 'integrations', used: counted.integrations, limit: limits.maxIntegrations },
      { quota: 'storage_bytes', used: sounds.storageBytes, limit: limits.maxStorageBytes },
      { quota: 'sounds', used: sounds.sounds, limit: sounds.maxSounds },
    ];
  }

  async function planUsage(accountId: string): Promise<AccountPlanUsage> {
    const [plan, quotas] = await Promise.all([repo.plan(accountId), usage(accountId)]);
    if (!plan) throw AppError.notFound(operatorMessages.accountNotFound);
    return { plan, usage: quotas };
  }

  return {
    usage,

    /** The active account's plan and usage (creators; `plan:read`). */
    accountPlan: (ctx: AuthContext): Promise<AccountPlanUsage> => planUsage(requireAccountId(ctx)),

    /**
     * Holds every credential the accounts module's grant reads do not cover (account keys and
     * tokens, popouts) to its user's and account's standing: a suspended one resolves to nothing.
     */
    guard(resolver: CredentialResolver): CredentialResolver {
      return {
        async resolve(input) {
          const resolution = await resolver.resolve(input);
          const ctx = resolution.context;
          if (resolution.failure || STANDING_READ_BY_PRINCIPAL.has(ctx.kind) || (!ctx.userId && !ctx.accountId)) return resolution;
          const standing = await accounts.standing(ctx.userId, ctx.accountId);
          if (standing.accountSuspended) return { context: ANONYMOUS, failure: { code: 'UNAUTHORIZED', message: operatorMessages.accountSuspended } };
          if (standing.userSuspended) return { context: ANONYMOUS, failure: { code: 'UNAUTHORIZED', message: operatorMessages.userSuspended } };
          return resolution;
        },
      };
    },

    async users(q: string | null | undefined, request: PageRequest): Promise<Page<AdminUserSummary>> {
      const { rows, total } = await repo.searchUsers(q?.trim() || undefined, request.limit, request.offset);
      return pageOf(rows.map(summaryOf), total, request);
    },

    user: userDetail,

    async suspendUser(ctx: AuthContext, id: string, reason?: string | null): Promise<AdminUserDetail> {
      if (id === ctx.userId) {
        if (!(await repo.user(id))) throw AppError.notFound(operatorMessages.userNotFound);
        throw new AppError('CONFLICT', operatorMessages.cannotSuspendSelf);
      }
      const why = reasonOf(reason);
      await knex.transaction(async (trx) => {
        const row = await repo.lockUser(trx, id);
        if (!row) throw AppError.notFound(operatorMessages.userNotFound);
        if (row.suspended_at) throw new AppError('CONFLICT', operatorMessages.userAlreadySuspended);
        await repo.setUserSuspension(trx, id, why, true);
        await record(ctx, 'system:user_suspended', trx, { userId: id }, { reason: why });
      });
      // Committed: what the user has open ends now (sessions revoked, sockets closed everywhere).
      await sessions.revokeAllOfUser(id);
      await closeTokens(await repo.credentialHashesOfUser(id));
      return userDetail(id);
    },

    /**
     * DELETE /v1/admin/users/{id}, GraphQL adminDeleteUser: erases the user (see the header). The
     * audit row names the user by id and counts what went; it keeps no address or name.
     */
    async deleteUser(ctx: AuthContext, id: string): Promise<void> {
      if (id === ctx.userId) {
        if (!(await repo.user(id))) throw AppError.notFound(operatorMessages.userNotFound);
        throw new AppError('CONFLICT', operatorMessages.cannotDeleteSelf);
      }
      const standing = await knex.transaction(async (trx) => {
        const user = await repo.lockUserForDelete(trx, id);
        if (!user) throw AppError.notFound(operatorMessages.userNotFound);
        if ((await repo.adminRoleCount(trx, id)) > 0) throw new AppError('CONFLICT', operatorMessages.cannotDeleteSystemAdmin);
        const owned = await repo.ownedAccounts(trx, id);
        const shared = owned.filter((a) => a.others > 0);
        if (shared.length) throw new AppError('CONFLICT', operatorMessages.ownsSharedAccounts(shared.length));
        const dissolved = owned.map((a) => a.id);
        const open = await repo.credentialsOfDeletion(trx, id, dissolved);
        const traces = await deps.privacy.eraseUserTraces(trx, { id, email: user.email });
        await repo.deleteUser(trx, id);
        await record(ctx, 'system:user_deleted', trx, { userId: id }, {
          dissolved_account_ids: dissolved,
          erased: { sessions: open.sessions.length, tokens: open.tokens.length, mail_messages: traces.mailMessages, audit_rows_anonymised: traces.auditRowsAnonymised },
        });
        return open;
      });
      // Committed: the revocation notices close every socket that stood on them and drop every
      // node's cached look-up of their keys (the auth module's consumer of the notices).
      for (const session of standing.sessions) await revocations.announce({ credential_id: session, kind: 'session' });
      await closeTokens(standing.tokens);
    },

    async restoreUser(ctx: AuthContext, id: string): Promise<AdminUserDetail> {
      await knex.transaction(async (trx) => {
        const row = await repo.lockUser(trx, id);
        if (!row) throw AppError.notFound(operatorMessages.userNotFound);
        if (!row.suspended_at) throw new AppError('CONFLICT', operatorMessages.userNotSuspended);
        await repo.setUserSuspension(trx, id, null, false);
        await record(ctx, 'system:user_restored', trx, { userId: id });
      });
      return userDetail(id);
    },

    async updateUserOverrides(ctx: AuthContext, id: string, input: { maxAccountsOverride?: number | null; developerOverride?: boolean | null }): Promise<AdminUserDetail> {
      const patch = {
        ...(input.maxAccountsOverride !== undefined ? { max_accounts_override: input.maxAccountsOverride } : {}),
        ...(input.developerOverride !== undefined && input.developerOverride !== null ? { developer_override: input.developerOverride } : {}),
      };
      if (patch.max_accounts_override !== undefined && patch.max_accounts_override !== null && (!Number.isInteger(patch.max_accounts_override) || patch.max_accounts_override < 0 || patch.max_accounts_override > 1000)) {
        throw AppError.validation('max_accounts_override must be an integer from 0 to 1000', { fields: [{ field: 'max_accounts_override', message: 'must be an integer from 0 to 1000' }] });
      }
      await knex.transaction(async (trx) => {
        if (!(await repo.lockUser(trx, id))) throw AppError.notFound(operatorMessages.userNotFound);
        if (Object.keys(patch).length) await repo.setUserOverrides(trx, id, patch);
        await record(ctx, 'system:user_overrides_updated', trx, { userId: id }, patch);
      });
      // `me` and feature statuses read the overrides through the features cache.
      await deps.features.invalidate({ userId: id });
      return userDetail(id);
    },

    userRoles: (): Promise<UserRoleInfo[]> => repo.userRoles(),

    async setUserRoles(ctx: AuthContext, id: string, roleIds: readonly string[]): Promise<UserRoleInfo[]> {
      const wanted = [...new Set(roleIds)];
      await knex.transaction(async (trx) => {
        if (!(await repo.lockUser(trx, id))) throw AppError.notFound(operatorMessages.userNotFound);
        const known = await repo.knownUserRoles(trx, wanted);
        if (wanted.some((r) => !known.has(r))) throw AppError.notFound(operatorMessages.userRoleNotFound);
        const held = await repo.userRoleIds(trx, id);
        const add = wanted.filter((r) => !held.includes(r));
        const remove = held.filter((r) => !wanted.includes(r));
        await repo.changeUserRoles(trx, id, add, remove);
        await record(ctx, 'system:user_roles_updated', trx, { userId: id }, { added_role_ids: add, removed_role_ids: remove });
      });
      const names = new Set((await repo.roleNames(id)).user);
      return (await repo.userRoles()).filter((r) => names.has(r.name));
    },

    async accounts(q: string | null | undefined, request: PageRequest): Promise<Page<AdminAccountSummary>> {
      const { rows, total } = await repo.searchAccounts(q?.trim() || undefined, request.limit, request.offset);
      return pageOf(rows, total, request);
    },

    async account(id: string): Promise<AdminAccountDetail> {
      const account = await accountOrThrow(id);
      const [{ plan, usage: quotas }, members] = await Promise.all([planUsage(id), repo.members(id)]);
      return { ...account, planDetail: plan, members, usage: quotas };
    },

    async accountOverrides(id: string): Promise<AdminAccountOverrides> {
      await accountOrThrow(id);
      return { accountId: id, ...(await repo.overrides(id)) };
    },

    async suspendAccount(ctx: AuthContext, id: string, reason?: string | null): Promise<AdminAccountSummary> {
      const why = reasonOf(reason);
      await knex.transaction(async (trx) => {
        const row = await repo.lockAccount(trx, id);
        if (!row) throw AppError.notFound(operatorMessages.accountNotFound);
        if (row.suspended_at) throw new AppError('CONFLICT', operatorMessages.accountAlreadySuspended);
        await repo.setAccountSuspension(trx, id, why, true);
        await record(ctx, 'system:account_suspended', trx, { accountId: id }, { reason: why });
      });
      await sessions.closeSocketsInAccount(id);
      await closeTokens(await repo.credentialHashesOfAccount(id));
      return accountOrThrow(id);
    },

    async restoreAccount(ctx: AuthContext, id: string): Promise<AdminAccountSummary> {
      await knex.transaction(async (trx) => {
        const row = await repo.lockAccount(trx, id);
        if (!row) throw AppError.notFound(operatorMessages.accountNotFound);
        if (!row.suspended_at) throw new AppError('CONFLICT', operatorMessages.accountNotSuspended);
        await repo.setAccountSuspension(trx, id, null, false);
        await record(ctx, 'system:account_restored', trx, { accountId: id });
      });
      return accountOrThrow(id);
    },
  };
}

export type OperatorsService = ReturnType<typeof createOperatorsService>;
