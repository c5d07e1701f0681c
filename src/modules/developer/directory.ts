/**
 * The developer module's look-ups for later modules (extensions: public profiles, team-owned
 * extensions) and the accounts module (`me.isDeveloper`): profiles and teams by id, slug or
 * user, members, and the cached team-scope permission check.
 */
import type { DeveloperAccess, DeveloperDeps } from './access';
import type { ProfileRow, TeamRow } from './repo';
import type { DeveloperProfile, Team, TeamMemberSummary } from './types';

const toProfile = (r: ProfileRow): DeveloperProfile => ({
  id: r.id,
  userId: r.user_id,
  displayName: r.display_name,
  slug: r.slug,
  description: r.description,
  githubUrl: r.github_url,
  websiteUrl: r.website_url,
  avatarKey: r.avatar_key,
  createdAt: new Date(r.created_at),
});

const toTeam = (r: TeamRow): Team => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  description: r.description,
  githubUrl: r.github_url,
  websiteUrl: r.website_url,
  avatarKey: r.avatar_key,
  ownerUserId: r.owner_user_id,
  createdAt: new Date(r.created_at),
});

export function createDirectory({ repo }: DeveloperDeps, access: DeveloperAccess) {
  return {
    async profileOfUser(userId: string): Promise<DeveloperProfile | null> {
      const row = await repo.profileOfUser(userId);
      return row ? toProfile(row) : null;
    },
    async profileById(id: string): Promise<DeveloperProfile | null> {
      const row = await repo.profileById(id);
      return row ? toProfile(row) : null;
    },
    async profileBySlug(slug: string): Promise<DeveloperProfile | null> {
      const row = await repo.profileBySlug(slug);
      return row ? toProfile(row) : null;
    },
    async teamById(id: string): Promise<Team | null> {
      const row = await repo.teamById(id);
      return row ? toTeam(row) : null;
    },
    async teamBySlug(slug: string): Promise<Team | null> {
      const row = await repo.teamBySlug(slug);
      return row ? toTeam(row) : null;
    },
    async teamMembers(teamId: string): Promise<TeamMemberSummary[]> {
      const team = await repo.teamById(teamId);
      if (!team) return [];
      return (await repo.members(teamId, team.owner_user_id)).map((m) => ({ userId: m.user_id, displayName: m.display_name, avatarUrl: m.avatar_url, role: m.role }));
    },
    async hasTeamPermission(teamId: string, userId: string, permission: string): Promise<boolean> {
      return (await access.teamAccess(teamId, userId))?.permissions.includes(permission) ?? false;
    },
    async teamsOfUser(userId: string): Promise<Team[]> {
      return (await repo.teamsOfUser(userId)).map(toTeam);
    },
    /** `me.isDeveloper` (through the accounts module's `provideDeveloperStatus`). */
    async isDeveloper(userId: string): Promise<boolean> {
      return (await repo.profileOfUser(userId)) !== undefined;
    },
  };
}
