/**
 * Developer teams (Part 2, "Developer portal"): a developer creates a team (owning it, with the
 * default roles); members with the team-scope permissions edit it, its members and its roles.
 * Team-scope permissions are data-dependent, so they are checked here against the member's team
 * role (access.ts); every role or member change drops the affected members' cached access.
 * Deleting a team revokes its developer keys in the same transaction.
 */
import { randomUUID } from 'node:crypto';
import { requireUserId, type AuthContext } from '../../auth/context';
import { defaultTeamRoles, isTeamPermission, sortByRegistry, teamPermissions } from '../../auth/registry';
import { AppError } from '../../errors';
import { checkSlug, conflictOnDuplicate, required, text, type DeveloperAccess, type DeveloperDeps } from './access';
import { developerMessages as M } from './errors';
import type { TeamPatch } from './repo';
import type { TeamMember, TeamPermission, TeamRole, TeamView } from './types';

const OWNER_ROLE = defaultTeamRoles[0]!.name;

/** Team role permissions: team-scope strings only (400 on the first other), once each, in registry order. */
function teamRolePermissions(list: readonly string[]): string[] {
  const invalid = list.find((p) => !isTeamPermission(p));
  if (invalid !== undefined) throw AppError.validation(M.invalidPermission(invalid));
  return sortByRegistry([...new Set(list)]);
}

export function createTeams({ knex, repo, audit, store, apikeys }: DeveloperDeps, access: DeveloperAccess) {
  const { requireTeam, forgetAccess } = access;

  return {
    // ------------------------------------------------------------------ teams
    allTeamPermissions(): TeamPermission[] {
      return teamPermissions.map((permission) => ({ permission, category: permission.slice(0, permission.indexOf(':')) }));
    },

    async createDeveloperTeam(ctx: AuthContext, input: { name: string; slug: string; description?: string | null; githubUrl?: string | null; websiteUrl?: string | null }): Promise<TeamView> {
      await access.requireProfile(ctx);
      const userId = requireUserId(ctx);
      const name = required(input.name, 'name');
      const slug = checkSlug(input.slug);
      const team = await conflictOnDuplicate(
        () =>
          knex.transaction(async (trx) => {
            if (await repo.slugTaken(slug, trx)) throw new AppError('CONFLICT', M.slugTaken);
            const created = await access.createTeamRows(
              trx,
              { name, slug, description: text(input.description), githubUrl: text(input.githubUrl), websiteUrl: text(input.websiteUrl), avatarKey: null },
              userId,
            );
            await audit.record({ scope: 'user', type: 'user:developer_team_created', userId, actorId: userId, metadata: { team_id: created.id, slug } }, trx);
            return created;
          }),
        M.slugTaken,
      );
      return { ...team, role: OWNER_ROLE };
    },

    async myDeveloperTeams(ctx: AuthContext): Promise<TeamView[]> {
      return repo.teamsOfUser(requireUserId(ctx));
    },

    async developerTeam(ctx: AuthContext, teamId: string): Promise<TeamView> {
      const { team, access: found } = await requireTeam(ctx, teamId, 'team-settings:read');
      return { ...team, role: found.role };
    },

    async updateDeveloperTeam(ctx: AuthContext, teamId: string, input: { name?: string | null; description?: string | null; githubUrl?: string | null; websiteUrl?: string | null }): Promise<TeamView> {
      const { access: found, userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      const patch: TeamPatch = {};
      if (input.name !== undefined && input.name !== null) patch.name = required(input.name, 'name');
      if (input.description !== undefined) patch.description = text(input.description);
      if (input.githubUrl !== undefined) patch.github_url = text(input.githubUrl);
      if (input.websiteUrl !== undefined) patch.website_url = text(input.websiteUrl);
      await knex.transaction(async (trx) => {
        await repo.updateTeam(trx, teamId, patch);
        await audit.record({ scope: 'user', type: 'user:developer_team_updated', userId, actorId: userId, metadata: { team_id: teamId, fields: Object.keys(patch) } }, trx);
      });
      return { ...(await repo.teamById(teamId))!, role: found.role };
    },

    /** Owner only. The team's keys are revoked in the same transaction (then retired everywhere). */
    async deleteDeveloperTeam(ctx: AuthContext, teamId: string): Promise<{ success: true }> {
      const { team, userId } = await access.memberOf(ctx, teamId);
      if (team.ownerUserId !== userId) throw AppError.forbidden(M.ownerOnlyDelete);
      const { hashes, memberIds } = await knex.transaction(async (trx) => {
        const ids = await repo.liveTeamKeyIds(trx, teamId);
        const revokedHashes: string[] = [];
        for (const id of ids) {
          const row = await store.byId(id, trx);
          if (row && (await store.revoke(id, trx))) revokedHashes.push(row.token_hash);
        }
        const members = await repo.memberIds(teamId, trx);
        await repo.deleteTeam(trx, teamId);
        await audit.record({ scope: 'user', type: 'user:developer_team_deleted', userId, actorId: userId, metadata: { team_id: teamId, slug: team.slug, revoked_keys: ids.length } }, trx);
        return { hashes: revokedHashes, memberIds: members };
      });
      for (const hash of hashes) await apikeys.keys.retire(hash);
      await forgetAccess(teamId, memberIds);
      return { success: true };
    },

    // ------------------------------------------------------------------ members
    async developerTeamMembers(ctx: AuthContext, teamId: string): Promise<TeamMember[]> {
      await requireTeam(ctx, teamId, 'team-members:read');
      return repo.members(teamId);
    },

    async updateDeveloperTeamMemberRole(ctx: AuthContext, teamId: string, memberId: string, roleId: string): Promise<TeamMember> {
      const { team, access: found, userId } = await requireTeam(ctx, teamId, 'team-members:edit');
      const target = await repo.member(teamId, memberId);
      if (!target) throw AppError.notFound(M.memberNotFound);
      if (memberId === team.ownerUserId) throw new AppError('CONFLICT', M.ownerRoleFixed);
      const role = await repo.role(teamId, roleId);
      if (!role) throw AppError.notFound(M.roleNotFound);
      access.checkGrantable(found, role);
      await knex.transaction(async (trx) => {
        await repo.setMemberRole(trx, teamId, memberId, roleId);
        await audit.record(
          { scope: 'user', type: 'user:developer_team_member_updated', userId, actorId: userId, metadata: { team_id: teamId, member_id: memberId, role_id: roleId, role: role.name } },
          trx,
        );
      });
      await forgetAccess(teamId, [memberId]);
      return (await repo.member(teamId, memberId))!;
    },

    /** The member's developer keys on the team survive with `created_by` cleared. */
    async removeDeveloperTeamMember(ctx: AuthContext, teamId: string, memberId: string): Promise<{ success: true }> {
      const { team, userId } = await requireTeam(ctx, teamId, 'team-members:remove');
      const target = await repo.member(teamId, memberId);
      if (!target) throw AppError.notFound(M.memberNotFound);
      if (memberId === team.ownerUserId) throw new AppError('CONFLICT', M.ownerNotRemovable);
      await knex.transaction(async (trx) => {
        await repo.clearTeamKeyCreator(trx, teamId, memberId);
        await repo.deleteMember(trx, teamId, memberId);
        await audit.record({ scope: 'user', type: 'user:developer_team_member_removed', userId, actorId: userId, metadata: { team_id: teamId, member_id: memberId } }, trx);
      });
      await forgetAccess(teamId, [memberId]);
      return { success: true };
    },

    // ------------------------------------------------------------------ roles
    async developerTeamRoles(ctx: AuthContext, teamId: string): Promise<TeamRole[]> {
      await requireTeam(ctx, teamId, 'team-members:read');
      return repo.roles(teamId);
    },

    async createDeveloperTeamRole(ctx: AuthContext, teamId: string, input: { name: string; permissions: readonly string[] }): Promise<TeamRole> {
      const { userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      const name = required(input.name, 'name');
      const permissions = teamRolePermissions(input.permissions);
      const id = randomUUID();
      await conflictOnDuplicate(
        () =>
          knex.transaction(async (trx) => {
            if (await repo.roleByName(teamId, name, trx)) throw new AppError('CONFLICT', M.roleNameInUse);
            await repo.insertRoles(trx, [{ id, team_id: teamId, name, position: await repo.nextRolePosition(trx, teamId), is_system: false, permissions }]);
            await audit.record({ scope: 'user', type: 'user:developer_team_role_created', userId, actorId: userId, metadata: { team_id: teamId, role_id: id, name, permissions } }, trx);
          }),
        M.roleNameInUse,
      );
      return (await repo.role(teamId, id))!;
    },

    async updateDeveloperTeamRole(ctx: AuthContext, teamId: string, roleId: string, input: { name?: string | null; permissions?: readonly string[] | null }): Promise<TeamRole> {
      const { userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      const role = await repo.role(teamId, roleId);
      if (!role) throw AppError.notFound(M.roleNotFound);
      if (role.isSystem) throw new AppError('CONFLICT', M.ownerRoleImmutable);
      const name = input.name === undefined || input.name === null ? undefined : required(input.name, 'name');
      const permissions = input.permissions === undefined || input.permissions === null ? undefined : teamRolePermissions(input.permissions);
      await conflictOnDuplicate(
        () =>
          knex.transaction(async (trx) => {
            if (name !== undefined && name.toLowerCase() !== role.name.toLowerCase() && (await repo.roleByName(teamId, name, trx))) throw new AppError('CONFLICT', M.roleNameInUse);
            await repo.updateRole(trx, roleId, { name, permissions });
            await audit.record(
              { scope: 'user', type: 'user:developer_team_role_updated', userId, actorId: userId, metadata: { team_id: teamId, role_id: roleId, ...(name ? { name } : {}), ...(permissions ? { permissions } : {}) } },
              trx,
            );
          }),
        M.roleNameInUse,
      );
      await forgetAccess(teamId, await repo.membersWithRole(roleId));
      return (await repo.role(teamId, roleId))!;
    },

    async deleteDeveloperTeamRole(ctx: AuthContext, teamId: string, roleId: string): Promise<{ success: true }> {
      const { userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      await knex.transaction(async (trx) => {
        const role = await repo.role(teamId, roleId, trx);
        if (!role) throw AppError.notFound(M.roleNotFound);
        if (role.isSystem) throw new AppError('CONFLICT', M.systemRoleUndeletable);
        if (role.memberCount > 0) throw new AppError('CONFLICT', M.roleInUse(role.memberCount));
        await repo.deleteRole(trx, roleId);
        await audit.record({ scope: 'user', type: 'user:developer_team_role_deleted', userId, actorId: userId, metadata: { team_id: teamId, role_id: roleId, name: role.name } }, trx);
      });
      return { success: true };
    },
  };
}
