/**
 * The HTTP pipeline of the public listener. Order matters and is fixed here:
 *
 * 1. CORS (answers every preflight itself), security headers, request id and credentials;
 * 2. the rate limits, for every path under /v1 except the webhook receivers and the documentation
 *    pages' files (docs.ts `isDocsPath`);
 * 3. then one of three branches:
 *    - an operation of the route table: its declared gate (rest.ts `authorize`: 401, then 403),
 *      then the body, the input guard (input-guard.ts), the OpenAPI request validator
 *      (validator.ts) and the operation's handler (rest.ts `dispatch`). Authentication and
 *      authorisation come before validation, so an anonymous or unauthorised caller learns nothing
 *      of an operation's input from a 400 and is never told internal field names;
 *    - `POST /v1/gql`: the body, then the GraphQL endpoint (JSON bodies, or multipart requests it
 *      streams itself), which checks the operation's gates before its arguments
 *      (graphql/endpoint.ts);
 *    - anything else: the body, the documentation pages (docs.ts, on Express), then the input
 *      guard and 404;
 *    (the body: raw bytes for the webhook receivers, JSON for everything else that has one);
 * 4. every failure through one error mapper (errors.ts).
 *
 * The first two branches run on Node's request and response (request.ts) rather than through
 * Express's request entry, whose own cost was four fifths of a bare Express handler (ADR 004); the
 * middleware they run is the chosen libraries' (cors, helmet's headers, body-parser,
 * rate-limiter-flexible, graphql-http), called in this fixed order; the request validator is compiled
 * from the OpenAPI document with Ajv (validator.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import bodyParser from 'body-parser';
import express, { type Express } from 'express';
import typeIs from 'type-is';
import type { CredentialResolver } from '../auth/credentials';
import type { Config } from '../config/config';
import { AppError, messages, scrubbedMessages } from '../errors';
import { guarded } from '../infra/listeners';
import type { IdempotencyStore } from '../infra/idempotency';
import type { Logger } from '../infra/logger';
import { requestContext } from './context';
import { corsMiddleware } from './cors';
import { createDocsRouter, isDocsPath } from './docs';
import { answerError, errorHandler, notFoundHandler } from './errors';
import { checkRestInput, inputGuardMiddleware } from './input-guard';
import { requestContextStep } from './middleware';
import { MALFORMED, operationOf, type OperationIndex, type ResolvedOperation } from './operations';
import { rawBodyMiddleware, WEBHOOK_PREFIX } from './raw-body';
import type { JsonHook, RestDispatcher } from './rest';
import { IDEMPOTENCY_HEADER, idempotencyScope, onceByKey, requestHash } from './idempotency';
import { header, prepareRequest, sendJson, sendPreparedJson, type ApiRequest, type PreparedJson } from './request';
import { securityHeadersMiddleware } from './security-headers';
import { documentValidators } from './validator';

/** Express-style middleware, as the libraries above ship it. */
type Middleware = (req: never, res: never, next: (error?: unknown) => void) => unknown;

export interface HttpAppDeps {
  config: Readonly<Config>;
  log: Logger;
  credentials: CredentialResolver;
  /** The client address rate budgets and sessions record (request.ts). */
  clientAddress: (req: IncomingMessage) => string;
  graphql: (req: ApiRequest, res: ServerResponse) => Promise<void>;
  /** The REST operations' gate and handler, run apart: the gate before the body is read (rest.ts). */
  rest: RestDispatcher;
  /** The route index the validator and the REST dispatcher share (operations.ts). */
  operations: OperationIndex;
  /** Per-auth-context rate limits (rate-limit.ts); covers REST and GraphQL under /v1/. */
  rateLimit?: (req: ApiRequest, res: ServerResponse) => Promise<void>;
  /** Where `Idempotency-Key`s of REST changes are kept (idempotency.ts); without it the header is ignored. */
  idempotency?: IdempotencyStore;
}

export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Paths are matched without regard to case (as Express and the validator match them), so `/V1/...`
 * reaches the same operations as `/v1/...`; what decides whether the rate limits and the validator
 * apply must not be fooled by the case either.
 */
const API_PATH = /^\/v1(\/|$)/i;
const WEBHOOK_PATH = new RegExp(`^${WEBHOOK_PREFIX}(/|$)`, 'i');
const GRAPHQL_PATH = /^\/v1\/gql\/?$/i;
const isApiPath = (path: string) => API_PATH.test(path);
const isWebhookPath = (path: string) => WEBHOOK_PATH.test(path);

/**
 * Runs one piece of Express-style middleware that always passes the request on (body parsers, the
 * validator's steps): resolves when it does, rejects with its error.
 */
function run(middleware: Middleware, req: ApiRequest, res: ServerResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    try {
      void middleware(req as never, res as never, (error?: unknown) => (error ? reject(error) : resolve()));
    } catch (error) {
      reject(error);
    }
  });
}

/** The documentation pages and the 404 of everything else, on Express. */
function createPagesApp(deps: HttpAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.http.trust_proxy);
  app.set('query parser', 'extended');
  app.use(createDocsRouter(deps.config));
  app.use(inputGuardMiddleware());
  app.use(notFoundHandler);
  app.use(errorHandler(deps.log));
  return app;
}

export function createHttpApp(deps: HttpAppDeps): HttpHandler {
  const cors = corsMiddleware(deps.config);
  const securityHeaders = securityHeadersMiddleware(deps.config);
  const context = requestContextStep({ log: deps.log, credentials: deps.credentials, clientAddress: deps.clientAddress });
  const json = bodyParser.json({ limit: '1mb' });
  const raw = rawBodyMiddleware();
  // Compiled from the OpenAPI document (validator.ts); responses are checked in tests.
  const validators = documentValidators(deps.config.http.validate_responses);
  const checkResponse = deps.config.http.validate_responses ? validators.response : null;
  const pages = createPagesApp(deps);

  const logOf = (req: ApiRequest) => req.context?.log ?? deps.log;
  const writeJson = (req: ApiRequest, res: ServerResponse & { json?: JsonHook }, value: unknown) => (res.json ? res.json(value) : sendJson(req, res, res.statusCode, value));

  function fail(req: ApiRequest, res: ServerResponse & { json?: JsonHook }, error: unknown): void {
    if (res.headersSent) {
      logOf(req).warn({ err: error }, 'request failed after its response started');
      res.destroy();
      return;
    }
    answerError(error, res, logOf(req), (body) => writeJson(req, res, body));
  }

  /**
   * Gives the response a `json` writer that checks the first JSON body the operation answers
   * (errors below 500 too) against the document: a body that does not fit is answered as a 500.
   */
  function checkResponses(req: ApiRequest, res: ServerResponse & { json?: JsonHook }, found: ResolvedOperation): void {
    const send = (value: unknown, prepared?: PreparedJson) => (prepared ? sendPreparedJson(req, res, res.statusCode, prepared) : sendJson(req, res, res.statusCode, value));
    res.json = (value, prepared) => {
      res.json = send;
      if (res.headersSent) return;
      if (res.statusCode < 500) {
        try {
          checkResponse!.check(req, res, found.route, value);
        } catch (error) {
          fail(req, res, error);
          return;
        }
      }
      send(value, prepared);
    };
  }

  /** The request's body, parsed as its path takes it: raw bytes for the webhook receivers, else JSON. */
  async function readBody(req: ApiRequest, res: ServerResponse): Promise<void> {
    if (isWebhookPath(req.path)) await run(raw as Middleware, req, res);
    else if (typeIs.hasBody(req)) await run(json as Middleware, req, res);
  }

  async function operation(req: ApiRequest, res: ServerResponse, found: ResolvedOperation): Promise<void> {
    await deps.rest.authorize(req, found);
    await readBody(req, res);
    const problem = checkRestInput(req);
    if (problem) throw problem;
    validators.request.check(req, found);
    if (checkResponse) checkResponses(req, res, found);
    const key = deps.idempotency && found.route.idempotent ? header(req, IDEMPOTENCY_HEADER) : undefined;
    const scope = key === undefined ? null : idempotencyScope(requestContext(req).auth);
    if (key !== undefined && scope !== null) {
      const hash = requestHash(req.method ?? '', req.url ?? '', JSON.stringify(req.body ?? null));
      return onceByKey(deps.idempotency!, scope, key, hash, res, () => deps.rest.dispatch(req, res, found));
    }
    await deps.rest.dispatch(req, res, found);
  }

  async function handle(req: ApiRequest, res: ServerResponse): Promise<void> {
    try {
      // CORS decides at once (its origin check is synchronous): a preflight is answered here.
      let passed = false;
      cors(req, res, (error?: unknown) => {
        if (error) throw error;
        passed = true;
      });
      if (!passed) return;
      securityHeaders(req as never, res as never, () => undefined);
      await context(req, res);
      if (deps.rateLimit && isApiPath(req.path) && !isWebhookPath(req.path) && !isDocsPath(req.path)) await deps.rateLimit(req, res);
      const found = operationOf(deps.operations, req);
      if (found !== null && found !== MALFORMED) return await operation(req, res, found);
      await readBody(req, res);
      if (req.method === 'POST' && GRAPHQL_PATH.test(req.path)) {
        // GraphQL takes JSON bodies and multipart requests (left unread: the endpoint streams them,
        // graphql/multipart.ts); anything else (no body included) gets the REST answer, 415 with a
        // JSON error body (graphql-http's bare 415 has none).
        if (!typeIs(req, ['application/json', 'multipart/form-data'])) throw new AppError('UNSUPPORTED_MEDIA_TYPE', messages.unsupportedContentType);
        return await deps.graphql(req, res);
      }
      pages(req as never, res as never);
    } catch (error) {
      fail(req, res, error);
    }
  }

  // The server's `request` listener: whatever escapes `handle` (its own error answer failing, a
  // request it cannot even prepare) ends this request with a scrubbed 500, never the process.
  return guarded(
    (req: IncomingMessage, res: ServerResponse) => handle(prepareRequest(req), res),
    (error: unknown, req: IncomingMessage, res: ServerResponse) => {
      deps.log.error({ err: error, method: req.method }, 'request handler failed');
      if (res.headersSent || res.writableEnded) {
        res.destroy();
        return;
      }
      sendJson(req, res, 500, { error: 'INTERNAL_SERVER_ERROR', message: scrubbedMessages.INTERNAL_SERVER_ERROR });
    },
  );
}
