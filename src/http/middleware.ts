/**
 * Middleware that runs before any route: request id and access log, then credential resolution
 * (never rejects: an unusable credential resolves to Anonymous; routes decide through gates).
 */
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { CredentialResolver } from '../auth/credentials';
import { redactUrl, type Logger } from '../infra/logger';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContextMiddleware(deps: { log: Logger; credentials: CredentialResolver }) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const log = deps.log.child({ request_id: requestId });
    const started = performance.now();
    res.on('finish', () => {
      log.info(
        { method: req.method, url: redactUrl(req.originalUrl), status: res.statusCode, duration_ms: Math.round(performance.now() - started) },
        'request',
      );
    });
    const token = typeof req.query.token === 'string' ? req.query.token : undefined;
    const { context } = await deps.credentials.resolve({ authorization: req.get('authorization'), queryToken: token, transport: 'http' });
    req.context = { auth: context, requestId, log, selfUrl: req.originalUrl };
    next();
  };
}
