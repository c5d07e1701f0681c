/**
 * REST cases for the edge fuzzer, generated from the route table (generated/rest.ts) and the
 * OpenAPI document: for every operation, path parameters, query strings and bodies that are
 * valid, invalid or hostile, with any credential of the cast; plus a "stray" target of unknown
 * methods and paths. A new operation in spec/openapi/ is a new target with no new code.
 */
import fc from 'fast-check';
import { openapiDocument } from '../../generated/openapi-document';
import { routes, type RouteSpec } from '../../generated/rest';
import { credentialChoice, credentialFor, type CredentialChoice } from './cast';
import { multipartBody, multipartSchemaOf } from './multipart-cases';
import { deref, hostileNumberText, hostileString, hostileValue, invalidValue, pollutingObject, rarely, raw, serialise, validValue, vocabulary, type Schema } from './values';

/** One `key=value` of a query string, and how it is written on the wire. */
export interface QueryPiece {
  key: string;
  value: string;
  /** `strict`: RFC 3986 (what a careful client sends); `encode`: encodeURIComponent; `raw`: as written. */
  mode: 'strict' | 'encode' | 'raw';
}

export interface RestCase {
  kind: 'rest';
  target: string;
  method: string;
  /** `/v1/...` with `{name}` placeholders. */
  path: string;
  /** Already encoded path segments, one per placeholder. */
  pathParams: Record<string, string>;
  query: QueryPiece[];
  credential: CredentialChoice;
  /** `latin1`: every character is one byte (multipart bodies with binary parts); UTF-8 otherwise. */
  body?: { text: string; contentType: string | null; encoding?: 'latin1' };
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
}

export function operationOf(route: Pick<RouteSpec, 'path' | 'method'>): Schema {
  const paths = openapiDocument.paths as unknown as Record<string, Record<string, Schema>>;
  return paths[route.path.replace(/^\/v1/, '')]![route.method]!;
}

const parametersOf = (op: Schema): Parameter[] => ((op.parameters as unknown[]) ?? []).map((p) => deref(p) as unknown as Parameter);

// ------------------------------------------------------------------ encoding

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** RFC 3986 strict: also `!'()*`, which the request validator refuses unencoded. */
export const encodeStrict = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** encodeURIComponent that writes a lone surrogate as its three WTF-8 bytes instead of throwing. */
export function encodeLoose(s: string): string {
  let out = '';
  let last = 0;
  for (const m of s.matchAll(LONE)) {
    out += encodeURIComponent(s.slice(last, m.index));
    const c = m[0].charCodeAt(0);
    out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    last = m.index! + 1;
  }
  return out + encodeURIComponent(s.slice(last));
}

// ------------------------------------------------------------------ path parameters

/** Segments that change routing or decoding: dot segments, encoded slashes, broken escapes. */
const rawSegment = fc.constantFrom('..', '.', '%2e%2e', '%2F', 'a%2Fb', '%00', '%', '%zz', '%ED%A0%80', '%C0%80', '', '%20', '~', '%E2%80%AE', 'x'.repeat(4000));

/**
 * Hostile strings short enough for a URL: Node refuses a request line over 16 KB with 431
 * before the service sees it, which would test Node, not the edge.
 */
const urlString = hostileString.filter((s) => s.length <= 300);

function pathValue(schema: Schema | undefined): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: validValue(schema).map((v) => encodeLoose(String(v))), weight: 5 },
    { arbitrary: urlString.map(encodeLoose), weight: 3 },
    { arbitrary: rawSegment, weight: 1 },
  );
}

// ------------------------------------------------------------------ query strings

function queryValue(schema: Schema | undefined): fc.Arbitrary<string> {
  const type = deref(schema)?.type;
  const numeric = type === 'integer' || type === 'number';
  return fc.oneof(
    { arbitrary: validValue(schema).map((v) => String(v)), weight: 1 },
    { arbitrary: numeric ? hostileNumberText : urlString, weight: 4 },
    { arbitrary: urlString, weight: 1 },
  );
}

/** How a declared parameter may be written: once, twice, as qs brackets, with a polluting key. */
function declaredPieces(p: Parameter): fc.Arbitrary<QueryPiece[]> {
  const one = (v: string): QueryPiece => ({ key: p.name, value: v, mode: 'encode' });
  return fc.oneof(
    { arbitrary: queryValue(p.schema).map((v) => [one(v)]), weight: 8 },
    { arbitrary: fc.tuple(queryValue(p.schema), queryValue(p.schema)).map(([a, b]) => [one(a), one(b)]), weight: 1 },
    { arbitrary: queryValue(p.schema).map((v) => [{ key: `${p.name}[]`, value: encodeLoose(v), mode: 'raw' as const }]), weight: 1 },
    {
      arbitrary: fc
        .constantFrom(`${p.name}[a]`, `${p.name}[__proto__][fuzzPolluted]`, `${p.name}[constructor][prototype][fuzzPolluted]`, `${p.name}[0]`, `${p.name}[a][b][c][d][e][f][g]`)
        .map((key) => [{ key, value: 'yes', mode: 'raw' as const }]),
      weight: 1,
    },
  );
}

/** Query pieces no operation declares. */
const strayPieces: fc.Arbitrary<QueryPiece[]> = fc.oneof(
  fc.constantFrom<QueryPiece[]>(
    [{ key: '__proto__[fuzzPolluted]', value: 'yes', mode: 'raw' }],
    [{ key: 'constructor[prototype][fuzzPolluted]', value: 'yes', mode: 'raw' }],
    [{ key: '__proto__', value: 'yes', mode: 'raw' }],
    [{ key: '', value: 'x', mode: 'raw' }],
    [{ key: '%zz', value: '%', mode: 'raw' }],
    [{ key: 'a', value: '%ED%A0%80', mode: 'raw' }],
    [{ key: 'a[b][c][d][e][f][g][h][i][j]', value: '1', mode: 'raw' }],
    Array.from({ length: 1200 }, (_, i) => ({ key: `p${i}`, value: '1', mode: 'raw' as const })),
  ),
  fc.tuple(fc.constantFrom(...vocabulary, 'page', 'limit', 'offset', 'sort', 'fields'), urlString).map(([key, value]) => [{ key, value, mode: 'encode' as const }]),
);

/** Declared parameters with valid values (each present or not). */
function cleanQuery(params: Parameter[]): fc.Arbitrary<QueryPiece[]> {
  const declared = params.filter((p) => p.in === 'query' && p.name !== 'token');
  return fc
    .tuple(...declared.map((p) => rarely(validValue(p.schema, 0, p.name).map((v): QueryPiece => ({ key: p.name, value: String(v), mode: 'strict' })), 2)))
    .map((pieces) => pieces.filter((x): x is QueryPiece => x !== undefined));
}

/** One declared parameter written badly, replacing its clean value. */
function hostileQuery(params: Parameter[]): fc.Arbitrary<QueryPiece[]> | null {
  const declared = params.filter((p) => p.in === 'query' && p.name !== 'token');
  const token = params.find((p) => p.name === 'token');
  const candidates = [...declared, ...(token ? [token] : [])];
  return candidates.length ? fc.constantFrom(...candidates).chain(declaredPieces) : null;
}

// ------------------------------------------------------------------ bodies

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'multipart/form-data; boundary=fuzz',
  null,
];

/** JSON texts a parser must refuse politely. */
const malformedJson = fc.constantFrom(
  '',
  '{',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{"a":1}{"b":2}',
  '\ufeff{}',
  'nul\u0000',
  '[',
  '"\\ud800"',
  '{"a":"\\u00"}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":undefined}',
  '\u0000',
  ' '.repeat(1000),
  '{"a":"' + 'x'.repeat(1_100_000) + '"}',
);

/** Strings that fit the declared length and type but not storage: NUL, lone surrogates, control characters. */
const fittingHostileString = (schema: Schema): fc.Arbitrary<string> =>
  hostileString.filter((v) => v.length >= Number(schema.minLength ?? 0) && v.length <= Number(schema.maxLength ?? Infinity));

function mutateObject(schema: Schema, valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const props = (schema.properties ?? {}) as Record<string, unknown>;
  const keys = Object.keys(props);
  const required = (schema.required as string[] | undefined) ?? [];
  const stringKeys = keys.filter((k) => deref(props[k])?.type === 'string' && !deref(props[k])?.enum && !deref(props[k])?.format);
  const mutations: fc.WeightedArbitrary<unknown>[] = [];
  if (stringKeys.length) {
    // The right type, the right length, the wrong bytes: what reaches storage when the edge lets it.
    mutations.push({
      weight: 4,
      arbitrary: fc.tuple(valid, fc.constantFrom(...stringKeys)).chain(([v, k]) => fittingHostileString(deref(props[k])).map((bad) => ({ ...(v as object), [k]: bad }))),
    });
  }
  if (keys.length) {
    mutations.push({
      weight: 3,
      arbitrary: fc.tuple(valid, fc.constantFrom(...keys)).chain(([v, k]) => invalidValue(props[k]).map((bad) => ({ ...(v as object), [k]: bad }))),
    });
  }
  if (required.length) {
    mutations.push({ weight: 1, arbitrary: fc.tuple(valid, fc.constantFrom(...required)).map(([v, k]) => Object.fromEntries(Object.entries(v as object).filter(([key]) => key !== k))) });
  }
  mutations.push({ weight: 1, arbitrary: fc.tuple(valid, fc.oneof(hostileString, fc.constantFrom(...vocabulary)), hostileValue).map(([v, k, bad]) => ({ ...(v as object), [k]: bad })) });
  // An own `__proto__` (or `constructor`) key next to the valid fields.
  mutations.push({
    weight: 1,
    arbitrary: fc.tuple(valid, pollutingObject).map(([v, polluting]) => {
      const text = serialise(v);
      const inner = polluting.$raw.slice(1, -1);
      return raw(text === '{}' ? `{${inner}}` : `{${inner},${text.slice(1)}`);
    }),
  });
  return fc.oneof(...mutations);
}

const json = (value: unknown, contentType: string | null = 'application/json') => ({ text: serialise(value), contentType });

function jsonSchemaOf(op: Schema): Schema | undefined {
  const content = (deref(op.requestBody) as Schema | undefined)?.content as Record<string, Schema> | undefined;
  const node = content?.['application/json']?.schema;
  return node ? deref(node) : undefined;
}

/** The body a well-behaved client sends: valid for the declared schema, or none. */
function cleanBody(op: Schema): fc.Arbitrary<RestCase['body']> {
  // Multipart mode: a multipart operation gets forms, valid and hostile (multipart-cases.ts).
  const form = multipartSchemaOf(op);
  if (form) return multipartBody(form);
  const schema = jsonSchemaOf(op);
  return schema ? validValue(schema).map((v) => json(v)) : fc.constant(undefined);
}

/** A body that is wrong in one way: a field, a missing key, an extra key, the whole value, the bytes. */
function hostileBody(op: Schema, method: string): fc.Arbitrary<RestCase['body']> | null {
  if (method === 'get' || method === 'head') return null;
  const schema = jsonSchemaOf(op);
  const form = multipartSchemaOf(op);
  if (form) {
    return fc.oneof(
      { arbitrary: multipartBody(form), weight: 6 },
      { arbitrary: hostileValue.map((v) => json(v)), weight: 1 },
      { arbitrary: malformedJson.map((text) => ({ text, contentType: 'application/json' })), weight: 1 },
      { arbitrary: fc.constant(undefined), weight: 1 },
    );
  }
  if (!schema) {
    return fc.oneof(hostileValue.map((v) => json(v)), malformedJson.map((text) => ({ text, contentType: 'application/json' })));
  }
  const valid = validValue(schema);
  return fc.oneof(
    { arbitrary: (schema.type === 'object' ? mutateObject(schema, valid) : invalidValue(schema)).map((v) => json(v)), weight: 8 },
    { arbitrary: hostileValue.map((v) => json(v)), weight: 2 },
    { arbitrary: malformedJson.map((text) => ({ text, contentType: 'application/json' })), weight: 1 },
    { arbitrary: fc.tuple(valid, fc.constantFrom(...CONTENT_TYPES)).map(([v, ct]) => json(v, ct)), weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 1 },
  );
}

// ------------------------------------------------------------------ targets

type Mutation = Partial<Pick<RestCase, 'pathParams' | 'credential' | 'body'>> & { query?: QueryPiece[]; replaceQuery?: boolean };

/**
 * A clean request (valid parameters and body, a credential that passes the auth kind), then zero,
 * one or two mutations: a hostile path parameter, query parameter or body, stray query keys, or
 * any other credential. Mostly-clean cases reach the handlers; the mutations probe one door each.
 */
export function restCaseFor(route: RouteSpec): fc.Arbitrary<RestCase> {
  const op = operationOf(route);
  const params = parametersOf(op);
  const pathNames = params.filter((p) => p.in === 'path');
  const cleanPath = fc.record(Object.fromEntries(pathNames.map((p) => [p.name, validValue(p.schema, 0, p.name).map((v) => encodeStrict(String(v)))]))) as fc.Arbitrary<Record<string, string>>;
  const mutations: fc.Arbitrary<Mutation>[] = [credentialChoice.map((credential) => ({ credential })), strayPieces.map((query) => ({ query }))];
  if (pathNames.length) {
    mutations.push(fc.constantFrom(...pathNames).chain((p) => pathValue(p.schema).map((v) => ({ pathParams: { [p.name]: v } }))));
  }
  const query = hostileQuery(params);
  if (query) mutations.push(query.map((pieces) => ({ query: pieces, replaceQuery: true })));
  const body = hostileBody(op, route.method);
  if (body) mutations.push(body.map((b) => ({ body: b })), body.map((b) => ({ body: b })));
  const count = fc.oneof({ arbitrary: fc.constant(0), weight: 4 }, { arbitrary: fc.constant(1), weight: 4 }, { arbitrary: fc.constant(2), weight: 2 });
  return fc
    .record({
      pathParams: cleanPath,
      query: cleanQuery(params),
      credential: credentialFor(route.gate.auth),
      body: cleanBody(op),
      mutations: count.chain((n) => fc.array(fc.oneof(...mutations), { minLength: n, maxLength: n })),
    })
    .map((clean) => {
      const c: RestCase = {
        kind: 'rest',
        target: `rest:${route.operationId}`,
        method: route.method.toUpperCase(),
        path: route.path,
        pathParams: clean.pathParams,
        query: clean.query,
        credential: clean.credential,
        ...(clean.body ? { body: clean.body } : {}),
      };
      for (const m of clean.mutations) {
        if (m.pathParams) c.pathParams = { ...c.pathParams, ...m.pathParams };
        if (m.credential) c.credential = m.credential;
        if ('body' in m) c.body = m.body;
        if (m.query) {
          const replaced = new Set(m.replaceQuery ? m.query.map((p) => p.key.replace(/\[.*$/, '')) : []);
          c.query = [...c.query.filter((p) => !replaced.has(p.key)), ...m.query];
        }
      }
      return c;
    });
}

/** Methods the table does not declare on its paths, and paths it does not declare at all. */
export const strayRestCase: fc.Arbitrary<RestCase> = fc
  .tuple(
    fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
    fc.oneof(
      fc.constantFrom(...routes.map((r) => r.path)),
      fc.webPath().map((p) => `/v1${p}`),
      fc.constantFrom('/v1', '/v1/', '/v1/gql', '/v1/ws', '/v1//account', '/v1/account/', '/V1/account', '/v1/%2e%2e/v1/account', '/v1/internal', '/v2/account', '/metrics'),
    ),
    credentialChoice,
    fc.option(hostileValue, { nil: undefined }),
  )
  .map(([method, path, credential, body]) => ({
    kind: 'rest' as const,
    target: 'rest:stray',
    method,
    path,
    pathParams: Object.fromEntries([...path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, '00000000-0000-4000-8000-000000000001'])),
    query: [],
    credential,
    ...(body !== undefined && method !== 'GET' ? { body: { text: serialise(body), contentType: 'application/json' } } : {}),
  }));

export const restTargets: readonly { name: string; arbitrary: fc.Arbitrary<RestCase> }[] = [
  ...routes.map((route) => ({ name: `rest:${route.operationId}`, arbitrary: restCaseFor(route) })),
  { name: 'rest:stray', arbitrary: strayRestCase },
];
