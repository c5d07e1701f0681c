/**
 * What each credential kind is worth right now. Tokens and JWTs say who they were issued to; the
 * grants they carry are always re-read from live state, so that revoking a session or a token,
 * removing a member or shrinking a role takes effect on the next request on every node:
 * - a JWT's grants are its claims intersected with the user's current roles, and its session
 *   row must be open; a `ws` JWT names the session (or personal key) it was minted from and is
 *   refused once that is revoked; `refresh` JWTs authenticate nothing here;
 * - a popout token (raw, its session JWT, or its WebSocket JWT) holds its stored permissions
 *   intersected with what the creating user's role grants now, and dies with `revoked_at`;
 * - a personal key stops once its owner is no longer a member of the key's account, and holds its
 *   scopes intersected with what the owner's current role (and user roles) grant;
 * - API and system key rows are looked up through the key cache (hash → row, short TTL), which
 *   every delete, rotation and scope change invalidates on every node (src/auth/store.ts).
 */
import { messages } from '../errors';
import { keep, keptRendering } from '../infra/kept';
import { ANONYMOUS, type AuthContext, type CredentialBinding } from './context';
import { tokenHash, type CredentialKind, type CredentialVerifier, type Transport, type VerifyFailure } from './credentials';
import type { JwtClaims, JwtService } from './jwt';
import { apiKeyDenyList, isAccountPermission, isUserPermission } from './registry';
import { CACHED_KEY_KINDS, type CredentialRow, type CredentialStore, type KeyLookup } from './store';

/** Live grants of a user, provided by the accounts module. */
export interface PrincipalSource {
  /** `account` is null when the user is not a member of `accountId` (or none was given). */
  principal(userId: string, accountId: string | null): Promise<{ exists: boolean; account: string[] | null; admin: string[]; user: string[] }>;
  memberPermissions(userId: string, accountId: string): Promise<string[] | null>;
  accountOwner(accountId: string): Promise<string | null>;
}

/** The login-session rows JWTs stand on, provided by the sessions module. */
export interface SessionSource {
  session(id: string): Promise<{ id: string; user_id: string; revoked_at: Date | null; expires_at: Date | null; last_used_at: Date } | undefined>;
  /** Records use, at most once a minute per session. */
  touch(id: string): Promise<void>;
  /** Which of `ids` are revoked or gone. */
  revokedAmong(ids: readonly string[]): Promise<Set<string>>;
}

const INVALID: VerifyFailure = { code: 'UNAUTHORIZED', message: 'Invalid or expired credential' };
const EXPIRED: VerifyFailure = { code: 'TOKEN_EXPIRED', message: 'Token expired' };
const REVOKED: VerifyFailure = { code: 'UNAUTHORIZED', message: messages.sessionRevoked };

const set = (list: Iterable<string>) => new Set(list);

/** Part 1, "Authorization": system admins (any admin role, hence `admin:access`) implicitly hold these. */
const IMPLICIT_ADMIN_GRANTS = ['account-apikeys:read', 'account-apikeys:edit', 'account-apikeys:rotate', 'account-apikeys:delete'];
const withImplicitAdminGrants = (admin: Set<string>) => (admin.has('admin:access') ? set([...admin, ...IMPLICIT_ADMIN_GRANTS]) : admin);
/** A token row's credentialId (its SHA-256); session-less JWTs carry a jti instead. */
const HEX64 = /^[0-9a-f]{64}$/;
const intersect = (claimed: readonly string[] | undefined, live: readonly string[]) => {
  const have = set(live);
  return set((claimed ?? []).filter((p) => have.has(p)));
};

function context(fields: Partial<AuthContext> & Pick<AuthContext, 'kind'>): AuthContext {
  return Object.freeze({ ...ANONYMOUS, ...fields });
}

/** Every field of a key row that a personal key's context is built from (the `keptRendering` key). */
const keyRowFields = (row: CredentialRow): string =>
  JSON.stringify([row.token_hash, row.kind, row.user_id, row.account_id, row.label, row.expires_at === null ? null : new Date(row.expires_at).getTime(), row.permissions]);

/** `last_used_at` is written at most once a minute: most requests only read. */
const stale = (lastUsed: Date | null) => lastUsed === null || Date.now() - new Date(lastUsed).getTime() > 60_000;

const expiry = (at: Date | null) => (at === null ? null : new Date(at).getTime());

const isLive = (row: { revoked_at: Date | null; expires_at: Date | null }) =>
  row.revoked_at === null && (row.expires_at === null || new Date(row.expires_at).getTime() > Date.now());

export interface PopoutGrant {
  row: CredentialRow;
  userId: string | null;
  permissions: string[];
}

/** A popout token's current grant: its stored permissions capped by the creator's role now. */
export type PopoutGrantSource = (row: CredentialRow | undefined) => Promise<PopoutGrant | null>;

export function createPopoutGrant(principals: PrincipalSource): PopoutGrantSource {
  return async (row) => {
    if (!row || row.kind !== 'popout' || !isLive(row) || !row.account_id) return null;
    const creatorGrants = row.created_by ? ((await principals.memberPermissions(row.created_by, row.account_id)) ?? []) : [];
    const allowed = set(creatorGrants);
    const userId = row.user_id ?? (await principals.accountOwner(row.account_id));
    return { row, userId, permissions: row.permissions.filter((p) => allowed.has(p)) };
  };
}

export function createVerifiers(deps: { jwt: JwtService; store: CredentialStore; sessions: SessionSource; principals: PrincipalSource; keys?: KeyLookup }) {
  const { jwt, store, sessions: sessionRows, principals, keys } = deps;
  const popoutGrant = createPopoutGrant(principals);

  function popoutContext(grant: PopoutGrant, claimed?: readonly string[], expiresAt: number | null = expiry(grant.row.expires_at)): AuthContext {
    const permissions = claimed ? intersect(claimed, grant.permissions) : set(grant.permissions);
    return context({
      expiresAt,
      kind: 'popout',
      userId: grant.userId,
      accountId: grant.row.account_id,
      permissions,
      credentialId: grant.row.token_hash,
      label: grant.row.label || null,
      binding: { popoutTokenId: grant.row.id },
    });
  }

  /**
   * The row a user JWT stands on. Access and refresh JWTs may name a `session_id`; a `ws` JWT must
   * name the session (`ws_session`) or personal API key (`ws_key`) it was minted from, since a token
   * that names nothing could not be revoked before it expires.
   */
  function backingOf(claims: JwtClaims): { sessionId: string | null; keyHash: string | null } | VerifyFailure {
    if (claims.use !== 'ws') return { sessionId: claims.session_id ?? null, keyHash: null };
    if (claims.ws_session) return { sessionId: claims.ws_session, keyHash: null };
    if (claims.ws_key) return { sessionId: null, keyHash: claims.ws_key };
    return INVALID;
  }

  async function verifyUserJwt(claims: JwtClaims): Promise<AuthContext | VerifyFailure> {
    const backing = backingOf(claims);
    if ('code' in backing) return backing;
    const { sessionId, keyHash } = backing;
    // Independent reads: the backing row and the live roles, in one round trip of latency.
    const [session, key, live] = await Promise.all([
      sessionId ? sessionRows.session(sessionId) : Promise.resolve(null),
      keyHash ? store.byHash(keyHash) : Promise.resolve(null),
      principals.principal(claims.sub, claims.account_id ?? null),
    ]);
    if (sessionId) {
      if (!session || session.user_id !== claims.sub || !isLive(session)) return REVOKED;
      if (stale(session.last_used_at)) void sessionRows.touch(session.id).catch(() => undefined);
    }
    if (keyHash && (!key || key.kind !== 'user_api_key' || key.user_id !== claims.sub || !isLive(key))) return INVALID;
    if (!live.exists) return INVALID;
    const member = live.account !== null;
    return context({
      kind: 'jwt',
      userId: claims.sub,
      accountId: member ? (claims.account_id ?? null) : null,
      permissions: member ? intersect(claims.account_permissions, live.account!) : set([]),
      adminPermissions: withImplicitAdminGrants(intersect(claims.admin_permissions, live.admin)),
      userPermissions: intersect(claims.user_permissions, live.user),
      // A ws JWT counts (rate budget, socket cap, revocation) as the session or key behind it.
      credentialId: sessionId ?? keyHash ?? claims.jti ?? null,
      sessionId,
      expiresAt: claims.exp ? claims.exp * 1000 : null,
    });
  }

  const jwtVerifier: CredentialVerifier = async (credential, transport: Transport) => {
    const result = await jwt.verify(credential.token);
    if (!result.ok) return result.expired ? EXPIRED : INVALID;
    const { claims } = result;
    if (claims.use === 'refresh') return INVALID;
    if (claims.use === 'ws' && transport !== 'ws') return INVALID;
    if (claims.ctx === 'popout') {
      if (!claims.popout_token_id) return INVALID;
      const grant = await popoutGrant(await store.byId(claims.popout_token_id));
      if (!grant) return REVOKED;
      // A popout's WebSocket token carries the subset it was minted with; never more than now.
      const ends = Math.min(claims.exp ? claims.exp * 1000 : Infinity, expiry(grant.row.expires_at) ?? Infinity);
      return popoutContext(grant, claims.use === 'ws' ? claims.account_permissions : undefined, Number.isFinite(ends) ? ends : null);
    }
    return verifyUserJwt(claims);
  };

  const opaqueVerifier: CredentialVerifier = async (credential) => {
    const hash = tokenHash(credential.token);
    const cached = keys !== undefined && CACHED_KEY_KINDS.has(credential.format.kind);
    const row = cached ? await keys.byHash(hash) : await store.byHash(hash);
    if (!row || row.kind !== credential.format.kind) return INVALID;
    if (!isLive(row)) return row.revoked_at === null ? EXPIRED : INVALID;
    if (cached) keys.touch(row);
    else if (stale(row.last_used_at)) void store.touch(row.id).catch(() => undefined);
    const base = { credentialId: row.token_hash, label: row.label || null, expiresAt: expiry(row.expires_at) };
    const bound = (binding: CredentialBinding) => context({ kind: row.kind, accountId: row.account_id, ...base, binding });
    switch (row.kind) {
      case 'user_api_key': {
        if (!row.user_id || !row.account_id) return INVALID;
        // Exactly its scopes, never more than the owner holds now; nothing once they left.
        const owner = await principals.principal(row.user_id, row.account_id);
        if (!owner.exists || owner.account === null) return INVALID;
        const ownerAccount = owner.account;
        const build = (): AuthContext => {
          const account = set(ownerAccount);
          const user = set(owner.user);
          return context({
            kind: 'user_api_key',
            userId: row.user_id,
            accountId: row.account_id,
            permissions: set(row.permissions.filter((p) => isAccountPermission(p) && account.has(p))),
            userPermissions: set(row.permissions.filter((p) => isUserPermission(p) && user.has(p))),
            ...base,
          });
        };
        // A function of the key row's fields and the owner's grants alone: against grants that are
        // a kept value (the principal's hot read, unchanged since its version), it is built once per
        // key row and shared by the requests it serves, deep-frozen (src/infra/kept.ts). Sets and a
        // context per request were a tenth of a cold page's credential step.
        return keptRendering(owner, `user_api_key ${keyRowFields(row)}`, () => keep(build()).value);
      }
      case 'service_key':
        return context({ kind: 'service_key', accountId: row.account_id, permissions: set(row.permissions.filter(isAccountPermission)), ...base });
      case 'developer_api_key':
        return context({
          kind: 'developer_api_key',
          permissions: set(row.permissions.filter((p) => p.startsWith('extension-dev:'))),
          ...base,
          // A developer profile's key records its developer's user; a team's key has none (it outlives its creator).
          binding: row.account_id === null && row.subject_id ? (row.user_id ? { developerId: row.subject_id } : { teamId: row.subject_id }) : {},
        });
      case 'popout': {
        const grant = await popoutGrant(row);
        return grant ? popoutContext(grant) : INVALID;
      }
      case 'overlay':
      case 'shared_overlay':
        return bound({ overlayId: row.subject_id ?? undefined });
      case 'widget':
        return bound({ widgetInstanceId: row.subject_id ?? undefined });
      case 'extension':
        // The account permissions its install granted (Part 1: "Extension tokens grant capability
        // through the permissions the extension declared and was granted at install time"): the
        // operations and channels those permissions gate, plus its own install's storage (gates.ts).
        // Like an API key, it never holds the deny-list (minting keys or tokens, dissolving the
        // account), whatever an install granted: a delegated credential cannot mint credentials
        // that would outlive its install's revocation.
        return context({
          kind: 'extension',
          accountId: row.account_id,
          ...base,
          permissions: set(row.permissions.filter((p) => isAccountPermission(p) && !apiKeyDenyList.includes(p))),
          binding: { installId: row.subject_id ?? undefined, extensionId: row.extension_id ?? undefined },
        });
      default:
        return INVALID;
    }
  };

  const verifiers: Partial<Record<CredentialKind, CredentialVerifier>> = {
    jwt: jwtVerifier,
    user_api_key: opaqueVerifier,
    service_key: opaqueVerifier,
    developer_api_key: opaqueVerifier,
    popout: opaqueVerifier,
    overlay: opaqueVerifier,
    shared_overlay: opaqueVerifier,
    extension: opaqueVerifier,
    widget: opaqueVerifier,
  };
  /**
   * Which of these contexts' credentials have been revoked (or deleted) since they were verified:
   * the periodic re-check of open sockets, a fallback for a revocation notice the bus lost. One
   * query for session rows and one for token rows, however many sockets there are.
   */
  async function revokedAmong(contexts: Iterable<AuthContext>): Promise<Set<string>> {
    const sessions = new Set<string>();
    const hashes = new Set<string>();
    for (const ctx of contexts) {
      if (ctx.kind === 'anonymous' || ctx.kind === 'system_key' || !ctx.credentialId) continue;
      if (ctx.kind === 'jwt' && ctx.sessionId) sessions.add(ctx.sessionId);
      else if (HEX64.test(ctx.credentialId)) hashes.add(ctx.credentialId);
    }
    const [revokedSessions, revokedTokens] = await Promise.all([sessionRows.revokedAmong([...sessions]), store.revokedCredentials([...hashes])]);
    return new Set([...revokedSessions, ...revokedTokens]);
  }

  return { verifiers, revokedAmong };
}
