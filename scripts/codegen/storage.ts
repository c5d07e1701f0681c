/**
 * Spec ↔ storage: a component schema of spec/openapi/ marked `x-table: <table>` is a stored
 * resource, a row of that table as the API shows it. Every property of it must be a column of
 * the table in generated/tables.ts (the migrated catalogue, scripts/codegen/tables.ts) of a
 * compatible type, so a field added to the spec without its migration fails `npm run codegen`,
 * naming the migration to write, instead of a test answering 500.
 *
 *   x-table:    <table>                       the table the resource's rows live in
 *   x-column:   { <property>: <column> }      a property stored under another column name
 *   x-computed: { <property>: <reason> }      a property that is not a column of the table
 *                                             (joined, derived, or kept elsewhere), with why
 *
 * Compatible: string (uuid) ↔ uuid or text, string (date-time) ↔ timestamp, other strings ↔ text,
 * integer ↔ integer or bigint, number ↔ double or bigint (numeric), boolean ↔ boolean, object ↔
 * json, array ↔ json or a PostgreSQL array; a property the spec says is always present (required,
 * not nullable) needs a NOT NULL column. Columns the API does not show (hashes, sealed tokens) are
 * not the spec's business and are not checked.
 */
import { fail } from './common';
import { objectMembers, resolver, type Schema } from './field-parity';
import type { OpenApiDoc } from './openapi';
import type { SpecSources } from './spec-sources';

interface Column {
  /** The ColumnType (src/infra/db/rows.ts), or null when none converts it (then `pgType` says what it is). */
  type: string | null;
  pgType: string | null;
  nullable: boolean;
}

/** The tables of generated/tables.ts, read from its text (the module tablesModule returned). */
export function parseTables(text: string): Map<string, Map<string, Column>> {
  const tables = new Map<string, Map<string, Column>>();
  let current: Map<string, Column> | null = null;
  for (const line of text.split('\n')) {
    const table = /^ {2}"?([A-Za-z0-9_]+)"?: \{$/.exec(line);
    if (table) {
      current = new Map();
      tables.set(table[1]!, current);
      continue;
    }
    if (!current) continue;
    const plain = /^ {4}"?([A-Za-z0-9_]+)"?: '([a-z]+)',$/.exec(line);
    const nullable = /^ {4}"?([A-Za-z0-9_]+)"?: \{ type: '([a-z]+)', nullable: true \},$/.exec(line);
    const uncovered = /^ {4}\/\/ ([A-Za-z0-9_]+): (.+?)( \(nullable\))?, no ColumnType converts it$/.exec(line);
    if (plain) current.set(plain[1]!, { type: plain[2]!, pgType: null, nullable: false });
    else if (nullable) current.set(nullable[1]!, { type: nullable[2]!, pgType: null, nullable: true });
    else if (uncovered) current.set(uncovered[1]!, { type: null, pgType: uncovered[2]!, nullable: uncovered[3] !== undefined });
    else if (/^ {2}\},$/.test(line)) current = null;
  }
  return tables;
}

/** The column types a property of this schema may be stored in, and the one a new migration should use. */
function storableAs(schema: Schema): { fits: (c: Column) => boolean; suggest: string } {
  const isArray = (c: Column) => c.type === 'json' || (c.pgType?.endsWith('[]') ?? false);
  if (schema.type === 'array' || schema.items) return { fits: isArray, suggest: 'jsonb' };
  if (schema.type === 'object' || schema.properties || schema.allOf) return { fits: (c) => c.type === 'json', suggest: 'jsonb' };
  if (schema.type === 'integer') return { fits: (c) => c.type === 'integer' || c.type === 'bigint', suggest: 'integer' };
  if (schema.type === 'number') return { fits: (c) => c.type === 'double' || c.type === 'bigint', suggest: 'double precision' };
  if (schema.type === 'boolean') return { fits: (c) => c.type === 'boolean', suggest: 'boolean' };
  if (schema.type === 'string' && schema.format === 'uuid') return { fits: (c) => c.type === 'uuid' || c.type === 'text', suggest: 'uuid' };
  if (schema.type === 'string' && schema.format === 'date-time') return { fits: (c) => c.type === 'timestamp', suggest: 'timestamptz' };
  if (schema.type === 'string' && schema.format === 'date') return { fits: (c) => c.pgType === 'date' || c.type === 'text', suggest: 'date' };
  if (schema.type === 'string') return { fits: (c) => c.type === 'text', suggest: `text${typeof (schema as { maxLength?: number }).maxLength === 'number' ? ` (varchar(${(schema as { maxLength?: number }).maxLength}))` : ''}` };
  return { fits: () => true, suggest: 'a column' };
}

/** The migrations file of the module whose spec part defines the schema. */
function migrationsFile(specFile: string): string {
  const module = /^spec\/openapi\/modules\/([^/.]+)/.exec(specFile)?.[1];
  return module ? `src/modules/${module}/migrations.ts` : 'the owning module\'s migrations.ts';
}

export function checkStorage(doc: OpenApiDoc, tablesText: string, sources: SpecSources): void {
  const tables = parseTables(tablesText);
  const { deref } = resolver(doc);
  const schemas = ((doc.components as { schemas?: Record<string, Schema> } | undefined)?.schemas ?? {}) as Record<string, Schema>;
  for (const [name, schema] of Object.entries(schemas)) {
    const table = schema['x-table'];
    const file = sources.schemaFile(name);
    for (const key of ['x-column', 'x-computed'] as const) {
      if (schema[key] !== undefined && table === undefined) fail(`${file}: ${name} declares ${key} without x-table`);
    }
    if (table === undefined) continue;
    if (typeof table !== 'string' || !tables.has(table)) {
      fail(`${file}: ${name} x-table ${String(table)} is no table of generated/tables.ts`);
      continue;
    }
    const columns = tables.get(table)!;
    const mapped = (schema['x-column'] ?? {}) as Record<string, unknown>;
    const computed = (schema['x-computed'] ?? {}) as Record<string, unknown>;
    const { properties, required } = objectMembers(schema, deref);
    for (const [property, reason] of Object.entries(computed)) {
      if (!(property in properties)) fail(`${file}: ${name} x-computed ${property} is not a property of ${name}; remove it`);
      if (typeof reason !== 'string' || reason.trim().length < 12) fail(`${file}: ${name} x-computed ${property} needs a reason of at least 12 characters`);
    }
    for (const [property, column] of Object.entries(mapped)) {
      if (!(property in properties)) fail(`${file}: ${name} x-column ${property} is not a property of ${name}; remove it`);
      if (typeof column !== 'string') fail(`${file}: ${name} x-column ${property} must name a column of ${table}`);
    }
    for (const [property, raw] of Object.entries(properties)) {
      if (property in computed) continue;
      const value = deref(raw) ?? {};
      const columnName = typeof mapped[property] === 'string' ? (mapped[property] as string) : property;
      const column = columns.get(columnName);
      const { fits, suggest } = storableAs(value);
      // An untyped property (any JSON) admits null, so a nullable column fits it.
      const alwaysPresent = required.has(property) && value.nullable !== true && value.type !== undefined;
      if (!column) {
        fail(
          `${file}: ${name}.${property} is stored in table ${table} (x-table) but generated/tables.ts has no column ${table}.${columnName}; ` +
            `write a migration in ${migrationsFile(file)} adding ${table}.${columnName} (${suggest}${alwaysPresent ? ', not null' : ', nullable'}), or declare x-column / x-computed on ${name}`,
        );
        continue;
      }
      const has = column.type ?? column.pgType;
      if (!fits(column)) {
        fail(`${file}: ${name}.${property} (${value.type ?? 'untyped'}${value.format ? ` ${value.format}` : ''}) does not fit column ${table}.${columnName} (${has}); write a migration in ${migrationsFile(file)} changing it to ${suggest}, or fix the spec`);
      } else if (alwaysPresent && column.nullable) {
        fail(`${file}: ${name}.${property} is always present in the spec but column ${table}.${columnName} is nullable; mark it nullable (or not required) in the spec, or write a migration in ${migrationsFile(file)} making the column not null`);
      }
    }
  }
}
