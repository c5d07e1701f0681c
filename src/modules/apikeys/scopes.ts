/**
 * The assignable-scope registry (Part 1, "Key rules" 5): which scopes a key of each kind may hold,
 * with the deny-list applied, and the scopes a system key may hold. Built from src/auth/registry.ts
 * at load; the developer kind is here already so the developer portal only adds its key routes.
 */
import type { components } from '../../../generated/openapi';
import {
  accountPermissionCategories,
  accountPermissions,
  adminPermissionCatalogue,
  adminPermissions,
  apiKeyDenyList,
  userPermissions,
} from '../../auth/registry';

export type AssignableKind = 'personal' | 'service' | 'developer';

/** An offered scope (`GET /v1/api-keys/permissions`); the schema's members are one word each, so the wire form is the domain form. */
export type ApiKeyPermission = components['schemas']['ApiKeyPermission'];

/** A scope a system key may hold (`GET /v1/admin/system-key-permissions`). */
export type SystemKeyPermission = components['schemas']['AdminPermissionInfo'];

const denied = new Set(apiKeyDenyList);
const categoryOf = (p: string) => p.slice(0, p.indexOf(':'));
const words = (s: string) => s.replace(/[_-]+/g, ' ');
const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
/** `music_platform:playback` → `Music platform: playback`. */
const labelOf = (p: string) => `${capitalised(words(categoryOf(p)))}: ${words(p.slice(p.indexOf(':') + 1))}`;

const entries = (list: readonly string[]): readonly ApiKeyPermission[] =>
  Object.freeze(list.filter((p) => !denied.has(p)).map((key) => Object.freeze({ key, label: labelOf(key), category: categoryOf(key) })));

/** In registry order: account permissions by table row, then the ten `ideas:*`. */
export const assignableScopes: Readonly<Record<AssignableKind, readonly ApiKeyPermission[]>> = Object.freeze({
  personal: entries([...accountPermissions, ...userPermissions]),
  service: entries(accountPermissions),
  developer: entries(accountPermissions.filter((p) => p.startsWith('extension-dev:'))),
});

const assignableSets: Readonly<Record<AssignableKind, ReadonlySet<string>>> = Object.freeze({
  personal: new Set(assignableScopes.personal.map((e) => e.key)),
  service: new Set(assignableScopes.service.map((e) => e.key)),
  developer: new Set(assignableScopes.developer.map((e) => e.key)),
});

export const isAssignable = (kind: AssignableKind, permission: string): boolean => assignableSets[kind].has(permission);

/** Admin, account and user scopes minus the deny-list, each once (shared strings are in both). */
export const systemKeyScopes: readonly SystemKeyPermission[] = Object.freeze(
  [
    ...adminPermissionCatalogue.map((e) => ({ permission: e.permission, category: e.category })),
    ...accountPermissions.map((permission) => ({ permission, category: categoryOf(permission) })),
    ...userPermissions.map((permission) => ({ permission, category: categoryOf(permission) })),
  ]
    .filter((e, i, all) => !denied.has(e.permission) && all.findIndex((o) => o.permission === e.permission) === i)
    .map((e) => Object.freeze(e)),
);

const systemKeySet: ReadonlySet<string> = new Set(systemKeyScopes.map((e) => e.permission));
const knownResources: ReadonlySet<string> = new Set([
  ...accountPermissionCategories.map((c) => c.category),
  ...adminPermissions.map(categoryOf),
  ...userPermissions.map(categoryOf),
]);

/** A system key may hold a listed scope or `resource:*` of a known resource (never `*:*` or `*`). */
export function isSystemKeyScope(permission: string): boolean {
  if (systemKeySet.has(permission)) return true;
  return permission.endsWith(':*') && knownResources.has(permission.slice(0, -2));
}

/** `events:*`: the one wildcard form a principal can legitimately hold (system keys). */
export const isResourceWildcard = (permission: string): boolean => /^[a-z0-9_-]+:\*$/.test(permission);
