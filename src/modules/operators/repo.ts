/**
 * What operators read and change of users and accounts (knex): search, detail, suspension, the
 * per-user overrides, user role assignments and deletion. The tables are the accounts module's; this
 * module owns the operator columns (`suspended_at`, `suspended_reason`, `max_accounts_override`,
 * `developer_override`), user role assignments after sign-up, and deleting a user's row (whose
 * foreign keys take their rows elsewhere with it: cascades and `SET NULL`).
 */
import type { Knex } from 'knex';
import { schemaRows, type RowValue } from '../../infra/db/rows';
import { UUID_RE } from '../../infra/ids';

type Db = Knex | Knex.Transaction;

const userOf = schemaRows('AdminUserSummary', {
  from: { owned_account_count: '(select count(*)::int from accounts o where o.owner_id = u.id)' },
  table: 'u',
  extra: {
    max_accounts_override: { type: 'integer', nullable: true, from: 'u.max_accounts_override' },
    developer_override: { type: 'boolean', from: 'u.developer_override' },
  },
});
export type UserRecord = RowValue<typeof userOf>;

const accountOf = schemaRows('AdminAccountSummary', {
  from: {
    id: 'a.id',
    name: 'a.name',
    owner_id: 'a.owner_id',
    owner_email: 'ow.email',
    owner_display_name: 'ow.display_name',
    plan: 'p.slug',
    member_count: '(select count(*)::int from account_members m where m.account_id = a.id)',
    suspended_at: 'a.suspended_at',
    suspended_reason: 'a.suspended_reason',
    created_at: 'a.created_at',
  },
});
export type AccountRecord = RowValue<typeof accountOf>;

const membershipOf = schemaRows('AdminUserAccount', {
  from: { account_id: 'a.id', name: 'a.name', role: 'r.name', is_owner: '(a.owner_id = m.user_id)', suspended_at: 'a.suspended_at' },
});

const memberOf = schemaRows('AdminAccountMember', {
  from: { user_id: 'm.user_id', display_name: 'u.display_name', email: 'u.email', avatar_url: 'u.avatar_url', role_id: 'm.role_id', role: 'r.name', is_owner: '(a.owner_id = m.user_id)', joined_at: 'm.joined_at' },
});

const userRoleOf = schemaRows('UserRoleInfo', {
  from: {
    id: 'ur.id',
    name: 'ur.name',
    is_system: 'ur.is_system',
    assigned_to_every_user: 'ur.assigned_to_every_user',
    permissions: 'ur.permissions',
    admin_permissions: 'ur.admin_permissions',
    member_count: '(select count(*)::int from user_role_assignments x where x.role_id = ur.id)',
  },
});

/** `like` text with its wildcards taken literally. */
const contains = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const mapAll = <T>(mapping: { map(row: Record<string, unknown>): T }, rows: Record<string, unknown>[]) => rows.map((row) => mapping.map(row));

export function createOperatorsRepo(knex: Knex) {
  const users = (db: Db) => db('users as u');
  const accounts = (db: Db) => db('accounts as a').join('users as ow', 'ow.id', 'a.owner_id').leftJoin('plans as p', 'p.id', 'a.plan_id');

  function userSearch(query: Knex.QueryBuilder, q: string | undefined): Knex.QueryBuilder {
    if (!q) return query;
    return query.where((w) => {
      if (UUID_RE.test(q)) w.orWhere('u.id', q);
      w.orWhereRaw('lower(u.email) like lower(?)', [contains(q)]).orWhereRaw('lower(u.display_name) like lower(?)', [contains(q)]);
    });
  }

  function accountSearch(query: Knex.QueryBuilder, q: string | undefined): Knex.QueryBuilder {
    if (!q) return query;
    return query.where((w) => {
      if (UUID_RE.test(q)) w.orWhere('a.id', q);
      w.orWhereRaw('lower(a.name) like lower(?)', [contains(q)]).orWhereRaw('lower(ow.email) like lower(?)', [contains(q)]);
    });
  }

  return {
    /** operators.searchUsers: newest first */
    async searchUsers(q: string | undefined, limit: number, offset: number): Promise<{ rows: UserRecord[]; total: number }> {
      const [rows, count] = await Promise.all([
        userSearch(users(knex), q).select(knex.raw(userOf.select)).orderBy([{ column: 'u.created_at', order: 'desc' }, { column: 'u.id' }]).limit(limit).offset(offset),
        userSearch(users(knex), q).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: mapAll(userOf, rows), total: Number(count?.count ?? 0) };
    },
    /** operators.user */
    async user(id: string, db: Db = knex): Promise<UserRecord | undefined> {
      const row = await users(db).where('u.id', id).first(db.raw(userOf.select));
      return row ? userOf.map(row) : undefined;
    },
    /** operators.lockUser: the user's row, for update (undefined when gone) */
    async lockUser(trx: Knex.Transaction, id: string): Promise<{ suspended_at: Date | null } | undefined> {
      return trx('users').where({ id }).forUpdate().first('suspended_at');
    },
    /** operators.memberships: the user's accounts, oldest membership first */
    async memberships(userId: string) {
      const rows = await knex('account_members as m')
        .join('accounts as a', 'a.id', 'm.account_id')
        .join('account_roles as r', 'r.id', 'm.role_id')
        .where('m.user_id', userId)
        .select(knex.raw(membershipOf.select))
        .orderBy([{ column: 'm.joined_at' }, { column: 'a.id' }]);
      return mapAll(membershipOf, rows);
    },
    /** operators.roleNames: the names of the user and admin roles a user holds, sorted */
    async roleNames(userId: string): Promise<{ user: string[]; admin: string[] }> {
      const [user, admin] = await Promise.all([
        knex('user_role_assignments as x').join('user_roles as ur', 'ur.id', 'x.role_id').where('x.user_id', userId).orderBy('ur.name').pluck('ur.name'),
        knex('admin_role_assignments as x').join('admin_roles as ar', 'ar.id', 'x.role_id').where('x.user_id', userId).orderBy('ar.name').pluck('ar.name'),
      ]);
      return { user: user as string[], admin: admin as string[] };
    },
    /** operators.lockUserForDelete: the user's row, for update, with what the erasure needs of it */
    async lockUserForDelete(trx: Knex.Transaction, id: string): Promise<{ email: string | null } | undefined> {
      return trx('users').where({ id }).forUpdate().first('email');
    },
    /** operators.adminRoleCount: how many admin roles a user holds (a system admin holds one or more) */
    async adminRoleCount(trx: Knex.Transaction, userId: string): Promise<number> {
      const row = await trx('admin_role_assignments').where({ user_id: userId }).count<{ count: string }[]>({ count: '*' }).first();
      return Number(row?.count ?? 0);
    },
    /**
     * operators.ownedAccounts: the accounts a user owns, locked for update (no member joins while the
     * deletion decides), each with how many other members it has
     */
    async ownedAccounts(trx: Knex.Transaction, userId: string): Promise<{ id: string; others: number }[]> {
      const ids = (await trx('accounts').where({ owner_id: userId }).forUpdate().orderBy('id').pluck('id')) as string[];
      if (!ids.length) return [];
      const counts = (await trx('account_members').whereIn('account_id', ids).whereNot('user_id', userId).groupBy('account_id').select('account_id', trx.raw('count(*)::int as n'))) as { account_id: string; n: number }[];
      const others = new Map(counts.map((c) => [c.account_id, Number(c.n)]));
      return ids.map((id) => ({ id, others: others.get(id) ?? 0 }));
    },
    /**
     * operators.credentialsOfDeletion: what stands on a user and on the accounts going with them, read
     * before the rows go: open login sessions (by id) and live tokens and keys (by hash)
     */
    async credentialsOfDeletion(trx: Knex.Transaction, userId: string, accountIds: readonly string[]): Promise<{ sessions: string[]; tokens: string[] }> {
      const standing = (table: 'sessions' | 'credentials', column: 'id' | 'token_hash') =>
        trx(table)
          .where((w) => {
            w.where('user_id', userId);
            if (accountIds.length) w.orWhereIn('account_id', [...accountIds]);
          })
          .whereNull('revoked_at')
          .pluck(column) as Promise<string[]>;
      const sessions = await standing('sessions', 'id');
      const tokens = await standing('credentials', 'token_hash');
      return { sessions, tokens: tokens.map((hash) => hash.trim()) };
    },
    /** operators.deleteUser: the user's row; its foreign keys cascade to what is theirs (accounts they own included) */
    async deleteUser(trx: Knex.Transaction, id: string): Promise<number> {
      return ((await trx('users').where({ id }).delete().returning('id')) as unknown[]).length;
    },
    /** operators.setUserSuspension: suspends (a time) or restores (null) */
    async setUserSuspension(trx: Knex.Transaction, id: string, reason: string | null, suspend: boolean): Promise<void> {
      await trx('users')
        .where({ id })
        .update({ suspended_at: suspend ? trx.fn.now() : null, suspended_reason: suspend ? reason : null, updated_at: trx.fn.now() });
    },
    /** operators.setUserOverrides */
    async setUserOverrides(trx: Knex.Transaction, id: string, patch: { max_accounts_override?: number | null; developer_override?: boolean }): Promise<void> {
      await trx('users').where({ id }).update({ ...patch, updated_at: trx.fn.now() });
    },
    /** operators.credentialHashesOfUser: hashes of the live tokens a user holds (their sockets close on suspension) */
    async credentialHashesOfUser(userId: string): Promise<string[]> {
      return (await knex('credentials').where({ user_id: userId }).whereNull('revoked_at').pluck('token_hash')) as string[];
    },
    /** operators.credentialHashesOfAccount: hashes of the live tokens bound to an account */
    async credentialHashesOfAccount(accountId: string): Promise<string[]> {
      return (await knex('credentials').where({ account_id: accountId }).whereNull('revoked_at').pluck('token_hash')) as string[];
    },

    /** operators.userRoles: every user role, by name */
    async userRoles(db: Db = knex) {
      return mapAll(userRoleOf, await db('user_roles as ur').select(db.raw(userRoleOf.select)).orderBy([{ column: 'ur.name' }, { column: 'ur.id' }]));
    },
    /** operators.userRoleIds: the ids of the user roles a user holds */
    async userRoleIds(trx: Knex.Transaction, userId: string): Promise<string[]> {
      return (await trx('user_role_assignments').where({ user_id: userId }).pluck('role_id')) as string[];
    },
    /** operators.knownUserRoles: which of these ids are user roles */
    async knownUserRoles(trx: Knex.Transaction, ids: readonly string[]): Promise<Set<string>> {
      return new Set((await trx('user_roles').whereIn('id', [...ids]).pluck('id')) as string[]);
    },
    /** operators.setUserRoles: adds and removes assignments */
    async changeUserRoles(trx: Knex.Transaction, userId: string, add: readonly string[], remove: readonly string[]): Promise<void> {
      if (remove.length) await trx('user_role_assignments').where({ user_id: userId }).whereIn('role_id', [...remove]).delete();
      if (add.length) await trx('user_role_assignments').insert(add.map((role_id) => ({ user_id: userId, role_id }))).onConflict(['user_id', 'role_id']).ignore();
    },

    /** operators.searchAccounts: newest first */
    async searchAccounts(q: string | undefined, limit: number, offset: number): Promise<{ rows: AccountRecord[]; total: number }> {
      const [rows, count] = await Promise.all([
        accountSearch(accounts(knex), q).select(knex.raw(accountOf.select)).orderBy([{ column: 'a.created_at', order: 'desc' }, { column: 'a.id' }]).limit(limit).offset(offset),
        accountSearch(accounts(knex), q).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: mapAll(accountOf, rows), total: Number(count?.count ?? 0) };
    },
    /** operators.account */
    async account(id: string, db: Db = knex): Promise<AccountRecord | undefined> {
      const row = await accounts(db).where('a.id', id).first(db.raw(accountOf.select));
      return row ? accountOf.map(row) : undefined;
    },
    /** operators.lockAccount: the account's row, for update */
    async lockAccount(trx: Knex.Transaction, id: string): Promise<{ suspended_at: Date | null } | undefined> {
      return trx('accounts').where({ id }).forUpdate().first('suspended_at');
    },
    /** operators.setAccountSuspension */
    async setAccountSuspension(trx: Knex.Transaction, id: string, reason: string | null, suspend: boolean): Promise<void> {
      await trx('accounts')
        .where({ id })
        .update({ suspended_at: suspend ? trx.fn.now() : null, suspended_reason: suspend ? reason : null, updated_at: trx.fn.now() });
    },
    /** operators.members: an account's members, oldest first */
    async members(accountId: string) {
      const rows = await knex('account_members as m')
        .join('users as u', 'u.id', 'm.user_id')
        .join('account_roles as r', 'r.id', 'm.role_id')
        .join('accounts as a', 'a.id', 'm.account_id')
        .where('m.account_id', accountId)
        .select(knex.raw(memberOf.select))
        .orderBy([{ column: 'm.joined_at' }, { column: 'm.user_id' }]);
      return mapAll(memberOf, rows);
    },
    /** operators.plan: the account's plan, else the default plan */
    async plan(accountId: string): Promise<{ id: string; slug: string; name: string } | undefined> {
      const own = await knex('accounts as a').join('plans as p', 'p.id', 'a.plan_id').where('a.id', accountId).first('p.id', 'p.slug', 'p.name');
      return own ?? (await knex('plans').where({ is_default: true }).orderBy('created_at').first('id', 'slug', 'name'));
    },
    /** operators.overrides: an account's feature overrides, retention, and its owner's overrides */
    async overrides(accountId: string) {
      const [features, account] = await Promise.all([
        knex('account_feature_overrides').where({ account_id: accountId }).orderBy('feature_key').select('feature_key', 'enabled'),
        knex('accounts as a').join('users as ow', 'ow.id', 'a.owner_id').where('a.id', accountId).first('a.chat_retention_days', 'ow.max_accounts_override', 'ow.developer_override'),
      ]);
      return {
        featureOverrides: (features as { feature_key: string; enabled: boolean }[]).map((f) => ({ featureKey: f.feature_key, enabled: Boolean(f.enabled) })),
        chatRetentionDays: account?.chat_retention_days ?? null,
        ownerMaxAccountsOverride: account?.max_accounts_override ?? null,
        ownerDeveloperOverride: Boolean(account?.developer_override),
      };
    },
  };
}

export type OperatorsRepo = ReturnType<typeof createOperatorsRepo>;
