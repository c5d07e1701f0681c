/**
 * The express app. Order matters and is fixed here: CORS (answers every preflight itself), security
 * headers, request id and credentials, rate limits (under /v1/), body parsing, documentation
 * helpers, GraphQL, then the input guard (input-guard.ts), the OpenAPI request validator and the
 * generated REST router, then 404 and the one error mapper.
 */
import express, { type Express, type RequestHandler } from 'express';
import { openapiDocument } from '../../generated/openapi-document';
import type { CredentialResolver } from '../auth/credentials';
import type { Config } from '../config/config';
import { AppError, messages } from '../errors';
import type { Logger } from '../infra/logger';
import { corsMiddleware } from './cors';
import { createDocsRouter } from './docs';
import { errorHandler, notFoundHandler } from './errors';
import { inputGuardMiddleware } from './input-guard';
import { rawBodyMiddleware, WEBHOOK_PREFIX } from './raw-body';
import { requestContextMiddleware } from './middleware';
import type { OperationIndex } from './operations';
import { securityHeadersMiddleware } from './security-headers';
import { openApiValidatorMiddleware } from './validator';

export interface HttpAppDeps {
  config: Readonly<Config>;
  log: Logger;
  credentials: CredentialResolver;
  graphql: RequestHandler;
  rest: RequestHandler;
  /** The route index the validator and the REST dispatcher share (operations.ts). */
  operations: OperationIndex;
  /** Per-auth-context rate limits (rate-limit.ts); covers REST and GraphQL under /v1/. */
  rateLimit?: RequestHandler;
}

/**
 * The document the request validator sees: a `multipart/form-data` body is checked by its handler
 * while it streams (busboy), so its schema is opened up here; the media type itself is still
 * enforced (anything else is 415, answered as BAD_REQUEST), as are path, query and headers.
 */
function withStreamedBodies<T>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: unknown }> } }>> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      const multipart = operation?.requestBody?.content?.['multipart/form-data'];
      if (multipart) multipart.schema = {};
    }
  }
  return document;
}

/**
 * Paths are matched without regard to case (Express's and the validator's default), so `/V1/...`
 * reaches the same operations as `/v1/...`; what decides whether the rate limits and the validator
 * apply must not be fooled by the case either.
 */
const API_PATH = /^\/v1(\/|$)/i;
const WEBHOOK_PATH = new RegExp(`^${WEBHOOK_PREFIX}/`, 'i');
const isApiPath = (path: string) => API_PATH.test(path);
const isWebhookPath = (path: string) => WEBHOOK_PATH.test(path);

export function createHttpApp(deps: HttpAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.http.trust_proxy);
  app.set('query parser', 'extended');

  app.use(corsMiddleware(deps.config));
  app.use(securityHeadersMiddleware(deps.config));
  app.use(requestContextMiddleware({ log: deps.log, credentials: deps.credentials }));
  const rateLimit = deps.rateLimit;
  // Webhook receivers are server-to-server: the per-context budgets meant for clients do not apply.
  if (rateLimit) app.use((req, res, next) => (isApiPath(req.path) && !isWebhookPath(req.path) ? rateLimit(req, res, next) : next()));
  // Their bodies stay raw (the signature covers the exact bytes); express.json skips a parsed body.
  app.use(WEBHOOK_PREFIX, ...rawBodyMiddleware());
  app.use(express.json({ limit: '1mb' }));
  app.use(createDocsRouter(deps.config));
  // GraphQL takes JSON bodies only; anything else gets the REST answer (graphql-http's bare 415 has no body).
  app.post('/v1/gql', (req, _res, next) => next(req.is('application/json') ? undefined : new AppError('BAD_REQUEST', messages.unsupportedContentType)), deps.graphql);
  // Strings PostgreSQL cannot store stop here (GraphQL checks its arguments itself, by argument path).
  app.use(inputGuardMiddleware());
  app.use(
    openApiValidatorMiddleware({
      apiSpec: withStreamedBodies(structuredClone(openapiDocument)) as never,
      // multipart/form-data bodies stream to their handler (rest.ts `context.raw`), never buffered by multer.
      fileUploader: false,
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: deps.config.http.validate_responses ? { removeAdditional: false } : false,
      validateSecurity: false,
      ignoreUndocumented: false,
      ignorePaths: (path: string) => !isApiPath(path),
    }, deps.operations),
  );
  app.use(deps.rest);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.log));
  return app;
}
