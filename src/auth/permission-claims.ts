/**
 * The permission claims of a JWT (`account_permissions`, `admin_permissions`, `user_permissions`;
 * Part 1 names them): arrays of permission strings, which a dashboard may read to shape its UI. An
 * owner who is also an operator holds about 250 strings; spelled out they made a 6.3 KB access
 * token, which with a long query passed the request-header limit. So a family the holder holds
 * entirely within the claim's scope is written as its wildcard (`events:*`), and a whole scope as
 * `*:*`: an owner's claims read `["*:*"]`.
 *
 * The wildcards mean exactly that here and nowhere else: a claim is expanded against the registry
 * of its own scope when the token is verified, so the rest of the service sees literal strings (and
 * a system key's `*:*` still grants nothing beyond the literal string, Part 1 key rule 6). A string
 * outside the registry stays as it is. What a token is worth is still capped by the live grants per
 * request.
 *
 * Tokens minted by the previous release carry each claim as a bitmap string (`p1.<fingerprint>.<bits>`
 * over the registry index); those are still read, so nodes of two releases can serve side by side.
 */
import { createHash } from 'node:crypto';
import { accountPermissions, adminPermissions, teamPermissions, userPermissions } from './registry';

export const PERMISSION_CLAIMS = ['account_permissions', 'admin_permissions', 'user_permissions'] as const;
export type PermissionClaim = (typeof PERMISSION_CLAIMS)[number];

/** The wildcard that stands for every permission of a claim's scope. */
export const WHOLE_SCOPE = '*:*';

interface Universe {
  readonly all: readonly string[];
  readonly set: ReadonlySet<string>;
  /** Each family (`events`) with its permissions in registry order. */
  readonly families: ReadonlyMap<string, readonly string[]>;
}

const familyOf = (permission: string) => permission.slice(0, permission.indexOf(':'));

function universe(all: readonly string[]): Universe {
  const families = new Map<string, string[]>();
  for (const permission of all) {
    const family = familyOf(permission);
    const list = families.get(family);
    if (list) list.push(permission);
    else families.set(family, [permission]);
  }
  return { all, set: new Set(all), families };
}

const universes: Readonly<Record<PermissionClaim, Universe>> = {
  account_permissions: universe(accountPermissions),
  admin_permissions: universe(adminPermissions),
  user_permissions: universe(userPermissions),
};

/**
 * The claim value for `list` in `claim`'s scope: `*:*` when it is the whole scope, else each family
 * held entirely as `family:*` and the rest literally, in registry order; strings outside the
 * registry follow as they are.
 */
export function encodePermissions(claim: PermissionClaim, list: readonly string[]): string[] {
  const scope = universes[claim];
  const held = new Set(list);
  const outside = [...held].filter((p) => !scope.set.has(p));
  if (scope.all.every((p) => held.has(p))) return [WHOLE_SCOPE, ...outside];
  const out: string[] = [];
  for (const [family, members] of scope.families) {
    if (members.every((p) => held.has(p))) out.push(`${family}:*`);
    else for (const p of members) if (held.has(p)) out.push(p);
  }
  return [...out, ...outside];
}

/**
 * The strings a claim value names in `claim`'s scope: wildcards expanded against that scope's
 * registry (a wildcard of a family the scope lacks names nothing), other strings as they are. A
 * bitmap of the previous release is read too; anything else names nothing (fails closed).
 */
export function decodePermissions(claim: PermissionClaim, value: unknown): string[] {
  if (typeof value === 'string') return decodeBitmap(value);
  if (!Array.isArray(value)) return [];
  const scope = universes[claim];
  const out = new Set<string>();
  for (const entry of value) {
    if (typeof entry !== 'string') continue;
    if (entry === WHOLE_SCOPE) for (const p of scope.all) out.add(p);
    else if (entry.endsWith(':*')) for (const p of scope.families.get(entry.slice(0, -2)) ?? []) out.add(p);
    else out.add(entry);
  }
  return [...out];
}

// The previous release's encoding, read only: bit i of the base64url bitmap is the i-th string of
// the registry index (account, user, admin, then team strings); the fingerprint names that index,
// so a bitmap of another registry decodes to nothing.
const index: readonly string[] = Object.freeze([...new Set([...accountPermissions, ...userPermissions, ...adminPermissions, ...teamPermissions])]);
const BITMAP_PREFIX = `p1.${createHash('sha256').update(index.join('\n')).digest('base64url').slice(0, 8)}.`;

function decodeBitmap(value: string): string[] {
  if (!value.startsWith(BITMAP_PREFIX)) return [];
  const bits = Buffer.from(value.slice(BITMAP_PREFIX.length), 'base64url');
  const out: string[] = [];
  for (let i = 0; i < index.length; i++) if ((bits[i >> 3] ?? 0) & (1 << (i & 7))) out.push(index[i]!);
  return out;
}
