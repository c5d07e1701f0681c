/**
 * Cross-origin access for dashboards on another origin: the `cors` middleware over the allow-list
 * `http.cors_origins` (empty = same origin only). Owns the allowed methods, request headers and
 * exposed response headers; mounted first in app.ts so a preflight is answered before the rate
 * limiter, the credential resolver or the OpenAPI validator see it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import cors, { type CorsOptions } from 'cors';
import vary from 'vary';
import type { Config } from '../config/config';

/**
 * Request headers a browser may send cross-origin (beyond the CORS-safelisted ones).
 * `If-None-Match` lets a dashboard revalidate what it fetched with the ETag it was given (304);
 * with it the page sends `Cache-Control: max-age=0`, else fetch() adds `no-cache`, which asks for
 * the full answer (docs/guides/using-the-api.md, "Browsers"). `Idempotency-Key` makes a write safe
 * to retry (the SDK sends one with every change it may retry, in a browser too).
 * `GraphQL-Require-Preflight` / `Apollo-Require-Preflight`: a multipart GraphQL request must carry
 * one (graphql/multipart.ts), so a page of an allowed origin may send it.
 */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id', 'If-None-Match', 'Cache-Control', 'Idempotency-Key', 'GraphQL-Require-Preflight', 'Apollo-Require-Preflight'] as const;

/**
 * Response headers a cross-origin script may read: without this list a dashboard could not see
 * its rate-limit budget, when to retry, the request id to quote in a support ticket, the ETag to
 * send back in `If-None-Match`, or where a created resource lives.
 */
export const CORS_EXPOSED_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After', 'X-Request-Id', 'ETag', 'Location'] as const;

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/**
 * The configured origins in the form browsers send them (`new URL().origin`: lower-case host,
 * no default port, no trailing slash), so `https://Dash.example.com:443/` still matches.
 */
export function normalizeOrigins(origins: readonly string[]): Set<string> {
  return new Set(origins.map((origin) => new URL(origin).origin));
}

/**
 * Listed origins get their own origin echoed back with credentials allowed (the popout cookie);
 * any other origin gets no Access-Control-Allow-Origin, so the browser keeps the response from
 * it. Every OPTIONS request is answered here with 204 either way: a preflight is never charged to
 * the rate limit and never reaches the validator's 404/405.
 */
export function corsMiddleware(config: Pick<Config, 'http'>): (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void {
  const allowed = normalizeOrigins(config.http.cors_origins);
  const common: CorsOptions = {
    methods: METHODS,
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: PREFLIGHT_MAX_AGE,
    preflightContinue: false,
    optionsSuccessStatus: 204,
  };
  // Built once: the per-request work is one Set look-up, never an options object.
  const granted = new Map([...allowed].map((origin) => [origin, { ...common, origin, credentials: true } satisfies CorsOptions]));
  // Empty lists (rather than `origin: false`) keep cors answering the preflight and adding
  // `Vary: Origin` while granting nothing: no origin, method, header or credentials.
  const refused: CorsOptions = { ...common, origin: [], methods: [], allowedHeaders: [], exposedHeaders: [], maxAge: undefined, credentials: false };
  const handle = cors((req, callback) => {
    const origin = req.headers.origin;
    callback(null, (origin !== undefined && granted.get(origin)) || refused);
  });
  return (req, res, next) => {
    // No Origin (server-to-server calls, probes) and not a preflight: all cors would do is add
    // `Vary: Origin`, so that is done here without building its headers.
    if (req.headers.origin === undefined && req.method !== 'OPTIONS') {
      vary(res, 'Origin');
      return next();
    }
    return handle(req, res, next);
  };
}
