/** Storage of account channel connections (knex). Reads answer domain values (src/infra/db/rows.ts). */
import type { Knex } from 'knex';
import { rowMapping, schemaRows, tableColumns, type RowOf, type RowValue } from '../../infra/db/rows';
import type { components } from '../../../generated/openapi';
import type { CredentialKind } from './platforms';
import type { LoginAssignment, PlatformSwitches } from './types';

/** An account's channel connection: the stored part of its status (the service computes the rest; no tokens). */
/** Wire forms of the rows written below (the platform as the caller names it). */
type LoginConnection = components['schemas']['LoginConnection'];
type ConnectionStatus = components['schemas']['ConnectionStatus'];

const connectionOf = schemaRows('ConnectionStatus', { omit: ['is_connected', 'login_connected', 'login_reconnect_required'] });
export type AccountConnection = RowValue<typeof connectionOf>;

/** A login connection as the wire shows it (the service's `LoginConnection`, spec `LoginConnection`). */
const loginOf = schemaRows('LoginConnection');
/** A login connection with its owner, which the wire does not carry. */
const loginRecordOf = schemaRows('LoginConnection', { extra: tableColumns('login_connections', ['user_id']) });
export type LoginConnectionRecord = RowValue<typeof loginRecordOf>;

/*
 * Sealed provider grants are not a schema: their tokens never reach the wire (sealed text,
 * src/auth/secrets.ts, opened only in memory by the service), so each read names its columns here;
 * their types are the migrations' (generated/tables.ts; the three tables type them alike).
 */
const sealedColumns = tableColumns('login_connections', ['access_token_sealed', 'refresh_token_sealed', 'scopes', 'reconnect_required']);
/** A login connection's sealed provider grant (not on the wire: sealed tokens). */
const loginGrantOf = rowMapping(tableColumns('login_connections', ['id', 'user_id', 'provider', 'access_token_sealed', 'refresh_token_sealed', 'scopes', 'reconnect_required', 'token_expires_at']));
export type SealedLoginGrant = RowValue<typeof loginGrantOf>;
/** A channel or bot connection's sealed grant (not on the wire: sealed tokens). */
const accountGrantOf = rowMapping({ ...sealedColumns, ...tableColumns('account_connections', ['expires_at']) });
export type SealedAccountGrant = RowValue<typeof accountGrantOf>;

/** A grant as it is written: sealed tokens (an access token always) and the scopes, space-separated. */
export type SealedGrantColumns = Omit<RowOf<typeof sealedColumns>, 'reconnect_required'> & { access_token_sealed: string; scopes: string };

/** A login assignment: GraphQL's `LoginAssignment` (no REST schema for schemaRows to read, as no REST operation answers one). */
const assignmentColumns = tableColumns('login_assignments');
const assignmentOf = rowMapping<typeof assignmentColumns, LoginAssignment>(assignmentColumns);
/** A user's assignment with its connection's flag: a join look-up for the statuses, not on the wire. */
const assignmentStateOf = rowMapping({ ...tableColumns('login_assignments', ['provider'], 'a'), ...tableColumns('login_connections', ['reconnect_required'], 'c') });

/** A platform's switches as stored (spec `PlatformSwitches`; the service turns off the sub-switches a platform does not support). */
const switchesOf = schemaRows('PlatformSwitches');

/** Which stored grant: a login connection's, or an account's channel or bot connection's. */
export type GrantRef = { table: 'login_connections'; id: string } | { table: 'account_connections' | 'account_bot_connections'; accountId: string; platform: string };
const grantWhere = (ref: GrantRef) => (ref.table === 'login_connections' ? { id: ref.id } : { account_id: ref.accountId, platform: ref.platform });

type Db = Knex | Knex.Transaction;
const rows = (list: unknown[]) => list as Record<string, unknown>[];

export function createConnectionsRepo(knex: Knex) {
  return {
    /** connections.loginConnectionsOf: primary first, then oldest */
    async loginConnectionsOf(userId: string, db: Db = knex): Promise<RowValue<typeof loginOf>[]> {
      const found = await db('login_connections').where({ user_id: userId }).select(db.raw(loginOf.select)).orderBy([{ column: 'is_primary', order: 'desc' }, { column: 'created_at' }, { column: 'id' }]);
      return rows(found).map(loginOf.map);
    },
    /** connections.loginConnection */
    async loginConnection(id: string, db: Db = knex): Promise<LoginConnectionRecord | undefined> {
      const row = await db('login_connections').where({ id }).first(db.raw(loginRecordOf.select));
      return row ? loginRecordOf.map(row) : undefined;
    },
    /** connections.upsertLoginConnection: answers the row's id */
    async upsertLoginConnection(db: Knex.Transaction, row: Pick<LoginConnection, 'id' | 'provider' | 'platform_user_id' | 'display_name' | 'reconnect_required'> & { user_id: string }): Promise<string> {
      const existing = await db('login_connections').where({ user_id: row.user_id, provider: row.provider, platform_user_id: row.platform_user_id }).first('id');
      if (existing) {
        await db('login_connections').where({ id: existing.id }).update({ display_name: row.display_name, reconnect_required: row.reconnect_required });
        return existing.id as string;
      }
      const hasPrimary = await db('login_connections').where({ user_id: row.user_id, is_primary: true }).first('id');
      await db('login_connections').insert({ ...row, is_primary: !hasPrimary });
      return row.id;
    },
    /** connections.loginUserOf: the user signed in as this provider subject (oldest link) */
    async loginUserOf(provider: string, subject: string): Promise<string | null> {
      const row = await knex('login_connections').where({ provider, platform_user_id: subject }).orderBy([{ column: 'created_at' }, { column: 'id' }]).first('user_id');
      return (row?.user_id as string | undefined) ?? null;
    },
    /** connections.storeGrant: the sealed grant of a login connection (clears its reconnect flag) */
    async storeGrant(db: Db, id: string, grant: SealedGrantColumns & { token_expires_at: Date | null }): Promise<void> {
      await db('login_connections').where({ id }).update({ ...grant, reconnect_required: false, refresh_claimed_until: null, updated_at: db.fn.now() });
    },
    /** connections.sealedGrant */
    async sealedGrant(id: string): Promise<SealedLoginGrant | undefined> {
      const row = await knex('login_connections').where({ id }).first(knex.raw(loginGrantOf.select));
      return row ? loginGrantOf.map(row) : undefined;
    },
    /** connections.flagLoginReconnect */
    async flagLoginReconnect(id: string): Promise<void> {
      await knex('login_connections').where({ id }).update({ reconnect_required: true, refresh_claimed_until: null, updated_at: knex.fn.now() });
    },
    /** connections.deleteLoginConnection (assignments cascade); the oldest remaining becomes primary */
    async deleteLoginConnection(db: Knex.Transaction, row: LoginConnectionRecord): Promise<void> {
      await db('login_connections').where({ id: row.id }).delete();
      if (row.isPrimary) {
        const next = await db('login_connections').where({ user_id: row.userId }).orderBy([{ column: 'created_at' }, { column: 'id' }]).first('id');
        if (next) await db('login_connections').where({ id: next.id }).update({ is_primary: true });
      }
    },
    /** connections.setPrimary */
    async setPrimary(db: Knex.Transaction, userId: string, id: string): Promise<void> {
      await db('login_connections').where({ user_id: userId }).update({ is_primary: false });
      await db('login_connections').where({ id }).update({ is_primary: true });
    },
    /** connections.assignments: of one user in one account */
    async assignments(accountId: string, userId: string): Promise<LoginAssignment[]> {
      const found = await knex('login_assignments').where({ account_id: accountId, user_id: userId }).select(knex.raw(assignmentOf.select)).orderBy([{ column: 'provider' }]);
      return rows(found).map(assignmentOf.map);
    },
    /** connections.assignmentsWithState: the user's assignments in the account with their connection's flag */
    async assignmentsWithState(accountId: string, userId: string): Promise<{ provider: string; reconnectRequired: boolean }[]> {
      const found = await knex('login_assignments as a')
        .join('login_connections as c', 'c.id', 'a.login_connection_id')
        .where({ 'a.account_id': accountId, 'a.user_id': userId })
        .select(knex.raw(assignmentStateOf.select));
      return rows(found).map(assignmentStateOf.map);
    },
    /** connections.upsertAssignment: answers the assignment */
    async upsertAssignment(db: Knex.Transaction, row: Omit<RowOf<typeof assignmentColumns>, 'created_at'>): Promise<LoginAssignment> {
      await db('login_assignments')
        .insert(row)
        .onConflict(['account_id', 'user_id', 'provider'])
        .merge({ login_connection_id: row.login_connection_id });
      return assignmentOf.map(await db('login_assignments').where({ account_id: row.account_id, user_id: row.user_id, provider: row.provider }).first(db.raw(assignmentOf.select)));
    },
    /** connections.removeAssignment: the removed assignment's id, null when there was none */
    async removeAssignment(db: Knex.Transaction, accountId: string, userId: string, provider: string): Promise<string | null> {
      const removed = (await db('login_assignments').where({ account_id: accountId, user_id: userId, provider }).delete().returning('id')) as { id: string }[];
      return removed[0]?.id ?? null;
    },
    /** connections.isMember */
    async isMember(accountId: string, userId: string): Promise<boolean> {
      return Boolean(await knex('account_members').where({ account_id: accountId, user_id: userId }).first('user_id'));
    },
    /** connections.userExists */
    async userExists(userId: string): Promise<boolean> {
      return Boolean(await knex('users').where({ id: userId }).first('id'));
    },
    /** connections.switches */
    async switches(): Promise<PlatformSwitches[]> {
      return rows(await knex('platform_switches').select(knex.raw(switchesOf.select)).orderBy('platform')).map(switchesOf.map);
    },
    /** connections.setSwitches */
    async setSwitches(db: Knex.Transaction, platform: string, patch: Partial<Record<'enabled' | 'login_enabled' | 'channel_enabled' | 'bot_enabled', boolean>>): Promise<void> {
      await db('platform_switches').where({ platform }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** connections.ofAccount */
    async ofAccount(accountId: string): Promise<AccountConnection[]> {
      return rows(await knex('account_connections').where({ account_id: accountId }).select(knex.raw(connectionOf.select))).map(connectionOf.map);
    },
    /** connections.channelsOfAccount: the connected channels' ids, by platform */
    async channelsOfAccount(accountId: string): Promise<{ platform: string; platformChannelId: string }[]> {
      const found = (await knex('account_connections').where({ account_id: accountId }).orderBy('platform').select('platform', 'platform_channel_id')) as { platform: string; platform_channel_id: string }[];
      return found.map((r) => ({ platform: r.platform, platformChannelId: r.platform_channel_id }));
    },
    /** connections.accountExists */
    async accountExists(accountId: string): Promise<boolean> {
      return Boolean(await knex('accounts').where({ id: accountId }).first('id'));
    },
    /** connections.upsert */
    async upsert(db: Knex.Transaction, row: Pick<ConnectionStatus, 'expires_at' | 'reconnect_required'> & { account_id: string; platform: string; platform_channel_id: string }): Promise<void> {
      await db('account_connections')
        .insert(row)
        .onConflict(['account_id', 'platform'])
        .merge({ platform_channel_id: row.platform_channel_id, expires_at: row.expires_at, reconnect_required: row.reconnect_required, updated_at: db.fn.now() });
    },
    /** connections.storeAccountGrant: a channel or bot connection made through the sign-in flow */
    async storeAccountGrant(db: Knex.Transaction, table: 'account_connections' | 'account_bot_connections', row: { account_id: string; platform: string; subject: string } & SealedGrantColumns & { expires_at: Date | null }): Promise<void> {
      const { subject, ...rest } = row;
      const columns = { ...rest, ...(table === 'account_connections' ? { platform_channel_id: subject } : { platform_user_id: subject }), reconnect_required: false };
      await db(table).insert(columns).onConflict(['account_id', 'platform']).merge({ ...columns, updated_at: db.fn.now() });
    },
    /** connections.accountGrant: the sealed grant of a channel or bot connection */
    async accountGrant(table: 'account_connections' | 'account_bot_connections', accountId: string, platform: string): Promise<SealedAccountGrant | undefined> {
      const row = await knex(table).where({ account_id: accountId, platform }).first(knex.raw(accountGrantOf.select));
      return row ? accountGrantOf.map(row) : undefined;
    },
    /** connections.replaceAccountGrant */
    async replaceAccountGrant(table: 'account_connections' | 'account_bot_connections', accountId: string, platform: string, grant: SealedGrantColumns & { expires_at: Date | null }): Promise<void> {
      await knex(table).where({ account_id: accountId, platform }).update({ ...grant, reconnect_required: false, refresh_claimed_until: null, updated_at: knex.fn.now() });
    },
    /** connections.flagAccountReconnect */
    async flagAccountReconnect(table: 'account_connections' | 'account_bot_connections', accountId: string, platform: string): Promise<void> {
      await knex(table).where({ account_id: accountId, platform }).update({ reconnect_required: true, refresh_claimed_until: null, updated_at: knex.fn.now() });
    },
    /**
     * connections.claimRefresh: the claim on a grant's refresh until `until`, when nobody holds an
     * unexpired one (one atomic UPDATE, so of two nodes asking at once one gets it); answers the
     * claim (its instant, which `releaseRefresh` names) or null.
     */
    async claimRefresh(ref: GrantRef, now: Date, until: Date): Promise<Date | null> {
      const claimed: unknown[] = await knex(ref.table)
        .where(grantWhere(ref))
        .where((q) => q.whereNull('refresh_claimed_until').orWhere('refresh_claimed_until', '<', now))
        .update({ refresh_claimed_until: until })
        .returning('refresh_claimed_until');
      return claimed.length > 0 ? until : null;
    },
    /** connections.releaseRefresh: gives up this claim (not a later one of another node) */
    async releaseRefresh(ref: GrantRef, claim: Date): Promise<void> {
      await knex(ref.table).where(grantWhere(ref)).where({ refresh_claimed_until: claim }).update({ refresh_claimed_until: null });
    },
    /** connections.removeAccountGrant: true when one was removed */
    async removeAccountGrant(db: Knex.Transaction, table: 'account_connections' | 'account_bot_connections', accountId: string, platform: string): Promise<boolean> {
      const removed: unknown[] = await db(table).where({ account_id: accountId, platform }).delete().returning('platform');
      return removed.length > 0;
    },
    /**
     * connections.dueGrants: stored, unflagged grants expiring before `before` that a refresh can
     * renew (a refresh token) or that have expired (to be flagged), soonest first, per kind
     */
    async dueGrants(before: Date, limit: number): Promise<({ type: 'login'; id: string; expiresAt: Date } | { type: CredentialKind; accountId: string; platform: string; expiresAt: Date })[]> {
      const renewable = (expiry: string) => (q: Knex.QueryBuilder) => q.whereNotNull('refresh_token_sealed').orWhere(expiry, '<', new Date());
      const [logins, channels, bots] = await Promise.all([
        knex('login_connections').whereNotNull('access_token_sealed').where({ reconnect_required: false }).where('token_expires_at', '<', before).where(renewable('token_expires_at')).orderBy('token_expires_at').limit(limit).select('id', 'token_expires_at'),
        ...(['account_connections', 'account_bot_connections'] as const).map((table) =>
          knex(table).whereNotNull('access_token_sealed').where({ reconnect_required: false }).where('expires_at', '<', before).where(renewable('expires_at')).orderBy('expires_at').limit(limit).select('account_id', 'platform', 'expires_at'),
        ),
      ]);
      return [
        ...logins.map((r: { id: string; token_expires_at: Date }) => ({ type: 'login' as const, id: r.id, expiresAt: new Date(r.token_expires_at) })),
        ...channels!.map((r: { account_id: string; platform: string; expires_at: Date }) => ({ type: 'channel' as const, accountId: r.account_id, platform: r.platform, expiresAt: new Date(r.expires_at) })),
        ...bots!.map((r: { account_id: string; platform: string; expires_at: Date }) => ({ type: 'bot' as const, accountId: r.account_id, platform: r.platform, expiresAt: new Date(r.expires_at) })),
      ]
        .sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime())
        .slice(0, limit);
    },
    /** connections.remove: true when one was removed */
    async remove(db: Knex.Transaction, accountId: string, platform: string): Promise<boolean> {
      const removed: unknown[] = await db('account_connections').where({ account_id: accountId, platform }).delete().returning('platform');
      return removed.length > 0;
    },
  };
}

export type ConnectionsRepo = ReturnType<typeof createConnectionsRepo>;
