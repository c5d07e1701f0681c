/**
 * What every answer of the edge must satisfy, whatever was asked: no 5xx (but the documented 503
 * PLATFORM_UNAVAILABLE of a platform with no API configured); a REST answer has a
 * status its operation declares and a body valid against the OpenAPI document (ajv over the
 * document's own schemas, in addition to the service's response validator); an error has a
 * code of src/errors.ts whose HTTP status is the one it came with; a GraphQL error carries a
 * known `extensions.code` that is not a server failure; no message leaks an internal error; and
 * nothing a request sent reached `Object.prototype`.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { openapiDocument } from '../../generated/openapi-document';
import { routes, type RouteSpec } from '../../generated/rest';
import { errorStatus } from '../../src/errors';
import { operationOf } from './rest-cases';
import { deref, type Schema } from './values';

export interface Observed {
  status: number;
  contentType: string;
  text: string;
}

export interface Violation {
  kind: string;
  /** What makes this violation distinct from others of its kind (grouping key). */
  key: string;
  detail: string;
}

const knownCodes = new Set(Object.keys(errorStatus));
/**
 * A platform the fuzzed service has no API for answers 503 PLATFORM_UNAVAILABLE: a documented,
 * expected state of the deployment (docs/guides/operating.md, "Outages"), not a server failure.
 */
const EXPECTED_UNAVAILABLE = 'PLATFORM_UNAVAILABLE';
const serverCodes = new Set(Object.entries(errorStatus).filter(([c, s]) => s >= 500 && c !== EXPECTED_UNAVAILABLE).map(([c]) => c));

/** Internal errors that must never be the text a client reads. */
const LEAKS =
  /Maximum call stack|RangeError|TypeError|ReferenceError|Cannot read propert|is not a function|is not iterable|undefined is not|ECONNREFUSED|ECONNRESET|Knex|knex|PGlite|pglite|relation "|violates|duplicate key|invalid input syntax|invalid byte sequence|unsupported Unicode escape|\bat [\w.<>]+ \(.*:\d+:\d+\)/;

const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
const compiled = new Map<string, ValidateFunction>();

function validator(key: string, schema: unknown): ValidateFunction {
  let v = compiled.get(key);
  if (!v) {
    v = ajv.compile({ ...(schema as object), components: openapiDocument.components });
    compiled.set(key, v);
  }
  return v;
}

const errorValidator = () => validator('#/components/schemas/Error', { $ref: '#/components/schemas/Error' });

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

const clip = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

function leakCheck(messages: string[]): Violation[] {
  return messages.filter((m) => LEAKS.test(m)).map((m) => ({ kind: 'internal-message', key: m.replace(/\d+/g, 'N').slice(0, 80), detail: clip(m) }));
}

/** Checks an error envelope `{ error, message, details? }`: shape, known code, matching status. */
function envelopeCheck(status: number, body: unknown): Violation[] {
  const out: Violation[] = [];
  const v = errorValidator();
  if (!v(body)) {
    out.push({ kind: 'invalid-error-body', key: `${status}`, detail: `${ajv.errorsText(v.errors)}: ${clip(JSON.stringify(body))}` });
    return out;
  }
  const { error, message } = body as { error: string; message: string };
  if (errorStatus[error as keyof typeof errorStatus] !== status) out.push({ kind: 'code-status-mismatch', key: `${status} ${error}`, detail: `${error} answered with HTTP ${status}` });
  out.push(...leakCheck([message]));
  return out;
}

// ------------------------------------------------------------------ REST

const routeMatchers = routes.map((route) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}/?$`, 'i'),
  literal: !route.path.includes('{'),
}));

/** The operation express routes `method pathname` to (case-insensitive, trailing slash allowed). */
export function matchRoute(method: string, pathname: string): RouteSpec | null {
  const candidates = routeMatchers.filter((m) => m.route.method === method.toLowerCase() && m.pattern.test(pathname));
  candidates.sort((a, b) => Number(b.literal) - Number(a.literal));
  return candidates[0]?.route ?? null;
}

/**
 * Node's HTTP parser answers 431 (request line and headers over 16 KB) before any of the
 * service's code runs; such an answer says nothing about the edge.
 */
const refusedByNode = (observed: Observed) => observed.status === 431 && observed.text === '';

export function checkRest(method: string, pathname: string, observed: Observed): Violation[] {
  const out: Violation[] = [];
  if (refusedByNode(observed)) return out;
  const parsed = parseJson(observed.text);
  const code = parsed.ok && parsed.value && typeof parsed.value === 'object' ? (parsed.value as { error?: unknown }).error : undefined;
  if (observed.status >= 500 && !(observed.status === 503 && code === EXPECTED_UNAVAILABLE)) {
    out.push({ kind: '5xx', key: `${observed.status} ${String(code ?? '')}`, detail: clip(observed.text) });
  }
  const route = matchRoute(method, pathname);
  if (!route) {
    // Not an operation of the table: a JSON error envelope, if anything (OPTIONS may answer 2xx).
    if (observed.status >= 400) {
      if (!parsed.ok) out.push({ kind: 'non-json-error', key: `${observed.status}`, detail: clip(observed.text) });
      else out.push(...envelopeCheck(observed.status, parsed.value));
    }
    return out;
  }
  const op = operationOf(route);
  const responses = op.responses as Record<string, unknown>;
  const declared = deref(responses[String(observed.status)] ?? responses.default) as Schema | undefined;
  if (!declared && observed.status < 500) {
    out.push({ kind: 'undeclared-status', key: `${route.operationId} ${observed.status} ${String(code ?? '')}`, detail: `${route.operationId} declares ${Object.keys(responses).join(', ')}; got ${observed.status} ${clip(observed.text, 200)}` });
  }
  if (observed.status >= 400) {
    if (!parsed.ok) out.push({ kind: 'non-json-error', key: `${route.operationId} ${observed.status}`, detail: clip(observed.text) });
    else out.push(...envelopeCheck(observed.status, parsed.value));
  }
  const content = declared?.content as Record<string, Schema> | undefined;
  const jsonSchema = content?.['application/json']?.schema;
  if (declared && jsonSchema && observed.status < 500) {
    if (!parsed.ok) out.push({ kind: 'non-json-body', key: `${route.operationId} ${observed.status}`, detail: clip(observed.text) });
    else {
      const v = validator(`${route.operationId} ${observed.status}`, jsonSchema);
      if (!v(parsed.value)) {
        out.push({
          kind: 'invalid-body',
          key: `${route.operationId} ${observed.status} ${v.errors?.[0]?.instancePath ?? ''} ${v.errors?.[0]?.message ?? ''}`,
          detail: `${ajv.errorsText(v.errors)}: ${clip(observed.text)}`,
        });
      }
    }
  } else if (declared && content && !jsonSchema && observed.status < 400) {
    const types = Object.keys(content);
    if (!types.some((t) => observed.contentType.startsWith(t))) out.push({ kind: 'content-type', key: `${route.operationId} ${observed.contentType}`, detail: `declared ${types.join(', ')}, got ${observed.contentType}` });
  }
  return out;
}

// ------------------------------------------------------------------ GraphQL

interface GraphqlError {
  message?: unknown;
  extensions?: { code?: unknown };
}

export function checkGraphql(observed: Observed): Violation[] {
  const out: Violation[] = [];
  if (refusedByNode(observed)) return out;
  const parsed = parseJson(observed.text);
  if (observed.status >= 500) out.push({ kind: '5xx', key: `${observed.status}`, detail: clip(observed.text) });
  if (!parsed.ok || !parsed.value || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    if (observed.status !== 404) out.push({ kind: 'non-json-graphql', key: `${observed.status}`, detail: clip(observed.text) });
    return out;
  }
  const body = parsed.value as { data?: unknown; errors?: unknown; error?: unknown };
  if (body.error !== undefined && body.errors === undefined) {
    // Refused before GraphQL ran (body parser, rate limit): the REST envelope.
    out.push(...envelopeCheck(observed.status, body));
    return out;
  }
  if (body.errors === undefined) {
    if (body.data === undefined || body.data === null) out.push({ kind: 'graphql-shape', key: 'no data, no errors', detail: clip(observed.text) });
    return out;
  }
  if (!Array.isArray(body.errors) || body.errors.length === 0) {
    out.push({ kind: 'graphql-shape', key: 'errors not a non-empty list', detail: clip(observed.text) });
    return out;
  }
  for (const e of body.errors as GraphqlError[]) {
    const code = e?.extensions?.code;
    if (typeof e?.message !== 'string') out.push({ kind: 'graphql-shape', key: 'error without message', detail: clip(JSON.stringify(e)) });
    if (typeof code !== 'string' || !knownCodes.has(code)) out.push({ kind: 'unknown-graphql-code', key: String(code), detail: `${String(code)}: ${clip(String(e?.message))}` });
    else if (serverCodes.has(code)) out.push({ kind: 'graphql-server-error', key: `${code} ${clip(String(e?.message), 60)}`, detail: `${code}: ${clip(String(e?.message))}` });
  }
  out.push(...leakCheck((body.errors as GraphqlError[]).map((e) => String(e?.message ?? ''))));
  return out;
}

// ------------------------------------------------------------------ prototype pollution

const baseline = new Set(Object.getOwnPropertyNames(Object.prototype));

/** Keys a request added to Object.prototype (the service runs in this process); removes them. */
export function checkPrototypes(): Violation[] {
  const added = Object.getOwnPropertyNames(Object.prototype).filter((k) => !baseline.has(k));
  for (const k of added) delete (Object.prototype as Record<string, unknown>)[k];
  return added.length ? [{ kind: 'prototype-pollution', key: added.join(','), detail: `Object.prototype gained ${added.join(', ')}` }] : [];
}
