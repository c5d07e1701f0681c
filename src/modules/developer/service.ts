/**
 * The developer portal (Part 2, "Developer portal"; Part 1, "Key rules" 4), one part per
 * subdomain: applications and their review (applications.ts), verification and its review
 * (verification.ts), developer keys (`lm_dev_`, a kind of the apikeys module's one key lifecycle;
 * keys.ts), teams with their members and roles (teams.ts) and invite codes (invites.ts), plus the
 * look-ups later modules use (directory.ts). What they share (dependencies, input rules, the
 * cached team-scope access) is access.ts. Must not check declared gates (the bindings do).
 * Multi-row changes run in one transaction with their audit row and notification (in-app and
 * mail, through `notifications.notify`).
 */
import { createDeveloperAccess, type DeveloperDeps } from './access';
import { createApplications } from './applications';
import { createDirectory } from './directory';
import { createInvites } from './invites';
import { createDeveloperKeys } from './keys';
import { createTeams } from './teams';
import { createVerification } from './verification';

export { TEAM_PERMISSION_TTL_SECONDS, type DeveloperDeps } from './access';
export type * from './types';

export function createDeveloperService(deps: DeveloperDeps) {
  const access = createDeveloperAccess(deps);
  return {
    ...createDirectory(deps, access),
    ...createApplications(deps, access),
    ...createVerification(deps, access),
    ...createDeveloperKeys(deps, access),
    ...createTeams(deps, access),
    ...createInvites(deps, access),
  };
}

export type DeveloperService = ReturnType<typeof createDeveloperService>;
