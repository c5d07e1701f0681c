/**
 * The OpenAPI request validator (and, in tests, the response validator), compiled from the
 * document with Ajv: one validator per operation for its path, query and header parameters and
 * one per declared request media type for its body, each compiled the first time a request needs
 * it and then kept for the life of the process (the document is fixed at codegen).
 *
 * It answers exactly as express-openapi-validator 5, which it replaces, answered this document (the
 * conformance of every operation is unchanged; test/contract/ and test/fuzz/edge.test.ts hold it):
 * - Ajv with draft-04 semantics (OpenAPI 3.0), `strict: false`, formats of ajv-formats in "fast"
 *   mode, defaults filled in, the first failure of the parameters and the first of the body;
 * - parameters coerced to their types (`?limit=5` is the number 5), bodies never (`coerceTypes:
 *   false`, so `"5"` is not an integer);
 * - an unknown query parameter, or an empty one that does not `allowEmptyValue`, is refused by name;
 * - a body whose Content-Type the operation does not declare is 415 (multipart bodies stream to
 *   their handler, which checks them: only their media type is checked here);
 * - a `type: string` schema with `format: date` or `date-time` reports a wrong type as
 *   "must be string" (or "string or null"), through the keyword `x-string-type`, not `type`, so a
 *   declared `x-error-message` applies to it (spec-messages.ts), as it did;
 * - refusals carry `{ path: '/body/name', message, errorCode: '<keyword>.openapi.validation' }`
 *   issues (errors.ts turns them into `details.fields`), rewritten by spec-messages.ts when the
 *   schema declares its words.
 * What the document uses and this file does not implement (a non-default parameter style, array or
 * object parameters, parameter `content`, cookies, `readOnly`/`writeOnly`, `discriminator`) is
 * refused when the validators are built, so a spec change that needs it fails every test at once.
 */
import type { ServerResponse } from 'node:http';
import { _, type AnySchema, type default as Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import Ajv04 from 'ajv-draft-04';
import addFormats from 'ajv-formats';
import { parse as parseQuery } from 'qs';
import { openapiDocument } from '../../generated/openapi-document';
import type { RouteSpec } from '../../generated/rest';
import type { ResolvedOperation } from './operations';
import type { ApiRequest } from './request';
import { withSpecMessages, type SpecOperation } from './spec-messages';

type Json = Record<string, unknown>;
interface Schema extends Json {
  $ref?: string;
  type?: unknown;
  format?: string;
  nullable?: boolean;
  required?: unknown;
  properties?: Record<string, Schema>;
  additionalProperties?: unknown;
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
}
interface Parameter extends Json {
  $ref?: string;
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
  allowEmptyValue?: boolean;
  allowReserved?: boolean;
  style?: string;
  explode?: boolean;
  content?: unknown;
}
interface RequestBody {
  $ref?: string;
  required?: boolean;
  content?: Record<string, { schema?: Schema }>;
}
interface Response {
  $ref?: string;
  content?: Record<string, { schema?: Schema }>;
}
interface Operation extends SpecOperation {
  parameters?: Parameter[];
  requestBody?: RequestBody;
  responses?: Record<string, Response>;
}
interface Document {
  servers?: { url: string }[];
  paths: Record<string, Record<string, Operation | undefined>>;
  components?: { schemas?: Record<string, Schema>; parameters?: Record<string, Parameter>; responses?: Record<string, Response> };
}

/** One refused issue, as errors.ts and spec-messages.ts read it. */
export interface ValidationIssue {
  path: string;
  message: string;
  errorCode?: string;
}

/** A request or response the document refuses: 400 (issues), 415, or 500 for a response. */
export class ValidationRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: ValidationIssue[],
  ) {
    super(message);
    this.name = status === 415 ? 'Unsupported Media Type' : status >= 500 ? 'Internal Server Error' : 'Bad Request';
  }
}

const refusal = (status: number, path: string, message: string) => new ValidationRefusal(status, message, [{ path, message }]);

/**
 * The document as validated: a `multipart/form-data` body is checked by its handler while it
 * streams (busboy), so its schema is opened up; its media type is still enforced.
 */
function withStreamedBodies(document: Document): Document {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      const multipart = operation?.requestBody?.content?.['multipart/form-data'];
      if (multipart) multipart.schema = {};
    }
  }
  return document;
}

const pointer = (document: unknown, ref: string): unknown =>
  ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((at, key) => (at as Json | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);

function resolved<T extends { $ref?: string }>(document: Document, node: T | undefined): T | undefined {
  let at = node;
  for (let hops = 0; at?.$ref && hops < 32; hops += 1) at = pointer(document, at.$ref) as T | undefined;
  return at;
}

const SERIALISED_FORMATS = new Set(['date', 'date-time']);

/**
 * Marks the string schemas of dates as express-openapi-validator did for its date serialisers:
 * `type: string` moves to `x-string-type` (kept as `type` accepting anything but null when the
 * schema has `nullable`), over the same walk of the same schemas (component schemas, request and
 * response bodies, inline parameters), so a wrong type reads the same and is refused the same.
 */
function markSerialisedDates(document: Document): void {
  const seen = new Set<object>();
  const visit = (schema: Schema | undefined): void => {
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    if (schema.$ref) return visit(resolved(document, schema));
    if (schema.type === 'string' && schema.format && SERIALISED_FORMATS.has(schema.format)) {
      schema['x-string-type'] = schema.type;
      if ('nullable' in schema) schema.type = ['string', 'number', 'boolean', 'object', 'array'];
      else delete schema.type;
    }
    // The walk's shape is the library's: one branch per schema, the first that applies.
    if (schema.allOf) schema.allOf.forEach(visit);
    else if (schema.oneOf) schema.oneOf.forEach(visit);
    else if (schema.anyOf) schema.anyOf.forEach(visit);
    else if (schema.type === 'array' && schema.items) visit(schema.items);
    else if (schema.properties) Object.values(schema.properties).forEach(visit);
    else if (schema.additionalProperties) visit(schema.additionalProperties as Schema);
  };
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) {
    document.components!.schemas![name] = resolved(document, schema)!;
  }
  Object.values(document.components?.schemas ?? {}).forEach(visit);
  const bodies: (Schema | undefined)[] = [];
  const responses: (Schema | undefined)[] = [];
  const parameters: (Schema | undefined)[] = [];
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      if (!operation) continue;
      const body = resolved(document, operation.requestBody);
      if (body) operation.requestBody = body;
      for (const media of Object.values(body?.content ?? {})) {
        media.schema = resolved(document, media.schema);
        bodies.push(media.schema);
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const found = resolved(document, response);
        if (!found) continue;
        operation.responses![status] = found;
        for (const media of Object.values(found.content ?? {})) {
          media.schema = resolved(document, media.schema);
          responses.push(media.schema);
        }
      }
      for (const parameter of operation.parameters ?? []) {
        if (!parameter.$ref && parameter.schema && !parameter.schema.$ref && !parameter.schema.items) parameters.push(parameter.schema);
      }
    }
  }
  [...bodies, ...responses, ...parameters].forEach(visit);
}

/** express-openapi-validator's own formats; ajv-formats, added after them, takes every name it has. */
const MAX_INT32 = 2 ** 31 - 1;
const MIN_INT32 = (-2) ** 31;
const MAX_FLOAT = (2 - 2 ** -23) * 2 ** 127;
const MIN_POSITIVE_FLOAT = 2 ** -126;
const LIBRARY_FORMATS = {
  int32: { type: 'number', validate: (i: number) => Number.isInteger(i) && i <= MAX_INT32 && i >= MIN_INT32 },
  int64: { type: 'number', validate: (i: number) => Number.isInteger(i) && i <= 2 ** 63 - 1 && i >= (-2) ** 63 },
  float: { type: 'number', validate: (i: number) => i === 0 || (i <= MAX_FLOAT && i >= MIN_POSITIVE_FLOAT) || (i >= -MAX_FLOAT && i <= -MIN_POSITIVE_FLOAT) },
  double: { type: 'number', validate: () => true },
  byte: (b: string) => b.length % 4 === 0 && /^[A-Za-z0-9+/]*(=|==)?$/.test(b),
  binary: () => true,
  password: () => true,
} as const;

/** An Ajv as the library configured its request (`coerceTypes`) and response validators. */
function createAjv(document: Document, options: Options): Ajv {
  const ajv = new Ajv04({
    strict: false,
    strictNumbers: true,
    strictTuples: true,
    allowUnionTypes: false,
    validateSchema: false,
    removeAdditional: false,
    validateFormats: true,
    ...options,
  });
  for (const [name, format] of Object.entries(LIBRARY_FORMATS)) ajv.addFormat(name, format as never);
  addFormats(ajv, { mode: 'fast' });
  ajv.addKeyword({
    keyword: 'x-string-type',
    schemaType: 'string',
    error: {
      message: (cxt) => (cxt.parentSchema?.nullable ? `must be ${cxt.schema as string} or null` : `must be ${cxt.schema as string}`),
      params: (cxt) => _`{type: ${cxt.schema as string}, nullable: ${!!cxt.parentSchema?.nullable}}`,
    },
    code(cxt) {
      const { data, schema, parentSchema } = cxt;
      cxt.pass(parentSchema.nullable ? _`${data} === null || typeof ${data} == ${schema as string}` : _`typeof ${data} == ${schema as string}`);
    },
  });
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) ajv.addSchema(schema as AnySchema, `#/components/schemas/${name}`);
  return ajv;
}

/** The library's issues for Ajv's errors: the enum's values spelled out, a missing or extra property named in the path. */
function issuesOf(errors: readonly ErrorObject[]): ValidationIssue[] {
  return errors.map((e) => {
    const params = e.params as { allowedValues?: unknown[]; missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string };
    const message = e.keyword === 'enum' && params.allowedValues ? `${e.message}: ${params.allowedValues.join(', ')}` : (e.message ?? '');
    const named = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty;
    return { path: named !== undefined ? `${e.instancePath}/${named}` : (e.instancePath ?? e.schemaPath), message, errorCode: `${e.keyword}.openapi.validation` };
  });
}

/** A Content-Type header as the library parsed it: the media type, lower case, and its parameters. */
class ContentType {
  readonly mediaType: string | null = null;
  readonly parameters: Record<string, string> = {};
  constructor(header: string | undefined) {
    if (!header) return;
    for (const match of header.matchAll(/;\s*([^=]+)=([^;]+)/g)) {
      const key = match[1]!.toLowerCase();
      this.parameters[key] = key === 'charset' ? match[2]!.toLowerCase() : match[2]!;
    }
    this.mediaType = header.split(';')[0]!.toLowerCase().trim();
  }

  normalize(exclude: readonly string[] = ['boundary']): string | undefined {
    if (!this.mediaType) return undefined;
    let parameters = '';
    for (const key of Object.keys(this.parameters).sort()) if (!exclude.includes(key)) parameters += `; ${key}=${this.parameters[key]}`;
    return this.mediaType + parameters;
  }

  equivalents(): ContentType[] {
    if (!this.mediaType) return [];
    const types = [new ContentType(this.mediaType)];
    if (!this.parameters.charset) types.push(new ContentType(`${this.normalize(['charset'])}; charset=utf-8`));
    return types;
  }
}

const WILDCARD = /^[a-z]+\/\*$/;

/** The declared media type of the request body a Content-Type selects; null for no body check; 415 when none fits. */
function selectMediaType(body: RequestBody | undefined, header: string | undefined, path: string): string | null {
  if (!body?.content) return null;
  const given = new ContentType(header);
  const declared = Object.keys(body.content);
  const normalized = given.normalize();
  const exact = declared.find((type) => new ContentType(type).normalize() === normalized);
  if (exact !== undefined) return exact;
  const equivalents = given.equivalents().map((type) => type.normalize());
  const equivalent = declared.find((type) => equivalents.includes(new ContentType(type).normalize()));
  if (equivalent !== undefined) return equivalent;
  for (const type of [...declared].sort().reverse()) {
    if (type === '*/*') return type;
    if (WILDCARD.test(type) && new RegExp(`^${type.split('/', 1)[0]}/.+$`).test(normalized ?? 'undefined')) return type;
  }
  if (normalized === undefined && body.required === false) return null;
  throw refusal(415, path, `unsupported media type ${normalized}`);
}

interface QuerySchema {
  properties: Record<string, Schema>;
  allowEmpty: Set<string>;
  /** A query object schema that takes any key: unknown keys are then not refused. */
  open: boolean;
}

interface CompiledOperation {
  readonly operation: Operation;
  readonly query: QuerySchema;
  readonly parameters: ValidateFunction;
  /** The body validator per declared media type (null: no body check), compiled on first use. */
  readonly bodies: Map<string | null, ValidateFunction>;
}

const REQUEST_FIELD: Record<string, string> = { query: 'query', header: 'headers', path: 'params' };

export interface RequestValidator {
  /** Checks, coerces and completes (defaults) the request's parameters and body; throws the refusal. */
  check(req: ApiRequest, found: ResolvedOperation): void;
}

export interface ResponseValidator {
  /** Throws a 500 refusal when `body`, answered with `status`, does not fit the operation's declared response. */
  check(req: ApiRequest, res: ServerResponse, route: RouteSpec, body: unknown): void;
}

interface Validators {
  request: RequestValidator;
  response: ResponseValidator;
}

/** The operation of `route` in the document (its paths are relative to the first server URL). */
function operationAt(document: Document, route: RouteSpec): Operation {
  const base = (document.servers?.[0]?.url ?? '').replace(/\/$/, '');
  const operation = document.paths[route.path.slice(base.length)]?.[route.method];
  if (!operation) throw new Error(`validator: ${route.operationId} (${route.method.toUpperCase()} ${route.path}) is not in the OpenAPI document`);
  return operation;
}

function unsupported(where: string, what: string): never {
  throw new Error(`validator: ${where} uses ${what}, which src/http/validator.ts does not implement`);
}

/** Refuses what the library did and this file does not (see the file comment). */
function checkSupported(document: Document): void {
  const walk = (schema: unknown, where: string, seen: Set<unknown>): void => {
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    const node = schema as Json;
    for (const keyword of ['readOnly', 'writeOnly', 'discriminator']) if (node[keyword] !== undefined) unsupported(where, keyword);
    for (const value of Object.values(node)) walk(value, where, seen);
  };
  walk(document.components?.schemas, 'components.schemas', new Set());
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!operation) continue;
      const where = `${method.toUpperCase()} ${path}`;
      walk(operation.requestBody, where, new Set());
      for (const reference of operation.parameters ?? []) {
        const parameter = resolved(document, reference)!;
        const schema = resolved(document, parameter.schema);
        if (!REQUEST_FIELD[parameter.in]) unsupported(`${where} ${parameter.name}`, `a parameter in ${parameter.in}`);
        if (parameter.content || !schema) unsupported(`${where} ${parameter.name}`, 'a parameter without a schema');
        if (parameter.style !== undefined || parameter.explode !== undefined) unsupported(`${where} ${parameter.name}`, 'a parameter style');
        if (parameter.in === 'query' && !parameter.allowReserved) unsupported(`${where} ${parameter.name}`, 'a query parameter without allowReserved (codegen sets it)');
        // `allOf` of patterns alone (several rules of one string, each worded on its own) coerces as the string it is.
        const patternsOnly = schema.allOf?.every((part) => Object.keys(part).every((key) => key === 'pattern'));
        if (!['string', 'integer', 'number', 'boolean'].includes(String(schema.type ?? schema['x-string-type'])) || (schema.allOf && !patternsOnly) || schema.oneOf || schema.anyOf) {
          unsupported(`${where} ${parameter.name}`, 'a parameter that is not a string, number or boolean');
        }
      }
    }
  }
}

function build(source: unknown, withResponses: boolean): Validators {
  const document = withStreamedBodies(structuredClone(source) as Document);
  checkSupported(document);
  markSerialisedDates(document);
  // Parameters are coerced from their strings; bodies keep their JSON types.
  const parametersAjv = createAjv(document, { coerceTypes: true, useDefaults: true });
  const bodyAjv = createAjv(document, { coerceTypes: false, useDefaults: true });
  const compiled = new Map<string, CompiledOperation>();

  function compile(route: RouteSpec): CompiledOperation {
    const operation = operationAt(document, route);
    const fields: Record<string, { type: 'object'; properties: Record<string, Schema>; required?: string[] } | Json> = { query: {}, headers: {}, params: {}, cookies: {} };
    const allowEmpty = new Set<string>();
    for (const reference of operation.parameters ?? []) {
      const parameter = resolved(document, reference)!;
      const field = REQUEST_FIELD[parameter.in]!;
      const name = parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name;
      const target = (fields[field] = fields[field]!.properties ? fields[field]! : { type: 'object', properties: {} }) as { properties: Record<string, Schema>; required?: string[] };
      target.properties[name] = resolved(document, parameter.schema)!;
      if (parameter.in === 'query' && parameter.allowEmptyValue) allowEmpty.add(name);
      if (parameter.required) (target.required ??= []).push(name);
    }
    const queryProperties = (fields.query as { properties?: Record<string, Schema> }).properties ?? {};
    const open = Object.values(queryProperties).some((p) => p.type === 'object' && !!p.additionalProperties);
    const parameters = parametersAjv.compile({ required: ['query', 'headers', 'params'], properties: { ...fields, body: {} } });
    return { operation, query: { properties: queryProperties, allowEmpty, open }, parameters, bodies: new Map() };
  }

  function compiledFor(route: RouteSpec): CompiledOperation {
    let found = compiled.get(route.operationId);
    if (!found) compiled.set(route.operationId, (found = compile(route)));
    return found;
  }

  function bodyValidator(entry: CompiledOperation, mediaType: string | null): ValidateFunction {
    let validate = entry.bodies.get(mediaType);
    if (!validate) {
      const schema = (mediaType === null ? {} : (entry.operation.requestBody?.content?.[mediaType]?.schema ?? {})) as Schema;
      const binary = schema.format === 'binary';
      validate = bodyAjv.compile({
        properties: { query: {}, headers: {}, params: {}, cookies: {}, body: binary ? {} : schema },
        ...(schema.required && !binary ? { required: ['body'] } : {}),
      });
      entry.bodies.set(mediaType, validate);
    }
    return validate;
  }

  /** A top-level query key with brackets qs left alone (`a[`): read again as the library read it. */
  function bracketKeys(query: Record<string, unknown>): void {
    for (const key of Object.keys(query)) {
      if (!key.includes('[')) continue;
      const normalized = key.split('[')[0]!;
      const parsed = parseQuery(`${key}=${String(query[key])}`);
      if (parsed[normalized] !== undefined) {
        const before = query[normalized];
        const after = parsed[normalized];
        query[normalized] = before && typeof before === 'object' && typeof after === 'object' && !Array.isArray(after) ? { ...before, ...after } : after;
      }
      delete query[key];
    }
  }

  const request: RequestValidator = {
    check(req, found) {
      const entry = compiledFor(found.route);
      try {
        const mediaType = selectMediaType(entry.operation.requestBody, req.headers['content-type'], found.route.expressPath);
        req.params = found.params;
        const query = req.query;
        bracketKeys(query);
        if (!entry.query.open) {
          for (const name of Object.keys(query)) {
            if (!Object.hasOwn(entry.query.properties, name)) throw refusal(400, `/query/${name}`, `Unknown query parameter '${name}'`);
            if (!entry.query.allowEmpty.has(name) && query[name] === '') throw refusal(400, `/query/${name}`, `Empty value found for query parameter '${name}'`);
          }
        }
        // The library's multipart step left an object even where the declared type is a wildcard.
        if (new ContentType(req.headers['content-type']).mediaType === 'multipart/form-data') req.body ??= {};
        const data = { query, headers: req.headers, params: req.params, cookies: undefined, body: req.body };
        const validBody = bodyValidator(entry, mediaType);
        const valid = entry.parameters(data);
        const bodyValid = validBody(data);
        if (valid && bodyValid) return;
        const errors = [...(entry.parameters.errors ?? []), ...(validBody.errors ?? [])];
        throw new ValidationRefusal(400, parametersAjv.errorsText(errors, { dataVar: 'request' }), issuesOf(errors));
      } catch (error) {
        throw withSpecMessages(error, req, entry.operation);
      }
    },
  };

  const responseAjv = withResponses ? createAjv(document, { coerceTypes: false, useDefaults: false }) : null;
  const responseValidators = new Map<string, ValidateFunction>();

  const response: ResponseValidator = {
    check(req, res, route, body) {
      const responses = compiledFor(route).operation.responses ?? {};
      const status = String(res.statusCode);
      // A response is declared for checking when it has no content, or a JSON (or wildcard) one with a schema.
      const checkable = (response: Response | undefined) =>
        response && {
          response,
          types: Object.entries(response.content ?? {})
            .filter(([type, media]) => media.schema && (isJson(type) || type === '*/*' || WILDCARD.test(type)))
            .map(([type]) => type),
        };
      const declared = [status, `${status[0]}XX`, 'default'].map((key) => checkable(responses[key])).find((found) => found && (!found.response.content || found.types.length > 0));
      if (!declared) throw refusal(500, req.originalUrl, `no schema defined for status code '${status}' in the openapi spec`);
      const { types } = declared;
      if (types.length === 0) {
        if (body !== undefined) throw refusal(500, '/response', 'response should NOT have a body');
        return;
      }
      const type = responseType(req, res, types);
      if (type === undefined) return;
      if (body === undefined || body === null) throw refusal(500, '/response', 'response body required.');
      const key = `${route.operationId} ${status} ${type}`;
      let validate = responseValidators.get(key);
      if (!validate) {
        validate = responseAjv!.compile({ type: 'object', properties: { response: declared.response.content![type]!.schema } });
        responseValidators.set(key, validate);
      }
      // What the client receives: dates as their ISO strings, no undefined properties.
      if (!validate({ response: JSON.parse(JSON.stringify(body)) as unknown })) {
        const errors = validate.errors ?? [];
        throw new ValidationRefusal(500, responseAjv!.errorsText(errors, { dataVar: '' }), issuesOf(errors));
      }
    },
  };

  return { request, response };
}

const isJson = (type: string) => /^[^/]+\/(?:json|[^;+]*\+json)(?:\s*;|$)/i.test(type);

/** The declared response media type to check a body against: the one the response or the request's Accept names, else the first. */
function responseType(req: ApiRequest, res: ServerResponse, types: string[]): string | undefined {
  const given = res.getHeader('content-type');
  const accepts = given ? [String(given)] : req.headers.accept ? req.headers.accept.split(',').map((h) => h.trim()) : [];
  const normalizedTypes = new Map(types.map((type) => [new ContentType(type).normalize(), type] as const));
  for (const accept of accepts) {
    const wanted = new ContentType(accept);
    const normalized = wanted.normalize();
    if (normalized === '*/*') return types[0];
    if (normalizedTypes.has(normalized)) return normalizedTypes.get(normalized);
    if (wanted.mediaType && normalizedTypes.has(wanted.mediaType)) return normalizedTypes.get(wanted.mediaType);
    const match = WILDCARD.test(accept)
      ? types.find((type) => new RegExp(`^${normalized!.split('/', 1)[0]}/.+$`).test(new ContentType(type).normalize() ?? ''))
      : types.find((type) => new ContentType(type).mediaType === wanted.mediaType);
    if (match) return match;
  }
  return types[0];
}

let shared: { withResponses: boolean; validators: Validators } | null = null;

/**
 * The validators of the generated document, built once per process (every app of a test run
 * shares them, and what each compiles is kept). `withResponses` (config `http.validate_responses`)
 * adds the response checks.
 */
export function documentValidators(withResponses: boolean): Validators {
  if (!shared || (withResponses && !shared.withResponses)) shared = { withResponses, validators: build(openapiDocument, withResponses) };
  return shared.validators;
}
