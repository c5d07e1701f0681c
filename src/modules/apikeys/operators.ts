/**
 * Operator management of personal and service keys (any account's, by id), admin-provisioned
 * system keys (`lm_sys_`) and the assignable-scope registry. Writes go through the one key
 * lifecycle's mint, rotation and retirement (lifecycle.ts), audited as `system:*` events.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { AuthContext } from '../../auth/context';
import { sortByRegistry } from '../../auth/registry';
import { invalidateKey, type CredentialRow, type CredentialStore } from '../../auth/store';
import { AppError } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { Cache } from '../../infra/cache';
import type { Camelize } from '../../http/mapping';
import { schemaRows } from '../../infra/db/rows';
import type { ModuleApis } from '../contract';
import { apiKeyMessages } from './errors';
import { requireLabel, type KeyLifecycle } from './lifecycle';
import { assignableScopes, isAssignable, isSystemKeyScope, systemKeyScopes, type ApiKeyPermission, type AssignableKind, type SystemKeyPermission } from './scopes';

type Schemas = components['schemas'];
export type AdminApiKey = Camelize<Schemas['AdminApiKey']>;
export type AdminKeyKind = AdminApiKey['kind'];
export type SystemKey = Camelize<Schemas['SystemKey']>;

/** An operator's view of a personal or service key: the spec's schema, scopes in registry order. */
const adminKeyOf = schemaRows('AdminApiKey', { adjust: { permissions: sortByRegistry } });
/**
 * The store answers a credentials row (src/auth/store.ts); the operator's view names its kind and,
 * of the user and the creator, only the one that kind keeps.
 */
const adminKey = (r: CredentialRow): AdminApiKey => {
  const personal = r.kind === 'user_api_key';
  return adminKeyOf.map({ ...r, kind: personal ? 'PERSONAL' : 'SERVICE', user_id: personal ? r.user_id : null, created_by: personal ? null : r.created_by });
};
/** A system key as stored (scopes in stored order). */
const systemKeyOf = schemaRows('SystemKey');

const rowKind = { PERSONAL: 'user_api_key', SERVICE: 'service_key' } as const;

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

export interface OperatorDeps {
  knex: Knex;
  store: CredentialStore;
  cache: Cache;
  bus: Bus;
  accounts: Pick<ModuleApis['accounts'], 'principals'>;
  audit: Pick<ModuleApis['audit'], 'record'>;
}

export function createKeyOperators(deps: OperatorDeps, keys: KeyLifecycle) {
  const { knex, store, audit } = deps;

  async function anyKey(kind: AdminKeyKind, id: string): Promise<CredentialRow> {
    const row = await store.byId(id);
    if (!row || row.kind !== rowKind[kind]) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
    return row;
  }

  return {
    // ------------------------------------------------------------------ registry
    assignablePermissions(kind: string): ApiKeyPermission[] {
      return [...assignableScopes[assignableKind(kind)]];
    },

    systemKeyPermissions(): SystemKeyPermission[] {
      return [...systemKeyScopes];
    },

    // ------------------------------------------------------------------ operators
    async adminAccountApiKeys(accountId: string): Promise<AdminApiKey[]> {
      const [personal, service] = await Promise.all([store.list({ kind: 'user_api_key', account_id: accountId }), store.list({ kind: 'service_key', account_id: accountId })]);
      const time = (r: CredentialRow) => new Date(r.created_at).getTime();
      return [...personal, ...service].sort((a, b) => time(b) - time(a) || (a.id < b.id ? -1 : 1)).map(adminKey);
    },

    async adminUserApiKeys(userId: string): Promise<AdminApiKey[]> {
      return (await store.list({ kind: 'user_api_key', user_id: userId })).map(adminKey);
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
      return adminKey(row);
    },

    async adminRotateApiKey(ctx: AuthContext, kindName: string, id: string): Promise<{ key: string; apiKey: AdminApiKey }> {
      const kind = adminKind(kindName);
      const row = await anyKey(kind, id);
      const { token, row: fresh } = await keys.rotateRow(row, (old, next) => ({
        scope: 'system',
        type: 'system:api_key_rotated',
        accountId: row.account_id,
        userId: row.user_id,
        actorId: ctx.userId,
        metadata: { ...keys.rotationMetadata(old, next), kind: kind.toLowerCase() },
      }));
      return { key: token, apiKey: adminKey(fresh) };
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
      await keys.retire(removed.token_hash);
    },

    // ------------------------------------------------------------------ system keys
    async adminSystemKeys(): Promise<SystemKey[]> {
      return (await store.list({ kind: 'system_key' })).map(systemKeyOf.map);
    },

    async adminCreateSystemKey(ctx: AuthContext, input: { label: string; permissions: readonly string[] }): Promise<SystemKey & { key: string }> {
      const label = requireLabel(input.label);
      const invalid = input.permissions.find((p) => !isSystemKeyScope(p));
      if (invalid !== undefined) throw AppError.validation(apiKeyMessages.invalidPermission(invalid));
      const permissions = sortByRegistry([...new Set(input.permissions)]);
      // Audited like the other key operations: the key's id, prefix, label and scopes, never the key.
      const { token, row } = await keys.mint({ kind: 'system_key', createdBy: ctx.userId, label, permissions }, (minted) => ({
        scope: 'system',
        type: 'system:system_key_created',
        actorId: ctx.userId,
        metadata: { key_id: minted.id, key_prefix: minted.key_prefix, label, permissions },
      }));
      return { ...systemKeyOf.map(row), key: token };
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
      await keys.retire(removed.token_hash);
    },

    /** accounts.onMemberLeaving: the member's personal keys go (in the removal's transaction). */
    async purgeMember(trx: Knex.Transaction, accountId: string, userId: string): Promise<void> {
      const hashes = await store.purgeMember(trx, accountId, userId);
      // Announced before the commit: a refused request in between is harmless (the member is leaving).
      for (const hash of hashes) await keys.retire(hash);
    },
  };
}
