/**
 * Gates: the normal form of a declared gate (auth kind, permission, feature flag), read alike
 * from OpenAPI's x-auth / x-permission / x-feature and GraphQL's @gate, and generated/gates.ts.
 */
import { BANNER, FEATURE_RE, PERMISSION_RE, fail } from './common';

export const AUTH_KINDS = ['public', 'authenticated', 'user', 'first-party', 'popout-session', 'system-key', 'developer', 'extension'] as const;

export type AuthKind = (typeof AUTH_KINDS)[number];
export interface Gate {
  auth: AuthKind;
  permissions: { mode: 'all' | 'any'; scope: PermissionScope; list: string[] } | null;
  feature: string | null;
  resourceGrant?: ResourceGrant;
}
/**
 * A grant on one resource that stands in for a missing permission (`x-resource-grant`,
 * `@gate(resourceGrant: ...)`): `on: 'id'` for the resource the operation's `id` names, `on: 'any'`
 * (reads without an `id` only: a list) for any resource of the active account.
 */
export interface ResourceGrant {
  grant: string;
  on: 'id' | 'any';
}
const RESOURCE_GRANT_RE = /^[a-z][a-z0-9-]*:[a-z][a-z0-9_-]*$/;
export type PermissionScope = 'account' | 'admin' | 'user';
export const SCOPES: PermissionScope[] = ['account', 'admin', 'user'];

/**
 * What an operation says about itself besides its gate: whether it changes something (a POST, PUT,
 * PATCH or DELETE, or a GraphQL mutation) and, when it declares no permission, why none fits
 * (`x-gate-reason`, `@gate(reason: ...)`).
 */
export interface GateContext {
  mutating: boolean;
  reason?: unknown;
  /** The declared resource grant, and whether the operation names its resource by an `id`. */
  resourceGrant?: unknown;
  namesId?: boolean;
}

/**
 * A reason must say something: at least a few words, so that "n/a" or "none" cannot pass for one.
 * It is read by a reviewer, never by the gate engine.
 */
const REASON_MIN_LENGTH = 12;

export function normaliseGate(
  where: string,
  auth: unknown,
  permission: unknown,
  feature: unknown,
  scopeValue: unknown = undefined,
  context: GateContext = { mutating: false },
): Gate | null {
  let permissions: Gate['permissions'] = null;
  const scope = (scopeValue ?? 'account') as PermissionScope;
  if (!SCOPES.includes(scope)) fail(`${where}: permission scope must be one of ${SCOPES.join(', ')}`);
  if (scopeValue !== undefined && scopeValue !== null && (permission === undefined || permission === null)) {
    fail(`${where}: a permission scope without a permission`);
  }
  if (permission !== undefined && permission !== null) {
    if (typeof permission === 'string') permissions = { mode: 'all', scope, list: [permission] };
    else if (Array.isArray(permission)) permissions = { mode: 'all', scope, list: permission.map(String) };
    else if (typeof permission === 'object') {
      const p = permission as { any?: unknown; all?: unknown };
      if (Array.isArray(p.any)) permissions = { mode: 'any', scope, list: p.any.map(String) };
      else if (Array.isArray(p.all)) permissions = { mode: 'all', scope, list: p.all.map(String) };
    }
    if (!permissions || permissions.list.length === 0) {
      fail(`${where}: permission must be a string, a list, or { any | all: [...] }`);
      return null;
    }
    for (const perm of permissions.list) {
      if (!PERMISSION_RE.test(perm)) fail(`${where}: "${perm}" is not a resource:action permission`);
    }
    permissions.list = [...new Set(permissions.list)].sort();
  }
  if (auth === undefined || auth === null) {
    if (!permissions) {
      fail(`${where}: no gate (declare an auth kind or a permission)`);
      return null;
    }
    auth = 'authenticated';
  }
  if (!AUTH_KINDS.includes(auth as AuthKind)) {
    fail(`${where}: unknown auth kind "${String(auth)}" (one of ${AUTH_KINDS.join(', ')})`);
    return null;
  }
  if (auth === 'public' && permissions) fail(`${where}: a public operation cannot require a permission`);
  const reason = context.reason;
  if (reason !== undefined && reason !== null) {
    if (typeof reason !== 'string' || reason.trim().length < REASON_MIN_LENGTH) fail(`${where}: a gate reason must say why in words (at least ${REASON_MIN_LENGTH} characters)`);
    if (permissions) fail(`${where}: a gate reason explains a missing permission; this operation declares one`);
  } else if (context.mutating && !permissions) {
    // Least privilege by construction: a change that no permission guards is a decision someone
    // wrote down, never an omission (a first-party gate says which token classes may call, not
    // which of the caller's grants the change needs).
    fail(`${where}: a mutating operation must declare a permission, or say why none fits (x-gate-reason in OpenAPI, @gate(reason: "...") in GraphQL)`);
  }
  if (feature !== undefined && feature !== null && (typeof feature !== 'string' || !FEATURE_RE.test(feature))) {
    fail(`${where}: "${String(feature)}" is not a feature flag key`);
  }
  let resourceGrant: ResourceGrant | undefined;
  const grant = context.resourceGrant;
  if (grant !== undefined && grant !== null) {
    if (typeof grant !== 'string' || !RESOURCE_GRANT_RE.test(grant)) fail(`${where}: resource grant "${String(grant)}" must read <resource>-<kind>:<level>`);
    // A grant stands in for a missing account permission; without one there is nothing to stand in for.
    if (!permissions || permissions.scope !== 'account') fail(`${where}: a resource grant needs an account-scope permission it stands in for`);
    if (!context.namesId && context.mutating) fail(`${where}: a resource grant on a change needs the resource's \`id\` (path parameter or argument)`);
    resourceGrant = { grant: String(grant), on: context.namesId ? 'id' : 'any' };
  }
  return { auth: auth as AuthKind, permissions, feature: (feature as string | undefined) ?? null, ...(resourceGrant ? { resourceGrant } : {}) };
}

export function sameGate(a: Gate, b: Gate): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export const gatesModule = `${BANNER}
export type AuthKind = ${AUTH_KINDS.map((k) => `'${k}'`).join(' | ')};

/** Where a permission is checked: the active account's role, the admin role, or user roles. */
export type PermissionScope = ${SCOPES.map((k) => `'${k}'`).join(' | ')};

/** A declared gate, normalised: auth kind, then permission (all or any of a list), then feature flag. */
export interface Gate {
  auth: AuthKind;
  permissions: { mode: 'all' | 'any'; scope: PermissionScope; list: string[] } | null;
  feature: string | null;
  /**
   * A grant on one resource that lets a caller without the permission through: the resource its
   * \`id\` names (\`on: 'id'\`), or any of the active account's (\`on: 'any'\`, lists). The module
   * owning the resource answers whether the caller holds it.
   */
  resourceGrant?: { grant: string; on: 'id' | 'any' };
}
`;
