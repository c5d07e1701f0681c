/** Session rows (knex). Returns rows as stored; the service decides what they mean. */
import type { Knex } from 'knex';
import type { SessionSource } from '../../auth/verifiers';
import { revokedAmong } from '../../infra/db/database';
import { hotRead } from '../../infra/db/hot-read';
import { schemaRows, tableColumns, type RowOf, type StoredRow } from '../../infra/db/rows';
import { ACCESS_GUARD } from '../../auth/access-version';
import type { SessionInfo } from './types';

/**
 * A session row as stored (not a schema: it carries the refresh token id, and the auth layer checks
 * it behind every JWT in stored form, `SessionSource`); the service mints from it. Its columns are
 * the migration's (generated/tables.ts).
 */
const sessionColumns = tableColumns('sessions');
export type SessionRow = StoredRow<typeof sessionColumns>;
const sessionSelect = Object.keys(sessionColumns);

/** An open session as its user lists it (the service marks the caller's own as `current`). */
const listedOf = schemaRows('Session', { omit: ['current'] });

/** `last_used_at` is written at most once a minute per session, not on every request. */
const TOUCH_INTERVAL = "interval '1 minute'";

export function createSessionsRepo(knex: Knex) {
  return {
    /** sessions.insert */
    async insert(row: Omit<RowOf<typeof sessionColumns>, 'created_at' | 'last_used_at' | 'revoked_at'>): Promise<void> {
      await knex('sessions').insert(row);
    },
    /** sessions.byId: read behind every JWT request (a hot read: src/infra/db/hot-read.ts) */
    session: hotRead(knex, (id: string): PromiseLike<SessionRow | undefined> => knex('sessions').where({ id }).first(sessionSelect), (id) => id, () => ACCESS_GUARD),
    /** sessions.touch */
    async touch(id: string): Promise<void> {
      await knex('sessions').where({ id }).whereRaw(`last_used_at < now() - ${TOUCH_INTERVAL}`).update({ last_used_at: knex.fn.now() });
    },
    /** sessions.rotate: compare-and-set of the refresh token id; 0 rows means the old one was replayed */
    async rotateRefresh(id: string, expected: string, next: string, accountId?: string | null): Promise<boolean> {
      const updated = await knex('sessions')
        .where({ id, refresh_jti: expected })
        .whereNull('revoked_at')
        .update({ refresh_jti: next, last_used_at: knex.fn.now(), ...(accountId !== undefined ? { account_id: accountId } : {}) });
      return updated > 0;
    },
    /** sessions.revoke */
    async revoke(id: string, userId?: string): Promise<boolean> {
      const query = knex('sessions').where({ id }).whereNull('revoked_at');
      if (userId) query.where({ user_id: userId });
      return (await query.update({ revoked_at: knex.fn.now() })) > 0;
    },
    /** sessions.revokedAmong: which of `ids` are revoked or gone (the periodic WebSocket re-check) */
    revokedAmong: (ids: readonly string[]): Promise<Set<string>> => revokedAmong(knex, 'sessions', 'id', ids),
    /** sessions.revokeAllOfUser: revokes every open session of a user; answers their ids */
    async revokeAllOfUser(userId: string): Promise<string[]> {
      const rows: { id: string }[] = await knex('sessions').where({ user_id: userId }).whereNull('revoked_at').update({ revoked_at: knex.fn.now() }).returning('id');
      return rows.map((r) => r.id);
    },
    /** sessions.openInAccount: ids of open sessions whose active account is `accountId` */
    async openInAccount(accountId: string): Promise<string[]> {
      const rows: { id: string }[] = await knex('sessions').where({ account_id: accountId }).whereNull('revoked_at').where('expires_at', '>', knex.fn.now()).select('id');
      return rows.map((r) => r.id);
    },
    /** sessions.openOfUser: open sessions, newest first */
    async openOfUser(userId: string): Promise<Omit<SessionInfo, 'current'>[]> {
      const rows = await knex('sessions')
        .where({ user_id: userId })
        .whereNull('revoked_at')
        .where('expires_at', '>', knex.fn.now())
        .select(knex.raw(listedOf.select))
        .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]);
      return rows.map((row: Record<string, unknown>) => listedOf.map(row));
    },
  };
}

export type SessionsRepo = ReturnType<typeof createSessionsRepo> & SessionSource;
