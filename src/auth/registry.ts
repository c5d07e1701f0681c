/**
 * The permission registry: the one place permission strings are declared (account, user, admin and
 * team scope), with the default roles seeded from them and the literal membership tests over them.
 * Source: Part 1 "### Authorization" and "### Key rules". Plain data and tiny functions; must not
 * import anything from src/ besides types, so every layer (roles, keys, gates, seeds) can use it.
 */

export interface AccountPermissionCategory {
  readonly category: string;
  readonly actions: readonly string[];
}

export interface AdminPermissionInfo {
  readonly permission: string;
  readonly category: string;
}

export type AccountRoleName = 'owner' | 'administrator' | 'moderator' | 'viewer';
export type UserRoleName = 'Member' | 'Restricted' | 'Moderator';
export type TeamRoleName = 'team-owner' | 'team-admin' | 'team-member';

export interface DefaultAccountRole {
  readonly name: AccountRoleName;
  readonly isSystem: boolean;
  readonly permissions: readonly string[];
}

export interface DefaultUserRole {
  readonly name: UserRoleName;
  /** User-scope grants. */
  readonly permissions: readonly string[];
  /** Admin-scope grants that come with the user role (only Moderator's `ideas:moderate_*`). */
  readonly adminPermissions: readonly string[];
  readonly assignedToEveryUser: boolean;
}

export interface DefaultTeamRole {
  readonly name: TeamRoleName;
  readonly isSystem: boolean;
  readonly permissions: readonly string[];
}

const freeze = <T>(items: T[]): readonly T[] => Object.freeze(items);
const freezeAll = <T extends object>(items: T[]): readonly T[] => freeze(items.map((item) => Object.freeze(item)));

/** Keeps `universe` order; throws on a string outside it so a typo here fails at load, not silently. */
function pick(universe: readonly string[], wanted: readonly string[]): readonly string[] {
  const set = new Set(universe);
  const unknown = wanted.find((p) => !set.has(p));
  if (unknown !== undefined) throw new Error(`registry: ${unknown} is not a declared permission`);
  const keep = new Set(wanted);
  return freeze(universe.filter((p) => keep.has(p)));
}

// ---------------------------------------------------------------------------------------------
// Account scope
// ---------------------------------------------------------------------------------------------

/** The "Account permissions by category" table, in table order (which is registry order). */
export const accountPermissionCategories: readonly AccountPermissionCategory[] = freeze(
  (
    [
      ['events', ['read', 'create', 'userinfo']],
      ['overlays', ['read', 'create', 'edit', 'delete', 'access-read', 'access-grant', 'access-revoke']],
      ['widgets', ['read', 'create', 'edit', 'delete', 'access-read', 'access-grant', 'access-revoke']],
      ['extension-data', ['read', 'edit']],
      ['music_platform', ['read', 'playback', 'volume', 'queue', 'playlist', 'device', 'worker']],
      ['chat', ['read', 'write', 'userinfo', 'delete', 'ban', 'timeout', 'notes', 'raid', 'poll', 'prediction', 'refresh_user']],
      ['connections', ['read', 'create', 'edit', 'delete']],
      ['settings', ['read', 'edit']],
      ['automations', ['read', 'create', 'edit', 'delete', 'execute']],
      ['members', ['read', 'create', 'edit', 'delete']],
      ['uploads', ['read', 'create', 'delete']],
      ['rewards', ['read', 'create', 'edit', 'delete']],
      ['tokens', ['read', 'create', 'edit', 'delete']],
      ['apikeys', ['read', 'create', 'edit', 'delete']], // edit = rename and rotate
      ['account', ['read', 'edit', 'delete']],
      ['plan', ['read', 'edit']],
      ['login-assignments', ['read', 'create', 'delete']], // only for acting on behalf of other users
      ['extension-dev', ['read', 'create', 'edit', 'delete', 'publish', 'analytics', 'payouts']],
      ['sounds', ['read', 'create', 'edit', 'delete', 'play']],
      ['bot-modules', ['read', 'edit']],
      ['copyright', ['read', 'edit', 'delete', 'vote', 'report', 'recommend']],
      ['obs', ['read', 'edit', 'delete']],
      ['roles', ['read', 'edit', 'delete']],
      ['bot-commands', ['read', 'create', 'edit', 'delete']],
      ['bot-connections', ['read', 'create', 'delete']],
      ['se-tokens', ['read', 'create', 'delete']],
      ['extension-store', ['read', 'install', 'uninstall', 'configure', 'review']],
      ['history', ['read', 'share', 'export', 'delete']],
      ['presets', ['share']],
      ['public-stats', ['read', 'edit']],
      ['audit-log', ['read']],
    ] as const
  ).map(([category, actions]) => Object.freeze({ category, actions: freeze<string>([...actions]) })),
);

/**
 * Every account permission as `category:action`, in table order: 124 strings. Part 1 says "123
 * account permissions" (Key rules 5, Limits) but its own table lists 124, and every one of them is
 * referenced elsewhere in the spec (`audit-log:read` gates GET /v1/account/audit-log in Part 2;
 * `presets:share` and `public-stats:read` are in the moderator role; `plan:*`, `account:delete`
 * and `extension-dev:payouts` are named by the administrator role; `tokens:create` and `apikeys:*`
 * by the API key deny-list). Dropping any one would break a route or a role, so the table wins.
 */
export const accountPermissions: readonly string[] = freeze(
  accountPermissionCategories.flatMap(({ category, actions }) => actions.map((a) => `${category}:${a}`)),
);

/** See `accountPermissions` for why this is not the 123 the spec's prose says. */
export const ACCOUNT_PERMISSION_COUNT = 124;

/** Never assignable to any API key kind, whatever its creator holds (Key rules 5). */
export const apiKeyDenyList: readonly string[] = freeze([
  'apikeys:create',
  'apikeys:edit',
  'tokens:create',
  'account:delete',
]);

/** Everything but ownership-only operations; dissolution and plan changes also check ownership. */
const administratorExcluded = new Set(['account:delete', 'plan:read', 'plan:edit', 'extension-dev:payouts']);

/** Seeded for every new account, in this order. Permissions are in registry order. */
export const defaultAccountRoles: readonly DefaultAccountRole[] = freezeAll<DefaultAccountRole>([
  { name: 'owner', isSystem: true, permissions: accountPermissions },
  {
    name: 'administrator',
    isSystem: false,
    permissions: freeze(accountPermissions.filter((p) => !administratorExcluded.has(p))),
  },
  {
    name: 'moderator',
    isSystem: false,
    permissions: pick(accountPermissions, [
      'events:read', 'events:create', 'events:userinfo',
      'overlays:read',
      'music_platform:read', 'music_platform:playback', 'music_platform:queue', 'music_platform:playlist', 'music_platform:device',
      'chat:read', 'chat:write', 'chat:userinfo', 'chat:delete', 'chat:ban', 'chat:timeout', 'chat:notes', 'chat:raid',
      'chat:refresh_user', 'chat:poll', 'chat:prediction',
      'connections:read',
      'uploads:read',
      'rewards:read',
      'automations:read', 'automations:execute',
      'members:read',
      'roles:read',
      'obs:read',
      'copyright:vote', 'copyright:report', 'copyright:recommend',
      'bot-modules:read',
      'bot-connections:read',
      'bot-commands:read',
      'extension-store:read', 'extension-store:review',
      'extension-data:read',
      'widgets:read',
      'sounds:read', 'sounds:play',
      'history:read', 'history:export',
      'presets:share',
      'public-stats:read',
    ]),
  },
  {
    name: 'viewer',
    isSystem: false,
    permissions: pick(accountPermissions, [
      'events:read', 'events:userinfo',
      'overlays:read',
      'bot-commands:read',
      'extension-store:read', 'extension-store:review',
      'extension-data:read',
      'widgets:read',
      'sounds:read',
    ]),
  },
]);

// ---------------------------------------------------------------------------------------------
// User scope
// ---------------------------------------------------------------------------------------------

/** Cross-account permissions held through user roles, never account roles. */
export const userPermissions: readonly string[] = freeze([
  'ideas:read',
  'ideas:create',
  'ideas:edit', // own
  'ideas:delete', // own
  'ideas:vote',
  'ideas:comment_read',
  'ideas:comment_create',
  'ideas:comment_edit', // own
  'ideas:comment_delete', // own
  'ideas:comment_vote',
]);

const ideasModeration = freeze([
  'ideas:moderate_read',
  'ideas:moderate_status',
  'ideas:moderate_edit',
  'ideas:moderate_delete',
  'ideas:moderate_comment',
]);

export const defaultUserRoles: readonly DefaultUserRole[] = freezeAll<DefaultUserRole>([
  { name: 'Member', permissions: userPermissions, adminPermissions: freeze([]), assignedToEveryUser: true },
  {
    name: 'Restricted',
    permissions: pick(userPermissions, ['ideas:read', 'ideas:comment_read']),
    adminPermissions: freeze([]),
    assignedToEveryUser: false,
  },
  { name: 'Moderator', permissions: userPermissions, adminPermissions: ideasModeration, assignedToEveryUser: false },
]);

// ---------------------------------------------------------------------------------------------
// Admin scope
// ---------------------------------------------------------------------------------------------

/**
 * Declared in both account and admin scope. They are checked independently: holding the account
 * grant never satisfies the admin check, nor the reverse.
 */
export const sharedPermissions: readonly string[] = freeze([
  'copyright:read', 'copyright:edit', 'copyright:delete',
  'obs:read', 'obs:edit',
  'bot-modules:read', 'bot-modules:edit',
  'bot-commands:read', 'bot-commands:create', 'bot-commands:edit', 'bot-commands:delete',
  'bot-connections:read', 'bot-connections:create', 'bot-connections:delete',
  'se-tokens:read', 'se-tokens:delete',
  'audit-log:read',
]);

/**
 * Admin `ideas:edit` / `ideas:delete`: Part 2's ideas table gates category writes and category and
 * tag deletion on "admin `ideas:edit`" and "admin `ideas:delete`". The same strings are user-scope
 * grants (own ideas, held by every Member); like the account/admin shared strings, the two scopes
 * are checked independently, so a user's own-idea grant never opens the board's admin writes.
 * They are not in the Moderator user role (Part 1 gives it only `ideas:moderate_*`).
 */
export const ideasBoardAdmin: readonly string[] = freeze(['ideas:edit', 'ideas:delete']);

/**
 * Part 1's list writes `developer-verification:read|edit` but the REST gates (Part 2, admin
 * developer-applications routes) use `developer-verifications:`; the singular is a typo in
 * Part 1's list, so only the plural is registered.
 */
const adminOnlyPermissions = [
  'admin-roles:read', 'admin-roles:create', 'admin-roles:edit', 'admin-roles:delete',
  'admin:privacy-erase',
  'developer-verifications:read', 'developer-verifications:edit',
  'features:read', 'features:edit',
  'feature-flags:read', 'feature-flags:edit',
  'users:read', 'users:edit', 'users:delete',
  'accounts:read', 'accounts:edit', 'accounts:delete', 'accounts:overrides-read', 'accounts:overrides-edit',
  'providers:read', 'providers:edit',
  'platforms:read', 'platforms:edit',
  'system-keys:read', 'system-keys:create', 'system-keys:delete',
  'oauth-clients:read', 'oauth-clients:create', 'oauth-clients:edit', 'oauth-clients:delete',
  'system-connections:read', 'system-connections:edit', 'system-connections:delete',
  'account-apikeys:read', 'account-apikeys:edit', 'account-apikeys:rotate', 'account-apikeys:delete',
  'billing:read', 'billing:edit',
  'plans:read', 'plans:create', 'plans:edit', 'plans:delete',
  'subscriptions:read', 'subscriptions:edit',
  'coupons:read', 'coupons:create', 'coupons:edit', 'coupons:delete',
  'bot-control:read', 'bot-control:edit',
  'discord-guilds:read', 'discord-guilds:delete',
  'support:read', 'support:edit',
  'audit:read', 'audit:ingest',
  'csp-reports:read',
  'extension-review:read', 'extension-review:edit',
  'developer-limits:read', 'developer-limits:edit',
  ...ideasBoardAdmin,
  ...ideasModeration,
  'copyright:moderate',
  'user-roles:read', 'user-roles:create', 'user-roles:edit', 'user-roles:delete',
  'crawler:scope-read', 'crawler:scope-edit', 'crawler:watchlist-read', 'crawler:watchlist-create', 'crawler:watchlist-delete',
  // GET /v1/admin/workers (which node holds which platform ingest channel).
  'workers:read',
  // GET /v1/admin/mail/outbox (pending and failed mail with its last error).
  'mail:read',
  // POST /v1/admin/mail/outbox/{id}/retry: an operator queues a failed message again.
  'mail:edit',
];

/** The admin entry gate, auto-included in every admin role. */
const ADMIN_ACCESS = 'admin:access';

/**
 * Every admin-scope permission with its category, as served to the admin role editor. The
 * category is the resource before the colon (`admin:*` → admin, `ideas:moderate_*` → ideas).
 */
export const adminPermissionCatalogue: readonly AdminPermissionInfo[] = freeze(
  [ADMIN_ACCESS, ...adminOnlyPermissions, ...sharedPermissions].map((permission) =>
    Object.freeze({ permission, category: permission.slice(0, permission.indexOf(':')) }),
  ),
);

export const adminPermissions: readonly string[] = freeze(adminPermissionCatalogue.map((e) => e.permission));

export const SUPER_ADMIN_ROLE = 'super-admin';

/** Every admin permission except `audit:ingest`, which only system keys hold and no role is seeded with. */
export const superAdminPermissions: readonly string[] = freeze(adminPermissions.filter((p) => p !== 'audit:ingest'));

// ---------------------------------------------------------------------------------------------
// Team scope (developer teams)
// ---------------------------------------------------------------------------------------------

export const teamPermissions: readonly string[] = freeze([
  'team-extensions:create', 'team-extensions:edit', 'team-extensions:delete', 'team-extensions:publish', 'team-extensions:analytics',
  'team-versions:create', 'team-versions:edit',
  'team-secrets:read', 'team-secrets:edit',
  'team-testers:read', 'team-testers:invite', 'team-testers:remove',
  'team-members:read', 'team-members:invite', 'team-members:edit', 'team-members:remove',
  'team-settings:read', 'team-settings:edit',
  'team-payouts:read', 'team-payouts:edit',
]);

const teamAdminExcluded = new Set(['team-settings:edit', 'team-payouts:edit', 'team-members:remove']);

export const defaultTeamRoles: readonly DefaultTeamRole[] = freezeAll<DefaultTeamRole>([
  { name: 'team-owner', isSystem: true, permissions: teamPermissions },
  { name: 'team-admin', isSystem: false, permissions: freeze(teamPermissions.filter((p) => !teamAdminExcluded.has(p))) },
  {
    name: 'team-member',
    isSystem: false,
    permissions: pick(teamPermissions, [
      'team-extensions:create', 'team-extensions:edit', 'team-extensions:analytics',
      'team-versions:create',
      'team-members:read',
      'team-secrets:read',
      'team-settings:read',
    ]),
  },
]);

// ---------------------------------------------------------------------------------------------
// Predicates and ordering
// ---------------------------------------------------------------------------------------------

const accountSet: ReadonlySet<string> = new Set(accountPermissions);
const userSet: ReadonlySet<string> = new Set(userPermissions);
const adminSet: ReadonlySet<string> = new Set(adminPermissions);
const teamSet: ReadonlySet<string> = new Set(teamPermissions);

// Literal membership: wildcards (`events:*`, `*:*`, `*`) are grants, never registry entries.
export const isAccountPermission = (p: string): boolean => accountSet.has(p);
export const isUserPermission = (p: string): boolean => userSet.has(p);
export const isAdminPermission = (p: string): boolean => adminSet.has(p);
export const isTeamPermission = (p: string): boolean => teamSet.has(p);

/**
 * Account role create and update reject the first string that is not a literal account
 * permission (`Invalid permission: <perm>`); wildcards are rejected too, since roles are literal.
 */
export function firstInvalidAccountPermission(list: readonly string[]): string | null {
  return list.find((p) => !accountSet.has(p)) ?? null;
}

/** Registry position: account, then user, then admin-only, then team strings. */
const registryRank: ReadonlyMap<string, number> = new Map(
  [...new Set([...accountPermissions, ...userPermissions, ...adminPermissions, ...teamPermissions])].map((p, i) => [p, i]),
);

/**
 * A copy in registry order, so roles and keys read the same wherever they are shown; strings the
 * registry does not know (wildcards, stale grants) go last, alphabetically.
 */
export function sortByRegistry(list: readonly string[]): string[] {
  return [...list].sort((a, b) => {
    const ra = registryRank.get(a);
    const rb = registryRank.get(b);
    if (ra !== undefined && rb !== undefined) return ra - rb;
    if (ra !== undefined) return -1;
    if (rb !== undefined) return 1;
    return a < b ? -1 : a > b ? 1 : 0;
  });
}
