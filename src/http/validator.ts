/**
 * The OpenAPI request validator: express-openapi-validator, with one part swapped. Its metadata
 * step finds a request's operation by trying every documented route's regular expression in turn
 * (`lookupRoute`, a sixth of the CPU of `GET /v1/health` with ~300 routes); here that step reads the
 * operation the route index already found (operations.ts) and fills in exactly what the library's
 * step fills in (`req.openapi`, `req.params`, its 404 for an undocumented route under /v1 and 400
 * for a malformed path), so parameter parsing, coercion and schema validation stay the library's.
 *
 * The library keeps that step in a private method of its validator class; the instance's copy is
 * replaced before its middleware is built, which is the construction its own `middleware()` entry
 * point performs. The package is pinned to an exact version in package.json for this reason, and
 * test/http/validator.test.ts compares both lookups over every route.
 *
 * Its request and response validators get the document without `paths`. They put the document's
 * `paths` and `components` into every schema they compile (one per operation, and per operation,
 * status and media type), so that a `$ref` into another operation resolves; Ajv walks each such
 * schema whole when it adds it, and `paths` is 70% of this document. No `$ref` of spec/ points
 * into `#/paths` (one that did would fail the first request to reach it, loudly); the walks were
 * a fifth of the CPU of the test suite, which validates every response.
 */
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import typeIs from 'type-is';
import type { OpenApiContext } from 'express-openapi-validator/dist/framework/openapi.context';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader';
import { BadRequest, NotFound, type OpenApiRequest, type OpenApiValidatorOpts, type OpenAPIV3 } from 'express-openapi-validator/dist/framework/types';
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator';
import { keptCache } from '../infra/kept';
import type { RouteSpec } from '../../generated/rest';
import { MALFORMED, operationOf, type OperationIndex } from './operations';

type Operation = OpenAPIV3.OperationObject;
type Document = OpenAPIV3.DocumentV3 | OpenAPIV3.DocumentV3_1;
type MetadataFactory = (context: OpenApiContext, responseApiDoc: Document | undefined) => RequestHandler;
/** The library's builders of its request and response validation steps (a document, then the response step's serialiser). */
type ValidationStep = (apiDoc: Document, ...rest: unknown[]) => RequestHandler;

interface Entry {
  expressRoute: string;
  openApiRoute: string;
  schema: Operation;
  responseSchema: Operation | undefined;
}

/** The library's metadata step, over the route index instead of its route-by-route scan. */
function indexedMetadata(index: OperationIndex): MetadataFactory {
  return (context, responseApiDoc) => {
    // `METHOD /v1/template` → what the library's lookup would have answered for that route.
    const entries = new Map<string, Entry>();
    for (const route of context.routes) {
      const pathKey = route.openApiRoute.substring(route.basePath.length);
      const method = route.method.toLowerCase();
      const paths = (doc: Document | undefined) => doc?.paths?.[pathKey] as Record<string, Operation> | undefined;
      entries.set(`${route.method.toUpperCase()} ${route.openApiRoute}`, {
        expressRoute: route.expressRoute,
        openApiRoute: route.openApiRoute,
        schema: paths(context.apiDoc)![method]!,
        responseSchema: paths(responseApiDoc)?.[method],
      });
    }
    return (req, _res, next) => {
      const path = req.path;
      if (context.shouldIgnoreRoute(path)) return next();
      const found = operationOf(index, req);
      if (found === MALFORMED) throw new BadRequest({ path: req.path, message: `malformed uri'` });
      const entry = found ? entries.get(`${found.route.method.toUpperCase()} ${found.route.path}`) : undefined;
      if (found && entry) {
        const openapi: OpenApiRequest['openapi'] & { _responseSchema?: Operation } = {
          expressRoute: entry.expressRoute,
          openApiRoute: entry.openApiRoute,
          pathParams: found.params,
          schema: entry.schema,
          serial: context.serial,
        };
        if (responseApiDoc) openapi._responseSchema = entry.responseSchema;
        (req as OpenApiRequest).openapi = openapi;
        req.params = found.params;
      } else if (context.isManagedRoute(path) && !context.ignoreUndocumented) {
        throw new NotFound({ path: req.path, message: 'not found' });
      }
      next();
    };
  };
}

/** `OpenApiValidator.middleware(options)`, with the indexed metadata step. */
export function openApiValidatorMiddleware(options: OpenApiValidatorOpts, index: OperationIndex): RequestHandler[] {
  const validator = new OpenApiValidator(options);
  (validator as unknown as { metadataMiddleware: MetadataFactory }).metadataMiddleware = indexedMetadata(index);
  const steps = validator as unknown as { requestValidationMiddleware: ValidationStep; responseValidationMiddleware: ValidationStep };
  for (const step of ['requestValidationMiddleware', 'responseValidationMiddleware'] as const) {
    const build = steps[step].bind(validator);
    steps[step] = (apiDoc, ...rest) => build({ ...apiDoc, paths: {} }, ...rest);
  }
  const spec = new OpenApiSpecLoader({ apiDoc: structuredClone(options.apiSpec) as never, validateApiSpec: options.validateApiSpec, $refParser: options.$refParser });
  return validator.installMiddleware(spec.load()) as unknown as RequestHandler[];
}

/** Request inputs whose checked form is kept (distinct method and URL pairs). */
const PASSED_KEPT = 5_000;

/** What the request steps leave on a request they passed. */
interface Passed {
  openapi: unknown;
  params: Record<string, unknown>;
  query: Record<string, unknown>;
}

/** A private copy of parsed parameters (strings, numbers, booleans, and lists or records of them) for each request. */
function copied<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copied) as T;
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    // `__proto__` stays an ordinary key, as qs left it.
    if (k === '__proto__') Object.defineProperty(out, k, { value: copied(v), enumerable: true, writable: true, configurable: true });
    else out[k] = copied(v);
  }
  return out as T;
}

type CheckedRequest = IncomingMessage & { originalUrl: string; openapi?: unknown; params: Record<string, unknown>; query: Record<string, unknown> };

/**
 * The request steps' verdict on a request they passed before. A GET or HEAD without a body, to an
 * operation that declares path and query parameters only, is judged on its method and URL alone
 * (no header, cookie or body reaches the schemas), so what the steps left on it (the operation,
 * the coerced path and query parameters) is kept and handed to the next request with the same
 * method and URL instead of running the steps again. Refusals are never kept: a request the steps
 * would refuse runs them and is refused as before.
 */
export function passedRequests(document: unknown) {
  const doc = document as { servers?: { url: string }[]; paths: Record<string, Record<string, { parameters?: unknown[] } | undefined> & { parameters?: unknown[] }>; components?: { parameters?: Record<string, unknown> } };
  const base = (doc.servers?.[0]?.url ?? '').replace(/\/$/, '');
  const resolve = (node: unknown) => {
    const ref = (node as { $ref?: string }).$ref;
    return (ref ? doc.components?.parameters?.[ref.replace('#/components/parameters/', '')] : node) as { in?: string } | undefined;
  };
  const judgedOnUrl = new Map<string, boolean>();
  const onUrlAlone = (route: RouteSpec): boolean => {
    let known = judgedOnUrl.get(route.operationId);
    if (known === undefined) {
      const item = doc.paths[route.path.slice(base.length)];
      const parameters = [...(item?.parameters ?? []), ...(item?.[route.method]?.parameters ?? [])].map(resolve);
      known = parameters.every((p) => p?.in === 'path' || p?.in === 'query');
      judgedOnUrl.set(route.operationId, known);
    }
    return known;
  };
  // Keyed by URLs of up to 16 KB: under the kept-bytes budget too (src/infra/kept.ts).
  const passed = keptCache<string, Passed>({ max: PASSED_KEPT, sizeOf: (_value, key) => 512 + 3 * key.length });
  return {
    /** The key a request's verdict is kept under, or null when more than its URL decides it. */
    keyOf(req: CheckedRequest, route: RouteSpec): string | null {
      if ((req.method !== 'GET' && req.method !== 'HEAD') || typeIs.hasBody(req) || !onUrlAlone(route)) return null;
      return `${req.method} ${req.originalUrl}`;
    },
    /** Gives the request what the steps left on an earlier one with its key; false when none passed. */
    recall(req: CheckedRequest, key: string): boolean {
      const known = passed.get(key);
      if (!known) return false;
      req.openapi = known.openapi;
      req.params = copied(known.params);
      req.query = copied(known.query);
      return true;
    },
    remember(req: CheckedRequest, key: string): void {
      passed.set(key, { openapi: req.openapi, params: copied(req.params), query: copied(req.query) });
    },
  };
}
