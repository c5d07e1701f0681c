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
 */
import type { RequestHandler } from 'express';
import type { OpenApiContext } from 'express-openapi-validator/dist/framework/openapi.context';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader';
import { BadRequest, NotFound, type OpenApiRequest, type OpenApiValidatorOpts, type OpenAPIV3 } from 'express-openapi-validator/dist/framework/types';
import { OpenApiValidator } from 'express-openapi-validator/dist/openapi.validator';
import { MALFORMED, operationOf, type OperationIndex } from './operations';

type Operation = OpenAPIV3.OperationObject;
type Document = OpenAPIV3.DocumentV3 | OpenAPIV3.DocumentV3_1;
type MetadataFactory = (context: OpenApiContext, responseApiDoc: Document | undefined) => RequestHandler;

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
  const spec = new OpenApiSpecLoader({ apiDoc: structuredClone(options.apiSpec) as never, validateApiSpec: options.validateApiSpec, $refParser: options.$refParser });
  return validator.installMiddleware(spec.load()) as unknown as RequestHandler[];
}
