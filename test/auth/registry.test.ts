import { openapiDocument } from '../../generated/openapi-document';
import {
  ACCOUNT_PERMISSION_COUNT,
  SUPER_ADMIN_ROLE,
  accountPermissionCategories,
  accountPermissions,
  adminPermissionCatalogue,
  adminPermissions,
  apiKeyDenyList,
  defaultAccountRoles,
  defaultTeamRoles,
  defaultUserRoles,
  firstInvalidAccountPermission,
  isAccountPermission,
  isAdminPermission,
  isTeamPermission,
  isUserPermission,
  sharedPermissions,
  sortByRegistry,
  superAdminPermissions,
  teamPermissions,
  userPermissions,
} from '../../src/auth/registry';
import { SPEC_CATEGORIES, SPEC_MODERATOR, SPEC_VIEWER } from '../helpers/spec-permissions';

/** What the spec says a permission name is: `resource:action`, either part `*`, an action may end in `*`. */
const PERMISSION_NAME = '^(\\*|[a-z][a-z0-9_-]*):(\\*|[a-z][a-z0-9_-]*\\*?)$';

const role = <T extends { name: string }>(roles: readonly T[], name: string): T => {
  const found = roles.find((r) => r.name === name);
  if (!found) throw new Error(`no role ${name}`);
  return found;
};
const sorted = (list: readonly string[]): string[] => [...list].sort();

describe('account permissions (Part 1 "Account permissions by category")', () => {
  test('124 strings, no duplicates, matching the exported count', () => {
    expect(accountPermissions).toHaveLength(124);
    expect(ACCOUNT_PERMISSION_COUNT).toBe(124);
    expect(new Set(accountPermissions).size).toBe(accountPermissions.length);
  });

  test('each category holds exactly the actions of the table, in table order', () => {
    expect(accountPermissionCategories.map((c) => [c.category, [...c.actions]])).toEqual(SPEC_CATEGORIES);
  });

  test('the flat list is category:action in table order', () => {
    expect(accountPermissions.slice(0, 4)).toEqual(['events:read', 'events:create', 'events:userinfo', 'overlays:read']);
    expect(accountPermissions[accountPermissions.length - 1]).toBe('audit-log:read');
    expect(accountPermissions).toEqual(accountPermissionCategories.flatMap((c) => c.actions.map((a) => `${c.category}:${a}`)));
  });

  test('the API key deny-list is made of account permissions', () => {
    expect([...apiKeyDenyList]).toEqual(['apikeys:create', 'apikeys:edit', 'tokens:create', 'account:delete']);
    for (const p of apiKeyDenyList) expect(isAccountPermission(p)).toBe(true);
  });
});

describe('default account roles', () => {
  test('seeded in order owner, administrator, moderator, viewer; only owner is a system role', () => {
    expect(defaultAccountRoles.map((r) => [r.name, r.isSystem])).toEqual([
      ['owner', true],
      ['administrator', false],
      ['moderator', false],
      ['viewer', false],
    ]);
  });

  test('owner holds every account permission', () => {
    expect([...role(defaultAccountRoles, 'owner').permissions]).toEqual([...accountPermissions]);
  });

  test('administrator holds everything but account:delete, plan:read, plan:edit, extension-dev:payouts', () => {
    const excluded = ['account:delete', 'plan:read', 'plan:edit', 'extension-dev:payouts'];
    expect([...role(defaultAccountRoles, 'administrator').permissions]).toEqual(
      accountPermissions.filter((p) => !excluded.includes(p)),
    );
    expect(role(defaultAccountRoles, 'administrator').permissions).toHaveLength(120);
  });

  test('moderator holds exactly the table set', () => {
    const expected = SPEC_MODERATOR;
    const moderator = role(defaultAccountRoles, 'moderator').permissions;
    expect(expected).toHaveLength(44);
    expect(sorted(moderator)).toEqual(sorted(expected));
    expect(moderator).toHaveLength(44);
  });

  test('viewer holds exactly the table set', () => {
    const expected = SPEC_VIEWER;
    expect(sorted(role(defaultAccountRoles, 'viewer').permissions)).toEqual(sorted(expected));
  });

  test('every role keeps registry order', () => {
    for (const r of defaultAccountRoles) expect([...r.permissions]).toEqual(sortByRegistry(r.permissions));
  });
});

describe('user scope', () => {
  test('the ten ideas:* permissions in spec order', () => {
    expect([...userPermissions]).toEqual([
      'ideas:read', 'ideas:create', 'ideas:edit', 'ideas:delete', 'ideas:vote',
      'ideas:comment_read', 'ideas:comment_create', 'ideas:comment_edit', 'ideas:comment_delete', 'ideas:comment_vote',
    ]);
  });

  test('default user roles: Member, Restricted, Moderator', () => {
    expect(defaultUserRoles.map((r) => r.name)).toEqual(['Member', 'Restricted', 'Moderator']);
    const member = role(defaultUserRoles, 'Member');
    expect([...member.permissions]).toEqual([...userPermissions]);
    expect(member.adminPermissions).toEqual([]);
    expect(member.assignedToEveryUser).toBe(true);

    const restricted = role(defaultUserRoles, 'Restricted');
    expect([...restricted.permissions]).toEqual(['ideas:read', 'ideas:comment_read']);
    expect(restricted.adminPermissions).toEqual([]);
    expect(restricted.assignedToEveryUser).toBe(false);

    const moderator = role(defaultUserRoles, 'Moderator');
    expect([...moderator.permissions]).toEqual([...userPermissions]);
    expect(sorted(moderator.adminPermissions)).toEqual(
      sorted(['ideas:moderate_read', 'ideas:moderate_status', 'ideas:moderate_edit', 'ideas:moderate_delete', 'ideas:moderate_comment']),
    );
    expect(moderator.assignedToEveryUser).toBe(false);
    for (const p of moderator.adminPermissions) expect(isAdminPermission(p)).toBe(true);
  });
});

describe('admin scope', () => {
  test('admin:access comes first; no duplicates; catalogue and list agree', () => {
    expect(adminPermissions[0]).toBe('admin:access');
    expect(new Set(adminPermissions).size).toBe(adminPermissions.length);
    expect([...adminPermissions]).toEqual(adminPermissionCatalogue.map((e) => e.permission));
  });

  test('categories are the resource before the colon', () => {
    const category = (p: string): string | undefined => adminPermissionCatalogue.find((e) => e.permission === p)?.category;
    expect(category('admin:access')).toBe('admin');
    expect(category('admin:privacy-erase')).toBe('admin');
    expect(category('ideas:moderate_status')).toBe('ideas');
    expect(category('accounts:overrides-edit')).toBe('accounts');
    expect(category('crawler:watchlist-create')).toBe('crawler');
    expect(category('audit-log:read')).toBe('audit-log');
  });

  test('admin ideas:edit and ideas:delete (Part 2 ideas board) straddle user and admin scope, and only they do', () => {
    for (const p of ['ideas:edit', 'ideas:delete']) {
      expect(isUserPermission(p)).toBe(true);
      expect(isAdminPermission(p)).toBe(true);
      expect(superAdminPermissions).toContain(p);
      expect(adminPermissionCatalogue).toContainEqual({ permission: p, category: 'ideas' });
    }
    expect(sorted(userPermissions.filter(isAdminPermission))).toEqual(['ideas:delete', 'ideas:edit']);
    // The Moderator user role keeps exactly the moderation grants Part 1 gives it.
    expect(role(defaultUserRoles, 'Moderator').adminPermissions).not.toContain('ideas:edit');
  });

  test('registers the plural developer-verifications prefix the REST gates use', () => {
    expect(isAdminPermission('developer-verifications:read')).toBe(true);
    expect(isAdminPermission('developer-verifications:edit')).toBe(true);
    expect(isAdminPermission('developer-verification:read')).toBe(false);
  });

  test('audit:read and audit:ingest are admin permissions; super-admin holds all but audit:ingest', () => {
    expect(isAdminPermission('audit:read')).toBe(true);
    expect(isAdminPermission('audit:ingest')).toBe(true);
    expect(SUPER_ADMIN_ROLE).toBe('super-admin');
    expect(superAdminPermissions).not.toContain('audit:ingest');
    expect(superAdminPermissions).toContain('admin:access');
    expect([...superAdminPermissions]).toEqual(adminPermissions.filter((p) => p !== 'audit:ingest'));
  });

  test('every shared string is declared in both account and admin scope', () => {
    expect(sorted(sharedPermissions)).toEqual(
      sorted([
        'copyright:read', 'copyright:edit', 'copyright:delete',
        'obs:read', 'obs:edit',
        'bot-modules:read', 'bot-modules:edit',
        'bot-commands:read', 'bot-commands:create', 'bot-commands:edit', 'bot-commands:delete',
        'bot-connections:read', 'bot-connections:create', 'bot-connections:delete',
        'se-tokens:read', 'se-tokens:delete',
        'audit-log:read',
      ]),
    );
    for (const p of sharedPermissions) {
      expect(isAccountPermission(p)).toBe(true);
      expect(isAdminPermission(p)).toBe(true);
    }
    // And nothing else straddles the two scopes.
    expect(sorted(accountPermissions.filter(isAdminPermission))).toEqual(sorted(sharedPermissions));
  });
});

describe('team scope', () => {
  test('20 team permissions and the three default team roles', () => {
    expect(teamPermissions).toHaveLength(20);
    expect(new Set(teamPermissions).size).toBe(20);
    expect(defaultTeamRoles.map((r) => [r.name, r.isSystem, r.permissions.length])).toEqual([
      ['team-owner', true, 20],
      ['team-admin', false, 17],
      ['team-member', false, 7],
    ]);
    expect([...role(defaultTeamRoles, 'team-owner').permissions]).toEqual([...teamPermissions]);
    expect(sorted(role(defaultTeamRoles, 'team-admin').permissions)).toEqual(
      sorted(teamPermissions.filter((p) => !['team-settings:edit', 'team-payouts:edit', 'team-members:remove'].includes(p))),
    );
    expect(sorted(role(defaultTeamRoles, 'team-member').permissions)).toEqual(
      sorted([
        'team-extensions:create', 'team-extensions:edit', 'team-extensions:analytics',
        'team-versions:create', 'team-members:read', 'team-secrets:read', 'team-settings:read',
      ]),
    );
  });
});

describe('predicates', () => {
  test.each(['events:*', '*:*', '*', 'ideas:*', 'team-extensions:*', 'admin-roles:*', ''])('%j is never a member', (p) => {
    expect(isAccountPermission(p)).toBe(false);
    expect(isUserPermission(p)).toBe(false);
    expect(isAdminPermission(p)).toBe(false);
    expect(isTeamPermission(p)).toBe(false);
  });

  test('scopes are disjoint except for the shared strings', () => {
    expect(isAccountPermission('events:read')).toBe(true);
    expect(isUserPermission('events:read')).toBe(false);
    expect(isUserPermission('ideas:vote')).toBe(true);
    expect(isAccountPermission('ideas:vote')).toBe(false);
    expect(isTeamPermission('team-payouts:edit')).toBe(true);
    expect(isAccountPermission('team-payouts:edit')).toBe(false);
    expect(isAdminPermission('events:read')).toBe(false);
  });

  test('firstInvalidAccountPermission returns the first bad entry, or null', () => {
    expect(firstInvalidAccountPermission([])).toBeNull();
    expect(firstInvalidAccountPermission(['events:read', 'chat:ban'])).toBeNull();
    expect(firstInvalidAccountPermission(['events:read', 'events:*', 'nope:nope'])).toBe('events:*');
    expect(firstInvalidAccountPermission(['chat:read', 'ideas:read', '*'])).toBe('ideas:read');
    expect(firstInvalidAccountPermission(['admin:access'])).toBe('admin:access');
  });

  test('sortByRegistry: registry order, unknown strings last alphabetically, input untouched', () => {
    const input = ['zzz:unknown', 'audit-log:read', 'ideas:read', 'events:create', '*', 'admin:access', 'events:read'];
    const copy = [...input];
    expect(sortByRegistry(input)).toEqual(['events:read', 'events:create', 'audit-log:read', 'ideas:read', 'admin:access', '*', 'zzz:unknown']);
    expect(input).toEqual(copy);
  });
});

describe('immutability', () => {
  test('exported data cannot be mutated by a consumer', () => {
    expect(Object.isFrozen(accountPermissions)).toBe(true);
    expect(Object.isFrozen(defaultAccountRoles[0])).toBe(true);
    expect(() => (accountPermissions as string[]).push('x:y')).toThrow();
  });
});

describe('the spec declares what a permission name is', () => {
  /** Every `permissions` list of a request body in the OpenAPI document, by operation. */
  const requestLists = (): [string, { pattern?: string; 'x-error-message'?: unknown }][] => {
    const out: [string, { pattern?: string }][] = [];
    const visit = (where: string, node: unknown) => {
      const schema = node as { properties?: Record<string, { type?: string; items?: { pattern?: string } }>; $ref?: string } | undefined;
      const resolved = schema?.$ref ? (openapiDocument.components.schemas as Record<string, unknown>)[schema.$ref.split('/').pop()!] : schema;
      const list = (resolved as typeof schema)?.properties?.permissions;
      if (list?.type === 'array' && list.items) out.push([where, list.items]);
    };
    for (const [path, operations] of Object.entries(openapiDocument.paths)) {
      for (const [method, operation] of Object.entries(operations as Record<string, { requestBody?: { content?: Record<string, { schema?: unknown }> } }>)) {
        visit(`${method.toUpperCase()} ${path}`, operation.requestBody?.content?.['application/json']?.schema);
      }
    }
    return out;
  };

  test('every permissions list a request sends declares the name pattern, worded as the registry refuses a name', () => {
    const lists = requestLists();
    expect(lists.length).toBeGreaterThanOrEqual(10);
    for (const [where, items] of lists) expect([where, items.pattern, items['x-error-message']]).toEqual([where, PERMISSION_NAME, { pattern: 'Invalid permission: {value}' }]);
  });

  test('every name of every registry matches that pattern', () => {
    const names = [...accountPermissions, ...userPermissions, ...adminPermissions, ...teamPermissions, ...sharedPermissions, ...superAdminPermissions, '*:*', 'events:*'];
    expect(names.filter((name) => !new RegExp(PERMISSION_NAME, 'u').test(name))).toEqual([]);
  });
});
