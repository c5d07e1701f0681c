/** Event storage (knex). Each query carries a short name comment for slow-query logs. */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { openapiDocument } from '../../../generated/openapi-document';
import { fromJson } from '../../infra/db/database';
import { hotRead } from '../../infra/db/hot-read';
import { JsonText } from '../../infra/json-bytes';
import { schemaRows, type RowValue } from '../../infra/db/rows';
import { onPostgres, statement } from '../../infra/db/statement';

/**
 * A stored event as the driver answers it (`returning *`, the gift bundler's and the replay's
 * rows): the spec's `Event` with its time as a Date, and `hidden`, which the wire does not carry.
 */
export type EventRow = Omit<components['schemas']['Event'], 'created_at'> & { created_at: Date; hidden: boolean };

export interface EventQuery {
  types?: readonly string[];
  platforms?: readonly string[];
  userId?: string;
  search?: string;
  from?: Date;
  to?: Date;
}

const parse = (row: EventRow): EventRow => ({ ...row, raw: fromJson<Record<string, unknown>>(row.raw, {}) });

/**
 * An event as the API shows it: the spec's `Event` schema (src/infra/db/rows.ts `schemaRows`), whose
 * `type` GraphQL calls `eventType`: both are members, `event_type` selected from the `type` column.
 */
const itemOf = schemaRows('Event', { extra: { event_type: { type: 'text', from: 'type' } } });
export type EventItem = RowValue<typeof itemOf>;

/** A stored row (`returning *`, the gift bundler's rows) in its API form, by the same mapping as a page's rows. */
export const itemOfRow = (row: EventRow): EventItem => itemOf.map({ ...row, event_type: row.type });

/**
 * An event of a page as the API writes it, rendered by the database as JSON text (`textPage`): the
 * spec's `Event` members in the schema's order under their wire names, each written as the
 * parse-and-serialise path wrote it (rows.ts `map`, src/http/mapping.ts `toWire`, JSON.stringify):
 * strings by `to_json` (PostgreSQL's escapes are JSON.stringify's), a date-time as the API's
 * `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC (milliseconds truncated, as the driver's Date truncates them),
 * opaque JSON (`raw`) as its stored API text (`raw_text`, written by `api_json`: migrations.ts), null as `null`. Made from the schema, so a
 * member added to `Event` is rendered (or refused here, for a type this does not know) rather
 * than silently left out; test/modules/events-splice.test.ts compares the bytes.
 */
function wireItemSql(alias: string): string {
  const properties: Record<string, { type?: string; format?: string }> = openapiDocument.components.schemas.Event.properties;
  const members = Object.entries(properties).map(([name, schema], i) => {
    const column = `${alias}.${name}`;
    let value: string;
    if (schema.type === 'string' && schema.format === 'date-time') value = `'"' || to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'`;
    else if (schema.type === 'string') value = `to_json(${column})::text`;
    // An object member (`raw`) is stored beside itself as the API's text (migrations.ts `raw_text`).
    else if (schema.type === 'object') value = `${column}_text`;
    else throw new Error(`events wire item: no JSON rendering for member ${name} (${String(schema.type)})`);
    return `'${i === 0 ? '{' : ','}"${name}":' || coalesce(${value}, 'null')`;
  });
  return `${members.join(' || ')} || '}'`;
}
const WIRE_ITEM = wireItemSql('e');

/** SQL text with `?` placeholders and their values, in order. */
interface Sql {
  text: string;
  values: unknown[];
}

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

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

/**
 * The conditions of a filter on `events` (the visible rows of one account), as SQL text. The text
 * depends on which filters are set (and how many types and platforms), not on their values: few
 * distinct texts, each prepared once per connection (statement.ts).
 */
function conditions(accountId: string, q: EventQuery, override: { from?: Date | null; to?: Date | null; atOrAfter?: Date } = {}): Sql {
  const text = ['account_id = ? and hidden = false'];
  const values: unknown[] = [accountId];
  if (q.types?.length) {
    text.push(`type in (${placeholders(q.types.length)})`);
    values.push(...q.types);
  }
  if (q.platforms?.length) {
    text.push(`platform in (${placeholders(q.platforms.length)})`);
    values.push(...q.platforms);
  }
  if (q.userId !== undefined) {
    text.push("(raw ->> 'user_id') = ?");
    values.push(q.userId);
  }
  if (q.search) {
    text.push("(raw::text) ilike ? escape '\\'");
    values.push(`%${likeLiteral(q.search)}%`);
  }
  const from = override.from === undefined ? q.from : override.from;
  const to = override.to === undefined ? q.to : override.to;
  if (from) {
    text.push('created_at > ?');
    values.push(from);
  }
  if (to) {
    text.push('created_at < ?');
    values.push(to);
  }
  if (override.atOrAfter) {
    text.push('created_at >= ?');
    values.push(override.atOrAfter);
  }
  return { text: text.join(' and '), values };
}

const count = (where: Sql): Sql => ({ text: `(select count(*) from events where ${where.text})`, values: where.values });

/**
 * The exact number of rows a filter matches, as one SQL expression. Filters on rows' contents
 * (`user_id`, `search`) count the matching rows through their indexes. Types, platform and time
 * alone are answered from `event_counts` (visible rows per UTC day, type and platform;
 * migrations.ts): whole days strictly inside the range are summed, and only the rows of the day
 * `from` falls in and the day `to` falls in are counted one by one.
 */
function total(accountId: string, q: EventQuery): Sql {
  if (q.from !== undefined && q.to !== undefined && q.from >= q.to) return { text: '0', values: [] };
  if (q.userId !== undefined || q.search) return count(conditions(accountId, q));
  const { from, to } = q;
  if (from && to && utcDay(from) === utcDay(to)) return count(conditions(accountId, q));
  const days = ['account_id = ?'];
  const values: unknown[] = [accountId];
  if (q.types?.length) {
    days.push(`type in (${placeholders(q.types.length)})`);
    values.push(...q.types);
  }
  if (q.platforms?.length) {
    days.push(`platform in (${placeholders(q.platforms.length)})`);
    values.push(...q.platforms);
  }
  if (from) {
    days.push('day > ?');
    values.push(utcDay(from));
  }
  if (to) {
    days.push('day < ?');
    values.push(utcDay(to));
  }
  const parts: Sql[] = [{ text: `(select sum(n) from event_counts where ${days.join(' and ')})`, values }];
  if (from) parts.push(count(conditions(accountId, q, { to: nextUtcMidnight(from) })));
  if (to) parts.push(count(conditions(accountId, q, { from: null, atOrAfter: utcMidnight(to) })));
  return { text: parts.map((p) => `coalesce(${p.text}, 0)`).join(' + '), values: parts.flatMap((p) => p.values) };
}

/** The account's event version (bumped by every write to its events, migrations.ts): what a kept page is checked against. */
const VERSION_SQL = 'select n from event_versions where account_id = ?';

/**
 * events.page as one statement: the page (newest first), its exact total and its byte budget in one
 * round trip.
 *
 * The byte budget: `p` is the requested window of rows with the length of each `raw` as the API's JSON text (its stored `raw_text`);
 * `k` keeps the rows, in order, while their `raw` bytes together stay within `maxBytes` (the first
 * row always: a page never comes back empty while rows remain). Only the kept rows are read in
 * full, so a page of large payloads costs the node at most about `maxBytes` whatever `limit` says;
 * `fetched` (rows in the window) and `kept` tell the service whether the page stopped early.
 * (Written as nested selects, not a `with`: a statement that does not begin with `select` counts
 * as a write for the embedded store's kept reads, src/infra/db/hot-read.ts.)
 *
 * On PostgreSQL the head is one row: the account's event version, the total, the window's figures
 * and the page's items rendered by the database as one JSON array in their domain form
 * (`itemOf.jsonSelect`), which the service parses once instead of decoding a driver row per item
 * (ADR 004, "eighth session"). On the embedded store PGlite runs inside the service process, so
 * rendering there moves no work out of it and grows its WebAssembly heap; there the items are rows
 * that the head (one row) joins to, so a page past the end still answers its total.
 *
 * `'wire'` (either store): the head with the page's events as the API's JSON text (`WIRE_ITEM`
 * per event), which the REST answer splices as it is (`textPage`): one array on PostgreSQL, one
 * event per row on the embedded store (see the statement). That moves the rendering into PGlite
 * on the embedded store too, for an answer that is then text rather than an object per event
 * and payload member.
 */
function pageStatement(accountId: string, q: EventQuery, limit: number, offset: number, maxBytes: number, rendered: boolean | 'wire', onServer: boolean): Sql {
  const counted = total(accountId, q);
  const where = conditions(accountId, q);
  // One plain select (hot-read.ts tells reads from writes by it): the window `p`, the rows it keeps
  // `k` (a running sum of their bytes), and their figures and ids `f`, one row even when empty.
  const p = `select id, created_at, octet_length(raw_text) as b from events where ${where.text} order by created_at desc, id desc limit ? offset ?`;
  const k = `select id, b, n from (select id, b, sum(b) over (order by created_at desc, id desc) as run, count(*) over () as n from (${p}) p) s where run = b or run <= ?`;
  const f = `select coalesce(max(n), 0)::int as fetched, count(*)::int as kept, coalesce(sum(b), 0)::bigint as bytes, array_agg(id) as ids from (${k}) k`;
  const kValues = [...where.values, limit, offset, maxBytes];
  const head = `select (${VERSION_SQL})::text as version, (${counted.text})::bigint as total, f.fetched, f.kept, f.bytes`;
  const items = (list: string, ids: string) => `select ${list} from events e where e.account_id = ? and e.id = any(${ids}) order by e.created_at desc, e.id desc`;
  if (rendered === 'wire') {
    // The items as the API's JSON text (`textPage`): on PostgreSQL one array; on the embedded
    // store one event's text per row, which the service joins (an aggregate of the whole page would
    // grow PGlite's WebAssembly heap, which never shrinks, by the page twice over).
    if (onServer) {
      return {
        text: `/* events.text */ ${head}, (select coalesce('[' || string_agg(${WIRE_ITEM}, ',' order by e.created_at desc, e.id desc) || ']', '[]') from (${items('*', 'f.ids')}) e) as items from (${f}) f`,
        values: [accountId, ...counted.values, accountId, ...kValues],
      };
    }
    return {
      text: `/* events.text */ select t.version, t.total, t.fetched, t.kept, t.bytes, e.item from (${head}, f.ids from (${f}) f) t left join lateral (${items(`${WIRE_ITEM} as item, e.created_at, e.id`, 't.ids')}) e on true order by e.created_at desc, e.id desc`,
      values: [accountId, ...counted.values, ...kValues, accountId],
    };
  }
  if (rendered) {
    return {
      text: `/* events.page */ ${head}, (select coalesce(json_agg(e order by e."createdAt" desc, e.id desc), '[]') from (${items(itemOf.jsonSelect, 'f.ids')}) e)::text as items from (${f}) f`,
      values: [accountId, ...counted.values, accountId, ...kValues],
    };
  }
  return {
    text: `/* events.page */ select t.version, t.total, t.fetched, t.kept, t.bytes, e.* from (${head}, f.ids from (${f}) f) t left join lateral (${items(itemOf.select, 't.ids')}) e on true order by e.created_at desc, e.id desc`,
    values: [accountId, ...counted.values, ...kValues, accountId],
  };
}

/** A page of events with what the byte budget did: `truncated` when rows of the window were left for the next page. */
export interface EventPage {
  items: EventItem[];
  total: number;
  truncated: boolean;
  /** The `raw` bytes (as JSON text) of the page's items. */
  bytes: number;
}

/**
 * A page of events as the API's JSON text (`textPage`): `items` is the JSON array of the page's
 * events exactly as the REST answer carries them, `count` how many it holds. Kept by the page
 * cache as it is (one string per page, not an object per event and payload member).
 */
export interface EventTextPage {
  items: JsonText;
  count: number;
  total: number;
  truncated: boolean;
  bytes: number;
}

/**
 * The bytes of `raw` (as JSON text) one page of `GET /v1/events` may carry (config
 * `events.page_max_bytes`) unless options say otherwise.
 */
export const DEFAULT_PAGE_MAX_BYTES = 1024 * 1024;

export function createEventsRepo(knex: Knex, options: { pageMaxBytes?: number } = {}) {
  const pageMaxBytes = options.pageMaxBytes ?? DEFAULT_PAGE_MAX_BYTES;
  /** Whether the page's items come rendered as JSON (PostgreSQL) or as rows (the embedded store): `pageStatement`. */
  const rendered = onPostgres(knex);
  /** The page, with the account's event version read by the same statement (no row reads as 0). */
  async function versionedPage(accountId: string, q: EventQuery, limit: number, offset: number): Promise<{ value: EventPage; version: string }> {
    const sql = pageStatement(accountId, q, limit, offset, pageMaxBytes, rendered, rendered);
    type Head = { version: string | null; total: string | number; fetched: number; kept: number; bytes: string | number; items?: string; id?: string | null };
    const rows = await statement<Head>(knex, sql.text, sql.values, { apiTimestamps: !rendered });
    const first = rows[0]!;
    const items: EventItem[] = [];
    if (rendered) for (const item of JSON.parse(first.items!) as Record<string, unknown>[]) items.push(itemOf.fromJson(item));
    else for (const row of rows) if (row.id !== null) items.push(itemOf.map(row));
    const value = { items, total: Number(first.total), truncated: Number(first.kept) < Number(first.fetched), bytes: Number(first.bytes) };
    return { value, version: first.version ?? '0' };
  }
  const page = async (accountId: string, q: EventQuery, limit: number, offset: number) => (await versionedPage(accountId, q, limit, offset)).value;
  /** The page as the API's JSON text, with the account's event version read by the same statement. */
  async function versionedTextPage(accountId: string, q: EventQuery, limit: number, offset: number): Promise<{ value: EventTextPage; version: string }> {
    const sql = pageStatement(accountId, q, limit, offset, pageMaxBytes, 'wire', rendered);
    type Head = { version: string | null; total: string | number; fetched: number; kept: number; bytes: string | number; items?: string; item?: string | null };
    const rows = await statement<Head>(knex, sql.text, sql.values);
    const first = rows[0];
    let text = first!.items;
    if (text === undefined) {
      const each: string[] = [];
      for (const row of rows) if (row.item !== null && row.item !== undefined) each.push(row.item);
      text = `[${each.join(',')}]`;
    }
    const kept = Number(first!.kept);
    const value = { items: new JsonText(text), count: kept, total: Number(first!.total), truncated: kept < Number(first!.fetched), bytes: Number(first!.bytes) };
    return { value, version: first!.version ?? '0' };
  }
  const textPage = async (accountId: string, q: EventQuery, limit: number, offset: number) => (await versionedTextPage(accountId, q, limit, offset)).value;
  const pageKey = (accountId: string, q: EventQuery, limit: number, offset: number) => JSON.stringify([accountId, q, limit, offset]);
  const pageGuard = (accountId: string) => ({ id: `events:${accountId}`, sql: VERSION_SQL, bindings: [accountId] });

  return {
    /**
     * events.page: newest first, hidden community gift rows left out; `total` is exact (see
     * `total`). A hot read (src/infra/db/hot-read.ts): the browser sources of one account load the
     * same page at once.
     */
    page: hotRead(
      knex,
      page,
      pageKey,
      pageGuard,
      // A page holds up to 100 rows with their raw payloads: keep fewer of them than of small reads,
      // and only pages asked for again (most distinct pages, filters and users are asked once).
      { name: 'events.page', max: 1_000, versioned: versionedPage, keepOnRepeat: true },
    ),
    /**
     * events.text: the same page as `page` (same filters, order, total and byte budget), its
     * events as the API's JSON text rendered by the database on either store, for `GET /v1/events`
     * to splice into its answer (src/http/rest.ts `jsonText`) without parsing or serialising
     * them. A hot read as `page` is; a kept page is that text (a string), not objects.
     */
    textPage: hotRead(knex, textPage, pageKey, pageGuard, { name: 'events.text', max: 1_000, versioned: versionedTextPage, keepOnRepeat: true }),
    /** events.byId */
    async byId(accountId: string, id: string, db: Knex | Knex.Transaction = knex): Promise<EventItem | undefined> {
      const row = await db('events').where({ id, account_id: accountId }).first(db.raw(itemOf.select));
      return row ? itemOf.map(row) : undefined;
    },
    /** events.byExternalId */
    async byExternalId(accountId: string, externalId: string, db: Knex | Knex.Transaction = knex): Promise<EventItem | undefined> {
      const row = await db('events').where({ account_id: accountId, external_id: externalId }).first(db.raw(itemOf.select));
      return row ? itemOf.map(row) : undefined;
    },
    /** events.insert: answers undefined when the (account, external id) pair exists already */
    async insert(row: Omit<EventRow, 'created_at'> & { created_at?: Date }, db: Knex | Knex.Transaction = knex, rawJson?: string): Promise<EventRow | undefined> {
      const [inserted] = await db('events')
        .insert({ ...row, raw: rawJson ?? JSON.stringify(row.raw) })
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
     * events.erasureCandidates (privacy erasure): every row of `platform`, in any account, whose
     * payload text contains one of `needles` (the subject's id and logins); the caller reads each
     * payload and rewrites the ones that name the subject (erase.ts).
     */
    async erasureCandidates(db: Knex | Knex.Transaction, platform: string, needles: readonly string[]): Promise<EventRow[]> {
      if (needles.length === 0) return [];
      const rows = await db('events')
        .where({ platform })
        .where((q) => {
          for (const needle of needles) q.orWhereRaw("(raw::text) ilike ? escape '\\'", [`%${likeLiteral(needle)}%`]);
        })
        .orderBy('id');
      return (rows as EventRow[]).map(parse);
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
