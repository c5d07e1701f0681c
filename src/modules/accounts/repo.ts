/** Storage of users, accounts, roles, members and invites (knex). Returns domain values (types.ts). */
import type { Knex } from 'knex';
import { fromJson } from '../../infra/db/database';
import { hotRead } from '../../infra/db/hot-read';
import { statement } from '../../infra/db/statement';
import { schemaRows, type RowValue } from '../../infra/db/rows';
import { ACCESS_GUARD, ACCESS_VERSION_COLUMN, accessRead, accessVersionOf } from '../../auth/access-version';
import type { components } from '../../../generated/openapi';
import type { Account, AccountInvite, AccountRole, ResolvedNameRow, User } from './types';

type Schemas = components['schemas'];

/*
 * Each read's columns are its spec schema's members (src/infra/db/rows.ts, `schemaRows`): the select
 * list and the mapping to the domain value both come from the schema. What a read leaves out of the
 * spec's shape (`omit`), selects from a joined table (`from`) or carries beyond it (`extra`) is said
 * where its mapping is declared.
 */

/** A user as the spec's `Me` carries it, without what the service adds. */
const userOf = schemaRows('Me', {
  omit: ['active_account_id', 'owned_account_count', 'max_accounts', 'is_developer', 'extension_dev_mode', 'feature_statuses', 'login_connections'],
});

/** An account without the caller's role (the service adds it). */
const accountFrom = { id: 'a.id', name: 'a.name', owner_id: 'a.owner_id', plan: 'p.slug', created_at: 'a.created_at', updated_at: 'a.updated_at' } as const;
const accountOf = schemaRows('Account', { omit: ['role'], from: accountFrom });
export type AccountRecord = RowValue<typeof accountOf>;
const accountWithRoleOf = schemaRows('Account', { from: { ...accountFrom, role: 'r.name' } });

/** A role with its permissions in stored order (the service shows them in registry order). */
const roleOf = schemaRows('AccountRole', {
  from: {
    id: 'r.id',
    name: 'r.name',
    position: 'r.position',
    is_system: 'r.is_system',
    permissions: 'r.permissions',
    member_count: '(select count(*)::int from account_members m where m.role_id = r.id)',
    created_at: 'r.created_at',
    updated_at: 'r.updated_at',
  },
});

/** One member row to its domain value (`members` keeps the mapped list); the owner is told in SQL. */
export const memberOf = schemaRows('AccountMember', {
  from: { user_id: 'm.user_id', display_name: 'u.display_name', email: 'u.email', avatar_url: 'u.avatar_url', role_id: 'm.role_id', role: 'r.name', is_owner: '(a.owner_id = m.user_id)', joined_at: 'm.joined_at' },
});
export type MemberRecord = RowValue<typeof memberOf>;
/** A member row as the driver answers it; `memberOf` maps it. */
type MemberRow = Record<string, unknown>;

const inviteOf = schemaRows('AccountInvite', {
  from: { id: 'i.id', account_id: 'i.account_id', user_id: 'i.user_id', email: 'i.email', role_id: 'i.role_id', role: 'r.name', invited_by: 'i.invited_by', created_at: 'i.created_at' },
});

/** A uuid no row has: a standing read without a user or account compares against it. */
const NO_ID = '00000000-0000-0000-0000-000000000000';

const jsonArray = (value: unknown): string[] => fromJson<string[]>(value, []);
const mapped = <T>(mapping: { map(row: Record<string, unknown>): T }) => (row: Record<string, unknown> | undefined): T | undefined => (row ? mapping.map(row) : undefined);

export function createAccountsRepo(knex: Knex) {
  const accountColumns = (db: Knex | Knex.Transaction) => db('accounts as a').leftJoin('plans as p', 'p.id', 'a.plan_id');

  const roleColumns = (db: Knex | Knex.Transaction) => db('account_roles as r').select(db.raw(roleOf.select));

  const memberColumns = (db: Knex | Knex.Transaction) =>
    db('account_members as m')
      .join('users as u', 'u.id', 'm.user_id')
      .join('account_roles as r', 'r.id', 'm.role_id')
      .join('accounts as a', 'a.id', 'm.account_id')
      .select(db.raw(memberOf.select));

  const inviteColumns = (db: Knex | Knex.Transaction) => db('account_invites as i').join('account_roles as r', 'r.id', 'i.role_id').select(db.raw(inviteOf.select));

  return {
    knex,

    /** accounts.userByEmail */
    async userByEmail(email: string, db: Knex | Knex.Transaction = knex): Promise<User | undefined> {
      return mapped(userOf)(await db('users').where({ email }).first(db.raw(userOf.select)));
    },
    /** accounts.isSuspended: whether the user is suspended now (sign-in refuses them) */
    async isSuspended(userId: string): Promise<boolean> {
      return Boolean(await knex('users').where({ id: userId }).whereNotNull('suspended_at').first('id'));
    },
    /** accounts.userById */
    async userById(id: string, db: Knex | Knex.Transaction = knex): Promise<User | undefined> {
      return mapped(userOf)(await db('users').where({ id }).first(db.raw(userOf.select)));
    },
    /** accounts.insertUser */
    async insertUser(db: Knex.Transaction, user: Pick<Schemas['Me'], 'id' | 'email' | 'display_name'>): Promise<void> {
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
    async insertAccount(db: Knex.Transaction, account: Pick<Schemas['Account'], 'id' | 'name' | 'owner_id'> & { plan_id: string | null }): Promise<void> {
      await db('accounts').insert(account);
    },
    /** accounts.insertRoles */
    async insertRoles(db: Knex.Transaction, roles: (Pick<Schemas['AccountRole'], 'id' | 'name' | 'position' | 'is_system' | 'permissions'> & { account_id: string })[]): Promise<void> {
      await db('account_roles').insert(roles.map((r) => ({ ...r, permissions: JSON.stringify(r.permissions) })));
    },
    /** accounts.insertMember */
    async insertMember(db: Knex | Knex.Transaction, member: Pick<Schemas['AccountMember'], 'user_id' | 'role_id'> & { account_id: string }): Promise<void> {
      await db('account_members').insert(member);
    },
    /** accounts.accountById */
    async accountById(id: string, db: Knex | Knex.Transaction = knex): Promise<AccountRecord | undefined> {
      return mapped(accountOf)(await accountColumns(db).first(db.raw(accountOf.select)).where('a.id', id));
    },
    /** accounts.accountsOfUser: accounts with the user's role, oldest membership first */
    async accountsOfUser(userId: string): Promise<Account[]> {
      const rows = await accountColumns(knex)
        .join('account_members as m', 'm.account_id', 'a.id')
        .join('account_roles as r', 'r.id', 'm.role_id')
        .where('m.user_id', userId)
        .select(knex.raw(accountWithRoleOf.select))
        .orderBy([{ column: 'm.joined_at' }, { column: 'a.id' }]);
      return rows.map((row: Record<string, unknown>) => accountWithRoleOf.map(row));
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
    /** accounts.renameAccount */
    async renameAccount(db: Knex.Transaction, id: string, name: string): Promise<void> {
      await db('accounts').where({ id }).update({ name, updated_at: db.fn.now() });
    },
    /** accounts.deleteAccount (cascades to roles, members, invites) */
    async deleteAccount(db: Knex.Transaction, id: string): Promise<void> {
      await db('accounts').where({ id }).delete();
    },
    /** accounts.member */
    async member(accountId: string, userId: string, db: Knex | Knex.Transaction = knex): Promise<MemberRecord | undefined> {
      return mapped(memberOf)(await memberColumns(db).where({ 'm.account_id': accountId, 'm.user_id': userId }).first());
    },
    /**
     * accounts.members, a hot read (src/infra/db/hot-read.ts) kept in the members' domain form: it
     * holds no Date (its timestamps are the API's text), so the answer's rendering is kept with it
     * and a repeated request is not mapped and serialised again (src/infra/kept.ts `keptRendering`).
     */
    members: hotRead(
      knex,
      async (accountId: string): Promise<MemberRecord[]> =>
        ((await memberColumns(knex).where('m.account_id', accountId).orderBy([{ column: 'm.joined_at' }, { column: 'm.user_id' }])) as MemberRow[]).map(memberOf.map),
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
        // A suspended account grants nothing; a suspended user is no member anywhere.
        const row = await knex('account_members as m')
          .join('account_roles as r', 'r.id', 'm.role_id')
          .join('accounts as a', 'a.id', 'm.account_id')
          .join('users as u', 'u.id', 'm.user_id')
          .where({ 'm.user_id': userId, 'm.account_id': accountId })
          .whereNull('a.suspended_at')
          .whereNull('u.suspended_at')
          .first('r.permissions', knex.raw(ACCESS_VERSION_COLUMN));
        return { value: row ? jsonArray(row.permissions) : null, version: accessVersionOf(row) };
      },
      (userId, accountId) => `${userId}:${accountId}`,
    ),
    /**
     * accounts.standing: whether a user or an account is suspended (a hot read guarded by the access
     * version, which a suspension moves). Credentials that do not go through `principal` (account
     * keys and tokens, popouts) are held to it by the operators module.
     */
    standing: accessRead(
      knex,
      async (userId: string | null, accountId: string | null): Promise<{ value: { userSuspended: boolean; accountSuspended: boolean }; version: string }> => {
        const [row] = await statement<{ user_suspended: boolean; account_suspended: boolean; access_version: unknown }>(
          knex,
          `select
             exists(select 1 from users where id = ? and suspended_at is not null) as user_suspended,
             exists(select 1 from accounts where id = ? and suspended_at is not null) as account_suspended,
             ${ACCESS_VERSION_COLUMN}`,
          [userId ?? NO_ID, accountId ?? NO_ID],
        );
        return { value: { userSuspended: Boolean(row?.user_suspended), accountSuspended: Boolean(row?.account_suspended) }, version: accessVersionOf(row) };
      },
      (userId, accountId) => `${userId}:${accountId}`,
    ),
    /** accounts.principal: live grants of a user, in one round trip; read on every authenticated request (a hot read) */
    principal: accessRead(
      knex,
      async (userId: string, accountId: string | null): Promise<{ value: { account: string[] | null; admin: string[]; user: string[]; exists: boolean }; version: string }> => {
        const [row] = await statement<{ exists: boolean; account: unknown; admin: unknown; user: unknown; user_admin: unknown; access_version: unknown }>(
          knex,
          `select
             exists(select 1 from users where id = ? and suspended_at is null) as exists,
             (select r.permissions from account_members m join account_roles r on r.id = m.role_id
               join accounts a on a.id = m.account_id
               where m.user_id = ? and m.account_id = ? and a.suspended_at is null) as account,
             coalesce((select jsonb_agg(p) from admin_role_assignments a join admin_roles ar on ar.id = a.role_id,
               jsonb_array_elements_text(ar.permissions) p where a.user_id = ?), '[]'::jsonb) as admin,
             coalesce((select jsonb_agg(p) from user_role_assignments a join user_roles ur on ur.id = a.role_id,
               jsonb_array_elements_text(ur.permissions) p where a.user_id = ?), '[]'::jsonb) as "user",
             coalesce((select jsonb_agg(p) from user_role_assignments a join user_roles ur on ur.id = a.role_id,
               jsonb_array_elements_text(ur.admin_permissions) p where a.user_id = ?), '[]'::jsonb) as user_admin,
             ${ACCESS_VERSION_COLUMN}`,
          [userId, userId, accountId, userId, userId, userId],
        );
        if (!row) throw new Error('accounts.principal: no row');
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
    async roles(accountId: string): Promise<AccountRole[]> {
      return (await roleColumns(knex).where('r.account_id', accountId).orderBy('r.position')).map((row: Record<string, unknown>) => roleOf.map(row));
    },
    /** accounts.role */
    async role(accountId: string, id: string, db: Knex | Knex.Transaction = knex): Promise<AccountRole | undefined> {
      return mapped(roleOf)(await roleColumns(db).where({ 'r.account_id': accountId, 'r.id': id }).first());
    },
    /** accounts.roleByName */
    async roleByName(accountId: string, name: string, db: Knex | Knex.Transaction = knex): Promise<AccountRole | undefined> {
      return mapped(roleOf)(await roleColumns(db).where({ 'r.account_id': accountId }).whereRaw('lower(r.name) = lower(?)', [name]).first());
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
    async invites(accountId: string): Promise<AccountInvite[]> {
      const rows = await inviteColumns(knex).where('i.account_id', accountId).orderBy([{ column: 'i.created_at', order: 'desc' }, { column: 'i.id' }]);
      return rows.map((row: Record<string, unknown>) => inviteOf.map(row));
    },
    /** accounts.invite */
    async invite(id: string, db: Knex | Knex.Transaction = knex): Promise<AccountInvite | undefined> {
      return mapped(inviteOf)(await inviteColumns(db).where('i.id', id).first());
    },
    /** accounts.inviteFor */
    async inviteFor(accountId: string, userId: string, db: Knex | Knex.Transaction = knex): Promise<AccountInvite | undefined> {
      return mapped(inviteOf)(await inviteColumns(db).where({ 'i.account_id': accountId, 'i.user_id': userId }).first());
    },
    /** accounts.insertInvite (an invite by e-mail to an unknown address carries its address, token hash and end) */
    async insertInvite(
      db: Knex.Transaction,
      invite: Pick<Schemas['AccountInvite'], 'id' | 'account_id' | 'user_id' | 'role_id' | 'invited_by'> & { email?: string; token_hash?: string; expires_at?: Date },
    ): Promise<void> {
      await db('account_invites').insert(invite);
    },
    /** accounts.inviteByToken: an invite by e-mail, by its token's hash, locked for the accepting transaction */
    async inviteByToken(trx: Knex.Transaction, tokenHash: string): Promise<(AccountInvite & { expired: boolean }) | undefined> {
      const row = await trx('account_invites').where({ token_hash: tokenHash }).forUpdate().first('id', trx.raw('(expires_at is not null and expires_at <= now()) as expired'));
      if (!row) return undefined;
      const invite = await this.invite(row.id, trx);
      return invite ? { ...invite, expired: Boolean(row.expired) } : undefined;
    },
    /**
     * accounts.claimEmailInvites: a new user with a (verified) address takes the live invites
     * mailed to it; answers them (each then gets its notification)
     */
    async claimEmailInvites(trx: Knex.Transaction, userId: string, email: string): Promise<AccountInvite[]> {
      const rows: { id: string }[] = await trx('account_invites')
        .whereNull('user_id')
        .where({ email })
        .where('expires_at', '>', trx.fn.now())
        .update({ user_id: userId })
        .returning('id');
      const invites: AccountInvite[] = [];
      for (const { id } of rows) invites.push((await this.invite(id, trx))!);
      return invites;
    },
    /** accounts.deleteInvite */
    async deleteInvite(db: Knex | Knex.Transaction, id: string): Promise<number> {
      return db('account_invites').where({ id }).delete();
    },
    /** accounts.names: display names of users, accounts and roles by id (audit resolved_names; chat and realtime read `display_name`) */
    async names(ids: { users: string[]; accounts: string[]; roles: string[] }): Promise<ResolvedNameRow[]> {
      const [users, accounts, roles] = await Promise.all([
        ids.users.length ? knex('users').whereIn('id', ids.users).select('id', knex.raw("'user' as kind"), 'display_name') : [],
        ids.accounts.length ? knex('accounts').whereIn('id', ids.accounts).select('id', knex.raw("'account' as kind"), 'name as display_name') : [],
        ids.roles.length ? knex('account_roles').whereIn('id', ids.roles).select('id', knex.raw("'role' as kind"), 'name as display_name') : [],
      ]);
      return [...users, ...accounts, ...roles] as ResolvedNameRow[];
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
