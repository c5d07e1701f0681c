/**
 * API keys (Part 1, "Key credentials", "Key lifecycle", "Key rules"): personal keys (`lm_usr_`,
 * one user in one account), service keys (`lm_svc_`, owned by the account), operator management
 * of both, admin-provisioned system keys (`lm_sys_`), and the assignable-scope registry. Keys are
 * `credentials` rows (src/auth/store.ts): only the SHA-256 is stored, the full key is answered once
 * by create and rotate. Every delete, rotation and scope change drops the key's cached look-up on
 * every node and (delete, rotate) announces a revocation, so the old secret is refused at once and
 * its sockets close. Must not check declared gates (the bindings do); checks ownership, the
 * registry and the creator-subset rule.
 */
import type { Knex } from 'knex';
import { hasPermission, requireAccountId, requireUserId, type AuthContext } from '../../auth/context';
import { isUserPermission, sortByRegistry } from '../../auth/registry';
import type { Revocations } from '../../auth/revocations';
import { invalidateKey, type CredentialRow, type CredentialStore } from '../../auth/store';
import { AppError } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { Cache } from '../../infra/cache';
import { isoTime } from '../../infra/db/database';
import type { ModuleApis } from '../contract';
import { apiKeyMessages } from './errors';
import { assignableScopes, isAssignable, isResourceWildcard, isSystemKeyScope, systemKeyScopes, type ApiKeyPermission, type AssignableKind, type SystemKeyPermission } from './scopes';

export interface UserApiKey {
  id: string;
  userId: string;
  accountId: string;
  keyPrefix: string;
  label: string;
  permissions: string[];
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

/** What every key owned by something other than its creator shows (service keys, developer keys). */
export interface OwnedKeyFields {
  createdBy: string | null;
  keyPrefix: string;
  label: string;
  permissions: string[];
  createdAt: string;
  updatedAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

export interface AccountServiceKey extends OwnedKeyFields {
  id: string;
  accountId: string;
}

export type AdminKeyKind = 'PERSONAL' | 'SERVICE';

export interface AdminApiKey {
  id: string;
  kind: AdminKeyKind;
  accountId: string;
  userId: string | null;
  createdBy: string | null;
  keyPrefix: string;
  label: string;
  permissions: string[];
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

export interface SystemKey {
  id: string;
  keyPrefix: string;
  label: string;
  permissions: string[];
  createdBy: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface CreateKeyInput {
  label: string;
  permissions: readonly string[];
  expiresAt?: string | null;
}

export interface DeleteTokenResult {
  success: true;
  id: string;
}

const toUserKey = (r: CredentialRow): UserApiKey => ({
  id: r.id,
  userId: r.user_id!,
  accountId: r.account_id!,
  keyPrefix: r.key_prefix,
  label: r.label,
  permissions: sortByRegistry(r.permissions),
  createdAt: isoTime(r.created_at),
  expiresAt: isoTime(r.expires_at),
  lastUsedAt: isoTime(r.last_used_at),
});

const toServiceKey = (r: CredentialRow): AccountServiceKey => ({
  id: r.id,
  accountId: r.account_id!,
  createdBy: r.created_by,
  keyPrefix: r.key_prefix,
  label: r.label,
  permissions: sortByRegistry(r.permissions),
  createdAt: isoTime(r.created_at),
  updatedAt: isoTime(r.updated_at),
  expiresAt: isoTime(r.expires_at),
  lastUsedAt: isoTime(r.last_used_at),
});

const toAdminKey = (r: CredentialRow): AdminApiKey => ({
  id: r.id,
  kind: r.kind === 'user_api_key' ? 'PERSONAL' : 'SERVICE',
  accountId: r.account_id!,
  userId: r.kind === 'user_api_key' ? r.user_id : null,
  createdBy: r.kind === 'user_api_key' ? null : r.created_by,
  keyPrefix: r.key_prefix,
  label: r.label,
  permissions: sortByRegistry(r.permissions),
  createdAt: isoTime(r.created_at),
  expiresAt: isoTime(r.expires_at),
  lastUsedAt: isoTime(r.last_used_at),
});

const toSystemKey = (r: CredentialRow): SystemKey => ({
  id: r.id,
  keyPrefix: r.key_prefix,
  label: r.label,
  permissions: r.permissions,
  createdBy: r.created_by,
  createdAt: isoTime(r.created_at),
  lastUsedAt: isoTime(r.last_used_at),
});

const rowKind = { PERSONAL: 'user_api_key', SERVICE: 'service_key' } as const;

function requireLabel(label: string | null | undefined): string {
  const trimmed = (label ?? '').trim();
  if (!trimmed) throw AppError.validation(apiKeyMessages.labelRequired);
  return trimmed;
}

function parseExpiry(value: string | null | undefined): Date | null {
  if (value === undefined || value === null) return null;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw AppError.validation(apiKeyMessages.invalidExpiry);
  if (at.getTime() <= Date.now()) throw AppError.validation(apiKeyMessages.expiresInPast);
  return at;
}

/** Accepts `PERSONAL`/`personal` and the like; anything else is a 400. */
export function assignableKind(kind: string | null | undefined): AssignableKind {
  const lower = (kind ?? '').toLowerCase();
  if (lower === 'personal' || lower === 'service' || lower === 'developer') return lower;
  throw AppError.validation(apiKeyMessages.invalidKind(String(kind ?? '')));
}

function adminKind(kind: string): AdminKeyKind {
  const upper = kind.toUpperCase();
  if (upper === 'PERSONAL' || upper === 'SERVICE') return upper;
  throw AppError.validation(apiKeyMessages.invalidKind(kind));
}

/** A scope a caller may hold itself: literal grants by scope; `resource:*` only when held literally. */
function callerHolds(ctx: AuthContext, permission: string): boolean {
  if (isUserPermission(permission)) return hasPermission(ctx, permission, 'user');
  return hasPermission(ctx, permission, 'account');
}

export interface ApiKeysDeps {
  knex: Knex;
  store: CredentialStore;
  cache: Cache;
  bus: Bus;
  revocations: Revocations;
  accounts: Pick<ModuleApis['accounts'], 'principals'>;
  audit: Pick<ModuleApis['audit'], 'record'>;
}

export function createApiKeysService(deps: ApiKeysDeps) {
  const { knex, store, audit } = deps;

  /**
   * Key rules 5: each scope against the kind's registry first (400), then what the creator holds
   * (403). A wildcard is never offered but passes when the caller legitimately holds it.
   */
  function checkScopes(ctx: AuthContext, kind: AssignableKind, permissions: readonly string[]): string[] {
    for (const p of permissions) {
      const heldWildcard = isResourceWildcard(p) && (ctx.permissions.has(p) || (kind === 'personal' && ctx.userPermissions.has(p)));
      if (!isAssignable(kind, p) && !heldWildcard) throw AppError.validation(apiKeyMessages.invalidPermission(p));
    }
    return permissions as string[];
  }

  function checkSubset(ctx: AuthContext, permissions: readonly string[]): string[] {
    const beyond = permissions.find((p) => !(isResourceWildcard(p) ? ctx.permissions.has(p) || ctx.userPermissions.has(p) : callerHolds(ctx, p)));
    if (beyond !== undefined) throw AppError.forbidden(apiKeyMessages.cannotGrant(beyond));
    return sortByRegistry([...new Set(permissions)]);
  }

  /** After a delete or rotation: the old secret's cached look-up goes and its sockets close everywhere. */
  async function retire(hash: string): Promise<void> {
    await invalidateKey(deps, hash);
    await deps.revocations.announce({ credential_id: hash, kind: 'token' });
  }

  async function ownPersonal(ctx: AuthContext, id: string): Promise<CredentialRow> {
    const accountId = requireAccountId(ctx);
    const userId = requireUserId(ctx);
    const row = await store.byId(id);
    if (!row || row.kind !== 'user_api_key' || row.user_id !== userId || row.account_id !== accountId) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
    return row;
  }

  async function ownService(ctx: AuthContext, id: string): Promise<CredentialRow> {
    const accountId = requireAccountId(ctx);
    const row = await store.byId(id);
    if (!row || row.kind !== 'service_key' || row.account_id !== accountId) throw AppError.notFound(apiKeyMessages.serviceKeyNotFound);
    return row;
  }

  async function anyKey(kind: AdminKeyKind, id: string): Promise<CredentialRow> {
    const row = await store.byId(id);
    if (!row || row.kind !== rowKind[kind]) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
    return row;
  }

  /** Rotates a row in one transaction with its audit row; answers the new secret and row. */
  async function rotate(row: CredentialRow, entry: (old: CredentialRow, fresh: CredentialRow) => Parameters<typeof audit.record>[0]) {
    const rotated = await knex.transaction(async (trx) => {
      const result = await store.rotate(row.id, trx);
      if (!result) return null;
      await audit.record(entry(result.old, result.row), trx);
      return result;
    });
    if (!rotated) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
    await retire(rotated.old.token_hash);
    return rotated;
  }

  const rotationMetadata = (old: CredentialRow, fresh: CredentialRow) => ({ key_id: fresh.id, old_key_prefix: old.key_prefix, new_key_prefix: fresh.key_prefix });

  return {
    // ------------------------------------------------------------------ shared key rules (the developer module's keys use them too)
    /** Key rules 5 for any registry kind: the registry first (400), then the creator-subset rule (403); answers the scopes in registry order. */
    validateKeyScopes(ctx: AuthContext, kind: AssignableKind, permissions: readonly string[]): string[] {
      checkScopes(ctx, kind, permissions);
      return checkSubset(ctx, permissions);
    },
    /** The label rule of every key kind (400 `Label is required`); answers the trimmed label. */
    keyLabel: requireLabel,
    /** The expiry rule of every key kind (400 when malformed or in the past); null means no expiry. */
    keyExpiry: parseExpiry,
    /** After a delete, revoke or rotation: the key's cached look-up goes and its sockets close on every node. */
    retireKey: retire,

    // ------------------------------------------------------------------ registry
    assignablePermissions(kind: string): ApiKeyPermission[] {
      return [...assignableScopes[assignableKind(kind)]];
    },

    systemKeyPermissions(): SystemKeyPermission[] {
      return [...systemKeyScopes];
    },

    // ------------------------------------------------------------------ personal keys
    async userApiKeys(ctx: AuthContext): Promise<UserApiKey[]> {
      return (await store.list({ kind: 'user_api_key', account_id: requireAccountId(ctx), user_id: requireUserId(ctx) })).map(toUserKey);
    },

    async createUserApiKey(ctx: AuthContext, input: CreateKeyInput): Promise<{ key: string; apiKey: UserApiKey }> {
      const accountId = requireAccountId(ctx);
      const userId = requireUserId(ctx);
      const label = requireLabel(input.label);
      checkScopes(ctx, 'personal', input.permissions);
      const expiresAt = parseExpiry(input.expiresAt);
      const permissions = checkSubset(ctx, input.permissions);
      const { token, row } = await knex.transaction(async (trx) => {
        const minted = await store.mint({ kind: 'user_api_key', accountId, userId, createdBy: userId, label, permissions, expiresAt }, trx);
        await audit.record(
          { scope: 'user', type: 'user:api_key_created', userId, accountId, actorId: userId, metadata: { key_id: minted.row.id, key_prefix: minted.row.key_prefix, label, permissions } },
          trx,
        );
        return minted;
      });
      return { key: token, apiKey: toUserKey(row) };
    },

    /** Rename only: scopes are immutable for the owner. */
    async updateUserApiKey(ctx: AuthContext, id: string, label: string): Promise<UserApiKey> {
      const name = requireLabel(label);
      await ownPersonal(ctx, id);
      const row = await store.update(id, { label: name });
      if (!row) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
      return toUserKey(row);
    },

    async rotateUserApiKey(ctx: AuthContext, id: string): Promise<{ key: string; apiKey: UserApiKey }> {
      const row = await ownPersonal(ctx, id);
      const { token, row: fresh } = await rotate(row, (old, next) => ({
        scope: 'user',
        type: 'user:api_key_rotated',
        userId: row.user_id,
        accountId: row.account_id,
        actorId: ctx.userId,
        metadata: rotationMetadata(old, next),
      }));
      return { key: token, apiKey: toUserKey(fresh) };
    },

    async deleteUserApiKey(ctx: AuthContext, id: string): Promise<DeleteTokenResult> {
      await ownPersonal(ctx, id);
      const removed = await store.remove(id);
      if (!removed) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
      await retire(removed.token_hash);
      return { success: true, id };
    },

    // ------------------------------------------------------------------ service keys
    async accountServiceKeys(ctx: AuthContext): Promise<AccountServiceKey[]> {
      return (await store.list({ kind: 'service_key', account_id: requireAccountId(ctx) })).map(toServiceKey);
    },

    async createAccountServiceKey(ctx: AuthContext, input: CreateKeyInput): Promise<{ key: string; serviceKey: AccountServiceKey }> {
      const accountId = requireAccountId(ctx);
      const label = requireLabel(input.label);
      checkScopes(ctx, 'service', input.permissions);
      const expiresAt = parseExpiry(input.expiresAt);
      const permissions = checkSubset(ctx, input.permissions);
      const { token, row } = await knex.transaction(async (trx) => {
        const minted = await store.mint({ kind: 'service_key', accountId, createdBy: ctx.userId, label, permissions, expiresAt }, trx);
        await audit.record(
          {
            scope: 'account',
            type: 'account:service_key_created',
            accountId,
            userId: ctx.userId,
            actorId: ctx.userId,
            metadata: { key_id: minted.row.id, key_prefix: minted.row.key_prefix, label, permissions },
          },
          trx,
        );
        return minted;
      });
      return { key: token, serviceKey: toServiceKey(row) };
    },

    async updateAccountServiceKey(ctx: AuthContext, id: string, label: string): Promise<AccountServiceKey> {
      const name = requireLabel(label);
      const before = await ownService(ctx, id);
      const row = await knex.transaction(async (trx) => {
        const updated = await store.update(id, { label: name }, trx);
        if (!updated) return undefined;
        await audit.record(
          {
            scope: 'account',
            type: 'account:service_key_updated',
            accountId: before.account_id,
            userId: ctx.userId,
            actorId: ctx.userId,
            metadata: { key_id: id, key_prefix: before.key_prefix, old_label: before.label, label: name },
          },
          trx,
        );
        return updated;
      });
      if (!row) throw AppError.notFound(apiKeyMessages.serviceKeyNotFound);
      return toServiceKey(row);
    },

    async rotateAccountServiceKey(ctx: AuthContext, id: string): Promise<{ key: string; serviceKey: AccountServiceKey }> {
      const row = await ownService(ctx, id);
      const { token, row: fresh } = await rotate(row, (old, next) => ({
        scope: 'account',
        type: 'account:service_key_rotated',
        accountId: row.account_id,
        userId: ctx.userId,
        actorId: ctx.userId,
        metadata: rotationMetadata(old, next),
      }));
      return { key: token, serviceKey: toServiceKey(fresh) };
    },

    async deleteAccountServiceKey(ctx: AuthContext, id: string): Promise<DeleteTokenResult> {
      const row = await ownService(ctx, id);
      const removed = await knex.transaction(async (trx) => {
        const gone = await store.remove(id, trx);
        if (!gone) return undefined;
        await audit.record(
          {
            scope: 'account',
            type: 'account:service_key_revoked',
            accountId: row.account_id,
            userId: ctx.userId,
            actorId: ctx.userId,
            metadata: { key_id: id, key_prefix: row.key_prefix, label: row.label },
          },
          trx,
        );
        return gone;
      });
      if (!removed) throw AppError.notFound(apiKeyMessages.serviceKeyNotFound);
      await retire(removed.token_hash);
      return { success: true, id };
    },

    // ------------------------------------------------------------------ operators
    async adminAccountApiKeys(accountId: string): Promise<AdminApiKey[]> {
      const [personal, service] = await Promise.all([store.list({ kind: 'user_api_key', account_id: accountId }), store.list({ kind: 'service_key', account_id: accountId })]);
      const time = (r: CredentialRow) => new Date(r.created_at).getTime();
      return [...personal, ...service].sort((a, b) => time(b) - time(a) || (a.id < b.id ? -1 : 1)).map(toAdminKey);
    },

    async adminUserApiKeys(userId: string): Promise<AdminApiKey[]> {
      return (await store.list({ kind: 'user_api_key', user_id: userId })).map(toAdminKey);
    },

    /**
     * Label and scopes: the registry of the key's kind (400), a personal key capped at what its
     * owner may grant in the key's account now (403); the cached look-up is dropped everywhere.
     */
    async adminUpdateApiKey(ctx: AuthContext, kindName: string, id: string, input: { label: string; permissions: readonly string[] }): Promise<AdminApiKey> {
      const kind = adminKind(kindName);
      const label = requireLabel(input.label);
      const registry = kind === 'PERSONAL' ? 'personal' : 'service';
      const invalid = input.permissions.find((p) => !isAssignable(registry, p));
      if (invalid !== undefined) throw AppError.validation(apiKeyMessages.invalidPermission(invalid));
      const before = await anyKey(kind, id);
      if (kind === 'PERSONAL') {
        const owner = await deps.accounts.principals.principal(before.user_id!, before.account_id);
        const holds = new Set(owner.account === null ? [] : [...owner.account, ...owner.user]);
        const beyond = input.permissions.find((p) => !holds.has(p));
        if (beyond !== undefined) throw AppError.forbidden(apiKeyMessages.ownerCannotHold(beyond));
      }
      const permissions = sortByRegistry([...new Set(input.permissions)]);
      const row = await knex.transaction(async (trx) => {
        const updated = await store.update(id, { label, permissions }, trx);
        if (!updated) return undefined;
        await audit.record(
          {
            scope: 'system',
            type: 'system:api_key_updated',
            accountId: before.account_id,
            userId: before.user_id,
            actorId: ctx.userId,
            metadata: { key_id: id, kind: kind.toLowerCase(), key_prefix: before.key_prefix, old_label: before.label, label, old_permissions: before.permissions, permissions },
          },
          trx,
        );
        return updated;
      });
      if (!row) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
      await invalidateKey(deps, row.token_hash);
      return toAdminKey(row);
    },

    async adminRotateApiKey(ctx: AuthContext, kindName: string, id: string): Promise<{ key: string; apiKey: AdminApiKey }> {
      const kind = adminKind(kindName);
      const row = await anyKey(kind, id);
      const { token, row: fresh } = await rotate(row, (old, next) => ({
        scope: 'system',
        type: 'system:api_key_rotated',
        accountId: row.account_id,
        userId: row.user_id,
        actorId: ctx.userId,
        metadata: { ...rotationMetadata(old, next), kind: kind.toLowerCase() },
      }));
      return { key: token, apiKey: toAdminKey(fresh) };
    },

    /** Idempotent: an absent (or already deleted) key is always the same 404. */
    async adminDeleteApiKey(ctx: AuthContext, kindName: string, id: string): Promise<void> {
      const kind = adminKind(kindName);
      const removed = await knex.transaction(async (trx) => {
        const row = await store.byId(id, trx);
        if (!row || row.kind !== rowKind[kind]) return undefined;
        await store.remove(id, trx);
        await audit.record(
          {
            scope: 'system',
            type: 'system:api_key_revoked',
            accountId: row.account_id,
            userId: row.user_id,
            actorId: ctx.userId,
            metadata: { key_id: id, kind: kind.toLowerCase(), key_prefix: row.key_prefix, label: row.label },
          },
          trx,
        );
        return row;
      });
      if (!removed) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
      await retire(removed.token_hash);
    },

    // ------------------------------------------------------------------ system keys
    async adminSystemKeys(): Promise<SystemKey[]> {
      return (await store.list({ kind: 'system_key' })).map(toSystemKey);
    },

    async adminCreateSystemKey(ctx: AuthContext, input: { label: string; permissions: readonly string[] }): Promise<SystemKey & { key: string }> {
      const label = requireLabel(input.label);
      const invalid = input.permissions.find((p) => !isSystemKeyScope(p));
      if (invalid !== undefined) throw AppError.validation(apiKeyMessages.invalidPermission(invalid));
      const permissions = sortByRegistry([...new Set(input.permissions)]);
      // Audited like the other key operations (issue 33): the key's id, prefix, label and scopes, never the key.
      const { token, row } = await knex.transaction(async (trx) => {
        const minted = await store.mint({ kind: 'system_key', createdBy: ctx.userId, label, permissions }, trx);
        await audit.record(
          { scope: 'system', type: 'system:system_key_created', actorId: ctx.userId, metadata: { key_id: minted.row.id, key_prefix: minted.row.key_prefix, label, permissions } },
          trx,
        );
        return minted;
      });
      return { ...toSystemKey(row), key: token };
    },

    async adminDeleteSystemKey(ctx: AuthContext, id: string): Promise<void> {
      const removed = await knex.transaction(async (trx) => {
        const row = await store.byId(id, trx);
        if (!row || row.kind !== 'system_key') return undefined;
        const gone = await store.remove(id, trx);
        if (!gone) return undefined;
        await audit.record({ scope: 'system', type: 'system:system_key_revoked', actorId: ctx.userId, metadata: { key_id: id, key_prefix: row.key_prefix, label: row.label } }, trx);
        return gone;
      });
      if (!removed) throw AppError.notFound(apiKeyMessages.systemKeyNotFound);
      await retire(removed.token_hash);
    },

    /** accounts.onMemberLeaving: the member's personal keys go (in the removal's transaction). */
    async purgeMember(trx: Knex.Transaction, accountId: string, userId: string): Promise<void> {
      const hashes = await store.purgeMember(trx, accountId, userId);
      // Announced before the commit: a refused request in between is harmless (the member is leaving).
      for (const hash of hashes) await retire(hash);
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
