/**
 * Personal keys (`lm_usr_`, one user in one account) and service keys (`lm_svc_`, owned by the
 * account) as kinds of the one key lifecycle (lifecycle.ts): the same create, rename, rotate and
 * delete, differing in owner columns, registry, messages and audit events. The records are the
 * spec's schemas in domain form.
 */
import type { components } from '../../../generated/openapi';
import { requireAccountId, requireUserId, type AuthContext } from '../../auth/context';
import type { CredentialRow, CredentialStore } from '../../auth/store';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import { apiKeyMessages } from './errors';
import { keyRecord, type CreateKeyInput, type DeleteTokenResult, type KeyKind, type KeyLifecycle } from './lifecycle';

type Schemas = components['schemas'];
export type UserApiKey = Camelize<Schemas['UserApiKey']>;
export type AccountServiceKey = Camelize<Schemas['AccountServiceKey']>;

/** A personal key: its user and account, then the common key columns. */
export const toUserKey = keyRecord('UserApiKey');

/** A service key: its account and creator, then the common key columns. */
export const toServiceKey = keyRecord('AccountServiceKey');

export function createAccountKeys(store: CredentialStore, keys: KeyLifecycle) {
  /** The caller's own personal key in the active account. */
  const personal: KeyKind<{ accountId: string; userId: string }, CredentialRow, UserApiKey> = {
    credential: 'user_api_key',
    registry: 'personal',
    notFound: apiKeyMessages.apiKeyNotFound,
    removal: 'delete',
    audit: { scope: 'user', created: 'user:api_key_created', rotated: 'user:api_key_rotated' },
    expiry: 'after-registry',
    columns: ({ accountId, userId }) => ({ accountId, userId, createdBy: userId }),
    async find(ctx, id) {
      const accountId = requireAccountId(ctx);
      const userId = requireUserId(ctx);
      const row = await store.byId(id);
      if (!row || row.kind !== 'user_api_key' || row.user_id !== userId || row.account_id !== accountId) throw AppError.notFound(apiKeyMessages.apiKeyNotFound);
      return row;
    },
    view: toUserKey,
  };

  /** A service key of the active account. */
  const service: KeyKind<{ accountId: string; createdBy: string | null }, CredentialRow, AccountServiceKey> = {
    credential: 'service_key',
    registry: 'service',
    notFound: apiKeyMessages.serviceKeyNotFound,
    removal: 'delete',
    audit: { scope: 'account', created: 'account:service_key_created', updated: 'account:service_key_updated', rotated: 'account:service_key_rotated', removed: 'account:service_key_revoked' },
    expiry: 'after-registry',
    columns: ({ accountId, createdBy }) => ({ accountId, createdBy }),
    async find(ctx, id) {
      const accountId = requireAccountId(ctx);
      const row = await store.byId(id);
      if (!row || row.kind !== 'service_key' || row.account_id !== accountId) throw AppError.notFound(apiKeyMessages.serviceKeyNotFound);
      return row;
    },
    view: toServiceKey,
  };

  return {
    // ------------------------------------------------------------------ personal keys
    userApiKeys(ctx: AuthContext): Promise<UserApiKey[]> {
      return keys.list(personal, { account_id: requireAccountId(ctx), user_id: requireUserId(ctx) });
    },

    async createUserApiKey(ctx: AuthContext, input: CreateKeyInput): Promise<{ key: string; apiKey: UserApiKey }> {
      const owner = { accountId: requireAccountId(ctx), userId: requireUserId(ctx) };
      const made = await keys.create(personal, ctx, input, () => owner);
      return { key: made.key, apiKey: made.record };
    },

    /** Rename only: scopes are immutable for the owner. */
    updateUserApiKey: (ctx: AuthContext, id: string, label: string): Promise<UserApiKey> => keys.rename(personal, ctx, id, label),

    async rotateUserApiKey(ctx: AuthContext, id: string): Promise<{ key: string; apiKey: UserApiKey }> {
      const rotated = await keys.rotate(personal, ctx, id);
      return { key: rotated.key, apiKey: rotated.record };
    },

    deleteUserApiKey: (ctx: AuthContext, id: string): Promise<DeleteTokenResult> => keys.remove(personal, ctx, id),

    // ------------------------------------------------------------------ service keys
    accountServiceKeys(ctx: AuthContext): Promise<AccountServiceKey[]> {
      return keys.list(service, { account_id: requireAccountId(ctx) });
    },

    async createAccountServiceKey(ctx: AuthContext, input: CreateKeyInput): Promise<{ key: string; serviceKey: AccountServiceKey }> {
      const owner = { accountId: requireAccountId(ctx), createdBy: ctx.userId };
      const made = await keys.create(service, ctx, input, () => owner);
      return { key: made.key, serviceKey: made.record };
    },

    updateAccountServiceKey: (ctx: AuthContext, id: string, label: string): Promise<AccountServiceKey> => keys.rename(service, ctx, id, label),

    async rotateAccountServiceKey(ctx: AuthContext, id: string): Promise<{ key: string; serviceKey: AccountServiceKey }> {
      const rotated = await keys.rotate(service, ctx, id);
      return { key: rotated.key, serviceKey: rotated.record };
    },

    deleteAccountServiceKey: (ctx: AuthContext, id: string): Promise<DeleteTokenResult> => keys.remove(service, ctx, id),
  };
}
