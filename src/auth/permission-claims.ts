/**
 * The compact encoding of the permission claims of a JWT (`account_permissions`,
 * `admin_permissions`, `user_permissions`; Part 1 names them, their encoding is ours). An owner who
 * is also an operator holds about 250 strings: spelled out they made a 6.3 KB access token, which
 * with a long query passed the request-header limit. Encoded, each claim is one short string:
 *
 *   `p1.<fingerprint>.<bitmap>`
 *
 * where bit i of the base64url `bitmap` is the i-th string of the registry index (account, user,
 * admin, then team strings, as the registry orders them) and `fingerprint` names that index, so a
 * token minted by a release with another registry decodes to nothing (fails closed: the holder's
 * next refresh mints a current one) instead of to the wrong strings. A list with a string outside
 * the registry (a wildcard, a legacy grant) stays a plain array, which is also how tokens minted
 * before this encoding read. What a token is worth is still capped by the live grants per request.
 */
import { createHash } from 'node:crypto';
import { accountPermissions, adminPermissions, teamPermissions, userPermissions } from './registry';

const VERSION = 'p1';
const index: readonly string[] = Object.freeze([...new Set([...accountPermissions, ...userPermissions, ...adminPermissions, ...teamPermissions])]);
const position: ReadonlyMap<string, number> = new Map(index.map((p, i) => [p, i]));
const FINGERPRINT = createHash('sha256').update(index.join('\n')).digest('base64url').slice(0, 8);
const PREFIX = `${VERSION}.${FINGERPRINT}.`;

export const PERMISSION_CLAIMS = ['account_permissions', 'admin_permissions', 'user_permissions'] as const;

/** The claim value for `list`: the bitmap string, or the list itself when a string is outside the registry. */
export function encodePermissions(list: readonly string[]): string | readonly string[] {
  const bits = Buffer.alloc(Math.ceil(index.length / 8));
  for (const permission of list) {
    const at = position.get(permission);
    if (at === undefined) return list;
    bits[at >> 3]! |= 1 << (at & 7);
  }
  return `${PREFIX}${bits.toString('base64url')}`;
}

/**
 * The strings a claim value names, in registry order; a plain array is read as it is. Anything
 * else (a bitmap of another registry, a malformed value) names nothing.
 */
export function decodePermissions(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((p): p is string => typeof p === 'string');
  if (typeof value !== 'string' || !value.startsWith(PREFIX)) return [];
  const bits = Buffer.from(value.slice(PREFIX.length), 'base64url');
  const out: string[] = [];
  for (let i = 0; i < index.length; i++) if ((bits[i >> 3] ?? 0) & (1 << (i & 7))) out.push(index[i]!);
  return out;
}
