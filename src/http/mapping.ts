/**
 * The one snake_case ⇄ camelCase mapping between the REST wire and the domain. The type
 * (`Camelize`) is derived from the generated OpenAPI types, so a REST binding's input and output
 * are checked against the domain shape (the GraphQL types are camelCase already); the runtime
 * mapping walks the operation's schema in the generated OpenAPI document, so only declared
 * members are renamed and opaque JSON (an object schema without declared properties: `raw`,
 * `metadata`, `waveform`, `install_config`, a notification's `data`) passes through untouched,
 * whatever its keys. Owns names only: no envelopes (src/http/rest.ts) and no validation (the
 * OpenAPI validator ran before).
 */
import { openapiDocument } from '../../generated/openapi-document';
import { routes, type OperationId } from '../../generated/rest';
import { camelName, resolveRef } from '../infra/names';

export type { Camelize } from '../infra/names';
export { camelName };

interface Field {
  wire: string;
  domain: string;
  shape: Shape;
}

/** What the mapping needs to know of a schema: which members to rename, and where to stop. */
export type Shape =
  | { kind: 'opaque' }
  | { kind: 'list'; items: Shape }
  | { kind: 'object'; fields: Field[]; byWire: Map<string, Field>; open: boolean }
  | { kind: 'union'; options: Shape[] };

type Schema = Record<string, unknown>;
const OPAQUE: Shape = { kind: 'opaque' };

const resolve = (node: unknown, doc: unknown): Schema | undefined => resolveRef(node, doc);

const routeByOperation = new Map(routes.map((r) => [r.operationId, r]));

/** The route of an operation in the generated route table. */
export const routeOf = (operationId: OperationId) => routeByOperation.get(operationId);

/** A node of the OpenAPI document with its `$ref`s followed. */
export const documentSchema = (node: unknown): Schema | undefined => resolve(node, openapiDocument);

/** The operation object of a route in the OpenAPI document (its path without the server's base). */
export function documentOperation(operationId: OperationId): Schema {
  const route = routeOf(operationId);
  const base = ((openapiDocument as { servers?: { url: string }[] }).servers?.[0]?.url ?? '').replace(/\/$/, '');
  const op = route ? (openapiDocument.paths as Record<string, Record<string, Schema>>)[route.path.slice(base.length)]?.[route.method] : undefined;
  if (!op) throw new Error(`no OpenAPI operation for ${operationId}`);
  return op;
}

/** The JSON schema of a request body or response (`content['application/json'].schema`), refs resolved to it. */
export function jsonSchemaOf(node: unknown): unknown {
  return (documentSchema(node)?.content as Record<string, { schema?: unknown }> | undefined)?.['application/json']?.schema;
}

/**
 * The shape of a schema of the OpenAPI document (refs resolved, allOf merged). Shapes of named
 * schemas are memoised per document, so recursive schemas terminate.
 */
export function shapeOf(node: unknown, doc: unknown = openapiDocument, memo = new Map<string, Shape>()): Shape {
  const ref = (node as Schema | undefined)?.$ref;
  if (typeof ref === 'string') {
    const known = memo.get(ref);
    if (known) return known;
    const placeholder: Shape = { kind: 'object', fields: [], byWire: new Map(), open: true };
    memo.set(ref, placeholder);
    const shape = shapeOf(resolve(node, doc), doc, memo);
    Object.assign(placeholder, shape);
    return placeholder;
  }
  const schema = node as Schema | undefined;
  if (!schema || typeof schema !== 'object') return OPAQUE;
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[key])) return { kind: 'union', options: (schema[key] as unknown[]).map((s) => shapeOf(s, doc, memo)) };
  }
  if (Array.isArray(schema.allOf)) {
    // The schema's own properties with its parts'; a part that is a rule over the body (an `anyOf`
    // of which fields are needed) adds no field.
    const { allOf, ...own } = schema;
    const parts = [...(allOf as unknown[]), ...(own.properties ? [own] : [])].map((s) => shapeOf(s, doc, memo)).filter((s) => s.kind === 'object');
    if (parts.length === 0) return OPAQUE;
    return objectShape(
      parts.flatMap((p) => (p.kind === 'object' ? p.fields : [])),
      parts.some((p) => p.kind === 'object' && p.open),
    );
  }
  if (schema.type === 'array') return { kind: 'list', items: shapeOf(schema.items, doc, memo) };
  const properties = schema.properties as Record<string, unknown> | undefined;
  if (properties && Object.keys(properties).length > 0) {
    const fields = Object.entries(properties).map(([wire, child]) => ({ wire, domain: camelName(wire), shape: shapeOf(child, doc, memo) }));
    return objectShape(fields, schema.additionalProperties !== undefined && schema.additionalProperties !== false);
  }
  return OPAQUE;
}

function objectShape(fields: Field[], open: boolean): Shape {
  return { kind: 'object', fields, byWire: new Map(fields.map((f) => [f.wire, f])), open };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Sets a member without ever touching a prototype (`__proto__` stays an ordinary key). Only that
 * one name needs a property definition; a plain assignment keeps the object in V8's fast form,
 * which the JSON serialiser of every response reads.
 */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** The option of a union whose declared members cover the value's keys (the first otherwise). */
function pick(options: Shape[], value: unknown, side: 'wire' | 'domain'): Shape {
  if (!isRecord(value)) return options.find((o) => o.kind !== 'object') ?? OPAQUE;
  const keys = Object.keys(value);
  const fits = options.find((o) => o.kind === 'object' && keys.every((k) => o.fields.some((f) => f[side] === k)));
  return fits ?? options[0] ?? OPAQUE;
}

/**
 * Domain value → wire value: declared members are read under their camelCase name (or their wire
 * name, for values already in wire form) and written under the wire name; undeclared domain
 * members are dropped unless the schema is open; opaque members are copied by reference.
 */
export function toWire(value: unknown, shape: Shape): unknown {
  switch (shape.kind) {
    case 'opaque':
      return value;
    case 'list':
      return Array.isArray(value) ? value.map((v) => toWire(v, shape.items)) : value;
    case 'union':
      return toWire(value, pick(shape.options, value, 'domain'));
    case 'object': {
      if (!isRecord(value)) return value;
      const out: Record<string, unknown> = {};
      for (const field of shape.fields) {
        const v = value[field.domain] !== undefined ? value[field.domain] : value[field.wire];
        if (v !== undefined) put(out, field.wire, toWire(v, field.shape));
      }
      if (shape.open) {
        const declared = new Set(shape.fields.flatMap((f) => [f.wire, f.domain]));
        for (const [k, v] of Object.entries(value)) if (!declared.has(k) && v !== undefined) put(out, k, v);
      }
      return out;
    }
  }
}

/** Wire value → domain value: declared members renamed to camelCase; anything else kept as sent. */
export function toDomain(value: unknown, shape: Shape): unknown {
  switch (shape.kind) {
    case 'opaque':
      return value;
    case 'list':
      return Array.isArray(value) ? value.map((v) => toDomain(v, shape.items)) : value;
    case 'union':
      return toDomain(value, pick(shape.options, value, 'wire'));
    case 'object': {
      if (!isRecord(value)) return value;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const field = shape.byWire.get(k);
        if (field) put(out, field.domain, toDomain(v, field.shape));
        else put(out, k, v);
      }
      return out;
    }
  }
}

/** Renames the keys of a flat record (path and query parameters) to camelCase. */
export function camelKeys(record: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(record ?? {})) put(out, camelName(k), v);
  return out;
}
