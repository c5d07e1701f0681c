/**
 * The auth unit as a module of the fold: the gate engine (over the features module's flags and the
 * overlays module's widget access grants and the extensions module's own-install grant, the
 * resource grants gates declare) and
 * the credential resolver of the eleven contexts (over the accounts module's live grants and the
 * sessions module's rows). Transports take both from here; it serves no operation itself.
 */
import { defineModule } from '../contract';
import { createCredentialResolver, type CredentialResolver } from '../../auth/credentials';
import type { AuthContext } from '../../auth/context';
import { anyResourceGrant, createGateEnforcer, type GateEnforcer } from '../../auth/gates';
import { createKeyLookup, credentialMigrations, invalidateKey, KEY_INVALIDATIONS_CHANNEL } from '../../auth/store';
import { REVOCATIONS_CHANNEL } from '../../auth/revocations';
import { createSystemKeyVerifier } from '../../auth/system-keys';
import { createVerifiers } from '../../auth/verifiers';
import { accessVersionMigrations } from '../../auth/access-version';

export interface AuthApi {
  readonly gates: GateEnforcer;
  readonly credentials: CredentialResolver;
  /** Which of these contexts' credentials were revoked since they were verified (open sockets). */
  revokedAmong(contexts: Iterable<AuthContext>): Promise<Set<string>>;
}

declare module '../contract' {
  interface ModuleApis {
    auth: AuthApi;
  }
}

export const authModule = defineModule({
  name: 'auth',
  migrations: [...credentialMigrations, ...accessVersionMigrations],
  build: ({ config, jwt, cache, bus, credentials: store, use }) => {
    // Key look-ups are cached (hash → row); a key's invalidation or revocation notice drops it on every node.
    const keys = createKeyLookup({ store, cache });
    store.onRevoked((hash) => invalidateKey({ cache, bus }, hash));
    const { verifiers, revokedAmong } = createVerifiers({ jwt, store, sessions: use('sessions').sessionSource, principals: use('accounts').principals, keys });
    // A suspended user's or account's credentials resolve to nothing (the operators module's standing check).
    const credentials = use('operators').guard(createCredentialResolver({ ...verifiers, system_key: createSystemKeyVerifier(config.auth.system_keys, keys) }));
    const forget = (hash: string) => keys.forget(hash);
    return {
      api: { gates: createGateEnforcer(use('features'), anyResourceGrant(use('overlays').resourceGrants, use('extensions').resourceGrants)), credentials, revokedAmong },
      consumers: [
        { pattern: KEY_INVALIDATIONS_CHANNEL, handle: (_channel: string, message: string) => forget(message) },
        {
          pattern: REVOCATIONS_CHANNEL,
          handle: (_channel: string, message: string) => {
            const id = (JSON.parse(message) as { credential_id?: unknown }).credential_id;
            return typeof id === 'string' ? forget(id) : undefined;
          },
        },
      ],
    };
  },
});
