/**
 * The developer module's look-ups for later modules (extensions: public profiles, team-owned
 * extensions) and the accounts module (`me.isDeveloper`): profiles and teams by id, slug or
 * user, members, and the cached team-scope permission check.
 */
import type { DeveloperAccess, DeveloperDeps } from './access';
import type { DeveloperProfile, Team, TeamMemberSummary } from './types';

export function createDirectory({ repo }: DeveloperDeps, access: DeveloperAccess) {
  return {
    async profileOfUser(userId: string): Promise<DeveloperProfile | null> {
      return (await repo.profileOfUser(userId)) ?? null;
    },
    async profileById(id: string): Promise<DeveloperProfile | null> {
      return (await repo.profileById(id)) ?? null;
    },
    async profileBySlug(slug: string): Promise<DeveloperProfile | null> {
      return (await repo.profileBySlug(slug)) ?? null;
    },
    async teamById(id: string): Promise<Team | null> {
      return (await repo.teamById(id)) ?? null;
    },
    async teamBySlug(slug: string): Promise<Team | null> {
      return (await repo.teamBySlug(slug)) ?? null;
    },
    async teamMembers(teamId: string): Promise<TeamMemberSummary[]> {
      const team = await repo.teamById(teamId);
      if (!team) return [];
      return (await repo.members(teamId)).map(({ userId, displayName, avatarUrl, role }) => ({ userId, displayName, avatarUrl, role }));
    },
    async hasTeamPermission(teamId: string, userId: string, permission: string): Promise<boolean> {
      return (await access.teamAccess(teamId, userId))?.permissions.includes(permission) ?? false;
    },
    async teamsOfUser(userId: string): Promise<Team[]> {
      return (await repo.teamsOfUser(userId)).map(({ role: _role, ...team }) => team);
    },
    /** `me.isDeveloper` (through the accounts module's `provideDeveloperStatus`). */
    async isDeveloper(userId: string): Promise<boolean> {
      return (await repo.profileOfUser(userId)) !== undefined;
    },
  };
}
