/**
 * Raw bodies for the inbound webhook receivers (/v1/webhooks/): a signature covers the exact bytes
 * sent, so these routes get the body unparsed (body-parser's raw reader, instead of the JSON one)
 * and their headers through `RequestContext.inbound`; the receiver verifies, then parses. The
 * parsed `req.body` is left empty, so neither the input guard nor the validator walks the bytes.
 */
import type { ServerResponse } from 'node:http';
import bodyParser from 'body-parser';
import { header, type ApiRequest } from './request';

export const WEBHOOK_PREFIX = '/v1/webhooks';

export function rawBodyMiddleware(limit = '1mb') {
  const read = bodyParser.raw({ type: () => true, limit });
  return (req: ApiRequest, res: ServerResponse, next: (error?: unknown) => void): void => {
    read(req as never, res as never, (error?: unknown) => {
      if (error) return next(error);
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (req.context) req.context.inbound = { body, header: (name: string) => header(req, name) };
      req.body = undefined;
      next();
    });
  };
}
