/**
 * Security headers on every public response, through helmet: nosniff, no framing, a locked-down
 * Content-Security-Policy for the API (it serves JSON, never a page that loads anything), and
 * HSTS in production only (development and tests run on plain http://127.0.0.1). The
 * documentation pages replace this CSP with their own (docs.ts), which is the one place where
 * inline styles are allowed.
 */
import type { Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import type { Config } from '../config/config';

/** HSTS lifetime in production: one year, the usual preload-list minimum. */
const HSTS_MAX_AGE_SECONDS = 365 * 24 * 3600;

/**
 * `upgrade-insecure-requests` only in production: on a plain-http development listener it would
 * send the documentation pages' own assets to an https:// URL nobody serves.
 */
export function productionOnlyDirectives(config: Pick<Config, 'env'>): Record<string, string[]> {
  return config.env === 'production' ? { 'upgrade-insecure-requests': [] } : {};
}

export function securityHeadersMiddleware(config: Pick<Config, 'env'>): RequestHandler {
  return precomputed(helmetFor(config));
}

/**
 * Every header helmet writes here is static (no nonce, no directive computed from the request), so
 * helmet runs once at start-up against a recorder and each request replays what it did: the same
 * headers, without a dozen middleware calls per request. Should helmet ever not answer at once,
 * it runs per request as before.
 */
function precomputed(middleware: RequestHandler): RequestHandler {
  const ops: ({ set: string; value: string | number | readonly string[] } | { remove: string })[] = [];
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => void ops.push({ set: name, value }),
    removeHeader: (name: string) => void ops.push({ remove: name }),
  };
  let answered = false;
  void middleware({ headers: {} } as Request, recorder as unknown as Response, (error?: unknown) => {
    answered = error === undefined;
  });
  if (!answered) return middleware;
  return (_req, res, next) => {
    for (const op of ops) {
      if ('set' in op) res.setHeader(op.set, op.value);
      else res.removeHeader(op.remove);
    }
    next();
  };
}

function helmetFor(config: Pick<Config, 'env'>): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'none'"],
        'base-uri': ["'none'"],
        'form-action': ["'none'"],
        'frame-ancestors': ["'none'"],
        ...productionOnlyDirectives(config),
      },
    },
    xFrameOptions: { action: 'deny' },
    // Overlays and browser sources on other origins load media and JSON from this API (sound
    // streams in <audio>, images); same-origin would block them. CORS still guards reads by script.
    crossOriginResourcePolicy: { policy: 'cross-origin' },
    strictTransportSecurity: config.env === 'production' ? { maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: true } : false,
  });
}
