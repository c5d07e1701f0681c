/**
 * The one error a consumer branches on: every failed REST call, GraphQL operation and WebSocket
 * refusal of the service answers `{ error, message, details? }` (GraphQL: `extensions.code`), and
 * the SDK surfaces all of them as an ApiError with that code, so one `switch (e.code)` serves all
 * three protocols.
 */
import type { components } from './generated/openapi.js';

/** The error body of every REST operation (spec/openapi.yaml `Error`). */
export type ErrorBody = components['schemas']['Error'];
/** A code of the error table, or one the service adds later (kept open so old SDKs still read it). */
export type ErrorCode = ErrorBody['error'] | (string & Record<never, never>);

export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** HTTP status (GraphQL: the status of the POST, 200 for an error the resolver raised). */
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: unknown;

  constructor(status: number, body: { error: string; message: string; details?: unknown }) {
    super(body.message);
    this.status = status;
    this.code = body.error;
    this.details = body.details;
  }

  /** The error as the service wrote it. */
  toJSON(): { error: string; message: string; details?: unknown } {
    return { error: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) };
  }
}

/** Reads an error body from a response; a body that is not the service's shape keeps the status as its code. */
export async function errorFromResponse(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as Partial<ErrorBody> & { details?: unknown };
    if (typeof body.error === 'string' && typeof body.message === 'string') return new ApiError(response.status, body as ErrorBody);
  } catch {
    // not JSON: fall through
  }
  return new ApiError(response.status, { error: `HTTP_${response.status}`, message: text.slice(0, 200) || response.statusText });
}

/**
 * openapi-fetch answers `{ data, error, response }`; this returns `data` or throws the typed
 * ApiError, for callers that prefer exceptions.
 */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok && error === undefined) return data as T;
  const body = error as Partial<ErrorBody> | undefined;
  if (body && typeof body.error === 'string' && typeof body.message === 'string') throw new ApiError(response.status, body as ErrorBody);
  throw new ApiError(response.status, { error: `HTTP_${response.status}`, message: response.statusText || 'Request failed' });
}
