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
 * The release before this one encodes each claim as a bitmap string (`p1.<fingerprint>.<bits>` over
 * its registry index) and reads an array literally, so a wildcard names nothing there. So that
 * nodes of the two releases serve side by side (a token minted on one is worth the same on the
 * other), this release reads `p1` bitmaps over that release's frozen index and, while
 * `PREVIOUS_RELEASE_READS_ARRAYS` is false, mints them too (`encodeClaims`), with what the bitmap
 * cannot hold in a claim the previous release ignores.
 */
import { createHash } from 'node:crypto';
import { accountPermissions, adminPermissions, userPermissions } from './registry';

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

// ------------------------------------------------------------------ the previous release's encoding

/**
 * The `p1` encoding, as the release before this one mints and reads it: bit i of the base64url
 * bitmap is the i-th string of that release's registry index (account, user, admin, then team
 * strings), and the fingerprint names the index. The index is frozen here as that release had it
 * (fingerprint `QbWmM2Pg`): this registry has grown since, and a bitmap over it would decode to
 * nothing there.
 */
const P1_INDEX: readonly string[] = Object.freeze([
  'events:read', 'events:create', 'events:userinfo', 'overlays:read', 'overlays:create', 'overlays:edit',
  'overlays:delete', 'overlays:access-read', 'overlays:access-grant', 'overlays:access-revoke', 'widgets:read',
  'widgets:create', 'widgets:edit', 'widgets:delete', 'widgets:access-read', 'widgets:access-grant',
  'widgets:access-revoke', 'extension-data:read', 'extension-data:edit', 'music_platform:read',
  'music_platform:playback', 'music_platform:volume', 'music_platform:queue', 'music_platform:playlist',
  'music_platform:device', 'music_platform:worker', 'chat:read', 'chat:write', 'chat:userinfo', 'chat:delete',
  'chat:ban', 'chat:timeout', 'chat:notes', 'chat:raid', 'chat:poll', 'chat:prediction', 'chat:refresh_user',
  'connections:read', 'connections:create', 'connections:edit', 'connections:delete', 'settings:read', 'settings:edit',
  'automations:read', 'automations:create', 'automations:edit', 'automations:delete', 'automations:execute',
  'members:read', 'members:create', 'members:edit', 'members:delete', 'uploads:read', 'uploads:create',
  'uploads:delete', 'rewards:read', 'rewards:create', 'rewards:edit', 'rewards:delete', 'tokens:read', 'tokens:create',
  'tokens:edit', 'tokens:delete', 'apikeys:read', 'apikeys:create', 'apikeys:edit', 'apikeys:delete', 'account:read',
  'account:edit', 'account:delete', 'plan:read', 'plan:edit', 'login-assignments:read', 'login-assignments:create',
  'login-assignments:delete', 'extension-dev:read', 'extension-dev:create', 'extension-dev:edit',
  'extension-dev:delete', 'extension-dev:publish', 'extension-dev:analytics', 'extension-dev:payouts', 'sounds:read',
  'sounds:create', 'sounds:edit', 'sounds:delete', 'sounds:play', 'bot-modules:read', 'bot-modules:edit',
  'copyright:read', 'copyright:edit', 'copyright:delete', 'copyright:vote', 'copyright:report', 'copyright:recommend',
  'obs:read', 'obs:edit', 'obs:delete', 'roles:read', 'roles:edit', 'roles:delete', 'bot-commands:read',
  'bot-commands:create', 'bot-commands:edit', 'bot-commands:delete', 'bot-connections:read', 'bot-connections:create',
  'bot-connections:delete', 'se-tokens:read', 'se-tokens:create', 'se-tokens:delete', 'extension-store:read',
  'extension-store:install', 'extension-store:uninstall', 'extension-store:configure', 'extension-store:review',
  'history:read', 'history:share', 'history:export', 'history:delete', 'presets:share', 'public-stats:read',
  'public-stats:edit', 'audit-log:read', 'ideas:read', 'ideas:create', 'ideas:edit', 'ideas:delete', 'ideas:vote',
  'ideas:comment_read', 'ideas:comment_create', 'ideas:comment_edit', 'ideas:comment_delete', 'ideas:comment_vote',
  'admin:access', 'admin-roles:read', 'admin-roles:create', 'admin-roles:edit', 'admin-roles:delete',
  'admin:privacy-erase', 'developer-verifications:read', 'developer-verifications:edit', 'features:read',
  'features:edit', 'feature-flags:read', 'feature-flags:edit', 'users:read', 'users:edit', 'users:delete',
  'accounts:read', 'accounts:edit', 'accounts:delete', 'accounts:overrides-read', 'accounts:overrides-edit',
  'providers:read', 'providers:edit', 'platforms:read', 'platforms:edit', 'system-keys:read', 'system-keys:create',
  'system-keys:delete', 'oauth-clients:read', 'oauth-clients:create', 'oauth-clients:edit', 'oauth-clients:delete',
  'system-connections:read', 'system-connections:edit', 'system-connections:delete', 'account-apikeys:read',
  'account-apikeys:edit', 'account-apikeys:rotate', 'account-apikeys:delete', 'billing:read', 'billing:edit',
  'plans:read', 'plans:create', 'plans:edit', 'plans:delete', 'subscriptions:read', 'subscriptions:edit',
  'coupons:read', 'coupons:create', 'coupons:edit', 'coupons:delete', 'bot-control:read', 'bot-control:edit',
  'discord-guilds:read', 'discord-guilds:delete', 'support:read', 'support:edit', 'audit:read', 'audit:ingest',
  'csp-reports:read', 'extension-review:read', 'extension-review:edit', 'developer-limits:read',
  'developer-limits:edit', 'ideas:moderate_read', 'ideas:moderate_status', 'ideas:moderate_edit',
  'ideas:moderate_delete', 'ideas:moderate_comment', 'copyright:moderate', 'user-roles:read', 'user-roles:create',
  'user-roles:edit', 'user-roles:delete', 'crawler:scope-read', 'crawler:scope-edit', 'crawler:watchlist-read',
  'crawler:watchlist-create', 'crawler:watchlist-delete', 'workers:read', 'mail:read', 'team-extensions:create',
  'team-extensions:edit', 'team-extensions:delete', 'team-extensions:publish', 'team-extensions:analytics',
  'team-versions:create', 'team-versions:edit', 'team-secrets:read', 'team-secrets:edit', 'team-testers:read',
  'team-testers:invite', 'team-testers:remove', 'team-members:read', 'team-members:invite', 'team-members:edit',
  'team-members:remove', 'team-settings:read', 'team-settings:edit', 'team-payouts:read', 'team-payouts:edit',
]);
const P1_POSITION: ReadonlyMap<string, number> = new Map(P1_INDEX.map((p, i) => [p, i]));
export const P1_PREFIX = `p1.${createHash('sha256').update(P1_INDEX.join('\n')).digest('base64url').slice(0, 8)}.`;

/**
 * Whether the previous release reads the readable arrays (`*:*`, `family:*`). The release that
 * introduced them is the first that does; until the previous release is that one, tokens carry
 * the `p1` form it reads (see `encodeClaims`). Set true once the previous release is this one or later.
 */
export const PREVIOUS_RELEASE_READS_ARRAYS = false;

/**
 * Claim that carries, in the `p1` form, what a permission claim holds beyond the `p1` index
 * (strings registered since): `{ admin_permissions: ['mail:edit'] }`. The previous release ignores it.
 */
export const BEYOND_P1_CLAIM = 'permissions_beyond_p1';

/** Every permission claim of a token, as the previous release reads them (plus the claim it ignores). */
export function encodeClaims(claims: Partial<Record<PermissionClaim, readonly string[]>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const beyond: Partial<Record<PermissionClaim, string[]>> = {};
  for (const name of PERMISSION_CLAIMS) {
    const list = claims[name];
    if (list === undefined) continue;
    if (PREVIOUS_RELEASE_READS_ARRAYS) {
      out[name] = encodePermissions(name, list);
      continue;
    }
    const bits = Buffer.alloc(Math.ceil(P1_INDEX.length / 8));
    const rest: string[] = [];
    for (const permission of new Set(list)) {
      const at = P1_POSITION.get(permission);
      if (at === undefined) rest.push(permission);
      else bits[at >> 3]! |= 1 << (at & 7);
    }
    out[name] = `${P1_PREFIX}${bits.toString('base64url')}`;
    if (rest.length > 0) beyond[name] = rest;
  }
  if (Object.keys(beyond).length > 0) out[BEYOND_P1_CLAIM] = beyond;
  return out;
}

/**
 * The strings of claim `name` of a token's payload: its value (readable array or `p1` bitmap)
 * plus what `permissions_beyond_p1` adds to it.
 */
export function decodeClaim(name: PermissionClaim, payload: Record<string, unknown>): string[] {
  const base = decodePermissions(name, payload[name]);
  const beyond = (payload[BEYOND_P1_CLAIM] as Record<string, unknown> | undefined)?.[name];
  if (!Array.isArray(beyond)) return base;
  return [...new Set([...base, ...beyond.filter((p): p is string => typeof p === 'string')])];
}

function decodeBitmap(value: string): string[] {
  if (!value.startsWith(P1_PREFIX)) return [];
  const bits = Buffer.from(value.slice(P1_PREFIX.length), 'base64url');
  const out: string[] = [];
  for (let i = 0; i < P1_INDEX.length; i++) if ((bits[i >> 3] ?? 0) & (1 << (i & 7))) out.push(P1_INDEX[i]!);
  return out;
}
