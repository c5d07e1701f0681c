/** Event storage (knex). Each query carries a short name comment for slow-query logs. */
import type { Knex } from 'knex';
import { fromJson } from '../../infra/db/database';
import { hotRead } from '../../infra/db/hot-read';

export interface EventRow {
  id: string;
  account_id: string;
  type: string;
  platform: string;
  external_id: string | null;
  raw: Record<string, unknown>;
  hidden: boolean;
  created_at: Date;
}

export interface EventQuery {
  types?: readonly string[];
  platforms?: readonly string[];
  userId?: string;
  search?: string;
  from?: Date;
  to?: Date;
}

const parse = (row: EventRow): EventRow => ({ ...row, raw: fromJson<Record<string, unknown>>(row.raw, {}) });

/** The UTC calendar day of an instant, `YYYY-MM-DD` (the `event_counts.day` of a row created then). */
const utcDay = (at: Date): string => at.toISOString().slice(0, 10);
const utcMidnight = (at: Date): Date => new Date(`${utcDay(at)}T00:00:00.000Z`);
const nextUtcMidnight = (at: Date): Date => new Date(utcMidnight(at).getTime() + 86_400_000);

/** `%`, `_` and the escape character match literally inside an ILIKE pattern. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * One row per account, `(account_id, days)`: the effective `chat_retention_days` (Part 2,
 * "Retention"): the account's own override wins, else its plan's, else the default plan's.
 * Shared with every module whose rows follow the same window (chat), through the events API.
 */
export const RETENTION_WINDOWS_SQL = `
  select a.id as account_id, coalesce(a.chat_retention_days, p.chat_retention_days, d.chat_retention_days, 0) as days
  from accounts a
  left join plans p on p.id = a.plan_id
  left join lateral (select chat_retention_days from plans where is_default order by created_at limit 1) d on true`;

export function createEventsRepo(knex: Knex) {
  function filtered(accountId: string, q: EventQuery) {
    const query = knex('events').where({ account_id: accountId, hidden: false });
    if (q.types?.length) query.whereIn('type', [...q.types]);
    if (q.platforms?.length) query.whereIn('platform', [...q.platforms]);
    if (q.userId !== undefined) query.whereRaw("(raw ->> 'user_id') = ?", [q.userId]);
    if (q.search) query.whereRaw("(raw::text) ilike ? escape '\\'", [`%${likeLiteral(q.search)}%`]);
    if (q.from) query.where('created_at', '>', q.from);
    if (q.to) query.where('created_at', '<', q.to);
    return query;
  }

  /**
   * The exact number of rows a filter matches. Filters on rows' contents (`user_id`, `search`)
   * count the matching rows through their indexes. Types, platform and time alone are answered
   * from `event_counts` (visible rows per UTC day, type and platform; migrations.ts): whole days
   * strictly inside the range are summed, and only the rows of the day `from` falls in and the day
   * `to` falls in are counted one by one.
   */
  function total(accountId: string, q: EventQuery): Knex.QueryBuilder {
    const counted = (query: Knex.QueryBuilder) => query.clearSelect().count<{ count: string }[]>({ count: '*' });
    if (q.userId !== undefined || q.search) return counted(filtered(accountId, q));
    const { from, to } = q;
    if (from && to && utcDay(from) === utcDay(to)) return counted(filtered(accountId, q));
    const days = knex('event_counts').where({ account_id: accountId }).sum<{ count: string }[]>({ count: 'n' });
    if (q.types?.length) days.whereIn('type', [...q.types]);
    if (q.platforms?.length) days.whereIn('platform', [...q.platforms]);
    if (from) days.where('day', '>', utcDay(from));
    if (to) days.where('day', '<', utcDay(to));
    const parts = [days];
    if (from) parts.push(counted(filtered(accountId, { ...q, to: nextUtcMidnight(from) })));
    if (to) parts.push(counted(filtered(accountId, { ...q, from: undefined }).where('created_at', '>=', utcMidnight(to))));
    return knex.select(knex.raw(parts.map(() => 'coalesce((?), 0)').join(' + ') + ' as count', parts));
  }

  /** `_since` is for the hot read below (when the request arrived), not the query. */
  async function page(accountId: string, q: EventQuery, limit: number, offset: number, _since?: number): Promise<{ rows: EventRow[]; total: number }> {
    const empty = q.from !== undefined && q.to !== undefined && q.from >= q.to;
    const [rows, count] = await Promise.all([
      filtered(accountId, q).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit).offset(offset),
      empty ? Promise.resolve({ count: 0 }) : total(accountId, q).first(),
    ]);
    return { rows: (rows as EventRow[]).map(parse), total: Number(count?.count ?? 0) };
  }

  return {
    /**
     * events.page: newest first, hidden community gift rows left out; `total` is exact (see
     * `total`). A hot read (src/infra/db/hot-read.ts): the browser sources of one account load the
     * same page at once.
     */
    page: hotRead(
      knex,
      page,
      (accountId: string, q: EventQuery, limit: number, offset: number, _since?: number) => JSON.stringify([accountId, q, limit, offset]),
      (accountId) => ({ id: `events:${accountId}`, sql: 'select n from event_versions where account_id = ?', bindings: [accountId] }),
      // A page holds up to 100 rows with their raw payloads: keep fewer of them than of small reads.
      { max: 1_000, sinceOf: (_accountId, _q, _limit, _offset, since) => since },
    ),
    /** events.byId */
    async byId(accountId: string, id: string, db: Knex | Knex.Transaction = knex): Promise<EventRow | undefined> {
      const row = await db('events').where({ id, account_id: accountId }).first();
      return row ? parse(row) : undefined;
    },
    /** events.byExternalId */
    async byExternalId(accountId: string, externalId: string, db: Knex | Knex.Transaction = knex): Promise<EventRow | undefined> {
      const row = await db('events').where({ account_id: accountId, external_id: externalId }).first();
      return row ? parse(row) : undefined;
    },
    /** events.insert: answers undefined when the (account, external id) pair exists already */
    async insert(row: Omit<EventRow, 'created_at'> & { created_at?: Date }, db: Knex | Knex.Transaction = knex): Promise<EventRow | undefined> {
      const [inserted] = await db('events')
        .insert({ ...row, raw: JSON.stringify(row.raw) })
        .onConflict(['account_id', 'external_id'])
        .ignore()
        .returning('*');
      return inserted ? parse(inserted) : undefined;
    },
    /** events.giftRows: the rows of one community gift (header and individual notices), oldest first */
    async giftRows(accountId: string, communityGiftId: string, db: Knex | Knex.Transaction = knex): Promise<EventRow[]> {
      const rows = await db('events')
        .where({ account_id: accountId })
        .whereRaw("(raw ->> 'community_gift_id') = ?", [communityGiftId])
        .orderBy([{ column: 'created_at', order: 'asc' }, { column: 'id', order: 'asc' }]);
      return (rows as EventRow[]).map(parse);
    },
    /** events.updateRaw */
    async updateRaw(id: string, raw: Record<string, unknown>, db: Knex | Knex.Transaction = knex): Promise<EventRow | undefined> {
      const [row] = await db('events').where({ id }).update({ raw: JSON.stringify(raw) }).returning('*');
      return row ? parse(row) : undefined;
    },
    /**
     * events.retentionSweep: deletes every account's events older than its effective
     * `chat_retention_days` (RETENTION_WINDOWS_SQL); 0 keeps forever.
     */
    async deleteExpired(): Promise<number> {
      const result = await knex.raw(`
        with windows as (${RETENTION_WINDOWS_SQL}),
        deleted as (
          delete from events e using windows w
          where e.account_id = w.account_id and w.days > 0 and e.created_at < now() - (w.days * interval '1 day')
          returning 1
        )
        select count(*)::int as n from deleted`);
      const rows = (result.rows ?? result) as { n: number }[];
      return Number(rows[0]?.n ?? 0);
    },
    /** events.accountExists */
    async accountExists(accountId: string): Promise<boolean> {
      return Boolean(await knex('accounts').where({ id: accountId }).first('id'));
    },
  };
}

export type EventsRepo = ReturnType<typeof createEventsRepo>;
