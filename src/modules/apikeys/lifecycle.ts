/**
 * The one key lifecycle (Part 1, "Key lifecycle", "Key rules"): create (label, registry, expiry,
 * creator subset; mint with the kind's prefix, only the SHA-256 stored, the key answered once),
 * rename, rotate, revoke or delete, each with its audit row in the write's transaction, and the
 * retirement that follows (the cached look-up dropped everywhere, sockets closed). Personal,
 * service and developer keys differ in data only: a `KeyKind` names the credential kind, the
 * assignable registry, the 404 message, the audit events, how the owner is stored and how a row
 * is answered. The apikeys module builds it and offers it through its API (`use('apikeys').keys`);
 * the developer module adds its owner row through the kind's `afterMint`.
 */
import type { Knex } from 'knex';
import { hasPermission, type AuthContext } from '../../auth/context';
import { isUserPermission, sortByRegistry } from '../../auth/registry';
import type { Revocations } from '../../auth/revocations';
import { invalidateKey, type CredentialRow, type CredentialStore, type MintInput } from '../../auth/store';
import { AppError } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { Cache } from '../../infra/cache';
import type { components } from '../../../generated/openapi';
import { schemaRows, type RowMapping } from '../../infra/db/rows';
import type { Camelize } from '../../infra/names';
import type { ModuleApis } from '../contract';
import { apiKeyMessages } from './errors';
import { isAssignable, isResourceWildcard, type AssignableKind } from './scopes';

type Schemas = components['schemas'];

export type AuditEntry = Parameters<ModuleApis['audit']['record']>[0];

/** The credential kinds a caller manages through the lifecycle (system keys are the operators'). */
export type OwnedKeyCredential = 'user_api_key' | 'service_key' | 'developer_api_key';

/**
 * The columns of a key row the lifecycle reads: those of a credentials row (src/auth/store.ts), which
 * a kind's row is, or extends with its owner row's columns.
 */
export type KeyRow = Pick<CredentialRow, 'id' | 'token_hash' | 'key_prefix' | 'label'> & Partial<Pick<CredentialRow, 'account_id'>>;

/** The mint columns naming a key's owner and creator. */
export type KeyOwnerColumns = Pick<MintInput, 'accountId' | 'userId' | 'subjectId' | 'createdBy'>;

export interface CreateKeyInput {
  label: string;
  permissions: readonly string[];
  expiresAt?: string | null;
}

export interface DeleteTokenResult {
  success: true;
  id: string;
}

/** What one kind of key is: data, plus the few look-ups only its owning module can do. */
export interface KeyKind<Owner, Row extends KeyRow, View> {
  credential: OwnedKeyCredential;
  /** The assignable-scope registry (src/modules/apikeys/scopes.ts) its scopes come from. */
  registry: AssignableKind;
  /** The 404 of a key the caller may not manage (or that is gone). */
  notFound: string;
  /** `delete` removes the row; `revoke` keeps it (audit trail) with `revoked_at` set. */
  removal: 'delete' | 'revoke';
  /** Audit event types by step; a step without one writes no audit row. */
  audit: { scope: 'user' | 'account'; created: string; updated?: string; rotated?: string; removed?: string };
  /** Where the expiry rule runs: after the registry check (personal, service) or before it (developer). */
  expiry: 'after-registry' | 'before-registry';
  /** The owner's columns of a minted row. */
  columns(owner: Owner): KeyOwnerColumns;
  /** Audit metadata naming the owner, appended to every entry (developer keys: developer_id or team_id). */
  ownerMetadata?(of: Owner | Row): Record<string, unknown>;
  /** Runs in the mint's transaction after the credentials row (developer keys: the owner row). */
  afterMint?(trx: Knex.Transaction, row: CredentialRow, owner: Owner): Promise<void>;
  /** A key the caller may manage; throws (404 `notFound`, or the kind's own refusal) otherwise. */
  find(ctx: AuthContext, id: string): Promise<Row>;
  /** The record answered for a row. */
  view(row: CredentialRow): View | Promise<View>;
}

export interface KeyLifecycleDeps {
  knex: Knex;
  store: CredentialStore;
  cache: Cache;
  bus: Bus;
  revocations: Revocations;
  audit: Pick<ModuleApis['audit'], 'record'>;
}

/** The label rule of every key kind (400 `Label is required`); answers the trimmed label. */
export function requireLabel(label: string | null | undefined): string {
  const trimmed = (label ?? '').trim();
  if (!trimmed) throw AppError.validation(apiKeyMessages.labelRequired);
  return trimmed;
}

/** The expiry rule of every key kind (400 when malformed or in the past); null means no expiry. */
export function parseExpiry(value: string | null | undefined): Date | null {
  if (value === undefined || value === null) return null;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw AppError.validation(apiKeyMessages.invalidExpiry);
  if (at.getTime() <= Date.now()) throw AppError.validation(apiKeyMessages.expiresInPast);
  return at;
}

/**
 * Key rules 5: each scope against the kind's registry (400). A wildcard is never offered but
 * passes when the caller legitimately holds it.
 */
export function checkScopes(ctx: AuthContext, kind: AssignableKind, permissions: readonly string[]): void {
  for (const p of permissions) {
    const heldWildcard = isResourceWildcard(p) && (ctx.permissions.has(p) || (kind === 'personal' && ctx.userPermissions.has(p)));
    if (!isAssignable(kind, p) && !heldWildcard) throw AppError.validation(apiKeyMessages.invalidPermission(p));
  }
}

/** A scope a caller may hold itself: literal grants by scope; `resource:*` only when held literally. */
function callerHolds(ctx: AuthContext, permission: string): boolean {
  if (isUserPermission(permission)) return hasPermission(ctx, permission, 'user');
  return hasPermission(ctx, permission, 'account');
}

/** The creator-subset rule (403); answers the scopes once each, in registry order. */
export function checkSubset(ctx: AuthContext, permissions: readonly string[]): string[] {
  const beyond = permissions.find((p) => !(isResourceWildcard(p) ? ctx.permissions.has(p) || ctx.userPermissions.has(p) : callerHolds(ctx, p)));
  if (beyond !== undefined) throw AppError.forbidden(apiKeyMessages.cannotGrant(beyond));
  return sortByRegistry([...new Set(permissions)]);
}

/** The spec schemas of the owned key kinds (personal, service, developer). */
export type KeySchema = 'UserApiKey' | 'AccountServiceKey' | 'DeveloperApiKey';

/**
 * The record mapping of a key kind: its schema's members (`id`, the kind's owner columns, then the
 * columns every key answers), read from the row by `schemaRows`; scopes in registry order. A key
 * row (credentials, or joined with its owner row) maps to its kind's schema in domain form.
 */
export function keyRecord<N extends KeySchema>(schema: N): (row: object) => Camelize<Schemas[N]> {
  return (schemaRows<KeySchema>(schema, { adjust: { permissions: sortByRegistry } }) as RowMapping<unknown> as RowMapping<Camelize<Schemas[N]>>).map;
}

const rotationMetadata = (old: CredentialRow, fresh: CredentialRow) => ({ key_id: fresh.id, old_key_prefix: old.key_prefix, new_key_prefix: fresh.key_prefix });

export function createKeyLifecycle(deps: KeyLifecycleDeps) {
  const { knex, store, audit } = deps;

  /** After a delete, revoke or rotation: the key's cached look-up goes and its sockets close on every node. */
  async function retire(hash: string): Promise<void> {
    await invalidateKey(deps, hash);
    await deps.revocations.announce({ credential_id: hash, kind: 'token' });
  }

  /** Mints a row in one transaction with its audit row (and the kind's extra rows); answers the key, shown once. */
  async function mint(input: MintInput, entry: (row: CredentialRow) => AuditEntry, after?: (trx: Knex.Transaction, row: CredentialRow) => Promise<void>) {
    return knex.transaction(async (trx) => {
      const minted = await store.mint(input, trx);
      await after?.(trx, minted.row);
      await audit.record(entry(minted.row), trx);
      return minted;
    });
  }

  /**
   * Rotates a row in one transaction with its audit row (if any); answers the new secret and row. A row
   * gone in between is `API key not found`, whatever its kind (as it always was).
   */
  async function rotateRow(row: KeyRow, entry: (old: CredentialRow, fresh: CredentialRow) => AuditEntry | null) {
    const rotated = await knex.transaction(async (trx) => {
      const result = await store.rotate(row.id, trx);
      if (!result) return null;
      const logged = entry(result.old, result.row);
      if (logged) await audit.record(logged, trx);
      return result;
    });
    if (!rotated) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
    await retire(rotated.old.token_hash);
    return rotated;
  }

  /** The columns every entry of a caller's own key operation carries. */
  const entryOf = (ctx: AuthContext, scope: 'user' | 'account', type: string, accountId: string | null | undefined, metadata: Record<string, unknown>): AuditEntry => ({
    scope,
    type,
    userId: ctx.userId,
    ...(accountId ? { accountId } : {}),
    actorId: ctx.userId,
    metadata,
  });

  return {
    /** The record mapping of a key kind (keyRecord), for a module owning one (the developer module's keys). */
    record: keyRecord,
    retire,
    mint,
    rotateRow,
    rotationMetadata,

    /** The kind's rows by owner columns, newest first (kinds whose owner is on the credentials row). */
    async list<View>(kind: Pick<KeyKind<unknown, KeyRow, View>, 'credential' | 'view'>, where: { account_id?: string; user_id?: string }): Promise<View[]> {
      const rows = await store.list({ kind: kind.credential, ...where });
      return Promise.all(rows.map((row) => kind.view(row)));
    },

    /**
     * Label first, then the owner (`owner()` may refuse: a team key needs the team permission),
     * then the scopes (registry 400, expiry 400, creator subset 403, expiry placed as the kind
     * says). Answers the key once with its record.
     */
    async create<Owner, Row extends KeyRow, View>(kind: KeyKind<Owner, Row, View>, ctx: AuthContext, input: CreateKeyInput, owner: () => Owner | Promise<Owner>): Promise<{ key: string; record: View }> {
      const label = requireLabel(input.label);
      const who = await owner();
      let expiresAt: Date | null = null;
      if (kind.expiry === 'before-registry') expiresAt = parseExpiry(input.expiresAt);
      checkScopes(ctx, kind.registry, input.permissions);
      if (kind.expiry === 'after-registry') expiresAt = parseExpiry(input.expiresAt);
      const permissions = checkSubset(ctx, input.permissions);
      const columns = kind.columns(who);
      const { token, row } = await mint(
        { kind: kind.credential, ...columns, label, permissions, expiresAt },
        (minted) =>
          entryOf(ctx, kind.audit.scope, kind.audit.created, columns.accountId, {
            key_id: minted.id,
            key_prefix: minted.key_prefix,
            label,
            permissions,
            ...kind.ownerMetadata?.(who),
          }),
        kind.afterMint && ((trx, minted) => kind.afterMint!(trx, minted, who)),
      );
      return { key: token, record: await kind.view(row) };
    },

    /** Rename only: scopes are immutable for the owner. The cached look-up carries the label, so it goes. */
    async rename<Owner, Row extends KeyRow, View>(kind: KeyKind<Owner, Row, View>, ctx: AuthContext, id: string, label: string): Promise<View> {
      const name = requireLabel(label);
      const before = await kind.find(ctx, id);
      const row = await knex.transaction(async (trx) => {
        const updated = await store.update(id, { label: name }, trx);
        if (!updated) return undefined;
        if (kind.audit.updated) {
          const metadata = { key_id: id, key_prefix: before.key_prefix, old_label: before.label, label: name, ...kind.ownerMetadata?.(before) };
          await audit.record(entryOf(ctx, kind.audit.scope, kind.audit.updated, before.account_id, metadata), trx);
        }
        return updated;
      });
      if (!row) throw AppError.notFound(kind.notFound);
      await invalidateKey(deps, before.token_hash);
      return kind.view(row);
    },

    /** A new secret for the same row (id, label, scopes, expiry); the old one is refused at once. */
    async rotate<Owner, Row extends KeyRow, View>(kind: KeyKind<Owner, Row, View>, ctx: AuthContext, id: string): Promise<{ key: string; record: View }> {
      const row = await kind.find(ctx, id);
      const type = kind.audit.rotated;
      const { token, row: fresh } = await rotateRow(row, (old, next) => (type ? entryOf(ctx, kind.audit.scope, type, row.account_id, rotationMetadata(old, next)) : null));
      return { key: token, record: await kind.view(fresh) };
    },

    /** Delete or soft-revoke (the kind says which), audited with the removal; then retired everywhere. */
    async remove<Owner, Row extends KeyRow, View>(kind: KeyKind<Owner, Row, View>, ctx: AuthContext, id: string): Promise<DeleteTokenResult> {
      const before = await kind.find(ctx, id);
      const hash = await knex.transaction(async (trx) => {
        const gone = kind.removal === 'delete' ? (await store.remove(id, trx))?.token_hash : (await store.revoke(id, trx)) ? before.token_hash : undefined;
        if (gone === undefined) return undefined;
        if (kind.audit.removed) {
          const metadata = { key_id: id, key_prefix: before.key_prefix, label: before.label, ...kind.ownerMetadata?.(before) };
          await audit.record(entryOf(ctx, kind.audit.scope, kind.audit.removed, before.account_id, metadata), trx);
        }
        return gone;
      });
      if (hash === undefined) throw AppError.notFound(kind.notFound);
      await retire(hash);
      return { success: true, id };
    },
  };
}

export type KeyLifecycle = ReturnType<typeof createKeyLifecycle>;
