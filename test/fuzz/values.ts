/**
 * Value generators for the edge fuzzer: fast-check arbitraries for values that satisfy a JSON
 * Schema of spec/openapi/ (so requests reach the handlers), for hostile values (NUL, lone
 * surrogates, huge numbers, deep nesting, long strings, prototype-pollution keys, wrong types),
 * and the raw-JSON serialiser that lets a generated body carry what JSON.stringify cannot write
 * (`99999999999999999999`, `1e999`, a 20,000-deep array, an own `__proto__` key).
 *
 * Values stay plain data so fast-check can print and replay them. Ids and secrets of the running
 * service are unknown while values are generated: they appear as `⟨ref:name⟩` markers that
 * cast.ts resolves just before a request is sent.
 */
import fc from 'fast-check';
import { openapiDocument } from '../../generated/openapi-document';
import { routes } from '../../generated/rest';

export type Schema = Record<string, unknown>;

/** A JSON fragment written verbatim into the serialised body (see `serialise`). */
export interface RawJson {
  readonly $raw: string;
}

const RAW_OPEN = '\u0001fuzz-raw:';
const RAW_CLOSE = ':fuzz-raw\u0001';

export const raw = (text: string): RawJson => ({ $raw: text });
const isRaw = (value: unknown): value is RawJson => typeof value === 'object' && value !== null && typeof (value as RawJson).$raw === 'string' && Object.keys(value).length === 1;

/**
 * JSON.stringify, except that RawJson fragments are written as their text. JSON.stringify
 * escapes U+0001 as `\u0001`, so the markers cannot collide with a generated string.
 */
export function serialise(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (isRaw(v) ? `${RAW_OPEN}${Buffer.from(v.$raw).toString('base64')}${RAW_CLOSE}` : v));
  if (text === undefined) return 'null';
  return text.replace(/"\\u0001fuzz-raw:([A-Za-z0-9+/=]*):fuzz-raw\\u0001"/g, (_m, b64: string) => Buffer.from(b64, 'base64').toString());
}

// ------------------------------------------------------------------ references to live state

/** A reference to an id or secret of the current cast (cast.ts), resolved at send time. */
export const ref = (name: string): string => `⟨ref:${name}⟩`;
/** A marker as written, or percent-encoded inside a path segment or query string. */
export const REF_PATTERN = /⟨ref:([A-Za-z]+)⟩|%E2%9F%A8ref%3A([A-Za-z]+)%E2%9F%A9/g;

/** Ids of live rows (users, accounts, sessions, roles, invites, notifications, tokens). */
export const idRefs = [
  'ownerUserId',
  'memberUserId',
  'inviteeUserId',
  'accountId',
  'otherAccountId',
  'spareSessionId',
  'popoutTokenId',
  'customRoleId',
  'memberRoleId',
  'inviteId',
  'inviteeNotificationId',
] as const;

/** Secrets a request body may carry (a refresh token, a raw popout token). */
export const secretRefs = ['spareRefreshToken', 'popoutTokenRaw', 'ownerAccessToken'] as const;

/** `arb` once in `oneIn` draws, `undefined` otherwise (fc.option's `freq` is the other way round). */
export function rarely<T>(arb: fc.Arbitrary<T>, oneIn: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: oneIn - 1 }, { arbitrary: arb, weight: 1 });
}

// ------------------------------------------------------------------ the spec's vocabulary

function collectVocabulary(): string[] {
  const words = new Set<string>(['owner', 'administrator', 'moderator', 'viewer', 'super-admin', 'free', 'pro']);
  const walk = (node: unknown): void => {
    if (typeof node === 'string') {
      for (const m of node.matchAll(/`([a-z][a-z0-9_:.*-]{1,60})`/g)) words.add(m[1]!);
      return;
    }
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (k === 'enum' && Array.isArray(v)) v.forEach((e) => typeof e === 'string' && words.add(e));
        walk(v);
      }
    }
  };
  walk(openapiDocument);
  for (const route of routes) for (const p of route.gate.permissions?.list ?? []) words.add(p);
  return [...words].sort();
}

/**
 * Words the spec itself names (backticked values in descriptions, enums, gate permissions,
 * default role names): random strings rarely hit `accept_invite` or `members:read`, these do.
 */
export const vocabulary: readonly string[] = collectVocabulary();

// ------------------------------------------------------------------ hostile values

const SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff'];

/** Strings a careless edge lets through to storage, logs or parsers. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'nul\u0000inside',
    '\u0000\u0000\u0000',
    '\ud800',
    'lone\udfffsurrogate',
    'high\ud83d',
    '\udc00low first',
    '\ud83d\ude00 a valid pair',
    '',
    ' ',
    '\t\r\n',
    '%00',
    '%',
    '%zz',
    '../../../etc/passwd',
    "' OR '1'='1' --",
    '"; DROP TABLE users; --',
    '<script>alert(1)</script>',
    '${jndi:ldap://x/a}',
    '{{7*7}}',
    '__proto__',
    'constructor',
    'prototype',
    'hasOwnProperty',
    'toString',
    '\u202eevil',
    '\ufeffbom',
    '\uffff',
    '\u{10ffff}',
    '1e308',
    '99999999999999999999',
    '9223372036854775807',
    '-1',
    'NaN',
    'Infinity',
    'null',
    'true',
    '[]',
    '{}',
    '00000000-0000-0000-0000-000000000000',
    'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF',
    '{00000000-0000-4000-8000-000000000001}',
    '00000000-0000-4000-8000-00000000000g',
    'a@b',
    'x'.repeat(101),
    'x'.repeat(4097),
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom(...SURROGATES), fc.string({ maxLength: 10 })).map(([a, s, b]) => `${a}${s}${b}`),
  fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })).map(([a, b]) => `${a}\u0000${b}`),
  fc.tuple(fc.constantFrom('a', 'é', '😀', '\u0000', '𝕏'), fc.constantFrom(255, 256, 1000, 10_000, 100_000)).map(([c, n]) => c.repeat(n)),
);

/** Numbers as JSON text: beyond doubles, beyond int64, negative zero, exponents. */
export const hostileNumberText = fc.constantFrom(
  '1e308',
  '-1e308',
  '1e999',
  '-1e999',
  '5e-324',
  '99999999999999999999',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '2147483648',
  '-2147483649',
  '9007199254740993',
  '-0',
  '0',
  '-1',
  '1.5',
  '0.0000001',
  '1E+2',
);

export const hostileNumber: fc.Arbitrary<RawJson | number> = fc.oneof(hostileNumberText.map(raw), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer());

const nestOpen: Record<string, [string, string]> = { array: ['[', ']'], object: ['{"a":', '}'], mixed: ['[{"a":', '}]'] };

/** Deeply nested JSON as raw text (JSON.stringify itself overflows long before the server may). */
export const deepJson: fc.Arbitrary<RawJson> = fc
  .tuple(fc.constantFrom('array', 'object', 'mixed'), fc.constantFrom(8, 33, 100, 1000, 5000, 20_000), fc.constantFrom('1', '"x"', 'null', '{}'))
  .map(([shape, depth, leaf]) => {
    const [open, close] = nestOpen[shape]!;
    return raw(`${open.repeat(depth)}${leaf}${close.repeat(depth)}`);
  });

/** Objects whose own keys reach prototypes when merged or assigned carelessly. */
export const pollutingObject: fc.Arbitrary<RawJson> = fc
  .constantFrom(
    '{"__proto__":{"fuzzPolluted":"yes"}}',
    '{"constructor":{"prototype":{"fuzzPolluted":"yes"}}}',
    '{"__proto__":{"__proto__":{"fuzzPolluted":"yes"}}}',
    '{"prototype":{"fuzzPolluted":"yes"},"__defineGetter__":1}',
    '{"__proto__":null}',
    '{"hasOwnProperty":"no","toString":1,"valueOf":{}}',
  )
  .map(raw);

/** Any JSON value, hostile or not; the wrong type for most fields. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 4 },
  { arbitrary: hostileNumber, weight: 2 },
  { arbitrary: fc.constantFrom(null, true, false, [], {}), weight: 1 },
  { arbitrary: deepJson, weight: 1 },
  { arbitrary: pollutingObject, weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
  { arbitrary: fc.array(hostileString, { maxLength: 5 }), weight: 1 },
);

// ------------------------------------------------------------------ JSON Schema → arbitrary

export function deref(node: unknown): Schema {
  let current = node as Schema;
  while (current && typeof current.$ref === 'string') {
    current = (current.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((acc, key) => (acc as Schema)[key], openapiDocument) as Schema;
  }
  return current;
}

/** A uuid the service may know (a live id) or certainly does not. */
export const uuidValue: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...idRefs.map(ref)), weight: 3 },
  { arbitrary: fc.uuid(), weight: 2 },
  { arbitrary: fc.constant('00000000-0000-0000-0000-000000000000'), weight: 1 },
);

function stringFor(schema: Schema, name: string): fc.Arbitrary<string> {
  const minLength = Number(schema.minLength ?? 0);
  const maxLength = Math.min(Number(schema.maxLength ?? 64), 200);
  switch (schema.format) {
    case 'uuid':
      return uuidValue;
    case 'date-time':
      return fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
    case 'email':
      return fc.emailAddress().filter((e) => e.length <= maxLength);
    case 'uri':
      return fc.webUrl();
    default:
      break;
  }
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern as string)).filter((s) => s.length >= minLength && s.length <= maxLength);
  const fitting = vocabulary.filter((w) => w.length >= minLength && w.length <= maxLength);
  return fc.oneof(
    { arbitrary: fc.string({ minLength: Math.max(1, minLength), maxLength: Math.max(minLength, Math.min(maxLength, 24)) }), weight: 2 },
    ...(fitting.length ? [{ arbitrary: fc.constantFrom(...fitting), weight: 3 }] : []),
    // A field that takes a token gets a live one (refresh, popout exchange) as often as not.
    ...(/token/i.test(name) ? [{ arbitrary: fc.constantFrom(...secretRefs.map(ref)), weight: 5 }] : []),
  );
}

/** Values that satisfy `schema` (as far as generation can tell; refs may still be unknown ids). */
export function validValue(node: unknown, depth = 0, name = ''): fc.Arbitrary<unknown> {
  const schema = deref(node);
  if (!schema || typeof schema !== 'object') return fc.constant(null);
  const base = ((): fc.Arbitrary<unknown> => {
    if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
    if (Array.isArray(schema.oneOf)) return fc.oneof(...(schema.oneOf as unknown[]).map((s) => validValue(s, depth + 1)));
    if (Array.isArray(schema.anyOf)) return fc.oneof(...(schema.anyOf as unknown[]).map((s) => validValue(s, depth + 1)));
    if (Array.isArray(schema.allOf)) {
      return fc.tuple(...(schema.allOf as unknown[]).map((s) => validValue(s, depth + 1))).map((parts) => Object.assign({}, ...parts.filter((p) => p && typeof p === 'object')));
    }
    switch (schema.type) {
      case 'object':
        return objectFor(schema, depth);
      case 'array':
        return fc.array(validValue(schema.items, depth + 1, name), {
          minLength: Number(schema.minItems ?? 0),
          maxLength: Math.max(Number(schema.minItems ?? 0), Math.min(Number(schema.maxItems ?? 5), 5)),
        });
      case 'integer':
        return fc.integer({ min: Number(schema.minimum ?? -5), max: Number(schema.maximum ?? 300) });
      case 'number':
        return fc.double({ min: Number(schema.minimum ?? -5), max: Number(schema.maximum ?? 300), noNaN: true });
      case 'boolean':
        return fc.boolean();
      case 'string':
        return stringFor(schema, name);
      default:
        return depth > 2 ? fc.constant({}) : fc.jsonValue({ maxDepth: 2 });
    }
  })();
  return schema.nullable === true ? fc.option(base, { nil: null, freq: 5 }) : base;
}

function objectFor(schema: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props = (schema.properties ?? {}) as Record<string, unknown>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const keys = Object.keys(props);
  if (keys.length === 0) {
    // Opaque JSON (`metadata`, `raw`): anything goes, including what storage chokes on.
    return depth > 2 ? fc.constant({}) : fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), hostileString), fc.oneof(fc.jsonValue({ maxDepth: 2 }), hostileValue), { maxKeys: 4 });
  }
  return fc.record(
    Object.fromEntries(keys.map((k) => [k, validValue(props[k], depth + 1, k)])),
    { requiredKeys: keys.filter((k) => required.has(k)) },
  ) as fc.Arbitrary<Record<string, unknown>>;
}

/** A value of the wrong type or shape for `schema`, hostile more often than not. */
export function invalidValue(node: unknown): fc.Arbitrary<unknown> {
  const schema = deref(node);
  const wrongType: unknown[] = [];
  if (schema?.type !== 'string') wrongType.push('a string');
  if (schema?.type !== 'integer' && schema?.type !== 'number') wrongType.push(42);
  if (schema?.type !== 'boolean') wrongType.push(true);
  if (schema?.type !== 'array') wrongType.push(['x']);
  if (schema?.type !== 'object') wrongType.push({ a: 1 });
  wrongType.push(null);
  const around: fc.Arbitrary<unknown>[] = [];
  if (schema?.type === 'string' && typeof schema.maxLength === 'number') around.push(fc.constant('y'.repeat(Number(schema.maxLength) + 1)));
  if (schema?.type === 'string' && Number(schema.minLength ?? 0) > 0) around.push(fc.constant(''));
  if (schema?.type === 'array' && typeof schema.maxItems === 'number') around.push(fc.constant(Array.from({ length: Number(schema.maxItems) + 1 }, () => 'z')));
  return fc.oneof(
    { arbitrary: hostileValue, weight: 4 },
    { arbitrary: fc.constantFrom(...wrongType), weight: 2 },
    ...around.map((arbitrary) => ({ arbitrary, weight: 1 })),
  );
}
