/**
 * System keys from `auth.system_keys`. Only the SHA-256 hashes from configuration are held; a
 * presented key is hashed and looked up. Admin-provisioned system keys join this in a later module.
 */
import type { SystemKeyConfig } from '../config/config';
import { systemKeyContext } from './context';
import { tokenHash, type CredentialVerifier } from './credentials';

export function createSystemKeyVerifier(keys: readonly SystemKeyConfig[]): CredentialVerifier {
  const byHash = new Map(keys.map((k) => [k.key_sha256, k]));
  return async (credential) => {
    const hash = tokenHash(credential.token);
    const key = byHash.get(hash);
    if (!key) return { code: 'UNAUTHORIZED', message: 'Invalid or expired credential' };
    return systemKeyContext({ keyHash: hash, label: key.label, permissions: key.permissions });
  };
}
