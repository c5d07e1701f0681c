/** What a REST handler gets besides its typed input: who calls, and how to log and link. */
import type { Readable } from 'node:stream';
import type { CookieSerializeOptions as SerializeOptions } from 'cookie';
import type { AuthContext } from '../auth/context';
import type { Logger } from '../infra/logger';

/** Cookie attributes; `maxAge` is in milliseconds and also sets Expires (as Express's `res.cookie`). */
export type CookieOptions = Omit<SerializeOptions, 'maxAge'> & { maxAge?: number };

export interface RequestContext {
  auth: AuthContext;
  requestId: string;
  /** When the request arrived (`performance.now()`). */
  arrivedAt: number;
  log: Logger;
  /** Path and query of this request, for `_links.self`. */
  selfUrl: string;
  /** Where the request came from, for sessions and the audit log. */
  client: { ip: string | null; userAgent: string | null };
  /** Sets a cookie on the response (REST and GraphQL alike). */
  setCookie(name: string, value: string, options: CookieOptions): void;
  /**
   * Runs `release` once the answer has been written out or its connection closed: what a large
   * read holds (src/infra/read-budget.ts) is held until its bytes have left the node. Absent
   * outside HTTP requests (the caller then releases at once).
   */
  untilAnswered?(release: () => void): void;
  /**
   * The unparsed request of a REST operation (set by the REST router, rest.ts; absent on GraphQL):
   * a `multipart/form-data` body is left unread for the handler to stream (busboy), and headers
   * such as `Range` are read here. A handler may answer a `Readable` body, which the router pipes.
   */
  raw?: RawRequest;
  /** The exact request of a signature-verified receiver (set under /v1/webhooks/ only, raw-body.ts). */
  inbound?: InboundRequest;
}

/** The raw bytes and headers of an inbound webhook, before anything parses them. */
export interface InboundRequest {
  readonly body: Buffer;
  header(name: string): string | undefined;
}

/** A REST request as it arrived: the body stream (unread for multipart operations) and its headers. */
export interface RawRequest {
  readonly body: Readable;
  header(name: string): string | undefined;
}

declare module 'express-serve-static-core' {
  interface Request {
    context?: RequestContext;
  }
}

/** The context the pipeline attached to a request (app.ts); every route runs after it. */
export function requestContext(req: { context?: RequestContext }): RequestContext {
  if (!req.context) throw new Error('request context middleware did not run');
  return req.context;
}
