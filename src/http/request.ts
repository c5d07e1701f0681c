/**
 * The request and response of an API call as this service's HTTP pipeline (app.ts) handles them:
 * Node's own objects, given the few fields the middleware reads (`path`, `query`, `originalUrl`,
 * `params`, `body`, the request context), and answered through the writers below. Express's request
 * entry (prototype swaps, its router) cost more than four fifths of a bare Express handler's CPU, so
 * the API operations do not go through it; the documentation pages still do (docs.ts).
 *
 * The writers answer as Express's `res.json`/`res.send` do: the same Content-Type with its charset,
 * Content-Length, a weak ETag and 304 for a fresh conditional GET, no body for HEAD, 204 or 304.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serialize as serializeCookie, type CookieSerializeOptions as SerializeOptions } from 'cookie';
import createETag from 'etag';
import express from 'express';
import fresh from 'fresh';
import proxyAddress from 'proxy-addr';
import { parse as parseQuery } from 'qs';
import type { Config } from '../config/config';
import type { RequestContext } from './context';
import type { OperationLookup } from './operations';

/** A request as the pipeline hands it on: Node's, with what Express's request would have had. */
export interface ApiRequest extends IncomingMessage {
  /** The request target as received (path and query). */
  originalUrl: string;
  /** The path of the request target, without the query string. */
  path: string;
  /** The query string parsed as Express's "extended" parser does (qs). */
  query: Record<string, unknown>;
  params: Record<string, unknown>;
  body?: unknown;
  context?: RequestContext;
  operation?: OperationLookup;
}

/** Fills in the request's path and query (once, at the start of the pipeline). */
export function prepareRequest(req: IncomingMessage): ApiRequest {
  const api = req as ApiRequest;
  const url = req.url ?? '/';
  const mark = url.indexOf('?');
  api.originalUrl = url;
  api.path = mark === -1 ? url : url.slice(0, mark);
  // `allowPrototypes` as Express 5's extended parser sets it; qs still never writes to a prototype.
  api.query = mark === -1 || mark === url.length - 1 ? {} : (parseQuery(url.slice(mark + 1), { allowPrototypes: true }) as Record<string, unknown>);
  api.params = {};
  return api;
}

/** A request header as one string (Express's `req.get`): `referer` and `referrer` are one header. */
export function header(req: IncomingMessage, name: string): string | undefined {
  const key = name.toLowerCase();
  const value = key === 'referer' || key === 'referrer' ? (req.headers.referrer ?? req.headers.referer) : req.headers[key];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The client address as Express derives `req.ip` under `http.trust_proxy` (its compiled trust
 * function over proxy-addr), shared by HTTP and the WebSocket upgrade so one client has one
 * anonymous budget, and a spoofed X-Forwarded-For counts only from trusted proxies.
 */
export function clientAddressResolver(trustProxy: Config['http']['trust_proxy']): (req: IncomingMessage) => string {
  const settings = express();
  settings.set('trust proxy', trustProxy);
  const trust = settings.get('trust proxy fn') as (address: string, hop: number) => boolean;
  return (req) => proxyAddress(req, trust) ?? req.socket.remoteAddress ?? 'unknown';
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** Whether a GET or HEAD answered with `status` is fresh for the request's conditional headers. */
function isFresh(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const status = res.statusCode;
  if ((status < 200 || status >= 300) && status !== 304) return false;
  return fresh(req.headers, { etag: res.getHeader('ETag') as string | undefined, 'last-modified': res.getHeader('Last-Modified') as string | undefined });
}

/**
 * A body given as text in parts (a spliced page: the envelope's head, the page's text as the
 * database sent it, the envelope's tail), written without joining them: joining copies the page
 * once for the ETag's hash and Node copies it again to put its headers in front of a string body.
 */
export type TextParts = readonly string[];

const byteLength = (body: string | Buffer | TextParts): number =>
  typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : Buffer.isBuffer(body) ? body.length : body.reduce((sum, part) => sum + Buffer.byteLength(part, 'utf8'), 0);

/**
 * The weak ETag of text in parts: the `etag` package's tag of the joined text (its length in hex
 * and the first 27 characters of its SHA-1 in base64; test/http/request.test.ts holds them
 * equal), hashed part by part.
 */
function partsETag(parts: TextParts): string {
  const length = byteLength(parts);
  if (length === 0) return createETag('', { weak: true });
  const hash = createHash('sha1');
  for (const part of parts) hash.update(part, 'utf8');
  return `W/"${length.toString(16)}-${hash.digest('base64').substring(0, 27)}"`;
}

/**
 * Sends a string, bytes or text in parts with the headers Express's `res.send` would set. Text is
 * written as it is (as Express writes a string): its UTF-8 bytes, length and ETag are those of
 * `Buffer.from(body)`, without copying it into a buffer first (a page's copy per answer); parts go
 * out corked, in one write with the headers.
 */
export function sendBody(req: IncomingMessage, res: ServerResponse, status: number, body: string | Buffer | TextParts, contentType: string, etag?: string): void {
  res.statusCode = status;
  if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', contentType);
  if (!res.hasHeader('ETag')) res.setHeader('ETag', etag ?? (typeof body === 'string' || Buffer.isBuffer(body) ? createETag(body, { weak: true }) : partsETag(body)));
  if (isFresh(req, res)) res.statusCode = 304;
  if (res.statusCode === 204 || res.statusCode === 304) {
    res.removeHeader('Content-Type');
    res.removeHeader('Content-Length');
    res.removeHeader('Transfer-Encoding');
    res.end();
    return;
  }
  res.setHeader('Content-Length', byteLength(body));
  if (req.method === 'HEAD') res.end();
  else if (typeof body === 'string' || Buffer.isBuffer(body)) res.end(body);
  else {
    // `end` uncorks: the headers and every part leave in one write.
    res.cork();
    for (const part of body) res.write(part);
    res.end();
  }
}

/** `res.status(status).json(value)`. */
export function sendJson(req: IncomingMessage, res: ServerResponse, status: number, value: unknown): void {
  sendBody(req, res, status, JSON.stringify(value), JSON_TYPE);
}

/**
 * A JSON body serialised once, with its ETag: bytes for answers that repeat (rest.ts, kept
 * results), encoded once and written as they are; text for a body written once, which Node
 * writes with its headers in one piece, never copied into bytes first (a spliced page comes as
 * text in parts, `TextParts`).
 */
export interface PreparedJson {
  readonly chunk: Buffer | string | TextParts;
  readonly etag: string;
}

/** A prepared body's JSON text. */
export const preparedText = (prepared: PreparedJson): string =>
  typeof prepared.chunk === 'string' ? prepared.chunk : Buffer.isBuffer(prepared.chunk) ? prepared.chunk.toString('utf8') : prepared.chunk.join('');

/** A prepared body as bytes: what a kept rendering holds, encoded once for all its answers. */
export const preparedBytes = (prepared: PreparedJson): PreparedJson => (Buffer.isBuffer(prepared.chunk) ? prepared : { chunk: Buffer.from(preparedText(prepared), 'utf8'), etag: prepared.etag });

export function prepareJson(value: unknown): PreparedJson {
  const chunk = Buffer.from(JSON.stringify(value), 'utf8');
  return { chunk, etag: createETag(chunk, { weak: true }) };
}

/** A body that is JSON text already, in parts (a spliced answer, rest.ts `spliceCollection`): its ETag is that of its UTF-8 bytes, as `prepareJson`'s. */
export function prepareJsonText(parts: TextParts): PreparedJson {
  return { chunk: parts, etag: partsETag(parts) };
}

/** sendJson for a prepared body: the same bytes and headers, without serialising or hashing again. */
export function sendPreparedJson(req: IncomingMessage, res: ServerResponse, status: number, prepared: PreparedJson): void {
  sendBody(req, res, status, prepared.chunk, JSON_TYPE, prepared.etag);
}

/** A text body's Content-Type carries `charset=utf-8`, as Express sets it for strings. */
export function withCharset(type: string): string {
  return /;\s*charset=/i.test(type) ? type : `${type}; charset=utf-8`;
}

/** `res.cookie(name, value, options)`: `maxAge` in milliseconds also sets Expires; path defaults to `/`. */
export function appendCookie(res: ServerResponse, name: string, value: string, options: SerializeOptions & { maxAge?: number }): void {
  const opts: SerializeOptions = { ...options, path: options.path ?? '/' };
  if (options.maxAge !== undefined) {
    opts.expires = new Date(Date.now() + options.maxAge);
    opts.maxAge = Math.floor(options.maxAge / 1000);
  }
  const previous = res.getHeader('Set-Cookie');
  const cookie = serializeCookie(name, value, opts);
  res.setHeader('Set-Cookie', previous === undefined ? cookie : [...(Array.isArray(previous) ? previous : [String(previous)]), cookie]);
}
