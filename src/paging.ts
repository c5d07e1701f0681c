/**
 * Paging, once for every protocol: the bounds an operation declares in spec/openapi/ (read
 * by codegen into generated/paging.ts), the one helper that turns a caller's `page`/`limit` into
 * a safe `PageRequest`, and the one `Page<T>` services return. The REST collection envelope, the
 * audit body and the GraphQL page objects are all rendered from a `Page<T>`, so the page count
 * is computed here and nowhere else. Owns no storage and knows no transport.
 */
import { AppError, messages } from './errors';

/** An operation's declared paging bounds (generated/paging.ts, from the spec's parameters). */
export interface PagingBounds {
  /** `limit` when the caller gives none. */
  defaultLimit: number;
  /** Smallest and largest page size served. */
  minLimit: number;
  maxLimit: number;
  /** true: a `limit` outside [minLimit, maxLimit] is clamped (Part 1/2 "clamped"); false: refused. */
  clampLimit: boolean;
  /** Largest `page` accepted (the validator refuses more on REST; GraphQL `Int` stops at the same number). */
  maxPage: number;
}

/** What a service pages with: always integers, offset within the safe integer range. */
export interface PageRequest {
  page: number;
  limit: number;
  offset: number;
}

/** One page of a list, protocol-neutral: `pages` is 0 for an empty list. */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  limit: number;
  pages: number;
  /**
   * A list with a byte budget per answer (events): true when the page stopped before `limit`
   * items because the next would have passed the budget, though more follow.
   */
  truncated?: boolean;
  /** Where the next page starts (an offset) when it does not start at `page + 1` (a page cut short or asked by offset); null at the end. */
  nextOffset?: number | null;
}

/** A caller's value as an integer, or undefined when absent or not a finite number. */
function integer(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isFinite(n) ? Math.trunc(n) : undefined;
}

/**
 * The one paging rule. `page` is 1-based: absent or below 1 counts as 1, above `maxPage` is
 * refused. `limit` absent takes the default; outside the bounds it is clamped (or refused when
 * the operation does not clamp). Safe on its own: NaN, Infinity and unsafe integers never reach
 * SQL, whatever the caller passes.
 */
export function pageRequest(bounds: PagingBounds, input: { page?: unknown; limit?: unknown }): PageRequest {
  const asked = integer(input.page);
  if (asked !== undefined && asked > bounds.maxPage) throw AppError.validation(messages.pageTooLarge(bounds.maxPage), { fields: [{ field: 'page', message: `must be <= ${bounds.maxPage}` }] });
  const page = asked === undefined || asked < 1 ? 1 : asked;
  const givenLimit = integer(input.limit);
  let limit = givenLimit ?? bounds.defaultLimit;
  if (limit < bounds.minLimit || limit > bounds.maxLimit) {
    if (!bounds.clampLimit) {
      throw AppError.validation(messages.limitOutOfRange(bounds.minLimit, bounds.maxLimit), {
        fields: [{ field: 'limit', message: `must be >= ${bounds.minLimit} and <= ${bounds.maxLimit}` }],
      });
    }
    limit = Math.min(bounds.maxLimit, Math.max(bounds.minLimit, limit));
  }
  const offset = (page - 1) * limit;
  if (!Number.isSafeInteger(offset)) throw AppError.validation(messages.pageTooLarge(bounds.maxPage));
  return { page, limit, offset };
}

/** The page of `items` out of `total` for a request: the one place the page count is computed. */
export function pageOf<T>(items: T[], total: number, request: { page: number; limit: number }): Page<T> {
  return { items, total, page: request.page, limit: request.limit, pages: total === 0 ? 0 : Math.ceil(total / request.limit) };
}

/** A whole (small, unpaginated) list as its single page. */
export function wholePage<T>(items: T[]): Page<T> {
  return pageOf(items, items.length, { page: 1, limit: Math.max(1, items.length) });
}
