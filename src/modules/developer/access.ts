/**
 * What every part of the developer module shares: its dependencies, the input rules, and the
 * access checks (the caller's developer profile, team-scope permissions cached per team and user
 * in the shared cache and dropped on every role or member change, the grantable-role rule), plus
 * the team rows an approved team application and a new team both create.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { requireUserId, type AuthContext } from '../../auth/context';
import { defaultTeamRoles } from '../../auth/registry';
import type { CredentialStore } from '../../auth/store';
import { AppError, messages } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { Cache } from '../../infra/cache';
import type { Logger } from '../../infra/logger';
import type { ModuleApis } from '../contract';
import { developerMessages as M } from './errors';
import type { DeveloperRepo, TeamAccess } from './repo';
import type { DeveloperProfile, Team, TeamRole } from './types';

export interface DeveloperDeps {
  knex: Knex;
  repo: DeveloperRepo;
  cache: Cache;
  bus: Bus;
  log: Logger;
  store: CredentialStore;
  audit: Pick<ModuleApis['audit'], 'record'>;
  notifications: Pick<ModuleApis['notifications'], 'notify'>;
  /** The one key lifecycle: developer keys are a kind of it. */
  apikeys: Pick<ModuleApis['apikeys'], 'keys'>;
  /** Team invites mailed to an address (`email` on the request); the outbox seals the body. */
  mail: Pick<ModuleApis['mail'], 'queue'>;
}

// ---------------------------------------------------------------------------------------------
// Input rules
// ---------------------------------------------------------------------------------------------

/** Trimmed text, or null when absent or blank. */
export const text = (value: string | null | undefined): string | null => {
  const trimmed = (value ?? '').trim();
  return trimmed === '' ? null : trimmed;
};

/** Part 2's slug rules, in the order the messages are listed. */
export function checkSlug(slug: string): string {
  if (slug.length < 3 || slug.length > 50) throw AppError.validation(M.slugLength);
  if (!/^[a-z]/.test(slug)) throw AppError.validation(M.slugStart);
  if (!/^[a-z0-9-]+$/.test(slug)) throw AppError.validation(M.slugCharacters);
  return slug;
}

export function required(value: string | null | undefined, field: string, message = M.fieldRequired(field)): string {
  const v = text(value);
  if (v === null) throw AppError.validation(message);
  return v;
}

export function reviewNotes(notes: string | null | undefined, mandatory: boolean): string | null {
  const v = text(notes);
  if (mandatory && v === null) throw AppError.validation(M.notesRequired);
  return v;
}

export const isUniqueViolation = (error: unknown): boolean => (error as { code?: string })?.code === '23505';

/** A 23505 from a write is the conflict the checks before it would have answered. */
export async function conflictOnDuplicate<T>(write: () => Promise<T>, message: string): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('CONFLICT', message);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Access
// ---------------------------------------------------------------------------------------------

/** How long a member's team permissions stay cached; every role or member change drops them at once. */
export const TEAM_PERMISSION_TTL_SECONDS = 30;
const teamAccessKey = (teamId: string, userId: string) => `devteam:access:${teamId}:${userId}`;

export type { TeamAccess };

/** A new team's own members (the caller owns it; the store stamps it). */
export type TeamRowsInput = Pick<Team, 'name' | 'slug' | 'description' | 'githubUrl' | 'websiteUrl' | 'avatarKey'>;

export function createDeveloperAccess({ repo, cache }: Pick<DeveloperDeps, 'repo' | 'cache'>) {
  async function teamAccess(teamId: string, userId: string): Promise<TeamAccess | null> {
    const key = teamAccessKey(teamId, userId);
    const cached = await cache.get(key).catch(() => null);
    if (cached) {
      try {
        const parsed = JSON.parse(cached) as TeamAccess | { none: true };
        return 'none' in parsed ? null : parsed;
      } catch {
        // fall through to the database
      }
    }
    const access = (await repo.memberAccess(teamId, userId)) ?? null;
    await cache.set(key, JSON.stringify(access ?? { none: true }), TEAM_PERMISSION_TTL_SECONDS).catch(() => undefined);
    return access;
  }

  /** The team and the caller's access; a team the caller is not in is invisible (404). */
  async function memberOf(ctx: AuthContext, teamId: string): Promise<{ team: Team; userId: string; access: TeamAccess }> {
    const userId = requireUserId(ctx);
    const [team, access] = await Promise.all([repo.teamById(teamId), teamAccess(teamId, userId)]);
    if (!team || !access) throw AppError.notFound(M.teamNotFound);
    return { team, userId, access };
  }

  return {
    teamAccess,
    memberOf,

    /** Drops cached team access of these members (the shared cache, so every node reads afresh). */
    async forgetAccess(teamId: string, userIds: readonly string[]): Promise<void> {
      await Promise.all(userIds.map((userId) => cache.del(teamAccessKey(teamId, userId)).catch(() => undefined)));
    },

    /** A team-scope gate: member (404 otherwise) whose role grants `permission` (403 otherwise). */
    async requireTeam(ctx: AuthContext, teamId: string, permission: string): Promise<{ team: Team; userId: string; access: TeamAccess }> {
      const found = await memberOf(ctx, teamId);
      if (!found.access.permissions.includes(permission)) throw AppError.forbidden(messages.missingPermission(permission));
      return found;
    },

    /** A role offered or assigned by someone may not grant more than they hold themselves. */
    checkGrantable(access: TeamAccess, role: TeamRole): void {
      if (role.isSystem) throw new AppError('CONFLICT', M.ownerRoleNotAssignable);
      const beyond = role.permissions.find((p) => !access.permissions.includes(p));
      if (beyond !== undefined) throw AppError.forbidden(M.cannotGrantTeam(beyond));
    },

    async requireProfile(ctx: AuthContext, message: string = messages.developerOnly): Promise<DeveloperProfile> {
      const profile = await repo.profileOfUser(requireUserId(ctx));
      if (!profile) throw AppError.forbidden(message);
      return profile;
    },

    /** Creates a team, its default roles and its owner's membership, in the caller's transaction. */
    async createTeamRows(trx: Knex.Transaction, input: TeamRowsInput, ownerUserId: string): Promise<Team> {
      const team = await repo.insertTeam(trx, {
        id: randomUUID(),
        name: input.name,
        slug: input.slug,
        description: input.description,
        github_url: input.githubUrl,
        website_url: input.websiteUrl,
        avatar_key: input.avatarKey,
        owner_user_id: ownerUserId,
      });
      const roles = defaultTeamRoles.map((r, position) => ({ id: randomUUID(), team_id: team.id, name: r.name, position, is_system: r.isSystem, permissions: r.permissions }));
      await repo.insertRoles(trx, roles);
      await repo.insertMember(trx, { team_id: team.id, user_id: ownerUserId, role_id: roles[0]!.id });
      return team;
    },
  };
}

export type DeveloperAccess = ReturnType<typeof createDeveloperAccess>;

