/** What a REST handler gets besides its typed input: who calls, and how to log and link. */
import type { Request } from 'express';
import type { AuthContext } from '../auth/context';
import type { Logger } from '../infra/logger';

export interface RequestContext {
  auth: AuthContext;
  requestId: string;
  log: Logger;
  /** Path and query of this request, for `_links.self`. */
  selfUrl: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    context?: RequestContext;
  }
}

export function requestContext(req: Request): RequestContext {
  if (!req.context) throw new Error('request context middleware did not run');
  return req.context;
}
