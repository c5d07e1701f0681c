/**
 * Part 1's permission tables copied as written (not imported from src/auth/registry.ts), so tests
 * check the registry and the seeded roles against the specification itself.
 */
/** Part 1 "Account permissions by category", in table order (the registry order). */
export const SPEC_CATEGORIES: [string, string[]][] = [
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
  ['apikeys', ['read', 'create', 'edit', 'delete']],
  ['account', ['read', 'edit', 'delete']],
  ['plan', ['read', 'edit']],
  ['login-assignments', ['read', 'create', 'delete']],
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
];
export const SPEC_ACCOUNT_PERMISSIONS = SPEC_CATEGORIES.flatMap(([category, actions]) => actions.map((a) => `${category}:${a}`));

/** "administrator: everything except account:delete, plan:read, plan:edit, extension-dev:payouts". */
export const SPEC_ADMINISTRATOR_EXCLUDED = ['account:delete', 'plan:read', 'plan:edit', 'extension-dev:payouts'];
export const SPEC_ADMINISTRATOR = SPEC_ACCOUNT_PERMISSIONS.filter((p) => !SPEC_ADMINISTRATOR_EXCLUDED.includes(p));

/** The moderator row of "Default account roles", as written. */
export const SPEC_MODERATOR = [
  'events:read', 'events:create', 'events:userinfo',
  'overlays:read',
  'music_platform:read', 'music_platform:playback', 'music_platform:queue', 'music_platform:playlist', 'music_platform:device',
  'chat:read', 'chat:write', 'chat:userinfo', 'chat:delete', 'chat:ban', 'chat:timeout', 'chat:notes', 'chat:raid', 'chat:refresh_user', 'chat:poll', 'chat:prediction',
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
];

/** The viewer row of "Default account roles", as written. */
export const SPEC_VIEWER = [
  'events:read', 'events:userinfo',
  'overlays:read',
  'bot-commands:read',
  'extension-store:read', 'extension-store:review',
  'extension-data:read',
  'widgets:read',
  'sounds:read',
];
