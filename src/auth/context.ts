/**
 * The authentication context every request, resolver and WebSocket session carries, and the
 * permission checks over it. Owns the meaning of grants (literal strings, `resource:*` for
 * system keys only); must not look anything up: resolution lives in credentials.ts.
 */
import type { PermissionScope } from '../../generated/gates';
import { AppError, messages } from '../errors';

export type AuthContextKind =
  | 'anonymous'
  | 'system_key'
  | 'user_api_key'
  | 'service_key'
  | 'developer_api_key'
  | 'jwt'
  | 'popout'
  | 'overlay'
  | 'shared_overlay'
  | 'extension'
  | 'widget';

export interface AuthContext {
  readonly kind: AuthContextKind;
  readonly userId: string | null;
  readonly accountId: string | null;
  /** Account-scope grants of the active account, or a system key's system-scope grants. */
  readonly permissions: ReadonlySet<string>;
  readonly adminPermissions: ReadonlySet<string>;
  readonly userPermissions: ReadonlySet<string>;
  /** Stable, non-secret identity of the credential (a hash or row id), for rate limits and audit. */
  readonly credentialId: string | null;
  /** Display label of a key (system keys from configuration). */
  readonly label: string | null;
  /** The session row behind a JWT; revoking it ends the context on every node. */
  readonly sessionId?: string | null;
  /** What a bound token is bound to (overlay, widget instance, install, popout token, developer). */
  readonly binding?: CredentialBinding | null;
  /** When the credential stops being valid (epoch ms); long-lived connections end then. */
  readonly expiresAt?: number | null;
}

export interface CredentialBinding {
  overlayId?: string;
  widgetInstanceId?: string;
  extensionId?: string;
  installId?: string;
  popoutTokenId?: string;
  developerId?: string;
  teamId?: string;
}

const EMPTY: ReadonlySet<string> = new Set();

export const ANONYMOUS: AuthContext = Object.freeze({
  kind: 'anonymous',
  userId: null,
  accountId: null,
  permissions: EMPTY,
  adminPermissions: EMPTY,
  userPermissions: EMPTY,
  credentialId: null,
  label: null,
});

export function systemKeyContext(input: { keyHash: string; label: string; permissions: readonly string[] }): AuthContext {
  return Object.freeze({
    kind: 'system_key',
    userId: null,
    accountId: null,
    permissions: new Set(input.permissions),
    adminPermissions: EMPTY,
    userPermissions: EMPTY,
    credentialId: input.keyHash,
    label: input.label,
  });
}

/** Contexts that act as the logged-in user themself (the first-party gate). */
export function isFirstParty(ctx: AuthContext): boolean {
  return (ctx.kind === 'jwt' || ctx.kind === 'user_api_key') && ctx.userId !== null;
}

/**
 * Whether a grant set holds `permission`. A literal match always counts; `resource:*` counts for
 * system keys only; a bare `*:*` or `*` grants nothing beyond its literal string.
 */
export function grants(set: ReadonlySet<string>, permission: string, allowResourceWildcard: boolean): boolean {
  if (set.has(permission)) return true;
  if (!allowResourceWildcard) return false;
  const colon = permission.indexOf(':');
  if (colon <= 0) return false;
  const resource = permission.slice(0, colon);
  return resource !== '*' && set.has(`${resource}:*`);
}

/**
 * Checks one permission in the given scope. Overlay and widget tokens hold none. An extension
 * token holds, in account scope only, the account permissions its install granted (each declared
 * by the extension's manifest and held by the installer at install time): Part 1, "Extension
 * tokens grant capability through the permissions the extension declared and was granted at
 * install time". It is never first-party, so first-party operations refuse it at the auth kind.
 */
export function hasPermission(ctx: AuthContext, permission: string, scope: PermissionScope = 'account'): boolean {
  switch (ctx.kind) {
    case 'anonymous':
    case 'overlay':
    case 'shared_overlay':
    case 'widget':
      return false;
    case 'extension':
      return scope === 'account' && grants(ctx.permissions, permission, false);
    case 'system_key':
      // User-scope checks accept a user session or a personal API key (Part 1, "Authorization"):
      // a system key acts as no user, whatever `resource:*` it holds.
      return scope !== 'user' && grants(ctx.permissions, permission, true);
    default:
      break;
  }
  switch (scope) {
    case 'admin':
      return grants(ctx.adminPermissions, permission, false);
    case 'user':
      return ctx.kind !== 'service_key' && grants(ctx.userPermissions, permission, false);
    default:
      return grants(ctx.permissions, permission, false);
  }
}

/** A grant set as a sorted list (the wire form of permissions). */
export function sortedGrants(set: ReadonlySet<string>): string[] {
  return [...set].sort();
}

/** The acting user of a context, or 401: services behind user gates read the user through this. */
export function requireUserId(ctx: AuthContext): string {
  if (!ctx.userId) throw AppError.unauthorized();
  return ctx.userId;
}

/** The active account of a context, or 401 `No active account`. */
export function requireAccountId(ctx: AuthContext): string {
  if (!ctx.accountId) throw AppError.unauthorized(messages.noActiveAccount);
  return ctx.accountId;
}
