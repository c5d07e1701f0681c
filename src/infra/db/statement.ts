/**
 * One SQL statement with `?` placeholders, answered as its rows. On PostgreSQL the statement is
 * named after its text, so each connection parses and plans a text once and then only binds and
 * executes it (texts come from code, never from input: their number is bounded). On PGlite the
 * name does the same (pglite-client.ts): the text is parsed and described once per database.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';

const names = new Map<string, string>();

function nameOf(text: string): string {
  let name = names.get(text);
  if (!name) names.set(text, (name = `s_${createHash('sha256').update(text).digest('hex').slice(0, 20)}`));
  return name;
}

export interface StatementOptions {
  /**
   * The statement changes nothing that a version counter (a hot read's guard) covers: it fires none
   * of the counters' triggers (src/auth/access-version.ts, the events module's event versions). On
   * the embedded store such a write leaves guarded kept reads in place (hot-read.ts, trackWrites),
   * as it leaves their counters on PostgreSQL; test/infra/hot-read.test.ts checks each such text.
   */
  bumpsNoGuard?: boolean;
  /** `false` runs the text unnamed (parsed on every call): for texts of many shapes, which would fill each connection with statements used once. */
  prepare?: boolean;
  /**
   * On PostgreSQL, `timestamptz` values arrive as the API writes them (`apiTimestamp`), not as
   * Dates: for rows whose timestamps go to the wire through a row mapping (rows.ts), which would
   * only format the Date so. The driver's Date parser and the formatting were a tenth of a cold
   * events page's statement in the service (that page now comes rendered as JSON on
   * PostgreSQL and uses this on the embedded store). The embedded store does the same for named
   * statements (pglite-client.ts); inside a PostgreSQL transaction the rows keep their Dates.
   */
  apiTimestamps?: boolean;
}

/** PostgreSQL's text form of a `timestamptz` in UTC (the session time zone the server sets). */
const UTC_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(\.\d+)?\+00$/;
/** PostgreSQL's type oid of `timestamptz` (pglite-client.ts reads the same type with `apiTimestamp`). */
export const TIMESTAMPTZ_OID = 1184;
const driverTimestamp = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => Date | number;

/**
 * A `timestamptz` text as the API's RFC 3339 form, exactly as the driver's Date would print
 * (`toISOString()`: UTC, milliseconds truncated as Date truncates them; every microsecond fraction
 * is checked in test/infra/statement.test.ts). Another zone, an era or an infinity: the driver's
 * own parser answers, and the row mapping formats its Date as before.
 */
export function apiTimestamp(text: string): string | Date | number {
  const parts = UTC_TIMESTAMP.exec(text);
  if (!parts) return driverTimestamp(text);
  const ms = parts[3] ? Math.trunc(1000 * parseFloat(parts[3])) : 0;
  return `${parts[1]}T${parts[2]}.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
}

/** pg's per-query type parsers: the driver's, but `timestamptz` through `apiTimestamp`. */
const apiTypes = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === TIMESTAMPTZ_OID && format !== 'binary' ? apiTimestamp : pg.types.getTypeParser(oid, format)),
};

/** A pg connection as knex's pool lends it (pg's `Client`): only its promise form of `query` is used. */
interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[]; types?: typeof apiTypes }): Promise<{ rows: unknown[] }>;
}

const positional = new Map<string, string>();

/**
 * A text's `?` placeholders as PostgreSQL's `$1, $2, ...`, as knex's pg dialect numbers them
 * (`\?` is a literal question mark). Texts that name identifiers (`??`) are knex's to expand.
 */
function numbered(text: string): string {
  if (text.includes('??')) throw new Error('statement(): identifier bindings (??) are not supported');
  let n = 0;
  return text.replace(/(\\*)\?/g, (_match, escapes: string) => (escapes.length % 2 ? '?' : `$${++n}`));
}

/** `numbered`, remembered for a named text (their number is bounded; unnamed ones are not kept). */
function positionalText(text: string, named: boolean): string {
  if (!named) return numbered(text);
  let out = positional.get(text);
  if (out === undefined) positional.set(text, (out = numbered(text)));
  return out;
}

/**
 * Whether a statement on this handle goes to a pooled pg connection itself: on PostgreSQL, outside a
 * transaction. knex's query runner (builder, formatter, events, response processing) cost about
 * a fifth of a cold page's statement in the service process; the connection still comes
 * from and returns to knex's pool (`acquireConnection` / `releaseConnection`, its Client's typed
 * API), so its bound, timeouts and disposal of broken connections stay knex's. The embedded store
 * keeps knex's path: its write counting listens to knex's query events (hot-read.ts).
 */
function pooled(knex: Knex): boolean {
  return onPostgres(knex) && !inTransaction(knex);
}

/** Whether the handle's store is PostgreSQL (pg), not the embedded PGlite. */
export function onPostgres(knex: Knex): boolean {
  return knex.client.config.client === 'pg';
}

/** Whether the handle is a transaction's (knex marks it so): its statements run on its own connection. */
function inTransaction(knex: Knex): boolean {
  return (knex as Knex & { isTransaction?: boolean }).isTransaction === true;
}

/** A knex client that runs a named statement itself, on a connection of its own pool (the embedded store's, pglite-client.ts). */
interface NamedStatementClient {
  runNamed(name: string, text: string, values: readonly unknown[], apiTimestamps: boolean): Promise<unknown[]>;
}

/**
 * The client of a handle, when a named statement goes to it directly: on the embedded store,
 * outside a transaction (inside one, knex's path runs it on the transaction's connection).
 */
function namedRunner(knex: Knex): (Knex.Client & NamedStatementClient) | null {
  const client = knex.client as Knex.Client & Partial<NamedStatementClient>;
  if (typeof client.runNamed !== 'function' || inTransaction(knex)) return null;
  return client as Knex.Client & NamedStatementClient;
}

/** Statements sent per root handle, from the first `statementCounter` call on (metrics.ts: svc_db_statements_total). */
const counts = new WeakMap<Knex, { n: number }>();

/**
 * A count of the statements this process sends on a handle: every query knex runs (its `query`
 * event, transactions' BEGIN and COMMIT included) and every statement run on a lent connection
 * (which knex does not see). What the bench divides by the requests a case answered.
 */
export function statementCounter(knex: Knex): () => number {
  const count = counts.get(knex) ?? { n: 0 };
  if (!counts.has(knex)) {
    counts.set(knex, count);
    knex.on('query', () => {
      count.n += 1;
    });
  }
  return () => count.n;
}

export async function statement<Row>(knex: Knex, text: string, values: readonly unknown[], options: StatementOptions = {}): Promise<Row[]> {
  const name = options.prepare === false ? undefined : nameOf(text);
  const named = name === undefined ? {} : { name };
  if (pooled(knex)) {
    const client = knex.client as Knex.Client & { acquireConnection(): Promise<PgConnection>; releaseConnection(connection: PgConnection): Promise<void> };
    const connection = await client.acquireConnection();
    const count = counts.get(knex);
    if (count) count.n += 1;
    try {
      const config = { ...named, text: positionalText(text, name !== undefined), values: [...values], ...(options.apiTimestamps ? { types: apiTypes } : {}) };
      return (await connection.query(config)).rows as Row[];
    } finally {
      await client.releaseConnection(connection);
    }
  }
  // What knex's query event carries for it (hot-read.ts `trackWrites` reads `bumpsNoGuard`); the
  // embedded client reads `apiTimestamps` on named statements (pglite-client.ts); inside a
  // PostgreSQL transaction knex's path answers Dates, which a row mapping formats the same.
  const queryOptions = { ...named, ...(options.bumpsNoGuard ? { bumpsNoGuard: true } : {}), ...(options.apiTimestamps ? { apiTimestamps: true } : {}) };
  const runner = name === undefined ? null : namedRunner(knex);
  if (runner) {
    // Announced as knex announces its own queries (its client's `query` event), so the embedded
    // store's write count and the statement count see it as before.
    runner.emit('query', { sql: text, bindings: values, options: queryOptions });
    return (await runner.runNamed(name!, positionalText(text, true), values, options.apiTimestamps === true)) as Row[];
  }
  const query = knex.raw(text, values as Knex.RawBinding[]);
  if (name !== undefined || options.bumpsNoGuard) query.options(queryOptions);
  const result = (await query) as { rows?: Row[] } | Row[];
  return Array.isArray(result) ? result : (result.rows ?? []);
}
