/**
 * API keys (Part 1, "Key credentials", "Key lifecycle", "Key rules"): personal keys (`lm_usr_`,
 * one user in one account), service keys (`lm_svc_`, owned by the account), operator management
 * of both, admin-provisioned system keys (`lm_sys_`), and the assignable-scope registry. Keys are
 * `credentials` rows (src/auth/store.ts): only the SHA-256 is stored, the full key is answered once
 * by create and rotate. Every delete, rotation and scope change drops the key's cached look-up on
 * every node and (delete, rotate) announces a revocation, so the old secret is refused at once and
 * its sockets close. Must not check declared gates (the bindings do); checks ownership, the
 * registry and the creator-subset rule.
 *
 * Composed of the one key lifecycle (lifecycle.ts, offered to the developer module as `keys`),
 * the personal and service key kinds (keys.ts) and the operators' side (operators.ts).
 */
import type { Revocations } from '../../auth/revocations';
import { createAccountKeys } from './keys';
import { createKeyLifecycle } from './lifecycle';
import { createKeyOperators, type OperatorDeps } from './operators';

export type { AccountServiceKey, UserApiKey } from './keys';
export type { CreateKeyInput, DeleteTokenResult } from './lifecycle';
export { assignableKind, type AdminApiKey, type AdminKeyKind, type SystemKey } from './operators';

/** The operator paths' dependencies, and the revocations the account keys' lifecycle signals. */
export interface ApiKeysDeps extends OperatorDeps {
  revocations: Revocations;
}

export function createApiKeysService(deps: ApiKeysDeps) {
  const keys = createKeyLifecycle(deps);
  return {
    /** The one key lifecycle, for every module that owns a key kind (the developer module's `lm_dev_`). */
    keys,
    ...createAccountKeys(deps.store, keys),
    ...createKeyOperators(deps, keys),
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
