/**
 * REST error mapping, once for every route: AppError → `{ error, message, details? }`; body-parser
 * and OpenAPI validator failures → BAD_REQUEST, VALIDATION_ERROR, UNSUPPORTED_MEDIA_TYPE or NOT_FOUND; anything else → a
 * scrubbed 5xx whose cause is logged with the request id, never returned.
 */
import type { ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { AppError, errorBody, isSealedValueError, messages, RETRY_AFTER_SECONDS, toAppError } from '../errors';
import type { Logger } from '../infra/logger';

interface ValidatorIssue {
  path?: string;
  message?: string;
}

interface HttpishError extends Error {
  status?: number;
  statusCode?: number;
  type?: string;
  errors?: ValidatorIssue[];
}

/** `/body/label` or `.body.label` → `body.label`. */
function fieldName(path: string | undefined): string {
  return (path ?? '').replace(/^[./]+/, '').replace(/\//g, '.') || 'request';
}

function fromHttpError(error: HttpishError): AppError | null {
  const status = error.status ?? error.statusCode;
  if (error.type === 'entity.parse.failed') return new AppError('BAD_REQUEST', messages.malformedJson);
  if (error.type === 'entity.too.large') return new AppError('BAD_REQUEST', 'Request body too large');
  if (typeof status !== 'number' || status >= 500) return null;
  if (status === 404 || status === 405) return AppError.notFound();
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', messages.unsupportedContentType);
  if (status === 400 && Array.isArray(error.errors) && error.errors.length > 0) {
    const fields = error.errors.map((e) => ({ field: fieldName(e.path), message: e.message ?? 'is invalid' }));
    return AppError.validation(fields.map((f) => `${f.field} ${f.message}`).join('; '), { fields });
  }
  if (status === 400) return new AppError('BAD_REQUEST', error.message || 'Malformed request');
  if (status === 401) return AppError.unauthorized();
  return null;
}

/** Any failure as the AppError it is answered with. */
export function httpError(error: unknown): AppError {
  return error instanceof AppError ? error : (fromHttpError(error as HttpishError) ?? toAppError(error));
}

/**
 * Answers a failed request: `{ error, message, details? }` with the code's status; a 5xx is logged
 * with its cause (and the request id) and leaves with its scrubbed message only. `json` is the
 * response's JSON writer (the validating one in tests).
 */
export function answerError(error: unknown, res: Pick<ServerResponse, 'statusCode' | 'setHeader'>, log: Logger, json: (body: unknown) => void): void {
  const appError = httpError(error);
  // An outage is logged once when it starts and once when it ends (the health probes, the bus
  // heartbeat), not once per request it fails.
  if (isSealedValueError(error)) log.error({ err: error, key_id: (error as { keyId?: unknown }).keyId, code: appError.code }, 'request failed: a stored secret cannot be opened with this node\'s keys');
  else if (appError.status === 503) log.debug({ err: error, code: appError.code }, 'request failed: dependency unavailable');
  else if (appError.status >= 500) log.error({ err: error, code: appError.code }, 'request failed');
  if (appError.code === 'RATE_LIMIT_EXCEEDED' && appError.details?.retry_after_seconds !== undefined) {
    res.setHeader('Retry-After', String(appError.details.retry_after_seconds));
  }
  if (appError.status === 503) res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
  res.statusCode = appError.status;
  json(errorBody(appError));
}

/** The documentation pages' error handler (docs.ts runs on Express). */
export function errorHandler(log: Logger) {
  return (error: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) {
      next(error);
      return;
    }
    answerError(error, res, req.context?.log ?? log, (body) => void res.json(body));
  };
}

export function notFoundHandler(_req: Request, _res: Response, next: NextFunction): void {
  next(AppError.notFound());
}
