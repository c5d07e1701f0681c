/**
 * The compiled request validator (src/http/validator.ts) against the library it replaced,
 * express-openapi-validator, through the library's public `middleware()` (a devDependency, a test
 * oracle only): for every operation, requests with each query parameter empty, mistyped, out of
 * range, repeated, nested or unknown, and bodies with each top-level property mistyped, too long,
 * null or missing, extra properties, no body and other media types. Both must answer with the
 * same wire body (code, message and details, after the spec's own words), or both pass and leave
 * the same coerced and completed query, path parameters and body for the handler.
 */
import * as OpenApiValidator from 'express-openapi-validator';
import { openapiDocument } from '../../generated/openapi-document';
import { routes, type RouteSpec } from '../../generated/rest';
import { errorBody } from '../../src/errors';
import { httpError } from '../../src/http/errors';
import { createOperationIndex, MALFORMED } from '../../src/http/operations';
import { prepareRequest, type ApiRequest } from '../../src/http/request';
import { withSpecMessages } from '../../src/http/spec-messages';
import { documentValidators } from '../../src/http/validator';

type Step = (req: unknown, res: unknown, next: (error?: unknown) => void) => unknown;
type Json = Record<string, unknown>;

const apiPath = (path: string) => /^\/v1(\/|$)/i.test(path);

/** Codegen's parity and storage declarations (scripts/codegen/field-parity.ts, storage.ts): no validator reads them. */
const DECLARATIONS = new Set(['x-graphql-omit', 'x-graphql-only', 'x-graphql-differs', 'x-graphql-name', 'x-computed', 'x-column']);

function withoutDeclarations(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node as Json)) {
    if (DECLARATIONS.has(key)) delete (node as Json)[key];
    else withoutDeclarations(value);
  }
}

/**
 * The document as the library was given it: multipart bodies open (their handler checks them), and
 * without response `links` or codegen's declarations (`x-graphql-name: { id: roleId }`),
 * whose `id` members the library's Ajv (draft-04, which reads `id` as a schema id) takes for
 * clashing schema ids when it compiles `paths` into every schema (the replaced code gave it no
 * `paths`).
 */
function asLibraryDocument(document: Json): Json {
  withoutDeclarations(document);
  for (const item of Object.values(document.paths as Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: unknown }> }; responses?: Record<string, { links?: unknown }> }>>)) {
    for (const operation of Object.values(item)) {
      const multipart = operation?.requestBody?.content?.['multipart/form-data'];
      if (multipart) multipart.schema = {};
      for (const response of Object.values(operation?.responses ?? {})) delete response.links;
    }
  }
  return document;
}

const deref = (node: unknown): Json | undefined => {
  let at = node as Json | undefined;
  while (at && typeof at.$ref === 'string') {
    at = (at.$ref as string)
      .slice(2)
      .split('/')
      .reduce<unknown>((acc, key) => (acc as Json | undefined)?.[key], openapiDocument) as Json | undefined;
  }
  return at;
};

interface Case {
  route: RouteSpec;
  url: string;
  headers: Record<string, string>;
  body?: unknown;
}

const WRONG_VALUES: unknown[] = [5, 'x', null, {}, 'x'.repeat(3000), -1, ''];
const QUERY_VALUES = ['', 'abc', '5', '-1', '1000000', '2024-01-01T00:00:00Z', 'x'.repeat(300)];

function casesOf(route: RouteSpec): Case[] {
  const base = route.path.replace(/\{[^}]+\}/g, 'abc');
  const operation = (openapiDocument.paths as Record<string, Record<string, Json>>)[route.path.slice(3)]![route.method]!;
  const parameters = ((operation.parameters as unknown[] | undefined) ?? []).map(deref) as { name: string; in: string }[];
  const query = parameters.filter((p) => p.in === 'query').map((p) => p.name);
  const bodyContent = (deref(operation.requestBody)?.content ?? {}) as Record<string, { schema?: unknown }>;
  const jsonSchema = deref(bodyContent['application/json']?.schema);
  const json = { 'content-type': 'application/json' };
  const validBody: Json = {};
  const out: Case[] = [];
  const add = (url: string, headers: Record<string, string> = {}, body?: unknown) => out.push({ route, url, headers, body });
  add(base, jsonSchema ? json : {}, jsonSchema ? {} : undefined);
  add(`${base}?zz=1`);
  add(`${base}?a[=1`);
  for (const name of query) {
    for (const value of QUERY_VALUES) add(`${base}?${name}=${encodeURIComponent(value)}`);
    add(`${base}?${name}=1&${name}=2`);
    add(`${base}?${name}[x]=1`);
    add(`${base}?${name}`);
  }
  if (Object.keys(bodyContent).length > 0) {
    add(base, {});
    add(base, { 'content-type': 'text/plain' });
    add(base, { 'content-type': 'application/json; charset=latin1' }, {});
    add(base, { 'content-type': 'multipart/form-data; boundary=x' });
  }
  if (jsonSchema) {
    add(base, json, []);
    add(base, json, 'text');
    add(base, json, { zz: 1 });
    for (const [name, schema] of Object.entries((jsonSchema.properties ?? {}) as Record<string, unknown>)) {
      const s = deref(schema) ?? {};
      validBody[name] = s.enum ? (s.enum as unknown[])[0] : s.type === 'integer' || s.type === 'number' ? 1 : s.type === 'boolean' ? true : s.type === 'array' ? [] : s.type === 'object' ? {} : 'a';
      for (const value of WRONG_VALUES) add(base, json, { [name]: value });
    }
    add(base, json, validBody);
    for (const name of Object.keys(validBody)) {
      const without = { ...validBody };
      delete without[name];
      add(base, json, without);
    }
  }
  return out;
}

describe('the compiled validator answers as express-openapi-validator did', () => {
  const index = createOperationIndex(routes);
  const ours = documentValidators(false).request;
  let library: (req: ApiRequest) => Promise<unknown>;

  beforeAll(() => {
    const steps = OpenApiValidator.middleware({
      apiSpec: asLibraryDocument(structuredClone(openapiDocument) as Json) as never,
      validateApiSpec: false,
      fileUploader: false,
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
      validateResponses: false,
      validateSecurity: false,
      ignoreUndocumented: false,
      ignorePaths: (p: string) => !apiPath(p),
    }) as unknown as Step[];
    const named = ['metadataMiddleware', 'securityMiddleware', 'requestMiddleware'].map((name) => steps.find((s) => s.name === name)!);
    library = async (req) => {
      Object.assign(req, { baseUrl: '', app: { enabled: () => false } });
      for (const step of named) {
        const error = await new Promise<unknown>((resolve) => {
          try {
            void step(req, {}, resolve);
          } catch (thrown) {
            resolve(thrown);
          }
        });
        if (error) return withSpecMessages(error, req, (req as unknown as { openapi: { schema: never } }).openapi.schema);
      }
      return null;
    };
  });

  const request = (c: Case): ApiRequest => {
    const req = prepareRequest({ method: c.route.method.toUpperCase(), url: c.url, headers: { ...c.headers } } as never);
    if (c.body !== undefined) req.body = structuredClone(c.body);
    return req;
  };
  const answer = (error: unknown) => (error ? errorBody(httpError(error)) : null);

  test.each(routes.map((route) => [`${route.method.toUpperCase()} ${route.path}`, route] as const))('%s', async (_name, route) => {
    for (const c of casesOf(route)) {
      const theirs = request(c);
      const mine = request(c);
      const expected = answer(await library(theirs));
      const found = index.resolve(mine.method!, mine.path);
      if (!found || found === MALFORMED) throw new Error(`no operation for ${c.url}`);
      let refused: unknown = null;
      try {
        ours.check(mine, found);
      } catch (error) {
        refused = error;
      }
      const where = { url: c.url, headers: c.headers, body: c.body };
      expect({ ...where, answer: answer(refused) }).toEqual({ ...where, answer: expected });
      if (!expected) expect({ ...where, query: mine.query, params: mine.params, body: mine.body }).toEqual({ ...where, query: theirs.query, params: theirs.params, body: theirs.body });
    }
  });
});
