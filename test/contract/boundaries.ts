/**
 * Boundary cases read from spec/openapi/ (through generated/openapi-document.ts): for every
 * operation with a JSON body or path/query parameters, one valid base request (the contract
 * harness's samples) and variants that change one value to just inside (`accept`) or just outside
 * (`refuse`) a rule the spec declares: lengths at minLength-1, minLength, maxLength, maxLength+1;
 * enum members and a non-member; a string breaking a pattern or format; numbers at and past their
 * bounds; wrong JSON types and nulls in bodies (query and path values are strings on the wire).
 * The service must answer `accept` cases with anything but 400 VALIDATION_ERROR and `refuse`
 * cases with exactly that, which is what "the spec is the whole contract" means.
 */
import Ajv from 'ajv';
import { openapiDocument } from '../../generated/openapi-document';
import { routes, type RouteSpec } from '../../generated/rest';
import { deref, sampleFromSchema } from './harness';

type Schema = Record<string, unknown>;

export interface BoundaryCase {
  expect: 'accept' | 'refuse';
  /** What changed, e.g. `body.name: length 101 (maxLength 100)`. */
  what: string;
  path: string;
  query: Record<string, string>;
  body?: unknown;
}

export interface OperationCases {
  route: RouteSpec;
  cases: BoundaryCase[];
}


/** Ajv compiles patterns with the `u` flag. */
const matches = (pattern: string, value: string) => new RegExp(pattern, 'u').test(value);

const UUID = '00000000-0000-4000-8000-00000000b0b0';
const FORMAT_SAMPLES: Record<string, { good: string; bad: string }> = {
  uuid: { good: UUID, bad: 'not-a-uuid' },
  'date-time': { good: '2030-01-02T03:04:05Z', bad: 'tomorrow' },
  date: { good: '2030-01-02', bad: '2030-13-45' },
  email: { good: 'boundary@example.com', bad: 'not an email' },
  uri: { good: 'https://example.com/', bad: 'not a uri' },
};

/** Candidates tried, in order, for a string that must satisfy a pattern within its lengths. */
const PATTERN_CANDIDATES = ['abc', '1.0.0', 'platform_a:follow', 'a-b', 'a', 'ab', 'x1', 'A1', 'AB', 'account', 'user', 'https://example.com/', '1', '12', 'a.b', UUID, '#abcdef', 'abc123'];

function fits(schema: Schema, value: string): boolean {
  const length = [...value].length;
  if (schema.minLength !== undefined && length < Number(schema.minLength)) return false;
  if (schema.maxLength !== undefined && length > Number(schema.maxLength)) return false;
  if (typeof schema.pattern === 'string' && !matches(schema.pattern, value)) return false;
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return false;
  return true;
}

export interface Variant {
  expect: 'accept' | 'refuse';
  what: string;
  value: unknown;
}

/** A string of `length` characters that satisfies the schema's pattern where one is easy to make, else plain letters. */
function stringOfLength(schema: Schema, length: number): string {
  if (typeof schema.pattern !== 'string') return 'x'.repeat(length);
  for (const unit of ['x', 'a', '1', 'ab']) {
    const candidate = unit.repeat(Math.ceil(length / unit.length)).slice(0, length);
    if (matches(schema.pattern, candidate)) return candidate;
  }
  return 'x'.repeat(length);
}

/** Boundary variants of one value; `wire` is false for query and path values (strings on the wire). */
export function variantsOf(node: unknown, json: boolean): Variant[] {
  const schema = deref(node);
  if (!schema) return [];
  const out: Variant[] = [];
  const nullable = schema.nullable === true;
  const type = schema.type as string | undefined;
  if (json && type) {
    const wrong: Record<string, unknown> = { string: 12345, integer: 'one', number: 'one', boolean: 'true', array: 'a', object: 'o' };
    if (wrong[type] !== undefined) out.push({ expect: 'refuse', what: `wrong type (${typeof wrong[type]} for ${type})`, value: wrong[type] });
    if (!nullable) out.push({ expect: 'refuse', what: `null (${type}, not nullable)`, value: null });
  }
  if (Array.isArray(schema.enum)) {
    for (const member of schema.enum.slice(0, 6)) if (member !== null) out.push({ expect: 'accept', what: `enum member ${JSON.stringify(member)}`, value: member });
    if (type === 'string') out.push({ expect: 'refuse', what: 'not an enum member', value: `${String(schema.enum[0])}_not_a_member` });
    return out;
  }
  switch (type) {
    case 'string': {
      const format = typeof schema.format === 'string' ? FORMAT_SAMPLES[schema.format] : undefined;
      if (format) {
        out.push({ expect: 'accept', what: `format ${String(schema.format)}`, value: format.good });
        out.push({ expect: 'refuse', what: `not format ${String(schema.format)}`, value: format.bad });
        break;
      }
      const min = Number(schema.minLength ?? 0);
      const max = schema.maxLength === undefined ? undefined : Number(schema.maxLength);
      if (typeof schema.pattern === 'string') {
        const good = [schema.example, ...PATTERN_CANDIDATES].find((c): c is string => typeof c === 'string' && fits(schema, c));
        if (good !== undefined) out.push({ expect: 'accept', what: `matches ${schema.pattern}`, value: good });
        const bad = ['!!', 'Ä ~', ' ', '-'].find((c) => !matches(schema.pattern as string, c) && (max === undefined || c.length <= max) && c.length >= min);
        if (bad !== undefined) out.push({ expect: 'refuse', what: `breaks ${schema.pattern}`, value: bad });
      }
      // Blank text: what the schema lets through must not be refused as blank by the service (a
      // rule "not blank" is declared with a pattern such as `\S`).
      if (min > 0 && typeof schema.pattern !== 'string' && !Array.isArray(schema.allOf) && (max === undefined || Math.max(min, 3) <= max)) {
        out.push({ expect: 'accept', what: 'blank (spaces only; no pattern declared)', value: ' '.repeat(Math.max(min, 3)) });
      }
      const lengths: [number, 'accept' | 'refuse'][] = [[min, 'accept']];
      if (min > 0) lengths.push([min - 1, 'refuse']);
      if (max !== undefined && max <= (json ? 20_000 : 4_000)) lengths.push([max, 'accept'], [max + 1, 'refuse']);
      for (const [length, expect] of lengths) {
        const value = stringOfLength(schema, length);
        // A length that only a pattern-breaking string reaches says nothing about the length.
        if (expect === 'accept' && !fits(schema, value)) continue;
        if (expect === 'refuse' && typeof schema.pattern === 'string' && !matches(schema.pattern, value) && length !== 0) continue;
        out.push({ expect, what: `length ${length} (minLength ${min}, maxLength ${max ?? '-'})`, value });
      }
      break;
    }
    case 'integer':
    case 'number': {
      const show = (v: number) => (json ? v : String(v));
      if (schema.minimum !== undefined) out.push({ expect: 'accept', what: `minimum ${String(schema.minimum)}`, value: show(Number(schema.minimum)) });
      if (schema.minimum !== undefined) out.push({ expect: 'refuse', what: `below minimum ${String(schema.minimum)}`, value: show(Number(schema.minimum) - 1) });
      if (schema.maximum !== undefined && Number(schema.maximum) < 2 ** 31) out.push({ expect: 'accept', what: `maximum ${String(schema.maximum)}`, value: show(Number(schema.maximum)) });
      if (schema.maximum !== undefined) out.push({ expect: 'refuse', what: `above maximum ${String(schema.maximum)}`, value: show(Number(schema.maximum) + 1) });
      if (type === 'integer') out.push({ expect: 'refuse', what: 'not an integer', value: json ? 1.5 : '1.5' });
      if (!json) out.push({ expect: 'refuse', what: 'not a number', value: 'abc' });
      break;
    }
    case 'boolean':
      out.push({ expect: 'accept', what: 'true', value: json ? true : 'true' }, { expect: 'accept', what: 'false', value: json ? false : 'false' });
      if (!json) out.push({ expect: 'refuse', what: 'not a boolean', value: 'maybe' });
      break;
    case 'array': {
      if (schema.maxItems !== undefined && Number(schema.maxItems) <= 1000) {
        const item = sample(schema.items);
        out.push({ expect: 'refuse', what: `${Number(schema.maxItems) + 1} items (maxItems ${String(schema.maxItems)})`, value: Array.from({ length: Number(schema.maxItems) + 1 }, () => item) });
      }
      // The rules of one item, on a one-item list.
      for (const v of variantsOf(schema.items, true)) if (v.value !== null || json) out.push({ ...v, what: `item: ${v.what}`, value: [v.value] });
      break;
    }
    default:
      break;
  }
  return out;
}

/**
 * The rules of a body as a whole (`allOf` of `anyOf`s: one of these fields is needed, or a value of
 * one field needs another), as one check; null when the body declares none.
 */
export function bodyRules(node: unknown): ((body: unknown) => boolean) | null {
  const schema = deref(node);
  if (!Array.isArray(schema?.allOf)) return null;
  const check = new Ajv({ strict: false }).compile({ allOf: schema.allOf });
  return (body) => check(body);
}

/** Sets `value` at `path` inside a copy of `base`. */
function withValue(base: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = { ...(base as Record<string, unknown>) };
  copy[path[0]!] = withValue(copy[path[0]!] ?? {}, path.slice(1), value);
  return copy;
}

/** Body variants: every property (one level of nesting followed), each changed on its own. */
function bodyVariants(node: unknown, base: unknown, prefix: string[] = [], depth = 0): { what: string; body: unknown; expect: Variant['expect'] }[] {
  const schema = deref(node);
  const props = (schema?.properties ?? {}) as Record<string, unknown>;
  const out: { what: string; body: unknown; expect: Variant['expect'] }[] = [];
  for (const [name, prop] of Object.entries(props)) {
    const path = [...prefix, name];
    const propSchema = deref(prop);
    for (const v of variantsOf(prop, true)) out.push({ what: `body.${path.join('.')}: ${v.what}`, body: withValue(base, path, v.value), expect: v.expect });
    if (propSchema?.type === 'object' && propSchema.properties && depth < 1) {
      const inner = sample(propSchema);
      out.push(...bodyVariants(propSchema, withValue(base, path, inner), path, depth + 1));
    }
  }
  return out;
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  allowEmptyValue?: boolean;
  schema?: Schema;
}

export function operationOf(route: RouteSpec): Schema {
  const paths = openapiDocument.paths as unknown as Record<string, Record<string, Schema>>;
  return paths[route.path.replace(/^\/v1/, '')]![route.method]!;
}

/**
 * The harness's minimal valid value, made to satisfy what that sampler leaves out: a pattern
 * (a candidate that matches), `minProperties` (optional properties, or a map entry, added).
 */
export function sample(node: unknown): unknown {
  const schema = deref(node);
  if (!schema) return null;
  if (schema.type === 'object' && schema.example === undefined) {
    const props = (schema.properties ?? {}) as Record<string, unknown>;
    const keys = [...((schema.required as string[] | undefined) ?? [])];
    const wanted = Number(schema.minProperties ?? 0);
    for (const key of Object.keys(props)) if (keys.length < wanted && !keys.includes(key)) keys.push(key);
    const out: Record<string, unknown> = Object.fromEntries(keys.map((k) => [k, sample(props[k])]));
    // A rule of the body the sample breaks: the fields of the first of its branches that mends it
    // (`key` of "a key or a url", `user_id` of a ban).
    const holds = bodyRules(schema);
    for (const rule of (schema.allOf as Schema[] | undefined) ?? []) {
      if (!holds || holds(out)) break;
      for (const branch of (rule.anyOf as Schema[] | undefined) ?? []) {
        const added = ((branch.required as string[] | undefined) ?? []).filter((k) => !(k in out));
        const mended = { ...out, ...Object.fromEntries(added.map((k) => [k, sample(props[k])])) };
        if (added.length > 0 && bodyRules({ allOf: [rule] })!(mended)) {
          Object.assign(out, mended);
          break;
        }
      }
    }
    if (Object.keys(out).length < wanted && typeof schema.additionalProperties === 'object') out.key = sample(schema.additionalProperties);
    return out;
  }
  if (schema.type === 'array' && schema.example === undefined) return Array.from({ length: Number(schema.minItems ?? 0) }, () => sample(schema.items));
  if (schema.type === 'string' && typeof schema.pattern === 'string' && schema.example === undefined && !schema.enum && !schema.format) {
    const good = PATTERN_CANDIDATES.find((c) => fits(schema, c));
    if (good !== undefined) return good;
  }
  return sampleFromSchema(schema);
}

/** Every operation with a JSON body or path/query parameters, with its boundary cases. */
export function boundaryCases(): OperationCases[] {
  const out: OperationCases[] = [];
  for (const route of routes) {
    const op = operationOf(route);
    const parameters = ((op.parameters as unknown[]) ?? []).map(deref) as unknown as Parameter[];
    const pathParams = parameters.filter((p) => p.in === 'path');
    const queryParams = parameters.filter((p) => p.in === 'query' && p.name !== 'token');
    const content = (deref(op.requestBody)?.content ?? {}) as Record<string, Schema>;
    const bodySchema = content['application/json']?.schema;
    if (!bodySchema && pathParams.length === 0 && queryParams.length === 0) continue;

    const baseParams = Object.fromEntries(pathParams.map((p) => [p.name, String(sample(p.schema))]));
    const baseQuery = Object.fromEntries(queryParams.filter((p) => p.required).map((p) => [p.name, String(sample(p.schema))]));
    const baseBody = bodySchema ? sample(bodySchema) : undefined;
    const pathOf = (params: Record<string, string>) => route.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(params[name]!));
    const cases: BoundaryCase[] = [{ expect: 'accept', what: 'the base request', path: pathOf(baseParams), query: baseQuery, body: baseBody }];
    for (const p of pathParams) {
      for (const v of variantsOf(p.schema, false)) {
        if (String(v.value) === '') continue; // an empty segment is another route
        cases.push({ expect: v.expect, what: `path.${p.name}: ${v.what}`, path: pathOf({ ...baseParams, [p.name]: String(v.value) }), query: baseQuery, body: baseBody });
      }
    }
    for (const p of queryParams) {
      const schema = deref(p.schema);
      for (const v of variantsOf(schema, false)) {
        if (Array.isArray(v.value)) continue; // lists travel as repeated keys; their items are covered by the item's own rules
        if (v.value === '' && !p.allowEmptyValue) continue; // `?name=` is refused unless the parameter allows an empty value
        cases.push({ expect: v.expect, what: `query.${p.name}: ${v.what}`, path: pathOf(baseParams), query: { ...baseQuery, [p.name]: String(v.value) }, body: baseBody });
      }
    }
    if (bodySchema) {
      // A value its property accepts but the body's rules do not (`action: reject` without notes) is refused.
      const holds = bodyRules(bodySchema);
      for (const v of bodyVariants(bodySchema, baseBody)) {
        const expect = v.expect === 'accept' && holds && !holds(v.body) ? 'refuse' : v.expect;
        cases.push({ expect, what: expect === v.expect ? v.what : `${v.what}, against the body's rules`, path: pathOf(baseParams), query: baseQuery, body: v.body });
      }
    }
    out.push({ route, cases });
  }
  return out;
}
