/**
 * The one application error and the code → HTTP status table of the specification (Part 1,
 * "Errors"). Every transport maps AppError once: REST to `{ error, message, details? }`,
 * GraphQL to `extensions.code`, WebSocket to an `error` message. 5xx messages are scrubbed.
 */
export const errorStatus = {
  BAD_REQUEST: 400,
  VALIDATION_ERROR: 400,
  /** A used, expired or unknown one-time login code (`POST /v1/auth/login/exchange`). */
  INVALID_LOGIN_CODE: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  PLAN_LIMIT_REACHED: 403,
  FEATURE_DISABLED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  /**
   * A request body in a media type (or charset, or content coding) the operation does not take:
   * `text/plain` on a JSON operation, anything but JSON on `/v1/gql`. Not in Part 1's table, whose
   * BAD_REQUEST is a 400; declared on every operation in spec/openapi/.
   */
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMIT_EXCEEDED: 429,
  /** The request line plus headers passed `http.max_header_bytes` (answered by the server, before any route). */
  HEADERS_TOO_LARGE: 431,
  /** Part 2 "Errors": a chatter's profile refresh within its 10-minute cooldown (`retry_after_seconds`). */
  REFRESH_COOLDOWN: 429,
  DATABASE_ERROR: 500,
  REDIS_ERROR: 500,
  INTERNAL_SERVER_ERROR: 500,
  /** A store this request needs cannot be reached right now (an outage, not a fault): retry after `Retry-After`. */
  SERVICE_UNAVAILABLE: 503,
  /** The chat platform an operation must ask is not configured or does not answer (docs/guides/operating.md, "Outages"). */
  PLATFORM_UNAVAILABLE: 503,
  /** A sign-in provider that cannot be reached or answers nonsense. */
  PROVIDER_UNAVAILABLE: 502,
} as const;

export type ErrorCode = keyof typeof errorStatus;

/** The only messages a 5xx may carry; anything else a server failure says stays in the log. */
export const scrubbedMessages: Record<'DATABASE_ERROR' | 'REDIS_ERROR' | 'INTERNAL_SERVER_ERROR' | 'SERVICE_UNAVAILABLE' | 'PLATFORM_UNAVAILABLE' | 'PROVIDER_UNAVAILABLE', string> = {
  PROVIDER_UNAVAILABLE: 'The sign-in provider is unavailable',
  DATABASE_ERROR: 'An internal database error occurred',
  REDIS_ERROR: 'An internal cache error occurred',
  INTERNAL_SERVER_ERROR: 'An internal server error occurred',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable',
  PLATFORM_UNAVAILABLE: 'The platform is unavailable',
};

/** `Retry-After` (seconds) of every 503: about how long a store restart or failover takes to be noticed. */
export const RETRY_AFTER_SECONDS = 5;

export const messages = {
  authenticationRequired: 'Authentication required',
  noActiveAccount: 'No active account',
  notFound: 'Resource not found',
  malformedJson: 'Malformed JSON in request body',
  headersTooLarge: 'Request line and headers are too large',
  malformedRequest: 'Malformed HTTP request',
  unsupportedContentType: 'Unsupported content type',
  invalidValue: 'A value is too long, out of range or malformed',
  rateLimitExceeded: 'Rate limit exceeded',
  sessionRevoked: 'Session revoked',
  tokenRevoked: 'Token revoked',
  tooManyConnections: 'Too many concurrent WebSocket connections',
  missingPermission: (permission: string) => `Missing permission: ${permission}`,
  /** Part 2 words the public-statistics kill-switch refusal itself (`GET /v1/public-stats/emotes`). */
  featureDisabled: (feature: string) => (feature === 'system:public_stats' ? `Feature '${feature}' is not available` : `Feature disabled: ${feature}`),
  firstPartyOnly: "This operation requires a user session or the user's own API key",
  systemKeyOnly: 'This operation requires a system key',
  popoutSessionOnly: 'This operation requires a popout session',
  extensionTokenOnly: 'This operation requires an extension token',
  developerOnly: 'This operation requires an approved developer',
  invalidCharacters: (field: string) => `Invalid characters in ${field}`,
  invalidCharactersDetail: 'must not contain a NUL character or an unpaired UTF-16 surrogate',
  nestedTooDeep: (field: string, max: number) => `${field} is nested deeper than ${max} levels`,
  nestedTooDeepDetail: (max: number) => `must not nest deeper than ${max} levels`,
  graphqlDepthLimit: (max: number) => `Query depth exceeds the limit of ${max}`,
  graphqlAliasLimit: (max: number) => `Query exceeds the limit of ${max} aliases`,
  graphqlDirectiveLimit: (max: number) => `Query exceeds the limit of ${max} directives`,
  graphqlTokenLimit: (max: number) => `Query exceeds the limit of ${max} tokens`,
  graphqlCostLimit: (cost: number, max: number) => `Query cost ${cost} exceeds the limit of ${max}`,
  graphqlIntrospectionDisabled: 'GraphQL introspection is disabled; the schema is at GET /v1/schema',
  malformedMultipart: 'Malformed multipart body',
  /** GraphQL multipart requests (src/http/graphql/multipart.ts), the convention's shape words. */
  multipartPreflightRequired: 'A multipart GraphQL request must carry a GraphQL-Require-Preflight or Apollo-Require-Preflight header',
  multipartOperationsFirst: 'The first field of a multipart GraphQL request must be operations',
  multipartMapSecond: 'The second field of a multipart GraphQL request must be map',
  multipartFieldTooLarge: (field: string, max: number) => `${field} must be at most ${max} bytes`,
  multipartInvalidOperations: 'operations must be a JSON object with a query',
  multipartBatching: 'Batched operations are not supported',
  multipartInvalidMap: 'map must be a JSON object naming each file field with one variables path',
  multipartInvalidMapPath: (path: string) => `map path ${path} does not name a null variable of operations`,
  multipartTooManyFiles: (max: number) => `A multipart GraphQL request may carry at most ${max} file(s)`,
  multipartFileNotInMap: (field: string) => `File field ${field} is not in the map`,
  multipartFileMissing: (field: string) => `File field ${field} of the map was not sent`,
  multipartUnexpectedField: (field: string) => `Unexpected form field: ${field}`,
  multipartUploadsOnly: 'A multipart GraphQL request must be a mutation whose fields all take an upload',
  multipartFileReused: 'A file may fill one argument only',
  multipartOneUploadPerFile: 'A multipart GraphQL request may run one upload per file',
  pageTooLarge: (max: number) => `page must be <= ${max}`,
  limitOutOfRange: (min: number, max: number) => `limit must be >= ${min} and <= ${max}`,
  notAuthorizedToSubscribe: (channel: string) => `Not authorized to subscribe to ${channel}`,
  notAuthorizedToBroadcast: (channel: string) => `Not authorized to broadcast on ${channel}`,
  idempotencyKeyReused: 'Idempotency-Key was already used with a different request',
  idempotencyKeyInProgress: 'A request with this Idempotency-Key is still in progress',
} as const;

export class AppError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = errorStatus[code];
  }

  static unauthorized(message: string = messages.authenticationRequired): AppError {
    return new AppError('UNAUTHORIZED', message);
  }

  static forbidden(message: string): AppError {
    return new AppError('FORBIDDEN', message);
  }

  static notFound(message: string = messages.notFound): AppError {
    return new AppError('NOT_FOUND', message);
  }

  static validation(message: string, details?: Record<string, unknown>): AppError {
    return new AppError('VALIDATION_ERROR', message, details);
  }
}

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Classifies a thrown value; non-AppErrors become one of the three scrubbed 5xx. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  // graphql-js wraps a thrown value it does not take for an Error (one from another realm: Node's
  // own socket errors under jest's VM) as NonErrorThrown; classify what was thrown.
  const wrapped = error as { name?: unknown; thrownValue?: unknown } | null;
  if (wrapped?.name === 'NonErrorThrown' && wrapped.thrownValue !== undefined) return toAppError(wrapped.thrownValue);
  if (isDataException(error)) return AppError.validation(messages.invalidValue);
  // A stored secret this node cannot open (src/auth/secrets.ts's SealedValueError, by name: this
  // layer sits below auth): a key missing here during a rotation, which another node or a
  // corrected configuration serves, so 503 with Retry-After; the log names the key id (isSealedValueError).
  if (isSealedValueError(error)) return new AppError('SERVICE_UNAVAILABLE', scrubbedMessages.SERVICE_UNAVAILABLE);
  if (isOutage(error)) return new AppError('SERVICE_UNAVAILABLE', scrubbedMessages.SERVICE_UNAVAILABLE);
  if (isDatabaseError(error)) return new AppError('DATABASE_ERROR', scrubbedMessages.DATABASE_ERROR);
  if (isCacheError(error)) return new AppError('REDIS_ERROR', scrubbedMessages.REDIS_ERROR);
  return new AppError('INTERNAL_SERVER_ERROR', scrubbedMessages.INTERNAL_SERVER_ERROR);
}

/** src/auth/secrets.ts's SealedValueError: logged at error level with its key id, unlike an outage's 503. */
export function isSealedValueError(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'SealedValueError';
}

/** The wire body of an error; 5xx never carry their original message or details. */
export function errorBody(error: AppError): ErrorBody {
  if (error.status >= 500) {
    const code = error.code as keyof typeof scrubbedMessages;
    return { error: code, message: scrubbedMessages[code] ?? scrubbedMessages.INTERNAL_SERVER_ERROR };
  }
  return error.details ? { error: error.code, message: error.message, details: error.details } : { error: error.code, message: error.message };
}

function isDatabaseError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const e = error as Error & { severity?: string; code?: string };
  // pg and PGlite both report a SQLSTATE `code` and a `severity`; knex adds pool timeouts.
  return (typeof e.severity === 'string' && typeof e.code === 'string') || e.name === 'KnexTimeoutError';
}

/**
 * PostgreSQL refused a value the caller sent (SQLSTATE class 22: too long, not a valid uuid or
 * number, out of range). The edge validates first; this keeps a gap there a 400, not a 500.
 */
const DATA_EXCEPTIONS = new Set(['22001', '22003', '22007', '22008', '22P02']);

function isDataException(error: unknown): boolean {
  const e = error as { severity?: unknown; code?: unknown } | null;
  return typeof e?.severity === 'string' && typeof e.code === 'string' && DATA_EXCEPTIONS.has(e.code);
}

/** Socket errors of a store that cannot be reached (refused, reset, timed out, unresolvable). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** SQLSTATEs of a server that is going away or not taking connections (class 08, 57P01-57P03, 53300). */
const SERVER_GONE = /^(08...|57P0[123]|53300)$/;
/** What pg says when a connection dies or cannot be made, without a code of its own. */
const CONNECTION_LOST = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Connection is closed/i;

/**
 * A store outage rather than a fault of the request or the code: the database refuses or drops
 * connections, shuts down, or the pool waited in vain for one; or Redis is known down. Answered
 * 503 SERVICE_UNAVAILABLE with Retry-After (docs/guides/operating.md, "Outages"), never a 500.
 */
export function isOutage(error: unknown): boolean {
  // Duck-typed: socket errors come from Node's own realm, where `instanceof Error` can fail (jest).
  if (typeof error !== 'object' || error === null || error instanceof AppError) return false;
  const e = error as { name?: unknown; message?: unknown; code?: unknown; errors?: unknown };
  if (e.name === 'KnexTimeoutError' || e.name === 'RedisUnavailableError') return true;
  if (typeof e.code === 'string' && (UNREACHABLE.has(e.code) || SERVER_GONE.test(e.code))) return true;
  // An AggregateError of one connect attempt per address (localhost: ::1 and 127.0.0.1).
  if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((inner) => isOutage(inner))) return true;
  return typeof e.message === 'string' && CONNECTION_LOST.test(e.message);
}

function isCacheError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return ['ReplyError', 'MaxRetriesPerRequestError', 'CacheError'].includes(error.name) || error.message.includes('Connection is closed');
}
