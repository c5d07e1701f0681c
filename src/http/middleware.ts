/**
 * Middleware that runs before any route: request id and access log, then credential resolution
 * (never rejects: an unusable credential resolves to Anonymous; routes decide through gates).
 */
import { randomUUID } from 'node:crypto';
import { parse as parseCookies } from 'cookie';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ANONYMOUS } from '../auth/context';
import { POPOUT_COOKIE, type CredentialResolver } from '../auth/credentials';
import { guarded, unowned } from '../infra/listeners';
import { redactUrl, type Logger } from '../infra/logger';
import { appendCookie, header, type ApiRequest } from './request';

/** The request URL for `_links`, without a `?token=` credential (links are never a place for secrets). */
export function withoutCredential(url: string): string {
  if (!/[?&]token=/i.test(url)) return url;
  const parsed = new URL(url, 'http://local');
  parsed.searchParams.delete('token');
  return `${parsed.pathname}${parsed.search}`;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request id (the client's, when well-formed) and the access log line written when the
 * response finishes, then the credential (never refused here: an unusable one resolves to
 * Anonymous, and routes decide through gates), into `req.context`.
 */
export function requestContextStep(deps: { log: Logger; credentials: CredentialResolver; clientAddress: (req: IncomingMessage) => string }) {
  return async (req: ApiRequest, res: ServerResponse): Promise<void> => {
    const incoming = header(req, 'x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const started = performance.now();
    // The access log line carries the request id itself; the per-request child logger handlers
    // log through is only built when one of them logs (most requests never do).
    res.once(
      'finish',
      guarded(() => {
        // Who asked: the client address (behind `http.trust_proxy`), the credential's kind, and its
        // user and account when it has them; never the credential itself.
        const auth = req.context?.auth;
        deps.log.info(
          {
            request_id: requestId,
            method: req.method,
            url: redactUrl(req.originalUrl),
            status: res.statusCode,
            duration_ms: Math.round(performance.now() - started),
            client_ip: req.context?.client.ip ?? deps.clientAddress(req),
            credential: auth?.kind ?? 'anonymous',
            ...(auth?.userId ? { user_id: auth.userId } : {}),
            ...(auth?.accountId ? { account_id: auth.accountId } : {}),
          },
          'request',
        );
      }, unowned),
    );
    const token = typeof req.query.token === 'string' ? req.query.token : undefined;
    const cookies = req.headers.cookie;
    const popoutCookie = cookies ? parseCookies(cookies)[POPOUT_COOKIE] : undefined;
    const authorization = header(req, 'authorization');
    // No credential at all (health probes, public pages) needs no look-up.
    const { context } =
      authorization === undefined && token === undefined && popoutCookie === undefined
        ? { context: ANONYMOUS }
        : await deps.credentials.resolve({ authorization, queryToken: token, popoutCookie, transport: 'http' });
    let log: Logger | undefined;
    req.context = {
      auth: context,
      requestId,
      arrivedAt: started,
      get log() {
        return (log ??= deps.log.child({ request_id: requestId }));
      },
      selfUrl: withoutCredential(req.originalUrl),
      client: { ip: deps.clientAddress(req), userAgent: header(req, 'user-agent')?.slice(0, 1000) ?? null },
      setCookie: (name, value, options) => appendCookie(res, name, value, options),
      // 'close' follows both a written answer and a connection lost before it.
      untilAnswered: (release) => {
        if (res.closed || res.destroyed) release();
        else res.once('close', release);
      },
    };
  };
}
