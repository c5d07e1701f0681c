/**
 * Team invite codes (Part 2, "Developer portal"): a member with `team-members:invite` creates a
 * code for a role they may grant (shown once; only its SHA-256 and an 8-character prefix are
 * kept), optionally mailed to an address; anyone signed in looks a code up and accepts it once
 * before it expires.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { type DeveloperAccess, type DeveloperDeps } from './access';
import { developerMessages as M } from './errors';
import type { TeamInviteRecord } from './repo';
import type { TeamInvite, TeamInviteLookup, TeamView } from './types';

const MEMBER_ROLE = 'team-member';

const codeHash = (code: string): string => createHash('sha256').update(code, 'utf8').digest('hex');

/** An invite that can still be accepted: 404 when unknown, revoked or used, 409 when expired. */
function openInvite(invite: TeamInviteRecord | undefined): TeamInviteRecord {
  if (!invite || invite.revokedAt !== null || invite.acceptedAt !== null) throw AppError.notFound(M.inviteNotFound);
  if (new Date(invite.expiresAt).getTime() <= Date.now()) throw new AppError('CONFLICT', M.inviteExpired);
  return invite;
}

export function createInvites({ knex, repo, audit, mail }: DeveloperDeps, access: DeveloperAccess) {
  return {
    /**
     * With `email`, the invite is mailed there too (in the invite's transaction). Invites are a
     * locked notification type, so no preference stops it; the address need not have an account,
     * and it is not kept on the invite (only in the outbox row, whose body is sealed).
     */
    async createDeveloperTeamInvite(ctx: AuthContext, teamId: string, input: { roleId?: string | null; expiresInDays?: number | null; email?: string | null }): Promise<TeamInvite & { code: string }> {
      const { access: found, userId, team } = await access.requireTeam(ctx, teamId, 'team-members:invite');
      const role = input.roleId ? await repo.role(teamId, input.roleId) : await repo.roleByName(teamId, MEMBER_ROLE);
      if (!role) throw AppError.notFound(M.roleNotFound);
      access.checkGrantable(found, role);
      const code = randomBytes(16).toString('hex');
      const id = randomUUID();
      const days = input.expiresInDays ?? 7;
      const expiresAt = new Date(Date.now() + days * 86_400_000);
      await knex.transaction(async (trx) => {
        await repo.insertInvite(trx, { id, team_id: teamId, code_hash: codeHash(code), code_prefix: code.slice(0, 8), role_id: role.id, invited_by: userId, expires_at: expiresAt });
        await audit.record({ scope: 'user', type: 'user:developer_team_invite_created', userId, actorId: userId, metadata: { team_id: teamId, invite_id: id, role: role.name, mailed: Boolean(input.email) } }, trx);
        if (input.email) {
          const inviter = await repo.userContact(userId, trx);
          await mail.queue(
            'team_invite',
            { address: input.email, name: null },
            { teamName: team.name, role: role.name, code, expiresAt: expiresAt.toISOString(), inviterName: inviter?.display_name ?? null },
            trx,
          );
        }
      });
      return { ...(await repo.invite(teamId, id))!, code };
    },

    async developerTeamInvites(ctx: AuthContext, teamId: string): Promise<TeamInvite[]> {
      await access.requireTeam(ctx, teamId, 'team-members:invite');
      return repo.openInvites(teamId);
    },

    async revokeDeveloperTeamInvite(ctx: AuthContext, teamId: string, inviteId: string): Promise<{ success: true }> {
      const { userId } = await access.requireTeam(ctx, teamId, 'team-members:invite');
      const done = await knex.transaction(async (trx) => {
        const invite = await repo.invite(teamId, inviteId, trx);
        if (!invite || new Date(invite.expiresAt).getTime() <= Date.now()) return false;
        if (!(await repo.closeInvite(trx, inviteId, { revoked: true }))) return false;
        await audit.record({ scope: 'user', type: 'user:developer_team_invite_revoked', userId, actorId: userId, metadata: { team_id: teamId, invite_id: inviteId } }, trx);
        return true;
      });
      if (!done) throw AppError.notFound(M.inviteNotFound);
      return { success: true };
    },

    async developerTeamInvite(code: string): Promise<TeamInviteLookup> {
      const invite = openInvite(await repo.inviteByHash(codeHash(code)));
      const team = (await repo.teamById(invite.teamId))!;
      return { teamId: team.id, teamName: team.name, teamSlug: team.slug, teamAvatarKey: team.avatarKey, role: invite.role, expiresAt: invite.expiresAt };
    },

    async acceptDeveloperTeamInvite(ctx: AuthContext, code: string): Promise<TeamView> {
      const userId = requireUserId(ctx);
      const joined = await knex.transaction(async (trx) => {
        const invite = openInvite(await repo.inviteByHash(codeHash(code), trx, true));
        if (await repo.member(invite.teamId, userId, trx)) throw new AppError('CONFLICT', M.alreadyMember);
        await repo.insertMember(trx, { team_id: invite.teamId, user_id: userId, role_id: invite.roleId });
        await repo.closeInvite(trx, invite.id, { acceptedBy: userId });
        await audit.record({ scope: 'user', type: 'user:developer_team_joined', userId, actorId: userId, metadata: { team_id: invite.teamId, invite_id: invite.id, role: invite.role } }, trx);
        return { teamId: invite.teamId, role: invite.role };
      });
      await access.forgetAccess(joined.teamId, [userId]);
      return { ...(await repo.teamById(joined.teamId))!, role: joined.role };
    },
  };
}
