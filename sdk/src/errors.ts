/**
 * The one error a consumer branches on. Every failure of the SDK is an ApiError: a REST answer
 * `{ error, message, details? }`, a GraphQL error (`extensions.code`), a WebSocket `error` frame
 * or refusal, and the failures no service answered: the network (NETWORK_ERROR), the caller's
 * abort (ABORTED), a timeout (TIMEOUT), an answer that is not the service's (UNEXPECTED_RESPONSE).
 * One `switch (e.code)` serves all three protocols.
 *
 * Owns: the error type and the conversions into it. Must not import anything Node-only.
 */
import type { components } from './generated/openapi.js';
import type { WsErrorCode } from './generated/ws.js';

/** The error body of every REST operation (spec/openapi/common.yaml `Error`). */
export type ErrorBody = components['schemas']['Error'];
/** Every code the service answers on REST and GraphQL (spec/openapi/common.yaml `ErrorCode`: `Error.error` plus the codes only some operations answer, such as REFRESH_COOLDOWN). */
export type ServiceErrorCode = components['schemas']['ErrorCode'];
/** A code a WebSocket `error` frame carries (spec/ws-protocol/). */
export type SocketErrorCode = WsErrorCode;
/**
 * The SDK's own codes, for failures the service did not answer:
 * - `NETWORK_ERROR`: no answer (refused connection, DNS, a dropped socket, CORS in a browser);
 * - `ABORTED`: the caller's AbortSignal fired (or the realtime client was closed while waiting);
 * - `TIMEOUT`: `timeoutMs` (or a signal from `AbortSignal.timeout`) ran out;
 * - `UNEXPECTED_RESPONSE`: an answer that is not the service's error shape (a proxy's HTML 502);
 * - `GRAPHQL_ERROR`: a GraphQL error without `extensions.code` (a document the schema refuses).
 */
export const sdkErrorCodes = ['NETWORK_ERROR', 'ABORTED', 'TIMEOUT', 'UNEXPECTED_RESPONSE', 'GRAPHQL_ERROR'] as const;
export type SdkErrorCode = (typeof sdkErrorCodes)[number];
/** Every code an ApiError can carry. */
export type ErrorCode = ServiceErrorCode | SocketErrorCode | SdkErrorCode;

/**
 * `details` as the service sends it (a JSON object: `errors` of a validation failure,
 * `current_version` of a CONFLICT, ...) or as the SDK fills it (`cause` of a NETWORK_ERROR,
 * `timeout_ms` of a TIMEOUT, `body` of an UNEXPECTED_RESPONSE).
 */
export type ErrorDetails = Readonly<Record<string, unknown>>;

/**
 * The HTTP status of each service code on REST (the specification's error table, Part 1
 * "Errors"), so a GraphQL error, which arrives in a 200, still says what REST would have
 * answered. Keyed by the spec's enum: a code added there without a status here fails to compile.
 */
export const errorStatus: Readonly<Record<ServiceErrorCode, number>> = {
  BAD_REQUEST: 400,
  VALIDATION_ERROR: 400,
  INVALID_LOGIN_CODE: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  PLAN_LIMIT_REACHED: 403,
  FEATURE_DISABLED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMIT_EXCEEDED: 429,
  REFRESH_COOLDOWN: 429,
  HEADERS_TOO_LARGE: 431,
  DATABASE_ERROR: 500,
  REDIS_ERROR: 500,
  INTERNAL_SERVER_ERROR: 500,
  PROVIDER_UNAVAILABLE: 502,
  SERVICE_UNAVAILABLE: 503,
  PLATFORM_UNAVAILABLE: 503,
};

/** The REST status of a code (0 for a socket-only or SDK code: no HTTP answer stands behind it). */
export function statusOfCode(code: string): number {
  return Object.prototype.hasOwnProperty.call(errorStatus, code) ? errorStatus[code as ServiceErrorCode] : 0;
}

export interface ApiErrorInit {
  /** `X-Request-Id` of the answer (quote it when reporting a problem: the service logs it). */
  requestId?: string | null;
  /** The underlying failure (the fetch TypeError, the abort reason). */
  cause?: unknown;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  /**
   * The HTTP status of the answer. GraphQL and WebSocket errors carry the status their code has
   * on REST (UNAUTHORIZED 401, ...); 0 when no HTTP answer stands behind the error (network,
   * abort, timeout, a socket-only code such as RESUME_GAP).
   */
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;
  /** `X-Request-Id` of the answer; null when there was none (network failures, socket frames). */
  readonly requestId: string | null;

  constructor(status: number, body: { error: ErrorCode; message: string; details?: unknown }, init: ApiErrorInit = {}) {
    super(body.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = status;
    this.code = body.error;
    this.details = typeof body.details === 'object' && body.details !== null ? (body.details as ErrorDetails) : undefined;
    this.requestId = init.requestId ?? null;
  }

  /** The error as the service wrote it. */
  toJSON(): { error: ErrorCode; message: string; details?: ErrorDetails } {
    return { error: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) };
  }
}

const requestIdOf = (response: Response): string | null => response.headers.get('x-request-id');

/** An ApiError from a parsed error body, or UNEXPECTED_RESPONSE when the body is not the service's shape. */
export function errorFromBody(response: Response, body: unknown, text?: string): ApiError {
  const candidate = body as Partial<{ error: unknown; message: unknown; details: unknown }> | null | undefined;
  if (candidate && typeof candidate.error === 'string' && typeof candidate.message === 'string') {
    return new ApiError(response.status, { error: candidate.error as ErrorCode, message: candidate.message, details: candidate.details }, { requestId: requestIdOf(response) });
  }
  const snippet = (text ?? '').slice(0, 200);
  return new ApiError(
    response.status,
    { error: 'UNEXPECTED_RESPONSE', message: `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}: not an answer of the service`, details: { body: snippet } },
    { requestId: requestIdOf(response) },
  );
}

/** Reads an error body from a response. */
export async function errorFromResponse(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return errorFromBody(response, body, text);
}

/**
 * Any thrown value as an ApiError: an ApiError as is; an abort as ABORTED, or TIMEOUT when the
 * signal's reason was a timeout; anything else fetch throws (TypeError `fetch failed`, a refused
 * connection) as NETWORK_ERROR.
 */
export function toApiError(error: unknown, signal?: AbortSignal | null): ApiError {
  if (error instanceof ApiError) return error;
  const reason: unknown = signal?.aborted ? signal.reason : error;
  const name = (reason as { name?: unknown } | null)?.name;
  if (reason instanceof ApiError) return reason;
  if (name === 'TimeoutError') return new ApiError(0, { error: 'TIMEOUT', message: 'The request timed out' }, { cause: reason });
  if (name === 'AbortError' || signal?.aborted) return new ApiError(0, { error: 'ABORTED', message: 'The request was aborted' }, { cause: reason });
  const detail = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const cause = typeof detail?.code === 'string' ? detail.code : error instanceof Error ? error.message : String(error);
  return new ApiError(0, { error: 'NETWORK_ERROR', message: `The service could not be reached (${cause})`, details: { cause } }, { cause: error });
}

/**
 * openapi-fetch answers `{ data, error, response }`; this returns `data` or throws the typed
 * ApiError, for callers that prefer exceptions. A call that threw (network, abort) rejects with
 * the transport's ApiError already.
 */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (error) {
    throw toApiError(error);
  }
  const { data, error, response } = result;
  if (response.ok && error === undefined) return data as T;
  // openapi-fetch hands over the parsed JSON body, or the text when it was not JSON.
  throw errorFromBody(response, error, typeof error === 'string' ? error : undefined);
}
