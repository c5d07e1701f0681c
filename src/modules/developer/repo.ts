/** Developer portal storage (knex): applications, profiles, verifications, teams, key owners. */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { sortByRegistry } from '../../auth/registry';
import type { CredentialRow } from '../../auth/store';
import { rowMapping, schemaRows, tableColumns, type RowMapping, type RowValue } from '../../infra/db/rows';
import type { AdminDeveloperApplicationItem, DeveloperApplication, DeveloperProfile, DeveloperVerification, Team, TeamInvite, TeamMember, TeamRole, TeamView } from './types';

type Schemas = components['schemas'];

type Db = Knex | Knex.Transaction;

/*
 * Each read's columns are its spec schema's members (src/infra/db/rows.ts, `schemaRows`): the select
 * list and the mapping to the domain value both come from the schema. What a read leaves out of the
 * spec's shape (`omit`), selects from a joined table (`table`, `from`) or carries beyond it (`extra`)
 * is said where its mapping is declared. Writes take the spec's snake_case members (`Schemas`).
 */

export type ApplicationStatus = Schemas['DeveloperApplication']['status'];
export type VerificationStatus = Schemas['DeveloperVerification']['status'];

/** An application as its applicant and operators see it. */
const applicationOf = schemaRows('DeveloperApplication');
/** An application in the operators' list, with its applicant's name and avatar. */
const applicationItemOf = schemaRows('AdminDeveloperApplicationItem', { table: 'a', from: { user_display_name: 'u.display_name', user_avatar_url: 'u.avatar_url' } });
/** What an applicant writes (the service validates it); the rest is the review's or the store's. */
type ApplicationInsert = Omit<Schemas['DeveloperApplication'], 'status' | 'review_notes' | 'reviewed_by' | 'reviewed_at' | 'created_at' | 'updated_at' | 'avatar_key'>;

const verificationOf = schemaRows('DeveloperVerification');
/** The members of a verification its developer writes. */
export type VerificationFields = Pick<
  Schemas['DeveloperVerification'],
  'legal_name' | 'company_name' | 'address_line1' | 'address_line2' | 'postal_code' | 'city' | 'country' | 'tax_id' | 'trade_register_id' | 'document_key'
>;

/** The columns of a team a caller may change. */
export type TeamPatch = Schemas['UpdateDeveloperTeamRequest'];

/** A profile as stored: the public profile without what the service adds, with its owner. */
const profileOf = schemaRows('PublicDeveloperProfile', { omit: ['stats', 'extensions'], extra: tableColumns('developer_profiles', ['user_id']) });

/** A team as stored; with a member's `role` when read through their membership. */
const teamOf = schemaRows('DeveloperTeam', { omit: ['role'] });
const teamViewOf = schemaRows('DeveloperTeam', { table: 't', from: { role: 'r.name' } });

/** A role with its member count, its permissions in registry order. */
const roleOf = schemaRows('DeveloperTeamRole', {
  table: 'r',
  from: { member_count: '(select count(*)::int from developer_team_members m where m.role_id = r.id)' },
  adjust: { permissions: sortByRegistry },
});

/** A member with their role's name; `is_owner` compares the team's owner column. */
const memberOf = schemaRows('DeveloperTeamMember', {
  table: 'm',
  from: { display_name: 'u.display_name', avatar_url: 'u.avatar_url', role: 'r.name', is_owner: '(m.user_id = t.owner_user_id)' },
});
/** A member's team access (cached by access.ts): not a schema, the wire never carries it. Permissions in stored order. */
const accessOf = rowMapping({ role: { type: 'text', from: 'r.name' }, permissions: { type: 'json', from: 'r.permissions', adjust: (permissions: string[]) => permissions } });
export type TeamAccess = RowValue<typeof accessOf>;

/** An invite as its team lists it; the role's name from its role row. */
const inviteRole = { role: '(select r.name from developer_team_roles r where r.id = i.role_id)' };
const inviteOf = schemaRows('DeveloperTeamInvite', { table: 'i', from: inviteRole });
/** An invite being looked up or accepted: whether it is still open is beyond the wire. */
const inviteStateOf = schemaRows('DeveloperTeamInvite', {
  table: 'i',
  from: inviteRole,
  extra: tableColumns('developer_team_invites', ['accepted_at', 'revoked_at']),
});
export type TeamInviteRecord = RowValue<typeof inviteStateOf>;

/**
 * A developer key: its credentials row (src/auth/store.ts, which the key lifecycle works on) with
 * its owner row's columns.
 */
export type DeveloperKeyRow = CredentialRow & Pick<Schemas['DeveloperApiKey'], 'developer_id' | 'team_id'>;

/** A row, when there is one, to its mapping's domain value. */
const maybe = <T>(mapping: RowMapping<T>, row: Record<string, unknown> | undefined): T | undefined => (row ? mapping.map(row) : undefined);
const count = (row: { count?: string | number } | undefined) => Number(row?.count ?? 0);
const newestFirst = (alias: string) => [
  { column: `${alias}.created_at`, order: 'desc' },
  { column: `${alias}.id`, order: 'desc' },
];

export function createDeveloperRepo(knex: Knex) {
  const members = (db: Db) =>
    db('developer_team_members as m').join('users as u', 'u.id', 'm.user_id').join('developer_team_roles as r', 'r.id', 'm.role_id').join('developer_teams as t', 't.id', 'm.team_id');
  /** A key's credentials row with its owner row's columns (the owner row adds only those two). */
  const keys = (db: Db) => db('developer_api_keys as k').join('credentials as c', 'c.id', 'k.id').select('c.*', 'k.developer_id', 'k.team_id');

  return {
    // ------------------------------------------------------------------ users
    /** users.contact: display name and e-mail of a notification's recipient */
    userContact(userId: string, db: Db = knex): Promise<{ email: string | null; display_name: string } | undefined> {
      return db('users').where({ id: userId }).first('email', 'display_name');
    },

    // ------------------------------------------------------------------ applications
    /** developer_applications.insert */
    async insertApplication(db: Knex.Transaction, row: ApplicationInsert): Promise<DeveloperApplication> {
      const [inserted] = await db('developer_applications').insert(row).returning(db.raw(applicationOf.select));
      return applicationOf.map(inserted);
    },
    /** developer_applications.latestOfUser */
    async latestApplication(userId: string): Promise<DeveloperApplication | undefined> {
      return maybe(applicationOf, await knex('developer_applications as a').where({ user_id: userId }).orderBy(newestFirst('a')).first(knex.raw(applicationOf.select)));
    },
    /** developer_applications.pendingOfUser */
    async pendingApplication(userId: string, db: Db = knex): Promise<DeveloperApplication | undefined> {
      return maybe(applicationOf, await db('developer_applications').where({ user_id: userId, status: 'pending' }).first(db.raw(applicationOf.select)));
    },
    /** developer_applications.byId (optionally locked) */
    async applicationById(id: string, db: Db = knex, lock = false): Promise<DeveloperApplication | undefined> {
      const query = db('developer_applications').where({ id });
      return maybe(applicationOf, await (lock ? query.forUpdate() : query).first(db.raw(applicationOf.select)));
    },
    /** developer_applications.page: newest first, with the applicant's name and avatar */
    async applications(status: string | undefined, limit: number, offset: number): Promise<{ items: AdminDeveloperApplicationItem[]; total: number }> {
      const base = () => knex('developer_applications as a').modify((q) => (status ? q.where('a.status', status) : q));
      const [rows, total] = await Promise.all([
        base().join('users as u', 'u.id', 'a.user_id').orderBy(newestFirst('a')).limit(limit).offset(offset).select(knex.raw(applicationItemOf.select)),
        base().count({ count: '*' }).first(),
      ]);
      return { items: rows.map(applicationItemOf.map), total: count(total) };
    },
    /** developer_applications.review */
    async reviewApplication(db: Knex.Transaction, id: string, patch: Pick<Schemas['DeveloperApplication'], 'status' | 'review_notes' | 'reviewed_by'>): Promise<void> {
      await db('developer_applications')
        .where({ id })
        .update({ ...patch, reviewed_at: db.fn.now(), updated_at: db.fn.now() });
    },
    /** slugs.taken: a developer profile, a team or another pending application holds it */
    async slugTaken(slug: string, db: Db = knex, exceptApplication?: string): Promise<boolean> {
      // One statement: `db` may be a transaction, whose one connection runs one query at a time.
      const hits = await db('developer_profiles')
        .where({ slug })
        .select('id')
        .unionAll((q) => q.from('developer_teams').where({ slug }).select('id'))
        .unionAll((q) =>
          q
            .from('developer_applications')
            .where({ slug, status: 'pending' })
            .modify((w) => (exceptApplication ? w.whereNot({ id: exceptApplication }) : w))
            .select('id'),
        )
        .limit(1);
      return hits.length > 0;
    },

    // ------------------------------------------------------------------ profiles
    /** developer_profiles.insert */
    async insertProfile(
      db: Knex.Transaction,
      row: { id: string; user_id: string; display_name: string; slug: string; description: string | null; github_url: string | null; website_url: string | null; avatar_key: string | null },
    ): Promise<DeveloperProfile> {
      const [inserted] = await db('developer_profiles').insert(row).returning(db.raw(profileOf.select));
      return profileOf.map(inserted);
    },
    /** developer_profiles.byUser */
    async profileOfUser(userId: string, db: Db = knex): Promise<DeveloperProfile | undefined> {
      return maybe(profileOf, await db('developer_profiles').where({ user_id: userId }).first(db.raw(profileOf.select)));
    },
    /** developer_profiles.byId */
    async profileById(id: string): Promise<DeveloperProfile | undefined> {
      return maybe(profileOf, await knex('developer_profiles').where({ id }).first(knex.raw(profileOf.select)));
    },
    /** developer_profiles.bySlug */
    async profileBySlug(slug: string, db: Db = knex): Promise<DeveloperProfile | undefined> {
      return maybe(profileOf, await db('developer_profiles').where({ slug }).first(db.raw(profileOf.select)));
    },

    // ------------------------------------------------------------------ verifications
    /** developer_verifications.ofDeveloper (optionally locked) */
    async verificationOf(developerId: string, db: Db = knex, lock = false): Promise<DeveloperVerification | undefined> {
      const query = db('developer_verifications').where({ developer_id: developerId });
      return maybe(verificationOf, await (lock ? query.forUpdate() : query).first(db.raw(verificationOf.select)));
    },
    /** developer_verifications.byId (optionally locked) */
    async verificationById(id: string, db: Db = knex, lock = false): Promise<DeveloperVerification | undefined> {
      const query = db('developer_verifications').where({ id });
      return maybe(verificationOf, await (lock ? query.forUpdate() : query).first(db.raw(verificationOf.select)));
    },
    /** developer_verifications.insert */
    async insertVerification(db: Knex.Transaction, row: VerificationFields & { id: string; developer_id: string }): Promise<DeveloperVerification> {
      const [inserted] = await db('developer_verifications').insert(row).returning(db.raw(verificationOf.select));
      return verificationOf.map(inserted);
    },
    /** developer_verifications.resubmit: the new fields, pending again, verdict cleared */
    async resubmitVerification(db: Knex.Transaction, id: string, fields: VerificationFields): Promise<DeveloperVerification> {
      const [row] = await db('developer_verifications')
        .where({ id })
        .update({ ...fields, status: 'pending', review_notes: null, reviewed_by: null, reviewed_at: null, updated_at: db.fn.now() })
        .returning(db.raw(verificationOf.select));
      return verificationOf.map(row);
    },
    /** developer_verifications.review */
    async reviewVerification(db: Knex.Transaction, id: string, patch: Pick<Schemas['DeveloperVerification'], 'status' | 'review_notes' | 'reviewed_by'>): Promise<void> {
      await db('developer_verifications')
        .where({ id })
        .update({ ...patch, reviewed_at: db.fn.now(), updated_at: db.fn.now() });
    },
    /** developer_verifications.page: newest first */
    async verifications(status: string | undefined, limit: number, offset: number): Promise<{ items: DeveloperVerification[]; total: number }> {
      const base = () => knex('developer_verifications as v').modify((q) => (status ? q.where({ status }) : q));
      const [rows, total] = await Promise.all([base().orderBy(newestFirst('v')).limit(limit).offset(offset).select(knex.raw(verificationOf.select)), base().count({ count: '*' }).first()]);
      return { items: rows.map(verificationOf.map), total: count(total) };
    },

    // ------------------------------------------------------------------ teams
    /** developer_teams.insert */
    async insertTeam(
      db: Knex.Transaction,
      row: { id: string; name: string; slug: string; description: string | null; github_url: string | null; website_url: string | null; avatar_key: string | null; owner_user_id: string },
    ): Promise<Team> {
      const [inserted] = await db('developer_teams').insert(row).returning(db.raw(teamOf.select));
      return teamOf.map(inserted);
    },
    /** developer_teams.byId */
    async teamById(id: string, db: Db = knex): Promise<Team | undefined> {
      return maybe(teamOf, await db('developer_teams').where({ id }).first(db.raw(teamOf.select)));
    },
    /** developer_teams.bySlug */
    async teamBySlug(slug: string): Promise<Team | undefined> {
      return maybe(teamOf, await knex('developer_teams').where({ slug }).first(knex.raw(teamOf.select)));
    },
    /** developer_teams.ofUser: teams with the user's role name, oldest membership first */
    async teamsOfUser(userId: string): Promise<TeamView[]> {
      const rows = await knex('developer_teams as t')
        .join('developer_team_members as m', 'm.team_id', 't.id')
        .join('developer_team_roles as r', 'r.id', 'm.role_id')
        .where('m.user_id', userId)
        .orderBy([{ column: 'm.joined_at' }, { column: 't.id' }])
        .select(knex.raw(teamViewOf.select));
      return rows.map(teamViewOf.map);
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
    async insertRoles(db: Knex.Transaction, rows: (Pick<Schemas['DeveloperTeamRole'], 'id' | 'team_id' | 'name' | 'is_system'> & { position: number; permissions: readonly string[] })[]): Promise<void> {
      await db('developer_team_roles').insert(rows.map((r) => ({ ...r, permissions: JSON.stringify(r.permissions) })));
    },
    /** developer_team_roles.ofTeam, with member counts, in position order */
    async roles(teamId: string): Promise<TeamRole[]> {
      const rows = await knex('developer_team_roles as r')
        .where('r.team_id', teamId)
        .orderBy([{ column: 'r.position' }, { column: 'r.created_at' }, { column: 'r.id' }])
        .select(knex.raw(roleOf.select));
      return rows.map(roleOf.map);
    },
    /** developer_team_roles.byId (team-scoped), with its member count */
    async role(teamId: string, id: string, db: Db = knex): Promise<TeamRole | undefined> {
      return maybe(roleOf, await db('developer_team_roles as r').where({ 'r.team_id': teamId, 'r.id': id }).first(db.raw(roleOf.select)));
    },
    /** developer_team_roles.byName (case-insensitive) */
    async roleByName(teamId: string, name: string, db: Db = knex): Promise<TeamRole | undefined> {
      return maybe(roleOf, await db('developer_team_roles as r').where('r.team_id', teamId).whereRaw('lower(r.name) = lower(?)', [name]).first(db.raw(roleOf.select)));
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
    async members(teamId: string): Promise<TeamMember[]> {
      const rows = await members(knex)
        .where('m.team_id', teamId)
        .orderByRaw('case when m.user_id = t.owner_user_id then 0 else 1 end')
        .orderBy([{ column: 'm.joined_at' }, { column: 'm.user_id' }])
        .select(knex.raw(memberOf.select));
      return rows.map(memberOf.map);
    },
    /** developer_team_members.one, with the role's name */
    async member(teamId: string, userId: string, db: Db = knex): Promise<TeamMember | undefined> {
      return maybe(memberOf, await members(db).where({ 'm.team_id': teamId, 'm.user_id': userId }).first(db.raw(memberOf.select)));
    },
    /** developer_team_members.access: the member's role name and permissions (undefined when not a member) */
    async memberAccess(teamId: string, userId: string): Promise<TeamAccess | undefined> {
      return maybe(accessOf, await members(knex).where({ 'm.team_id': teamId, 'm.user_id': userId }).first(knex.raw(accessOf.select)));
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
    async insertMember(db: Knex.Transaction, row: Pick<Schemas['DeveloperTeamMember'], 'user_id' | 'role_id'> & { team_id: string }): Promise<void> {
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
    async insertInvite(db: Knex.Transaction, row: Pick<Schemas['DeveloperTeamInvite'], 'id' | 'team_id' | 'code_prefix' | 'role_id'> & { invited_by: string; expires_at: Date; code_hash: string }): Promise<void> {
      await db('developer_team_invites').insert(row);
    },
    /** developer_team_invites.byId (team-scoped) */
    async invite(teamId: string, id: string, db: Db = knex): Promise<TeamInvite | undefined> {
      return maybe(inviteOf, await db('developer_team_invites as i').where({ 'i.team_id': teamId, 'i.id': id }).first(db.raw(inviteOf.select)));
    },
    /** developer_team_invites.open: neither accepted, revoked nor expired; newest first */
    async openInvites(teamId: string): Promise<TeamInvite[]> {
      const rows = await knex('developer_team_invites as i')
        .where('i.team_id', teamId)
        .whereNull('i.accepted_at')
        .whereNull('i.revoked_at')
        .where('i.expires_at', '>', knex.fn.now())
        .orderBy(newestFirst('i'))
        .select(knex.raw(inviteOf.select));
      return rows.map(inviteOf.map);
    },
    /** developer_team_invites.byCodeHash (optionally locked: the invite's row only) */
    async inviteByHash(hash: string, db: Db = knex, lock = false): Promise<TeamInviteRecord | undefined> {
      const query = db('developer_team_invites as i').where('i.code_hash', hash);
      return maybe(inviteStateOf, await (lock ? query.forUpdate() : query).first(db.raw(inviteStateOf.select)));
    },
    /** developer_team_invites.close: revoked or accepted */
    async closeInvite(db: Knex.Transaction, id: string, patch: { revoked: true } | { acceptedBy: string }): Promise<boolean> {
      const update = 'revoked' in patch ? { revoked_at: db.fn.now() } : { accepted_at: db.fn.now(), accepted_by: patch.acceptedBy };
      const changed = await db('developer_team_invites').where({ id }).whereNull('accepted_at').whereNull('revoked_at').update(update);
      return Number(changed) > 0;
    },

    // ------------------------------------------------------------------ developer keys
    /** developer_api_keys.insert: the owner row of a minted credential */
    async insertKeyOwner(db: Knex.Transaction, row: Pick<Schemas['DeveloperApiKey'], 'id' | 'developer_id' | 'team_id'>): Promise<void> {
      await db('developer_api_keys').insert(row);
    },
    /** developer_api_keys.live: unrevoked keys of a profile and of teams, newest first */
    keysOf(developerId: string | null, teamIds: readonly string[]): Promise<DeveloperKeyRow[]> {
      if (developerId === null && teamIds.length === 0) return Promise.resolve([]);
      return keys(knex)
        .whereNull('c.revoked_at')
        .where((q) => {
          if (developerId !== null) q.orWhere('k.developer_id', developerId);
          if (teamIds.length) q.orWhereIn('k.team_id', [...teamIds]);
        })
        .orderBy([{ column: 'c.created_at', order: 'desc' }, { column: 'c.id' }]);
    },
    /** developer_api_keys.byId */
    key(id: string, db: Db = knex): Promise<DeveloperKeyRow | undefined> {
      return keys(db).where('k.id', id).first();
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
