/** Developer portal storage (knex): applications, profiles, verifications, teams, key owners. */
import type { Knex } from 'knex';
import { fromJson } from '../../infra/db/database';
import { schemaRows } from '../../infra/db/rows';
import type { DeveloperProfile, Team, TeamView } from './types';

type Db = Knex | Knex.Transaction;

export type ApplicationStatus = 'pending' | 'approved' | 'rejected';
export type VerificationStatus = 'pending' | 'verified' | 'rejected';

export interface ApplicationRow {
  id: string;
  user_id: string;
  application_type: 'solo' | 'team';
  display_name: string;
  slug: string;
  description: string;
  motivation: string;
  what_to_build: string;
  github_url: string | null;
  website_url: string | null;
  experience: string | null;
  avatar_key: string | null;
  status: ApplicationStatus;
  review_notes: string | null;
  reviewed_by: string | null;
  reviewed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface ApplicationListRow extends Pick<ApplicationRow, 'id' | 'user_id' | 'application_type' | 'display_name' | 'slug' | 'status' | 'created_at'> {
  user_display_name: string;
  user_avatar_url: string | null;
}

export interface VerificationRow {
  id: string;
  developer_id: string;
  legal_name: string;
  company_name: string | null;
  address_line1: string;
  address_line2: string | null;
  postal_code: string;
  city: string;
  country: string;
  tax_id: string | null;
  trade_register_id: string | null;
  document_key: string | null;
  status: VerificationStatus;
  review_notes: string | null;
  reviewed_by: string | null;
  reviewed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type VerificationFields = Pick<
  VerificationRow,
  'legal_name' | 'company_name' | 'address_line1' | 'address_line2' | 'postal_code' | 'city' | 'country' | 'tax_id' | 'trade_register_id' | 'document_key'
>;

/** The columns of a team a caller may change. */
export interface TeamPatch {
  name?: string;
  description?: string | null;
  github_url?: string | null;
  website_url?: string | null;
}

export interface TeamRoleRow {
  id: string;
  team_id: string;
  name: string;
  position: number;
  is_system: boolean;
  permissions: string[];
  member_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface TeamMemberRow {
  team_id: string;
  user_id: string;
  display_name: string;
  avatar_url: string | null;
  role_id: string;
  role: string;
  permissions: string[];
  joined_at: Date;
}

export interface TeamInviteRow {
  id: string;
  team_id: string;
  code_hash: string;
  code_prefix: string;
  role_id: string;
  role: string;
  invited_by: string | null;
  expires_at: Date;
  accepted_by: string | null;
  accepted_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
}

/** A developer key: its credentials row joined with its owner row. */
export interface DeveloperKeyRow {
  id: string;
  token_hash: string;
  key_prefix: string;
  label: string;
  permissions: string[];
  created_by: string | null;
  developer_id: string | null;
  team_id: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A profile as stored: the public profile without what the service adds, with its owner. */
const profileOf = schemaRows('PublicDeveloperProfile', { omit: ['stats', 'extensions'], extra: { user_id: 'uuid' } });
const toProfile = (row: Record<string, unknown> | undefined): DeveloperProfile | undefined => (row ? profileOf.map(row) : undefined);

/** A team as stored: the caller's `role` comes from the membership. */
const teamOf = schemaRows('DeveloperTeam', { omit: ['role'] });
const toTeam = (row: Record<string, unknown> | undefined): Team | undefined => (row ? teamOf.map(row) : undefined);

const withPermissions = <T extends { permissions: unknown }>(row: T): T & { permissions: string[] } => ({ ...row, permissions: fromJson<string[]>(row.permissions, []) });
const count = (row: { count?: string | number } | undefined) => Number(row?.count ?? 0);

const KEY_COLUMNS = [
  'c.id',
  'c.token_hash',
  'c.key_prefix',
  'c.label',
  'c.permissions',
  'c.created_by',
  'k.developer_id',
  'k.team_id',
  'c.expires_at',
  'c.revoked_at',
  'c.last_used_at',
  'c.created_at',
  'c.updated_at',
];

const MEMBER_COLUMNS = ['m.team_id', 'm.user_id', 'u.display_name', 'u.avatar_url', 'm.role_id', 'r.name as role', 'r.permissions', 'm.joined_at'];

export function createDeveloperRepo(knex: Knex) {
  const members = (db: Db) => db('developer_team_members as m').join('users as u', 'u.id', 'm.user_id').join('developer_team_roles as r', 'r.id', 'm.role_id');
  const invites = (db: Db) => db('developer_team_invites as i').join('developer_team_roles as r', 'r.id', 'i.role_id').select('i.*', 'r.name as role');

  return {
    // ------------------------------------------------------------------ users
    /** users.contact: display name and e-mail of a notification's recipient */
    userContact(userId: string, db: Db = knex): Promise<{ email: string | null; display_name: string } | undefined> {
      return db('users').where({ id: userId }).first('email', 'display_name');
    },

    // ------------------------------------------------------------------ applications
    /** developer_applications.insert */
    async insertApplication(db: Knex.Transaction, row: Omit<ApplicationRow, 'status' | 'review_notes' | 'reviewed_by' | 'reviewed_at' | 'created_at' | 'updated_at' | 'avatar_key'>): Promise<ApplicationRow> {
      const [inserted] = await db('developer_applications').insert(row).returning('*');
      return inserted;
    },
    /** developer_applications.latestOfUser */
    latestApplication(userId: string): Promise<ApplicationRow | undefined> {
      return knex('developer_applications').where({ user_id: userId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).first();
    },
    /** developer_applications.pendingOfUser */
    pendingApplication(userId: string, db: Db = knex): Promise<ApplicationRow | undefined> {
      return db('developer_applications').where({ user_id: userId, status: 'pending' }).first();
    },
    /** developer_applications.byId (optionally locked) */
    applicationById(id: string, db: Db = knex, lock = false): Promise<ApplicationRow | undefined> {
      const query = db('developer_applications').where({ id });
      return (lock ? query.forUpdate() : query).first();
    },
    /** developer_applications.page: newest first, with the applicant's name and avatar */
    async applications(status: string | undefined, limit: number, offset: number): Promise<{ rows: ApplicationListRow[]; total: number }> {
      const base = () => knex('developer_applications as a').modify((q) => (status ? q.where('a.status', status) : q));
      const [rows, total] = await Promise.all([
        base()
          .join('users as u', 'u.id', 'a.user_id')
          .orderBy([{ column: 'a.created_at', order: 'desc' }, { column: 'a.id', order: 'desc' }])
          .limit(limit)
          .offset(offset)
          .select('a.id', 'a.user_id', 'a.application_type', 'a.display_name', 'a.slug', 'a.status', 'a.created_at', 'u.display_name as user_display_name', 'u.avatar_url as user_avatar_url'),
        base().count({ count: '*' }).first(),
      ]);
      return { rows, total: count(total) };
    },
    /** developer_applications.review */
    async reviewApplication(db: Knex.Transaction, id: string, patch: { status: ApplicationStatus; review_notes: string | null; reviewed_by: string | null }): Promise<void> {
      await db('developer_applications')
        .where({ id })
        .update({ ...patch, reviewed_at: db.fn.now(), updated_at: db.fn.now() });
    },
    /** slugs.taken: a developer profile, a team or another pending application holds it */
    async slugTaken(slug: string, db: Db = knex, exceptApplication?: string): Promise<boolean> {
      const [profile, team, application] = await Promise.all([
        db('developer_profiles').where({ slug }).first('id'),
        db('developer_teams').where({ slug }).first('id'),
        db('developer_applications')
          .where({ slug, status: 'pending' })
          .modify((q) => (exceptApplication ? q.whereNot({ id: exceptApplication }) : q))
          .first('id'),
      ]);
      return Boolean(profile || team || application);
    },

    // ------------------------------------------------------------------ profiles
    /** developer_profiles.insert */
    async insertProfile(
      db: Knex.Transaction,
      row: { id: string; user_id: string; display_name: string; slug: string; description: string | null; github_url: string | null; website_url: string | null; avatar_key: string | null },
    ): Promise<DeveloperProfile> {
      const [inserted] = await db('developer_profiles').insert(row).returning('*');
      return profileOf.map(inserted);
    },
    /** developer_profiles.byUser */
    async profileOfUser(userId: string, db: Db = knex): Promise<DeveloperProfile | undefined> {
      return toProfile(await db('developer_profiles').where({ user_id: userId }).first());
    },
    /** developer_profiles.byId */
    async profileById(id: string): Promise<DeveloperProfile | undefined> {
      return toProfile(await knex('developer_profiles').where({ id }).first());
    },
    /** developer_profiles.bySlug */
    async profileBySlug(slug: string, db: Db = knex): Promise<DeveloperProfile | undefined> {
      return toProfile(await db('developer_profiles').where({ slug }).first());
    },

    // ------------------------------------------------------------------ verifications
    /** developer_verifications.ofDeveloper (optionally locked) */
    verificationOf(developerId: string, db: Db = knex, lock = false): Promise<VerificationRow | undefined> {
      const query = db('developer_verifications').where({ developer_id: developerId });
      return (lock ? query.forUpdate() : query).first();
    },
    /** developer_verifications.byId (optionally locked) */
    verificationById(id: string, db: Db = knex, lock = false): Promise<VerificationRow | undefined> {
      const query = db('developer_verifications').where({ id });
      return (lock ? query.forUpdate() : query).first();
    },
    /** developer_verifications.insert */
    async insertVerification(db: Knex.Transaction, row: VerificationFields & { id: string; developer_id: string }): Promise<VerificationRow> {
      const [inserted] = await db('developer_verifications').insert(row).returning('*');
      return inserted;
    },
    /** developer_verifications.resubmit: the new fields, pending again, verdict cleared */
    async resubmitVerification(db: Knex.Transaction, id: string, fields: VerificationFields): Promise<VerificationRow> {
      const [row] = await db('developer_verifications')
        .where({ id })
        .update({ ...fields, status: 'pending', review_notes: null, reviewed_by: null, reviewed_at: null, updated_at: db.fn.now() })
        .returning('*');
      return row;
    },
    /** developer_verifications.review */
    async reviewVerification(db: Knex.Transaction, id: string, patch: { status: VerificationStatus; review_notes: string | null; reviewed_by: string | null }): Promise<void> {
      await db('developer_verifications')
        .where({ id })
        .update({ ...patch, reviewed_at: db.fn.now(), updated_at: db.fn.now() });
    },
    /** developer_verifications.page: newest first */
    async verifications(status: string | undefined, limit: number, offset: number): Promise<{ rows: VerificationRow[]; total: number }> {
      const base = () => knex('developer_verifications').modify((q) => (status ? q.where({ status }) : q));
      const [rows, total] = await Promise.all([
        base()
          .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
          .limit(limit)
          .offset(offset),
        base().count({ count: '*' }).first(),
      ]);
      return { rows, total: count(total) };
    },

    // ------------------------------------------------------------------ teams
    /** developer_teams.insert */
    async insertTeam(
      db: Knex.Transaction,
      row: { id: string; name: string; slug: string; description: string | null; github_url: string | null; website_url: string | null; avatar_key: string | null; owner_user_id: string },
    ): Promise<Team> {
      const [inserted] = await db('developer_teams').insert(row).returning('*');
      return teamOf.map(inserted);
    },
    /** developer_teams.byId */
    async teamById(id: string, db: Db = knex): Promise<Team | undefined> {
      return toTeam(await db('developer_teams').where({ id }).first());
    },
    /** developer_teams.bySlug */
    async teamBySlug(slug: string): Promise<Team | undefined> {
      return toTeam(await knex('developer_teams').where({ slug }).first());
    },
    /** developer_teams.ofUser: teams with the user's role name, oldest membership first */
    async teamsOfUser(userId: string): Promise<TeamView[]> {
      const rows: Record<string, unknown>[] = await knex('developer_teams as t')
        .join('developer_team_members as m', 'm.team_id', 't.id')
        .join('developer_team_roles as r', 'r.id', 'm.role_id')
        .where('m.user_id', userId)
        .orderBy([{ column: 'm.joined_at' }, { column: 't.id' }])
        .select('t.*', 'r.name as role');
      return rows.map((row) => ({ ...teamOf.map(row), role: row.role as string }));
    },
    /** developer_teams.update */
    async updateTeam(db: Knex.Transaction, id: string, patch: TeamPatch): Promise<void> {
      await db('developer_teams')
        .where({ id })
        .update({ ...patch, updated_at: db.fn.now() });
    },
    /** developer_teams.delete (roles, members, invites and key owner rows cascade) */
    async deleteTeam(db: Knex.Transaction, id: string): Promise<void> {
      await db('developer_teams').where({ id }).delete();
    },

    // ------------------------------------------------------------------ team roles
    /** developer_team_roles.insertMany */
    async insertRoles(db: Knex.Transaction, rows: { id: string; team_id: string; name: string; position: number; is_system: boolean; permissions: readonly string[] }[]): Promise<void> {
      await db('developer_team_roles').insert(rows.map((r) => ({ ...r, permissions: JSON.stringify(r.permissions) })));
    },
    /** developer_team_roles.ofTeam, with member counts, in position order */
    async roles(teamId: string): Promise<TeamRoleRow[]> {
      const rows = await knex('developer_team_roles as r')
        .where('r.team_id', teamId)
        .orderBy([{ column: 'r.position' }, { column: 'r.created_at' }, { column: 'r.id' }])
        .select('r.*', knex('developer_team_members as m').whereRaw('m.role_id = r.id').count('*').as('member_count'));
      return rows.map((r: TeamRoleRow) => ({ ...withPermissions(r), member_count: Number(r.member_count) }));
    },
    /** developer_team_roles.byId (team-scoped), with its member count */
    async role(teamId: string, id: string, db: Db = knex): Promise<TeamRoleRow | undefined> {
      const row = await db('developer_team_roles as r')
        .where({ 'r.team_id': teamId, 'r.id': id })
        .first('r.*', db('developer_team_members as m').whereRaw('m.role_id = r.id').count('*').as('member_count'));
      return row ? { ...withPermissions(row), member_count: Number(row.member_count) } : undefined;
    },
    /** developer_team_roles.byName (case-insensitive) */
    async roleByName(teamId: string, name: string, db: Db = knex): Promise<TeamRoleRow | undefined> {
      const row = await db('developer_team_roles').where({ team_id: teamId }).whereRaw('lower(name) = lower(?)', [name]).first();
      return row ? { ...withPermissions(row), member_count: 0 } : undefined;
    },
    /** developer_team_roles.nextPosition */
    async nextRolePosition(db: Knex.Transaction, teamId: string): Promise<number> {
      const row = await db('developer_team_roles').where({ team_id: teamId }).max({ max: 'position' }).first();
      return Number(row?.max ?? -1) + 1;
    },
    /** developer_team_roles.update */
    async updateRole(db: Knex.Transaction, id: string, patch: { name?: string; permissions?: readonly string[] }): Promise<void> {
      await db('developer_team_roles')
        .where({ id })
        .update({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.permissions !== undefined ? { permissions: JSON.stringify(patch.permissions) } : {}),
          updated_at: db.fn.now(),
        });
    },
    /** developer_team_roles.delete (its open invites cascade) */
    async deleteRole(db: Knex.Transaction, id: string): Promise<void> {
      await db('developer_team_roles').where({ id }).delete();
    },

    // ------------------------------------------------------------------ team members
    /** developer_team_members.ofTeam, the owner first, then by join time */
    async members(teamId: string, ownerUserId: string): Promise<TeamMemberRow[]> {
      const rows = await members(knex)
        .where('m.team_id', teamId)
        .orderByRaw('case when m.user_id = ? then 0 else 1 end', [ownerUserId])
        .orderBy([{ column: 'm.joined_at' }, { column: 'm.user_id' }])
        .select(MEMBER_COLUMNS);
      return rows.map(withPermissions);
    },
    /** developer_team_members.one, with the role's name and permissions */
    async member(teamId: string, userId: string, db: Db = knex): Promise<TeamMemberRow | undefined> {
      const row = await members(db).where({ 'm.team_id': teamId, 'm.user_id': userId }).first(MEMBER_COLUMNS);
      return row ? withPermissions(row) : undefined;
    },
    /** developer_team_members.ofRole: user ids holding a role */
    async membersWithRole(roleId: string, db: Db = knex): Promise<string[]> {
      return (await db('developer_team_members').where({ role_id: roleId }).select('user_id')).map((r: { user_id: string }) => r.user_id);
    },
    /** developer_team_members.userIds */
    async memberIds(teamId: string, db: Db = knex): Promise<string[]> {
      return (await db('developer_team_members').where({ team_id: teamId }).select('user_id')).map((r: { user_id: string }) => r.user_id);
    },
    /** developer_team_members.insert */
    async insertMember(db: Knex.Transaction, row: { team_id: string; user_id: string; role_id: string }): Promise<void> {
      await db('developer_team_members').insert(row);
    },
    /** developer_team_members.setRole */
    async setMemberRole(db: Knex.Transaction, teamId: string, userId: string, roleId: string): Promise<void> {
      await db('developer_team_members').where({ team_id: teamId, user_id: userId }).update({ role_id: roleId });
    },
    /** developer_team_members.delete */
    async deleteMember(db: Knex.Transaction, teamId: string, userId: string): Promise<void> {
      await db('developer_team_members').where({ team_id: teamId, user_id: userId }).delete();
    },

    // ------------------------------------------------------------------ team invites
    /** developer_team_invites.insert */
    async insertInvite(db: Knex.Transaction, row: { id: string; team_id: string; code_hash: string; code_prefix: string; role_id: string; invited_by: string; expires_at: Date }): Promise<void> {
      await db('developer_team_invites').insert(row);
    },
    /** developer_team_invites.byId (team-scoped) */
    invite(teamId: string, id: string, db: Db = knex): Promise<TeamInviteRow | undefined> {
      return invites(db).where({ 'i.team_id': teamId, 'i.id': id }).first();
    },
    /** developer_team_invites.open: neither accepted, revoked nor expired; newest first */
    openInvites(teamId: string): Promise<TeamInviteRow[]> {
      return invites(knex)
        .where('i.team_id', teamId)
        .whereNull('i.accepted_at')
        .whereNull('i.revoked_at')
        .where('i.expires_at', '>', knex.fn.now())
        .orderBy([{ column: 'i.created_at', order: 'desc' }, { column: 'i.id', order: 'desc' }]);
    },
    /** developer_team_invites.byCodeHash (optionally locked) */
    async inviteByHash(hash: string, db: Db = knex, lock = false): Promise<TeamInviteRow | undefined> {
      const row = await (lock ? db('developer_team_invites').where({ code_hash: hash }).forUpdate().first() : db('developer_team_invites').where({ code_hash: hash }).first());
      if (!row) return undefined;
      const role = await db('developer_team_roles').where({ id: row.role_id }).first('name');
      return { ...row, role: role?.name ?? '' };
    },
    /** developer_team_invites.close: revoked or accepted */
    async closeInvite(db: Knex.Transaction, id: string, patch: { revoked: true } | { acceptedBy: string }): Promise<boolean> {
      const update = 'revoked' in patch ? { revoked_at: db.fn.now() } : { accepted_at: db.fn.now(), accepted_by: patch.acceptedBy };
      const changed = await db('developer_team_invites').where({ id }).whereNull('accepted_at').whereNull('revoked_at').update(update);
      return Number(changed) > 0;
    },

    // ------------------------------------------------------------------ developer keys
    /** developer_api_keys.insert: the owner row of a minted credential */
    async insertKeyOwner(db: Knex.Transaction, row: { id: string; developer_id: string | null; team_id: string | null }): Promise<void> {
      await db('developer_api_keys').insert(row);
    },
    /** developer_api_keys.live: unrevoked keys of a profile and of teams, newest first */
    async keysOf(developerId: string | null, teamIds: readonly string[]): Promise<DeveloperKeyRow[]> {
      if (developerId === null && teamIds.length === 0) return [];
      const rows = await knex('developer_api_keys as k')
        .join('credentials as c', 'c.id', 'k.id')
        .whereNull('c.revoked_at')
        .where((q) => {
          if (developerId !== null) q.orWhere('k.developer_id', developerId);
          if (teamIds.length) q.orWhereIn('k.team_id', [...teamIds]);
        })
        .orderBy([{ column: 'c.created_at', order: 'desc' }, { column: 'c.id' }])
        .select(KEY_COLUMNS);
      return rows.map(withPermissions);
    },
    /** developer_api_keys.byId */
    async key(id: string, db: Db = knex): Promise<DeveloperKeyRow | undefined> {
      const row = await db('developer_api_keys as k').join('credentials as c', 'c.id', 'k.id').where('k.id', id).first(KEY_COLUMNS);
      return row ? withPermissions(row) : undefined;
    },
    /** developer_api_keys.ofTeam: ids of a team's unrevoked keys */
    async liveTeamKeyIds(db: Knex.Transaction, teamId: string): Promise<string[]> {
      const rows = await db('developer_api_keys as k').join('credentials as c', 'c.id', 'k.id').where('k.team_id', teamId).whereNull('c.revoked_at').select('k.id');
      return rows.map((r: { id: string }) => r.id);
    },
    /** credentials.clearCreator: a member left a team; the keys they created there survive */
    async clearTeamKeyCreator(db: Knex.Transaction, teamId: string, userId: string): Promise<void> {
      await db('credentials')
        .whereIn('id', db('developer_api_keys').where({ team_id: teamId }).select('id'))
        .where({ created_by: userId })
        .update({ created_by: null, updated_at: db.fn.now() });
    },
  };
}

export type DeveloperRepo = ReturnType<typeof createDeveloperRepo>;
