/**
 * Middleware that runs before any route: request id and access log, then credential resolution
 * (never rejects: an unusable credential resolves to Anonymous; routes decide through gates).
 */
import { randomUUID } from 'node:crypto';
import { parse as parseCookies } from 'cookie';
import type { NextFunction, Request, Response } from 'express';
import { POPOUT_COOKIE, type CredentialResolver } from '../auth/credentials';
import { redactUrl, type Logger } from '../infra/logger';

/** The request URL for `_links`, without a `?token=` credential (links are never a place for secrets). */
export function withoutCredential(url: string): string {
  if (!/[?&]token=/i.test(url)) return url;
  const parsed = new URL(url, 'http://local');
  parsed.searchParams.delete('token');
  return `${parsed.pathname}${parsed.search}`;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContextMiddleware(deps: { log: Logger; credentials: CredentialResolver }) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const started = performance.now();
    // The access log line carries the request id itself; the per-request child logger handlers
    // log through is only built when one of them logs (most requests never do).
    res.on('finish', () => {
      deps.log.info(
        { request_id: requestId, method: req.method, url: redactUrl(req.originalUrl), status: res.statusCode, duration_ms: Math.round(performance.now() - started) },
        'request',
      );
    });
    const token = typeof req.query.token === 'string' ? req.query.token : undefined;
    const popoutCookie = parseCookies(req.get('cookie') ?? '')[POPOUT_COOKIE];
    const { context } = await deps.credentials.resolve({ authorization: req.get('authorization'), queryToken: token, popoutCookie, transport: 'http' });
    let log: Logger | undefined;
    req.context = {
      auth: context,
      requestId,
      get log() {
        return (log ??= deps.log.child({ request_id: requestId }));
      },
      selfUrl: withoutCredential(req.originalUrl),
      client: { ip: req.ip ?? null, userAgent: req.get('user-agent')?.slice(0, 1000) ?? null },
      setCookie: (name, value, options) => {
        res.cookie(name, value, options);
      },
    };
    next();
  };
}
