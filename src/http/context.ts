/** What a REST handler gets besides its typed input: who calls, and how to log and link. */
import type { CookieOptions, Request } from 'express';
import type { AuthContext } from '../auth/context';
import type { Logger } from '../infra/logger';

export interface RequestContext {
  auth: AuthContext;
  requestId: string;
  log: Logger;
  /** Path and query of this request, for `_links.self`. */
  selfUrl: string;
  /** Where the request came from, for sessions and the audit log. */
  client: { ip: string | null; userAgent: string | null };
  /** Sets a cookie on the response (REST and GraphQL alike). */
  setCookie(name: string, value: string, options: CookieOptions): void;
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
