/**
 * The express app. Order matters and is fixed here: CORS (answers every preflight itself), security
 * headers, request id and credentials, rate limits (under /v1/), body parsing, documentation
 * helpers, GraphQL, then the input guard (input-guard.ts), the OpenAPI request validator and the
 * generated REST router, then 404 and the one error mapper.
 */
import express, { type Express, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { openapiDocument } from '../../generated/openapi-document';
import type { CredentialResolver } from '../auth/credentials';
import type { Config } from '../config/config';
import { AppError, messages } from '../errors';
import type { Logger } from '../infra/logger';
import { corsMiddleware } from './cors';
import { createDocsRouter } from './docs';
import { errorHandler, notFoundHandler } from './errors';
import { inputGuardMiddleware } from './input-guard';
import { requestContextMiddleware } from './middleware';
import { securityHeadersMiddleware } from './security-headers';

export interface HttpAppDeps {
  config: Readonly<Config>;
  log: Logger;
  credentials: CredentialResolver;
  graphql: RequestHandler;
  rest: RequestHandler;
  /** Per-auth-context rate limits (rate-limit.ts); covers REST and GraphQL under /v1/. */
  rateLimit?: RequestHandler;
}

export function createHttpApp(deps: HttpAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.http.trust_proxy);
  app.set('query parser', 'extended');

  app.use(corsMiddleware(deps.config));
  app.use(securityHeadersMiddleware(deps.config));
  app.use(requestContextMiddleware({ log: deps.log, credentials: deps.credentials }));
  const rateLimit = deps.rateLimit;
  if (rateLimit) app.use((req, res, next) => (req.path.startsWith('/v1/') ? rateLimit(req, res, next) : next()));
  app.use(express.json({ limit: '1mb' }));
  app.use(createDocsRouter(deps.config));
  // GraphQL takes JSON bodies only; anything else gets the REST answer (graphql-http's bare 415 has no body).
  app.post('/v1/gql', (req, _res, next) => next(req.is('application/json') ? undefined : new AppError('BAD_REQUEST', messages.unsupportedContentType)), deps.graphql);
  // Strings PostgreSQL cannot store stop here (GraphQL checks its arguments itself, by argument path).
  app.use(inputGuardMiddleware());
  app.use(
    OpenApiValidator.middleware({
      apiSpec: structuredClone(openapiDocument) as never,
      validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: deps.config.http.validate_responses ? { removeAdditional: false } : false,
      validateSecurity: false,
      ignoreUndocumented: false,
      ignorePaths: (path: string) => !path.startsWith('/v1/') && path !== '/v1',
    }),
  );
  app.use(deps.rest);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.log));
  return app;
}
