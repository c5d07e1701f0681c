/**
 * The one fetch every REST and GraphQL call of the SDK goes through: it puts the credential where
 * the spec says it travels, refreshes a session once on 401 (one refresh at a time: the service
 * rotates refresh tokens and treats a replayed one as theft), and retries 429, 503 and network
 * failures a bounded number of times, waiting what Retry-After says, for the requests a retry
 * cannot duplicate: reads, GraphQL queries, and the changes that take an `Idempotency-Key` (the
 * SDK sends one with each, the same on every attempt, unless the caller set its own). Any other
 * change is sent once. An aborted request stops waiting at once.
 *
 * Every failure leaves as an ApiError: an answer is the caller's to read (openapi-fetch returns
 * it; `unwrap` throws it), a failure without one (network, abort, `timeoutMs`) rejects with
 * NETWORK_ERROR, ABORTED or TIMEOUT.
 *
 * Owns: credentials and retries. Must not import anything Node-only: the browser entry uses it.
 */
import { ApiError, toApiError } from './errors.js';
import { apiBasePath, idempotentOperations, tokenQueryOperations } from './generated/rest-meta.js';

/** An access and refresh JWT pair, as dev login, a sign-in exchange and a refresh answer them. */
export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
}

/**
 * Every kind of credential the service takes (spec/openapi.yaml, "Authentication").
 * - `session`: a user session's access JWT, refreshed on 401 with its refresh JWT (through
 *   `refresh` when given, else `POST /v1/auth/refresh`); `onTokens` sees each new pair to store.
 * - `key`: an API key (personal, service, system or developer, `lm_…`) as a bearer.
 * - `token`: a popout, overlay, shared overlay, extension or widget token; `transport: 'query'`
 *   sends it as `?token=` on the operations whose spec declares that parameter (elsewhere, and by
 *   default, as a bearer).
 * - `popout-cookie`: a popout session held in the `svc-popout-token` cookie: a browser sends it
 *   with `credentials: 'include'`; in Node pass `cookie` (the `svc-popout-token=…` pair).
 */
export type Credential =
  | { kind: 'none' }
  | {
      kind: 'session';
      accessToken: string;
      refreshToken?: string;
      refresh?: (current: SessionTokens) => Promise<SessionTokens>;
      onTokens?: (tokens: SessionTokens) => void;
    }
  | { kind: 'key'; key: string }
  | { kind: 'token'; token: string; transport?: 'header' | 'query' }
  | { kind: 'popout-cookie'; cookie?: string };

export interface RetryOptions {
  /** Retries after the first attempt (default 2). */
  retries?: number;
  /** A Retry-After longer than this is not waited for: the answer goes to the caller (default 30 s). */
  maxDelayMs?: number;
  /** Wait when a retried answer names no Retry-After, doubled per retry (default 500 ms). */
  baseDelayMs?: number;
}

export interface TransportOptions {
  /** The service's origin, e.g. `https://api.example.com` (the API lives under `/v1`). */
  baseUrl: string;
  credential?: Credential;
  retry?: RetryOptions;
  /** The fetch to use (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /** Waits between retries (tests make it instant); rejects when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * A bound on each call, retries and waits included: past it the call rejects with TIMEOUT
   * (default none; the caller's own AbortSignal still ends it with ABORTED).
   */
  timeoutMs?: number;
}

export interface Transport {
  /** The API root: `${baseUrl}/v1`. */
  readonly apiUrl: string;
  fetch(input: Request): Promise<Response>;
  credential(): Credential;
  setCredential(credential: Credential): void;
}

const RETRIED = new Set([429, 503]);
const IDEMPOTENCY_HEADER = 'idempotency-key';

/** A wait that ends early, rejecting with the abort reason, when `signal` aborts. */
function sleeper(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((done, fail) => {
    if (signal?.aborted) return fail(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      fail(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      done();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A fresh key for one logical call (Web Crypto: browsers and Node alike). */
const newKey = (): string => globalThis.crypto.randomUUID();

/** Whether a GraphQL request body holds a query (not a mutation): a query may be sent again. */
function isGraphqlQuery(body: ArrayBuffer | null): boolean {
  if (!body) return false;
  try {
    const { query } = JSON.parse(new TextDecoder().decode(body)) as { query?: unknown };
    return typeof query === 'string' && /^\s*(\{|query\b)/.test(query.replace(/^\s*#.*$/gm, ''));
  } catch {
    return false;
  }
}

/** Retry-After in milliseconds (seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function templateMatcher(operations: readonly string[]): (method: string, path: string) => boolean {
  const patterns = operations.map((op) => {
    const [method, template] = op.split(' ') as [string, string];
    const source = template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]+');
    return { method, re: new RegExp(`^${source}$`) };
  });
  return (method, path) => patterns.some((p) => p.method === method && p.re.test(path));
}
const takesQueryToken = templateMatcher(tokenQueryOperations);
const takesIdempotencyKey = templateMatcher(idempotentOperations);

export function createTransport(options: TransportOptions): Transport {
  const apiUrl = `${options.baseUrl.replace(/\/+$/, '')}${apiBasePath}`;
  const apiPath = new URL(apiUrl).pathname.replace(/\/+$/, '');
  const baseFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const sleep = options.sleep ?? sleeper;
  const retries = options.retry?.retries ?? 2;
  const maxDelayMs = options.retry?.maxDelayMs ?? 30_000;
  const baseDelayMs = options.retry?.baseDelayMs ?? 500;
  let credential: Credential = options.credential ?? { kind: 'none' };
  let refreshing: Promise<boolean> | null = null;

  function authorise(request: Request, body: ArrayBuffer | null): Request {
    const headers = new Headers(request.headers);
    let url = request.url;
    let credentials: RequestInit['credentials'];
    switch (credential.kind) {
      case 'session':
        headers.set('authorization', `Bearer ${credential.accessToken}`);
        break;
      case 'key':
        headers.set('authorization', `Bearer ${credential.key}`);
        break;
      case 'token': {
        const target = new URL(request.url);
        const path = target.pathname.startsWith(apiPath) ? target.pathname.slice(apiPath.length) : target.pathname;
        if (credential.transport === 'query' && takesQueryToken(request.method, path)) {
          target.searchParams.set('token', credential.token);
          url = target.toString();
        } else {
          headers.set('authorization', `Bearer ${credential.token}`);
        }
        break;
      }
      case 'popout-cookie':
        if (credential.cookie) headers.set('cookie', credential.cookie);
        credentials = 'include';
        break;
      case 'none':
        break;
    }
    return new Request(url, { method: request.method, headers, body, redirect: request.redirect, signal: request.signal, ...(credentials ? { credentials } : {}) });
  }

  async function defaultRefresh(current: SessionTokens): Promise<SessionTokens> {
    const response = await baseFetch(`${apiUrl}/auth/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ refresh_token: current.refreshToken }),
    });
    if (!response.ok) throw new ApiError(response.status, { error: 'UNAUTHORIZED', message: `The refresh answered ${response.status}` });
    const body = (await response.json()) as { data: { access_token: string; refresh_token: string } };
    return { accessToken: body.data.access_token, refreshToken: body.data.refresh_token };
  }

  /** One refresh at a time; callers that saw the same stale token share it. True when a new token is in place. */
  function refreshSession(staleToken: string): Promise<boolean> {
    if (credential.kind !== 'session') return Promise.resolve(false);
    if (credential.accessToken !== staleToken) return Promise.resolve(true);
    if (refreshing) return refreshing;
    const session = credential;
    if (!session.refresh && !session.refreshToken) return Promise.resolve(false);
    refreshing = (async () => {
      try {
        const tokens = await (session.refresh ?? defaultRefresh)({ accessToken: session.accessToken, refreshToken: session.refreshToken ?? '' });
        if (credential === session) credential = { ...session, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken };
        session.onTokens?.(tokens);
        return true;
      } catch {
        return false;
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  }

  /**
   * Whether `input` may be sent again after a 429, a 503 or a network failure, adding the
   * `Idempotency-Key` that makes a change safe to repeat where the operation takes one.
   */
  function retryable(input: Request, body: ArrayBuffer | null): { request: Request; retry: boolean } {
    if (input.method === 'GET' || input.method === 'HEAD') return { request: input, retry: true };
    const target = new URL(input.url);
    const path = target.pathname.startsWith(apiPath) ? target.pathname.slice(apiPath.length) : target.pathname;
    if (input.headers.has(IDEMPOTENCY_HEADER)) return { request: input, retry: true };
    if (path === '/gql' && isGraphqlQuery(body)) return { request: input, retry: true };
    if (!takesIdempotencyKey(input.method, path)) return { request: input, retry: false };
    const headers = new Headers(input.headers);
    headers.set(IDEMPOTENCY_HEADER, newKey());
    return { request: new Request(input.url, { method: input.method, headers, body, redirect: input.redirect, signal: input.signal }), retry: true };
  }

  /** The caller's signal, bounded by `timeoutMs` when set. */
  function boundedSignal(signal: AbortSignal): AbortSignal {
    if (options.timeoutMs === undefined) return signal;
    return AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]);
  }

  async function send(original: Request): Promise<Response> {
    const signal = boundedSignal(original.signal);
    try {
      return await sendWithRetries(original, signal);
    } catch (error) {
      throw toApiError(error, signal);
    }
  }

  async function sendWithRetries(original: Request, signal: AbortSignal): Promise<Response> {
    if (signal.aborted) throw toApiError(signal.reason, signal);
    // Read once, sent as bytes on every attempt (a streamed body could be sent only once).
    const body = original.body ? await original.arrayBuffer() : null;
    const bounded = signal === original.signal ? original : new Request(original.url, { method: original.method, headers: original.headers, body, redirect: original.redirect, signal });
    const { request: input, retry } = retryable(bounded, body);
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const sentWith = credential;
      let response: Response;
      try {
        response = await baseFetch(authorise(input, body));
      } catch (error) {
        // A network failure: the request may or may not have arrived, so only a request that
        // cannot be duplicated is sent again.
        if (!retry || attempt >= retries || signal.aborted) throw error;
        await sleep(baseDelayMs * 2 ** attempt, signal);
        continue;
      }
      const isRefresh = new URL(input.url).pathname === `${apiPath}/auth/refresh`;
      if (response.status === 401 && sentWith.kind === 'session' && !refreshed && !isRefresh) {
        refreshed = true;
        if (await refreshSession(sentWith.accessToken)) {
          await response.body?.cancel();
          attempt--;
          continue;
        }
      }
      if (!retry || !RETRIED.has(response.status) || attempt >= retries) return response;
      const wait = retryAfterMs(response.headers.get('retry-after')) ?? baseDelayMs * 2 ** attempt;
      if (wait > maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(wait, signal);
    }
  }

  return {
    apiUrl,
    fetch: send,
    credential: () => credential,
    setCredential(next) {
      credential = next;
    },
  };
}
