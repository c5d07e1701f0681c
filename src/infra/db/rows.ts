/**
 * The one mapping from a stored row (snake_case columns, as the driver hands them back) to its
 * domain object (camelCase members), typed by the columns' SQL types. Each column is converted
 * once, by its type: `json` is parsed only when the driver answered text (pg and PGlite parse
 * json/jsonb themselves, so a value is never parsed twice), `timestamp` becomes the API's RFC 3339
 * string (UTC, milliseconds), `bigint` a number (counts and sums arrive as text), `boolean` and
 * `integer` stay as they are. A mapping names its columns once (`select`, the select list in the
 * same order), so the query text and the mapping cannot drift apart. Every object a mapping
 * builds has the same members in the same order: V8 gives them one shape, and the JSON
 * serialiser of the response walks them fast.
 */

/** The SQL types a mapping converts by. */
export type ColumnType = 'text' | 'uuid' | 'boolean' | 'integer' | 'bigint' | 'json' | 'timestamp';

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

/** The domain value of a column type (json stays `unknown` unless the mapping names its type). */
type ValueOf<T extends ColumnType> = T extends 'json' ? unknown : T extends 'boolean' ? boolean : T extends 'integer' | 'bigint' ? number : string;

/**
 * Columns: their SQL type; `nullable: true` when NULL may be stored, `from` when the member is
 * selected from an expression or another column (`type as event_type`).
 */
export type Columns = Record<string, ColumnType | { type: ColumnType; nullable?: true; from?: string }>;

type TypeOf<C> = C extends ColumnType ? C : C extends { type: infer T extends ColumnType } ? T : never;
type Nullable<C> = C extends { nullable: true } ? null : never;

/** The domain object of a row with these columns. */
export type Mapped<C extends Columns> = { [K in keyof C & string as CamelCase<K>]: ValueOf<TypeOf<C[K]>> | Nullable<C[K]> };

export interface RowMapping<Out> {
  /** The select list, the columns in declaration order (`id, account_id, ...`). */
  readonly select: string;
  /** One row to its domain object. */
  map(row: Record<string, unknown>): Out;
}

const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

function converter(type: ColumnType): ((value: unknown) => unknown) | null {
  switch (type) {
    case 'json':
      return (value) => (typeof value === 'string' ? JSON.parse(value) : value);
    case 'timestamp':
      return (value) => (value instanceof Date ? value : new Date(value as string)).toISOString();
    case 'bigint':
      return (value) => (typeof value === 'number' ? value : Number(value));
    default:
      return null;
  }
}

/**
 * A mapping for these columns. `Out` defaults to the camelCase object of the columns; a module
 * that types its json columns more closely names its own domain type (the members must match).
 */
export function rowMapping<C extends Columns, Out = Mapped<C>>(columns: C): RowMapping<Out> {
  const plan = Object.entries(columns).map(([column, spec]) => ({
    column,
    from: typeof spec === 'string' ? undefined : spec.from,
    member: camel(column),
    convert: converter(typeof spec === 'string' ? spec : spec.type),
  }));
  const select = plan.map((p) => (p.from === undefined ? p.column : `${p.from} as ${p.column}`)).join(', ');
  return {
    select,
    map(row) {
      const out: Record<string, unknown> = {};
      for (const { column, member, convert } of plan) {
        const value = row[column];
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
