/**
 * Raw bodies for the inbound webhook receivers (/v1/webhooks/): a signature covers the exact bytes
 * sent, so these routes get the body unparsed (express.raw, before the JSON parser) and their
 * headers through `RequestContext.inbound`; the receiver verifies, then parses. The parsed
 * `req.body` is left empty, so neither the input guard nor the validator walks the bytes.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

export const WEBHOOK_PREFIX = '/v1/webhooks';

export function rawBodyMiddleware(limit = '1mb'): RequestHandler[] {
  return [
    express.raw({ type: () => true, limit }),
    (req: Request, _res: Response, next: NextFunction): void => {
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (req.context) req.context.inbound = { body, header: (name: string) => req.get(name) };
      req.body = undefined;
      next();
    },
  ];
}
