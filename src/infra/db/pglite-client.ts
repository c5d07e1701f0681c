/**
 * knex's PGlite client (knex-pglite) with named statements prepared once.
 *
 * knex-pglite runs every query through `PGlite.query`, which parses, describes, plans, binds and
 * executes it in six calls into the WebAssembly backend, and ignores the statement name that
 * `statement()` (statement.ts) gives it. A query that carries a name is run here instead, with
 * PGlite's public protocol API (`execProtocol`, `execProtocolRawStream`, `parse`) and messages
 * written by pg-protocol's serializer (the pg driver's): its text is parsed and described once per
 * database, under a name of ours; each call then sends Bind, Describe,
 * Execute and Sync in one message, and PostgreSQL plans it as a prepared statement (custom plans,
 * then its cached generic plan when that costs no more). Parameters and results are converted
 * with the database's own serializers and parsers, as `query` converts them (`timestamptz` into the
 * API's text when the statement asks for `apiTimestamps`, as on PostgreSQL).
 *
 * Measured on the bench's data (events pages, one call each of 120 texts and filters, load average
 * 33 on 2 cores): 1.19-1.42 ms of CPU a page through `query`, 0.36-0.47 ms prepared.
 *
 * The result's bytes are read by pg-protocol's parser, the pg driver's (`resultOf`), and a named
 * statement from statement.ts comes here without knex's query runner (`runNamed`). On a quiet
 * machine a 30-row page of seven columns cost 481-522 µs of CPU read by PGlite's parser, and
 * 197-209 µs read by pg-protocol's with its Bind written by pg-protocol's serializer.
 *
 * A statement whose call fails is forgotten: the next call parses its text again under a new name
 * (a prepared statement outlives a failed transaction, so names are never reused).
 */
import { parse, type PGlite, type Results } from '@electric-sql/pglite';
import { serialize } from 'pg-protocol';
// pg-protocol's package exports its modules under dist/; `Parser` is what its `parse(stream)` runs
// on each chunk, used here on the chunks PGlite hands over, without a stream around them.
import { Parser } from 'pg-protocol/dist/parser';
import type { Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { apiTimestamp, TIMESTAMPTZ_OID } from './statement';

interface Prepared {
  /** The name PostgreSQL knows it by. */
  readonly name: string;
  /** Its parameters' type oids, from its description. */
  readonly types: readonly number[];
}

interface QueryObject {
  sql?: string;
  bindings?: readonly unknown[];
  options?: { name?: string; apiTimestamps?: boolean };
  response?: Results;
}

type Parsers = PGlite['parsers'];
/** The database's parsers with `timestamptz` read into the API's text (statement.ts `apiTimestamps`). */
const apiParsers = new WeakMap<PGlite, Parsers>();
function apiParsersOf(pglite: PGlite): Parsers {
  let parsers = apiParsers.get(pglite);
  if (!parsers) apiParsers.set(pglite, (parsers = { ...pglite.parsers, [TIMESTAMPTZ_OID]: apiTimestamp }));
  return parsers;
}

const prepared = new WeakMap<PGlite, { statements: Map<string, Prepared>; made: number }>();

function preparedOf(pglite: PGlite) {
  let state = prepared.get(pglite);
  if (!state) prepared.set(pglite, (state = { statements: new Map(), made: 0 }));
  return state;
}

async function prepare(pglite: PGlite, text: string, name: string): Promise<Prepared> {
  const message = Buffer.concat([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]);
  const { messages } = await pglite.execProtocol(message, { syncToFs: false });
  return { name, types: parse.parseDescribeStatementResults(messages) };
}

/** The backend messages a result is read from, as pg-protocol's parser reports them (`name` says which). */
interface Message {
  name: string;
  /** rowDescription: the columns; dataRow: the values as text, or null. */
  fields?: { name: string; dataTypeID: number }[] | (string | null)[];
  /** commandComplete: `INSERT 0 3`, `UPDATE 2`, `SELECT 5`. */
  text?: string;
}

/** The statements whose `commandComplete` counts rows changed (PGlite's `affectedRows`). */
const CHANGING = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);

/**
 * Runs one Bind-Describe-Execute-Sync message and reads its result as `execProtocol` and
 * `parse.parseResults` would, with the database's parsers: rows, fields and rows changed, and the
 * statement's error thrown. The backend's bytes are read by pg-protocol's parser (the pg driver's),
 * not PGlite's: PGlite's copies every field into an ArrayBuffer of its own before decoding it,
 * and for a 30-row events page that was 300 of the statement's 480 µs of CPU, against 30-40 µs here.
 * No LISTEN runs on the embedded store, so no notification can arrive here.
 */
async function resultOf(pglite: PGlite, message: Uint8Array, parsers: Parsers): Promise<Results> {
  const parser = new Parser();
  const fields: { name: string; dataTypeID: number }[] = [];
  const rows: Record<string, unknown>[] = [];
  let affectedRows = 0;
  let failure: Error | null = null;
  /**
   * One chunk of the backend's output. A throw (a value the database's own parser refuses) fails
   * this statement: nothing thrown here may escape into PGlite's loop. The chunk is a view of the
   * backend's output buffer, which the next write reuses: copied, since the parser keeps an
   * incomplete message's bytes for the next chunk.
   */
  const take = (data: Uint8Array): void => {
    if (failure) return;
    try {
      parser.parse(Buffer.from(data), (message) => read(message as Message));
    } catch (error) {
      failure = error instanceof Error ? error : new Error(String(error));
    }
  };
  function read(m: Message): void {
    if (failure) return;
    switch (m.name) {
      case 'rowDescription':
        for (const f of m.fields as { name: string; dataTypeID: number }[]) fields.push({ name: f.name, dataTypeID: f.dataTypeID });
        break;
      case 'dataRow': {
        const values = m.fields as (string | null)[];
        const row: Record<string, unknown> = {};
        for (let i = 0; i < fields.length; i++) {
          const value = values[i] ?? null;
          const field = fields[i]!;
          const typeParser = parsers[field.dataTypeID];
          row[field.name] = value === null ? null : typeParser ? typeParser(value, field.dataTypeID) : value;
        }
        rows.push(row);
        break;
      }
      case 'commandComplete': {
        const words = (m.text ?? '').split(' ');
        const count = Number.parseInt(words[words.length - 1]!, 10);
        if (CHANGING.has(words[0]!) && !Number.isNaN(count)) affectedRows += count;
        break;
      }
      case 'error':
        failure = m as unknown as Error;
        break;
    }
  }
  // The store's file systems (a Node data directory, `memory://`) write through: PGlite's sync
  // does nothing for them but take its lock, a few microseconds a statement.
  await pglite.execProtocolRawStream(message, { onRawData: take, syncToFs: false });
  if (failure) throw failure;
  return { rows, fields, affectedRows };
}

/**
 * What follows each Bind: Describe the portal, Execute it, Sync. The same bytes every time; the
 * messages are written by pg-protocol's serializer, whose Bind costs less than PGlite's (which
 * encodes each value through a TextEncoder of its own).
 */
const RUN_PORTAL = Buffer.concat([serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]);

/** Runs a named query as a prepared statement: PGlite's `query`, one statement's worth of it. */
async function runPrepared(pglite: PGlite, key: string, text: string, values: readonly unknown[], apiTimestamps: boolean): Promise<Results> {
  const state = preparedOf(pglite);
  const parsers = apiTimestamps ? apiParsersOf(pglite) : pglite.parsers;
  return pglite.runExclusive(async () => {
    let statement = state.statements.get(key);
    try {
      if (!statement) {
        statement = await prepare(pglite, text, `knex_pglite_${(state.made += 1)}`);
        state.statements.set(key, statement);
      }
      const types = statement.types;
      const serialized = values.map((value, i) => {
        if (value === null || value === undefined) return null;
        const serializer = pglite.serializers[types[i]!];
        return serializer ? serializer(value) : String(value);
      });
      const message = Buffer.concat([serialize.bind({ statement: statement.name, values: serialized }), RUN_PORTAL]);
      return await resultOf(pglite, message, parsers);
    } catch (error) {
      state.statements.delete(key);
      throw error;
    }
  });
}

/** What of knex's client (a `Knex.Client`) this one uses: its dialect hook and its one-connection pool. */
interface KnexPgLiteClient {
  _query(connection: PGlite, obj: QueryObject): Promise<QueryObject>;
  acquireConnection(): Promise<PGlite>;
  releaseConnection(connection: PGlite): Promise<unknown>;
}

class PreparingClient extends (ClientPgLite as unknown as new (config: Knex.Config) => KnexPgLiteClient) {
  override async _query(connection: PGlite, obj: QueryObject): Promise<QueryObject> {
    const name = obj.options?.name;
    if (!name || !obj.sql) return super._query(connection, obj);
    obj.response = await runPrepared(connection, name, obj.sql, obj.bindings ?? [], obj.options?.apiTimestamps === true);
    return obj;
  }

  /**
   * A named statement's rows, run on the database outside knex's query runner (statement.ts): the
   * connection still comes from and returns to knex's pool of one, so the statement waits for an
   * open transaction as knex's own queries do. knex's runner (builder, formatter, response
   * processing) added 25-35 µs to every statement: `select 1` 80-95 -> 55-62 µs.
   */
  async runNamed(name: string, text: string, values: readonly unknown[], apiTimestamps: boolean): Promise<unknown[]> {
    const connection = await this.acquireConnection();
    try {
      return (await runPrepared(connection, name, text, values, apiTimestamps)).rows;
    } finally {
      await this.releaseConnection(connection);
    }
  }
}

/** The knex client for an embedded database: knex-pglite, with named statements prepared. */
export const PreparingPgLiteClient = PreparingClient as unknown as typeof Knex.Client;
