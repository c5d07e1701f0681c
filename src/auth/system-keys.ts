/**
 * System keys: the static ones from `auth.system_keys` (only their SHA-256 hashes are held) and the
 * admin-provisioned ones, stored hashed as `credentials` rows of kind `system_key` (the apikeys
 * module creates and deletes them). A presented key is hashed and looked up in that order; stored
 * ones go through the key cache, so a deleted key is refused at once on every node.
 */
import type { SystemKeyConfig } from '../config/config';
import { systemKeyContext } from './context';
import { tokenHash, type CredentialVerifier } from './credentials';
import type { KeyLookup } from './store';

const INVALID = { code: 'UNAUTHORIZED', message: 'Invalid or expired credential' } as const;

export function createSystemKeyVerifier(keys: readonly SystemKeyConfig[], stored?: KeyLookup): CredentialVerifier {
  const byHash = new Map(keys.map((k) => [k.key_sha256, k]));
  return async (credential) => {
    const hash = tokenHash(credential.token);
    const key = byHash.get(hash);
    if (key) return systemKeyContext({ keyHash: hash, label: key.label, permissions: key.permissions });
    const row = stored ? await stored.byHash(hash) : undefined;
    if (!row || row.kind !== 'system_key' || row.revoked_at !== null) return INVALID;
    if (row.expires_at !== null && new Date(row.expires_at).getTime() <= Date.now()) return INVALID;
    stored!.touch(row);
    return systemKeyContext({ keyHash: hash, label: row.label, permissions: row.permissions });
  };
}
