/**
 * The one mapping from a stored row (snake_case columns, as the driver hands them back) to its
 * domain object (camelCase members), typed by the columns' SQL types. Each column is converted
 * once, by its type: `json` is parsed only when the driver answered text (pg and PGlite parse
 * json/jsonb themselves, so a value is never parsed twice), `timestamp` becomes the API's RFC 3339
 * string (UTC, milliseconds), `bigint` a number (counts and sums arrive as text), `boolean` and
 * `integer` stay as they are. A mapping names its columns once (`select`, the select list in the
 * same order), so the query text and the mapping cannot drift apart. Every object a mapping
 * builds has the same members in the same order: V8 gives them one shape, and the JSON
 * serialiser of the response walks them fast. The same plan names the columns of a
 * relation PostgreSQL renders as one JSON text (`jsonSelect`, `fromJson`).
 */

import { openapiDocument } from '../../../generated/openapi-document';
import type { components } from '../../../generated/openapi';
import { tables, type TableName } from '../../../generated/tables';
import type { WsFrameData } from '../../../generated/ws';
import { wsDocument, wsFrameData } from '../../../generated/ws-document';
import { camelName, resolveRef, type CamelCase, type Camelize } from '../names';
import { apiTimestamp } from './statement';

/**
 * The SQL types a mapping converts by: `double` is double precision or real, `bytes` is bytea (a
 * Buffer; PGlite answers a Uint8Array). generated/tables.ts leaves out, with a comment, a column
 * of a type none of these converts soundly (a `date`, whose Date the two drivers build in different
 * time zones; a `tsvector`).
 */
export type ColumnType = 'text' | 'uuid' | 'boolean' | 'integer' | 'bigint' | 'double' | 'json' | 'timestamp' | 'bytes';

/** The domain value of a column type (json stays `unknown` unless the mapping names its type). */
type ValueOf<T extends ColumnType> = T extends 'json'
  ? unknown
  : T extends 'boolean'
    ? boolean
    : T extends 'integer' | 'bigint' | 'double'
      ? number
      : T extends 'bytes'
        ? Buffer
        : string;

/**
 * Columns: their SQL type; `nullable: true` when NULL may be stored, `from` when the member is
 * selected from an expression or another column (`type as event_type`), `adjust` when the domain
 * value is the converted one adjusted (scopes in registry order; never called for NULL).
 */
export type Columns = Record<string, ColumnType | { type: ColumnType; nullable?: true; from?: string; adjust?: (value: never) => unknown }>;

type TypeOf<C> = C extends ColumnType ? C : C extends { type: infer T extends ColumnType } ? T : never;
type Nullable<C> = C extends { nullable: true } ? null : never;
/** A column's domain value: what its `adjust` answers (a json column's type named so), else its type's. */
type Domain<C> = C extends { adjust: (value: never) => infer R } ? R : ValueOf<TypeOf<C>>;

/** The domain object of a row with these columns. */
export type Mapped<C extends Columns> = { [K in keyof C & string as CamelCase<K>]: Domain<C[K]> | Nullable<C[K]> };

/** The domain value a mapping answers (`type Preset = RowValue<typeof presetOf>`). */
export type RowValue<M> = M extends RowMapping<infer Out> ? Out : never;

export interface RowMapping<Out> {
  /** The select list, the columns in declaration order (`id, account_id, ...`). */
  readonly select: string;
  /** One row to its domain object (any object with the columns: a driver's row, or a typed row such as the store's). */
  map(row: object): Out;
  /**
   * The select list that names each column by its member (`id as "id", account_id as "accountId",
   * ...`, in declaration order), timestamps as UTC `timestamp`s: a relation selected so is what the
   * database renders whole as JSON (`json_agg(e)` over the subquery `e`; the members in the same
   * order as `map`'s, json as stored, bigint as numbers), and `fromJson` finishes each object as
   * `map` converts a row. For pages the database sends as one text, so the service parses one JSON
   * text instead of a driver row per item (ADR 004, "eighth session"; the ninth replaced a
   * `json_build_object` per row, whose `to_char` timestamps cost PostgreSQL about a fifth more).
   * `bytes` and `double` columns have no JSON form that matches `map` (hex text; NaN as a
   * string) and are refused when it is read.
   */
  readonly jsonSelect: string;
  /** An object of a relation selected by `jsonSelect`, rendered and parsed, as its domain object: timestamps in the API's form and the members' `adjust` applied, in place. */
  fromJson(value: Record<string, unknown>): Out;
}


/** `YYYY-MM-DDTHH:MM:SS.mmmZ`, as toISOString() writes a four-digit year (checked by its fixed characters). */
const isApiTimestamp = (value: unknown): value is string =>
  typeof value === 'string' && value.length === 24 && value.charCodeAt(10) === 84 /* T */ && value.charCodeAt(19) === 46 /* . */ && value.charCodeAt(23) === 90 /* Z */;

/** A timestamp as the driver answers it (a Date, or text in the API's form already: statement.ts `apiTimestamps`) in the API's form. */
const timestampOf = (value: unknown): string => (isApiTimestamp(value) ? value : (value instanceof Date ? value : new Date(value as string)).toISOString());

function converter(type: ColumnType): ((value: unknown) => unknown) | null {
  switch (type) {
    case 'json':
      return (value) => (typeof value === 'string' ? JSON.parse(value) : value);
    case 'timestamp':
      return timestampOf;
    case 'bigint':
    case 'double':
      return (value) => (typeof value === 'number' ? value : Number(value));
    case 'bytes':
      return (value) => (Buffer.isBuffer(value) ? value : Buffer.from((value as Uint8Array).buffer, (value as Uint8Array).byteOffset, (value as Uint8Array).byteLength));
    default:
      return null;
  }
}

/**
 * A column's value in a relation the database renders as JSON (`RowMapping.jsonSelect`), as close
 * to what `converter` makes as PostgreSQL's JSON can say it: a timestamp as a UTC `timestamp` (its
 * JSON text is `2026-11-26T23:31:12.668504`, finished by `jsonTimestamp`), a bigint as a number,
 * json as stored (a json member must be a json or jsonb column: a text column holding JSON would
 * be rendered as a string).
 */
function jsonValue(source: string, type: ColumnType, column: string): string {
  switch (type) {
    case 'timestamp':
      return `(${source}) at time zone 'UTC'`;
    case 'bytes':
    case 'double':
      throw new Error(`RowMapping.jsonSelect: column ${column} is ${type}, which has no JSON form matching map()`);
    default:
      return source;
  }
}

/**
 * PostgreSQL's JSON text of a UTC `timestamp` (ISO 8601 without a zone, the fraction's trailing
 * zeros dropped: `2026-11-26T23:31:12.6685`) as the API's RFC 3339 form, as `map` would give it
 * from the driver's Date: milliseconds truncated as the Date truncates them (the digits cut after
 * the third), `Z`. A four-digit year is read by its fixed characters; any other (years past 9999,
 * BC, infinities) goes through the driver's own parser as a row's would (statement.ts `apiTimestamp`).
 */
export function jsonTimestamp(value: string): string {
  const n = value.length;
  if (n >= 19 && n <= 26 && value.charCodeAt(4) === 45 /* - */ && value.charCodeAt(10) === 84 /* T */ && (n === 19 || value.charCodeAt(19) === 46) /* . */ && value.charCodeAt(n - 1) <= 57 /* a digit: not BC */) {
    const ms = n === 19 ? '000' : n >= 23 ? value.slice(20, 23) : value.slice(20).padEnd(3, '0');
    return `${value.slice(0, 19)}.${ms}Z`;
  }
  const bc = value.endsWith(' BC');
  // Its text form (`... 08:09:10.5+00 BC`); an infinity is written alike in both.
  const text = value.includes('T') ? `${(bc ? value.slice(0, -3) : value).replace('T', ' ')}+00${bc ? ' BC' : ''}` : value;
  return timestampOf(apiTimestamp(text));
}

/** A column's conversion followed by its `adjust` (either may be absent). */
function adjusted(convert: ((value: unknown) => unknown) | null, adjust: ((value: unknown) => unknown) | undefined): ((value: unknown) => unknown) | null {
  if (!adjust) return convert;
  return convert ? (value) => adjust(convert(value)) : adjust;
}

/** A column's spec in its long form (`'uuid'` is `{ type: 'uuid' }`). */
type ColumnSpec = Exclude<Columns[string], ColumnType>;
const longForm = (spec: Columns[string]): ColumnSpec => (typeof spec === 'string' ? { type: spec } : spec);

/**
 * A mapping for these columns. `Out` defaults to the camelCase object of the columns; a module
 * that types its json columns more closely names its own domain type (the members must match).
 */
export function rowMapping<C extends Columns, Out = Mapped<C>>(columns: C): RowMapping<Out> {
  const plan = Object.entries(columns).map(([column, spec]) => {
    const long = longForm(spec);
    const { type, from } = long;
    const adjust = long.adjust as ((value: unknown) => unknown) | undefined;
    return { column, type, from, adjust, member: camelName(column), convert: adjusted(converter(type), adjust) };
  });
  const select = plan.map((p) => (p.from === undefined ? p.column : `${p.from} as ${p.column}`)).join(', ');
  /** `jsonSelect`, made when first read (most mappings are never rendered by the database). */
  let jsonSelect: string | undefined;
  /** What `fromJson` finishes: timestamp members to the API's form, then each member's `adjust`. */
  const finished = plan.flatMap(({ member, type, adjust }) => {
    const finish = type === 'timestamp' ? (adjust ? (v: unknown) => adjust(jsonTimestamp(v as string)) : (v: unknown) => jsonTimestamp(v as string)) : adjust;
    return finish ? [{ member, finish }] : [];
  });
  return {
    select,
    get jsonSelect() {
      return (jsonSelect ??= plan.map(({ column, type, from, member }) => `${jsonValue(from ?? column, type, column)} as "${member}"`).join(', '));
    },
    fromJson(value) {
      for (const { member, finish } of finished) if (value[member] !== null && value[member] !== undefined) value[member] = finish(value[member]);
      return value as Out;
    },
    map(row) {
      const out: Record<string, unknown> = {};
      for (const { column, member, convert } of plan) {
        const value = (row as Record<string, unknown>)[column];
        out[member] = value === null || value === undefined ? null : convert ? convert(value) : value;
      }
      return out as Out;
    },
  };
}

/**
 * A row with these columns as it is written (snake_case names; a timestamp as a Date or RFC 3339
 * text, json as any value the repo serialises): the insert side of a mapping's columns.
 */
export type RowOf<C extends Columns> = { [K in keyof C & string]: (TypeOf<C[K]> extends 'timestamp' ? Date | string : ValueOf<TypeOf<C[K]>>) | Nullable<C[K]> };

/**
 * A row with these columns as the driver answers it, kept in its stored form (snake_case names,
 * timestamps as Dates, json parsed, bigints as text or numbers, bytes as the driver's Uint8Array): the read side of a row that is not
 * on the wire and stays as stored (a session behind every JWT, a billing row written back). Select
 * it with `Object.keys(columns)`, so the list and the type come from one declaration.
 */
export type StoredRow<C extends Columns> = {
  [K in keyof C & string]: (TypeOf<C[K]> extends 'timestamp' ? Date : TypeOf<C[K]> extends 'bigint' ? string | number : TypeOf<C[K]> extends 'bytes' ? Uint8Array : ValueOf<TypeOf<C[K]>>) | Nullable<C[K]>;
};

/** A table's columns as a type (`StoredRow<TableColumns<'ps_follower_samples'>>`). */
export type TableColumns<T extends TableName> = (typeof tables)[T];

/**
 * A table's columns as its migrations made them (generated/tables.ts, read from the migrated
 * catalogue): all of them, or the ones named, in that order (a row that carries part of a table).
 * The column types are written once, in the migration; a row not on the wire reads them here.
 */
export function tableColumns<T extends TableName>(table: T): TableColumns<T>;
export function tableColumns<T extends TableName, K extends keyof TableColumns<T> & string>(table: T, only: readonly K[]): Pick<TableColumns<T>, K>;
/** The named columns read through a join's alias (`tableColumns('extension_versions', ['manifest'], 'v')`: `v.manifest as manifest`). */
export function tableColumns<T extends TableName, K extends keyof TableColumns<T> & string>(table: T, only: readonly K[], alias: string): Aliased<Pick<TableColumns<T>, K>>;
export function tableColumns(table: TableName, only?: readonly string[], alias?: string): Columns {
  const all: Columns = tables[table];
  if (!only) return all;
  const picked: Columns = {};
  for (const column of only) {
    const spec = all[column];
    if (spec === undefined) throw new Error(`tableColumns(${table}): the table has no column ${column}`);
    picked[column] = alias === undefined ? spec : { ...longForm(spec), from: `${alias}.${column}` };
  }
  return picked;
}

/** Columns each selected from a join's alias. */
type Aliased<C> = { [K in keyof C]: (C[K] extends ColumnType ? { type: C[K] } : C[K]) & { from: string } };

type Schemas = components['schemas'];
/** The wire members of a wire type (a spec schema's generated type). */
type Wire<W> = keyof W & string;

/** How `schemaRows` and `wsSchemaRows` read the rows of a schema whose wire type is W. */
export interface SchemaRowOptions<W, Omitted extends Wire<W>, Extra extends Columns> {
  /** Wire members the row does not carry (the service adds them). */
  omit?: readonly Omitted[];
  /** Members selected from an expression or another column (`{ event_type: 'type' }`). */
  from?: Partial<Record<Wire<W>, string>>;
  /**
   * The alias of the table the members come from in a join (`'t'`: `t.id as id`, ...); a member
   * in `from`, or an `extra` column with its own `from`, says its own source.
   */
  table?: string;
  /** Columns the domain needs that the wire does not carry (an explicit extension of the type). */
  extra?: Extra;
  /** A member's domain value adjusted once converted, never for NULL (`{ permissions: sortByRegistry }`). */
  adjust?: { [K in Exclude<Wire<W>, Omitted>]?: (value: NonNullable<Camelize<W[K]>>) => NonNullable<Camelize<W[K]>> };
}

type SchemaNode = Record<string, unknown>;

function resolved(node: unknown, doc: unknown): SchemaNode {
  const schema = resolveRef(node, doc);
  if (!schema) throw new Error(`unknown schema ${String((node as SchemaNode).$ref)}`);
  return schema;
}

/** A schema's members (allOf merged), each with the column type its wire type is stored as. */
function membersOf(node: unknown, doc: unknown): Map<string, { type: ColumnType; nullable?: true }> {
  const schema = resolved(node, doc);
  const members = new Map<string, { type: ColumnType; nullable?: true }>();
  for (const part of (schema.allOf as unknown[] | undefined) ?? []) for (const [name, member] of membersOf(part, doc)) members.set(name, member);
  for (const [name, property] of Object.entries((schema.properties as Record<string, unknown> | undefined) ?? {})) {
    const p = resolved(property, doc);
    // OpenAPI 3.0 says `nullable: true`; the socket's JSON Schema lists `null` among its types.
    const nullable = p.nullable === true || (Array.isArray(p.type) && p.type.includes('null')) || undefined;
    members.set(name, { type: columnTypeOf(p), ...(nullable ? { nullable } : {}) });
  }
  return members;
}

/** The column type a wire member is stored as: objects and arrays as json, date-times as timestamps. */
function columnTypeOf(p: SchemaNode): ColumnType {
  const type = Array.isArray(p.type) ? (p.type as unknown[]).find((t) => t !== 'null') : p.type;
  if (type === 'object' || type === 'array' || p.allOf || p.oneOf || p.anyOf) return 'json';
  if (type === 'string' && p.format === 'date-time') return 'timestamp';
  if (type === 'integer' || type === 'number') return 'bigint';
  if (type === 'boolean') return 'boolean';
  return 'text';
}

/**
 * The row mapping of a spec schema: its columns are the schema's wire members (the wire is
 * snake_case, as the columns are), converted by their wire types (date-time as a timestamp,
 * integers and numbers as counts, objects and arrays as json). The entity's fields are written in
 * the spec and the migration only; the domain type is the schema's, camelCased, plus `extra`.
 */
export function schemaRows<N extends keyof Schemas, Omitted extends Wire<Schemas[N]> = never, Extra extends Columns = Record<never, never>>(
  name: N,
  options: SchemaRowOptions<Schemas[N], Omitted, Extra> = {},
): RowMapping<Camelize<Omit<Schemas[N], Omitted>> & Mapped<Extra>> {
  const schema = (openapiDocument.components.schemas as Record<string, unknown>)[name as string];
  if (!schema) throw new Error(`schemaRows: no schema ${String(name)} in the OpenAPI document`);
  return documentRows(openapiDocument, schema, `schemaRows(${String(name)})`, options);
}

/**
 * The row mapping of an entity that is on the socket only (no REST schema): its columns are the
 * members of a frame's `data` (spec/ws-protocol/; `wsFrameData` names the frames with one data
 * schema), read as `schemaRows` reads a spec schema; the domain type is that data, camelCased,
 * plus `extra`.
 */
export function wsSchemaRows<T extends keyof WsFrameData, Omitted extends Wire<WsFrameData[T]> = never, Extra extends Columns = Record<never, never>>(
  type: T,
  options: SchemaRowOptions<WsFrameData[T], Omitted, Extra> = {},
): RowMapping<Camelize<Omit<WsFrameData[T], Omitted>> & Mapped<Extra>> {
  const pointer = wsFrameData[type];
  if (!pointer) throw new Error(`wsSchemaRows: no frame ${type} with one data schema in the WebSocket protocol`);
  return documentRows(wsDocument, { $ref: pointer }, `wsSchemaRows(${type})`, options);
}

/** The columns of a schema of `doc` as the options say (schemaRows, wsSchemaRows). */
function documentRows<Out>(doc: unknown, schema: unknown, where: string, options: SchemaRowOptions<Record<string, unknown>, string, Columns>): RowMapping<Out> {
  const members = membersOf(schema, doc);
  const omitted = new Set<string>(options.omit ?? []);
  for (const wire of [...omitted, ...Object.keys(options.from ?? {}), ...Object.keys(options.adjust ?? {})]) if (!members.has(wire)) throw new Error(`${where}: the schema has no member ${wire}`);
  const qualified = (column: string) => (options.table === undefined ? undefined : `${options.table}.${column}`);
  const columns: Columns = {};
  for (const [wire, member] of members) {
    if (omitted.has(wire)) continue;
    const from = options.from?.[wire] ?? qualified(wire);
    const adjust = (options.adjust as Record<string, ((value: never) => unknown) | undefined> | undefined)?.[wire];
    columns[wire] = from === undefined && adjust === undefined ? member : { ...member, ...(from === undefined ? {} : { from }), ...(adjust ? { adjust } : {}) };
  }
  for (const [column, spec] of Object.entries(options.extra ?? {})) {
    const typed = longForm(spec);
    columns[column] = options.table === undefined || typed.from !== undefined ? spec : { ...typed, from: qualified(column) };
  }
  return rowMapping<Columns, Out>(columns);
}
