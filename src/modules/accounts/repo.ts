/** Storage of users, accounts, roles, members and invites (knex). Returns domain rows. */
import type { Knex } from 'knex';
import { fromJson } from '../../infra/db/database';
import { hotRead } from '../../infra/db/hot-read';
import { ACCESS_GUARD, ACCESS_VERSION_COLUMN, accessRead, accessVersionOf } from '../../auth/access-version';

export interface UserRow {
  id: string;
  email: string | null;
  display_name: string;
  avatar_url: string | null;
  created_at: Date;
}

export interface AccountRow {
  id: string;
  name: string;
  owner_id: string;
  plan: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface RoleRow {
  id: string;
  account_id: string;
  name: string;
  position: number;
  is_system: boolean;
  permissions: string[];
  member_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface MemberRow {
  user_id: string;
  display_name: string;
  email: string | null;
  avatar_url: string | null;
  role_id: string;
  role: string;
  owner_id: string;
  joined_at: Date;
}

export interface InviteRow {
  id: string;
  account_id: string;
  account_name: string;
  user_id: string;
  role_id: string;
  role: string;
  invited_by: string | null;
  created_at: Date;
}

const jsonArray = (value: unknown): string[] => fromJson<string[]>(value, []);

export function createAccountsRepo(knex: Knex) {
  const accountColumns = (db: Knex | Knex.Transaction) =>
    db('accounts as a')
      .leftJoin('plans as p', 'p.id', 'a.plan_id')
      .select('a.id', 'a.name', 'a.owner_id', 'p.slug as plan', 'a.created_at', 'a.updated_at');

  const roleColumns = (db: Knex | Knex.Transaction) =>
    db('account_roles as r').select(
      'r.id',
      'r.account_id',
      'r.name',
      'r.position',
      'r.is_system',
      'r.permissions',
      'r.created_at',
      'r.updated_at',
      db.raw('(select count(*)::int from account_members m where m.role_id = r.id) as member_count'),
    );

  const toRole = (row: RoleRow): RoleRow => ({ ...row, permissions: jsonArray(row.permissions), member_count: Number(row.member_count) });

  const memberColumns = (db: Knex | Knex.Transaction) =>
    db('account_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .join('account_roles as r', 'r.id', 'm.role_id')
      .join('accounts as a', 'a.id', 'm.account_id')
      .select('m.user_id', 'u.display_name', 'u.email', 'u.avatar_url', 'm.role_id', 'r.name as role', 'a.owner_id', 'm.joined_at');

  const inviteColumns = (db: Knex | Knex.Transaction) =>
    db('account_invites as i')
      .join('account_roles as r', 'r.id', 'i.role_id')
      .join('accounts as a', 'a.id', 'i.account_id')
      .select('i.id', 'i.account_id', 'a.name as account_name', 'i.user_id', 'i.role_id', 'r.name as role', 'i.invited_by', 'i.created_at');

  return {
    knex,

    /** accounts.userByEmail */
    userByEmail(email: string, db: Knex | Knex.Transaction = knex): Promise<UserRow | undefined> {
      return db('users').where({ email }).first('id', 'email', 'display_name', 'avatar_url', 'created_at');
    },
    /** accounts.userById */
    userById(id: string, db: Knex | Knex.Transaction = knex): Promise<UserRow | undefined> {
      return db('users').where({ id }).first('id', 'email', 'display_name', 'avatar_url', 'created_at');
    },
    /** accounts.insertUser */
    async insertUser(db: Knex.Transaction, user: { id: string; email: string | null; display_name: string }): Promise<void> {
      await db('users').insert(user);
      const everyone = await db('user_roles').where({ assigned_to_every_user: true }).select('id');
      if (everyone.length) await db('user_role_assignments').insert(everyone.map((r: { id: string }) => ({ user_id: user.id, role_id: r.id })));
    },
    /** accounts.defaultPlanId */
    async defaultPlanId(db: Knex | Knex.Transaction = knex): Promise<string | null> {
      const row = await db('plans').where({ is_default: true }).first('id');
      return row?.id ?? null;
    },
    /** accounts.insertAccount */
    async insertAccount(db: Knex.Transaction, account: { id: string; name: string; owner_id: string; plan_id: string | null }): Promise<void> {
      await db('accounts').insert(account);
    },
    /** accounts.insertRoles */
    async insertRoles(db: Knex.Transaction, roles: { id: string; account_id: string; name: string; position: number; is_system: boolean; permissions: readonly string[] }[]): Promise<void> {
      await db('account_roles').insert(roles.map((r) => ({ ...r, permissions: JSON.stringify(r.permissions) })));
    },
    /** accounts.insertMember */
    async insertMember(db: Knex | Knex.Transaction, member: { account_id: string; user_id: string; role_id: string }): Promise<void> {
      await db('account_members').insert(member);
    },
    /** accounts.accountById */
    accountById(id: string, db: Knex | Knex.Transaction = knex): Promise<AccountRow | undefined> {
      return accountColumns(db).where('a.id', id).first();
    },
    /** accounts.accountsOfUser: accounts with the user's role, oldest membership first */
    accountsOfUser(userId: string): Promise<(AccountRow & { role: string })[]> {
      return accountColumns(knex)
        .join('account_members as m', 'm.account_id', 'a.id')
        .join('account_roles as r', 'r.id', 'm.role_id')
        .where('m.user_id', userId)
        .select('r.name as role')
        .orderBy([{ column: 'm.joined_at' }, { column: 'a.id' }]);
    },
    /** accounts.firstAccountOfUser */
    async firstAccountOfUser(userId: string): Promise<string | null> {
      const row = await knex('account_members').where({ user_id: userId }).orderBy([{ column: 'joined_at' }, { column: 'account_id' }]).first('account_id');
      return row?.account_id ?? null;
    },
    /** accounts.ownedCount */
    async ownedCount(userId: string): Promise<number> {
      const row = await knex('accounts').where({ owner_id: userId }).count<{ count: string }[]>({ count: '*' }).first();
      return Number(row?.count ?? 0);
    },
    /** accounts.userSettings: the user's own switches and overrides */
    async userSettings(userId: string): Promise<{ extension_dev_mode: boolean; developer_override: boolean } | undefined> {
      return knex('users').where({ id: userId }).first('extension_dev_mode', 'developer_override');
    },
    /** accounts.updateUser */
    async updateUser(db: Knex.Transaction, userId: string, patch: { display_name?: string; extension_dev_mode?: boolean }): Promise<void> {
      await db('users').where({ id: userId }).update({ ...patch, updated_at: db.fn.now() });
    },
    /**
     * accounts.maxAccounts: the user's admin override, else the largest `max_accounts` of the
     * plans of the accounts the user owns, else the default plan's.
     */
    async maxAccounts(userId: string, db: Knex | Knex.Transaction = knex): Promise<number> {
      const result = await db.raw(
        `select coalesce(
           (select max_accounts_override from users where id = ?),
           (select max(p.max_accounts) from accounts a join plans p on p.id = a.plan_id where a.owner_id = ?),
           (select max_accounts from plans where is_default limit 1),
           0) as max`,
        [userId, userId],
      );
      return Number(((result.rows ?? result) as { max: number | string }[])[0]?.max ?? 0);
    },
    /** accounts.ownedCountIn: owned accounts, inside a transaction */
    async ownedCountIn(db: Knex.Transaction, userId: string): Promise<number> {
      const row = await db('accounts').where({ owner_id: userId }).count<{ count: string }[]>({ count: '*' }).first();
      return Number(row?.count ?? 0);
    },
    /** accounts.deleteAccount (cascades to roles, members, invites) */
    async deleteAccount(db: Knex.Transaction, id: string): Promise<void> {
      await db('accounts').where({ id }).delete();
    },
    /** accounts.member */
    member(accountId: string, userId: string, db: Knex | Knex.Transaction = knex): Promise<MemberRow | undefined> {
      return memberColumns(db).where({ 'm.account_id': accountId, 'm.user_id': userId }).first();
    },
    /** accounts.members (a hot read: src/infra/db/hot-read.ts) */
    members: hotRead(
      knex,
      (accountId: string): PromiseLike<MemberRow[]> => memberColumns(knex).where('m.account_id', accountId).orderBy([{ column: 'm.joined_at' }, { column: 'm.user_id' }]),
      (accountId: string) => accountId,
      () => ACCESS_GUARD,
    ),
    /** accounts.updateMemberRole */
    async updateMemberRole(db: Knex.Transaction, accountId: string, userId: string, roleId: string): Promise<void> {
      await db('account_members').where({ account_id: accountId, user_id: userId }).update({ role_id: roleId });
    },
    /** accounts.deleteMember */
    async deleteMember(db: Knex.Transaction, accountId: string, userId: string): Promise<number> {
      return db('account_members').where({ account_id: accountId, user_id: userId }).delete();
    },
    /** accounts.memberPermissions: the role's permissions, or null when not a member (a hot read: src/infra/db/hot-read.ts) */
    memberPermissions: accessRead(
      knex,
      async (userId: string, accountId: string): Promise<{ value: string[] | null; version: string }> => {
        const row = await knex('account_members as m')
          .join('account_roles as r', 'r.id', 'm.role_id')
          .where({ 'm.user_id': userId, 'm.account_id': accountId })
          .first('r.permissions', knex.raw(ACCESS_VERSION_COLUMN));
        return { value: row ? jsonArray(row.permissions) : null, version: accessVersionOf(row) };
      },
      (userId, accountId) => `${userId}:${accountId}`,
    ),
    /** accounts.principal: live grants of a user, in one round trip; read on every authenticated request (a hot read) */
    principal: accessRead(
      knex,
      async (userId: string, accountId: string | null): Promise<{ value: { account: string[] | null; admin: string[]; user: string[]; exists: boolean }; version: string }> => {
        const result = await knex.raw(
          `select
             exists(select 1 from users where id = ?) as exists,
             (select r.permissions from account_members m join account_roles r on r.id = m.role_id
               where m.user_id = ? and m.account_id = ?) as account,
             coalesce((select jsonb_agg(p) from admin_role_assignments a join admin_roles ar on ar.id = a.role_id,
               jsonb_array_elements_text(ar.permissions) p where a.user_id = ?), '[]'::jsonb) as admin,
             coalesce((select jsonb_agg(p) from user_role_assignments a join user_roles ur on ur.id = a.role_id,
               jsonb_array_elements_text(ur.permissions) p where a.user_id = ?), '[]'::jsonb) as "user",
             coalesce((select jsonb_agg(p) from user_role_assignments a join user_roles ur on ur.id = a.role_id,
               jsonb_array_elements_text(ur.admin_permissions) p where a.user_id = ?), '[]'::jsonb) as user_admin,
             ${ACCESS_VERSION_COLUMN}`,
          [userId, userId, accountId, userId, userId, userId],
        );
        const row = (result.rows ?? result)[0] as { exists: boolean; account: unknown; admin: unknown; user: unknown; user_admin: unknown; access_version: unknown };
        const value = {
          exists: Boolean(row.exists),
          account: row.account === null || row.account === undefined ? null : jsonArray(row.account),
          admin: [...jsonArray(row.admin), ...jsonArray(row.user_admin)],
          user: jsonArray(row.user),
        };
        return { value, version: accessVersionOf(row) };
      },
      (userId, accountId) => `${userId}:${accountId}`,
    ),
    /** accounts.roles */
    async roles(accountId: string): Promise<RoleRow[]> {
      return (await roleColumns(knex).where('r.account_id', accountId).orderBy('r.position')).map(toRole);
    },
    /** accounts.role */
    async role(accountId: string, id: string, db: Knex | Knex.Transaction = knex): Promise<RoleRow | undefined> {
      const row = await roleColumns(db).where({ 'r.account_id': accountId, 'r.id': id }).first();
      return row ? toRole(row) : undefined;
    },
    /** accounts.roleByName */
    async roleByName(accountId: string, name: string, db: Knex | Knex.Transaction = knex): Promise<RoleRow | undefined> {
      const row = await roleColumns(db).where({ 'r.account_id': accountId }).whereRaw('lower(r.name) = lower(?)', [name]).first();
      return row ? toRole(row) : undefined;
    },
    /** accounts.nextRolePosition */
    async nextRolePosition(db: Knex.Transaction, accountId: string): Promise<number> {
      const row = await db('account_roles').where({ account_id: accountId }).max<{ max: number | null }[]>({ max: 'position' }).first();
      return Number(row?.max ?? -1) + 1;
    },
    /** accounts.updateRole */
    async updateRole(db: Knex.Transaction, id: string, patch: { name?: string; permissions?: string[] }): Promise<void> {
      await db('account_roles')
        .where({ id })
        .update({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.permissions !== undefined ? { permissions: JSON.stringify(patch.permissions) } : {}),
          updated_at: db.fn.now(),
        });
    },
    /** accounts.deleteRole */
    async deleteRole(db: Knex.Transaction, id: string): Promise<void> {
      await db('account_roles').where({ id }).delete();
    },
    /** accounts.invites */
    invites(accountId: string): Promise<InviteRow[]> {
      return inviteColumns(knex).where('i.account_id', accountId).orderBy([{ column: 'i.created_at', order: 'desc' }, { column: 'i.id' }]);
    },
    /** accounts.invite */
    invite(id: string, db: Knex | Knex.Transaction = knex): Promise<InviteRow | undefined> {
      return inviteColumns(db).where('i.id', id).first();
    },
    /** accounts.inviteFor */
    inviteFor(accountId: string, userId: string, db: Knex | Knex.Transaction = knex): Promise<InviteRow | undefined> {
      return inviteColumns(db).where({ 'i.account_id': accountId, 'i.user_id': userId }).first();
    },
    /** accounts.insertInvite */
    async insertInvite(db: Knex.Transaction, invite: { id: string; account_id: string; user_id: string; role_id: string; invited_by: string | null }): Promise<void> {
      await db('account_invites').insert(invite);
    },
    /** accounts.deleteInvite */
    async deleteInvite(db: Knex | Knex.Transaction, id: string): Promise<number> {
      return db('account_invites').where({ id }).delete();
    },
    /** accounts.names: display names of users, accounts and roles by id (audit resolved_names) */
    async names(ids: { users: string[]; accounts: string[]; roles: string[] }): Promise<{ id: string; kind: 'user' | 'account' | 'role'; display_name: string }[]> {
      const [users, accounts, roles] = await Promise.all([
        ids.users.length ? knex('users').whereIn('id', ids.users).select('id', 'display_name') : [],
        ids.accounts.length ? knex('accounts').whereIn('id', ids.accounts).select('id', 'name') : [],
        ids.roles.length ? knex('account_roles').whereIn('id', ids.roles).select('id', 'name') : [],
      ]);
      return [
        ...users.map((u: { id: string; display_name: string }) => ({ id: u.id, kind: 'user' as const, display_name: u.display_name })),
        ...accounts.map((a: { id: string; name: string }) => ({ id: a.id, kind: 'account' as const, display_name: a.name })),
        ...roles.map((r: { id: string; name: string }) => ({ id: r.id, kind: 'role' as const, display_name: r.name })),
      ];
    },
    /**
     * accounts.assignSystemAdminRole: the seeded system role (`super-admin`), found by its flag rather
     * than its name so bootstrap never depends on a label; true when a new assignment was made.
     */
    async assignSystemAdminRole(userId: string): Promise<boolean> {
      const role = await knex('admin_roles').where({ is_system: true }).orderBy([{ column: 'created_at' }, { column: 'id' }]).first('id');
      if (!role) return false;
      const inserted = await knex('admin_role_assignments').insert({ user_id: userId, role_id: role.id }).onConflict(['user_id', 'role_id']).ignore().returning('user_id');
      return inserted.length > 0;
    },
    /** accounts.assignAdminRole: true when a new assignment was made */
    async assignAdminRole(userId: string, roleName: string): Promise<boolean> {
      const role = await knex('admin_roles').where({ name: roleName }).first('id');
      if (!role) return false;
      const inserted = await knex('admin_role_assignments').insert({ user_id: userId, role_id: role.id }).onConflict(['user_id', 'role_id']).ignore().returning('user_id');
      return inserted.length > 0;
    },
  };
}

export type AccountsRepo = ReturnType<typeof createAccountsRepo>;
