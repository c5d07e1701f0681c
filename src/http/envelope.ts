/**
 * The one response envelope for every module (Part 1, "REST conventions"), applied by the REST
 * router from each operation's declared `x-envelope`, never by handlers:
 * single `{ data, _links: { self } }`; collection `{ data, _links: { self, first, prev, next, last },
 * _meta: { total, page, limit, pages } }` with `prev` and `next` omitted at the ends; `data`
 * `{ data }`; bare bodies such as `{ success: true }`. Links are relative URLs that keep the
 * request's other query parameters. Collections render a `Page<T>` (src/paging.ts), so the page
 * count is the one the paging helper computed.
 */
import { wholePage, type Page } from '../paging';

export interface SingleEnvelope<T> {
  data: T;
  _links: { self: string };
}

export interface CollectionEnvelope<T> {
  data: T[];
  _links: { self: string; first: string; prev?: string; next?: string; last: string };
  _meta: { total: number; page: number; limit: number; pages: number; truncated?: boolean; next_offset?: number };
}

export function single<T>(data: T, self: string): SingleEnvelope<T> {
  return { data, _links: { self } };
}

/** `self` is the request URL (path and query, e.g. req.originalUrl). */
export function collection<T>(page: Page<T>, self: string): CollectionEnvelope<T> {
  const url = new URL(self, 'http://local');
  const last = Math.max(page.pages, 1);
  // The request's query read once: `set` keeps a member where it stands (or appends it), so
  // setting `page` again leaves every link's parameters in the same order as the first.
  const params = new URLSearchParams(url.search);
  // A list with a byte budget (its pages name where the next starts, `nextOffset`): a page asked by
  // `offset` links to the others by page again, and to the next by offset.
  const budgeted = page.nextOffset !== undefined;
  const byOffset = budgeted && params.has('offset');
  if (budgeted) params.delete('offset');
  params.set('page', '1');
  params.set('limit', String(page.limit));
  const link = (n: number) => {
    params.set('page', String(n));
    return `${url.pathname}?${params.toString()}`;
  };
  const links: CollectionEnvelope<T>['_links'] = { self: byOffset ? `${url.pathname}${url.search}` : link(page.page), first: link(1), last: link(last) };
  if (page.page > 1) links.prev = link(Math.min(page.page - 1, last));
  const meta: CollectionEnvelope<T>['_meta'] = { total: page.total, page: page.page, limit: page.limit, pages: page.pages };
  if (page.truncated) meta.truncated = true;
  if (budgeted && (page.truncated || byOffset)) {
    // The next page of a page cut short by its byte budget (or asked by offset) starts where it ended.
    if (typeof page.nextOffset === 'number') {
      const next = new URLSearchParams(params);
      next.delete('page');
      next.set('offset', String(page.nextOffset));
      links.next = `${url.pathname}?${next.toString()}`;
      meta.next_offset = page.nextOffset;
    }
  } else if (page.page < page.pages) links.next = link(page.page + 1);
  return { data: page.items, _links: links, _meta: meta };
}

/** A whole (small, unpaginated) list as the single page of the collection envelope. */
export function wholeCollection<T>(items: T[], self: string): CollectionEnvelope<T> {
  return collection(wholePage(items), self);
}

/**
 * Fills a self template (`/v1/account/roles/{id}`) from the response's wire data. Codegen checks
 * that every placeholder is a member of the data's schema; a value without it is a server bug.
 */
export function fillSelf(template: string, data: unknown): string {
  const record = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  return template.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
    const value = record[name];
    if (typeof value !== 'string' && typeof value !== 'number') throw new Error(`self link ${template}: the response data has no ${name}`);
    return encodeURIComponent(String(value));
  });
}

/** The bare body of action endpoints (Part 1, "REST conventions"). */
export const SUCCESS = Object.freeze({ success: true as const });

/**
 * What a binding returns when the default status does not fit (a 503 health, a second 2xx) or
 * it sets headers; a plain return value goes out with the operation's default status.
 */
export class Reply<S = number, B = unknown> {
  constructor(
    readonly status: S,
    readonly body: B,
    readonly headers: Record<string, string> = {},
  ) {}
}

export function reply<S extends number, B>(status: S, body: B, headers?: Record<string, string>): Reply<S, B> {
  return new Reply(status, body, headers);
}
