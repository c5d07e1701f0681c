/**
 * The one response envelope for every module (Part 1, "REST conventions"):
 * single `{ data, _links: { self } }`; collection `{ data, _links: { self, first, prev, next, last },
 * _meta: { total, page, limit, pages } }` with `prev` and `next` omitted at the ends.
 * Links are relative URLs that keep the request's other query parameters.
 */
export interface SingleEnvelope<T> {
  data: T;
  _links: { self: string };
}

export interface CollectionEnvelope<T> {
  data: T[];
  _links: { self: string; first: string; prev?: string; next?: string; last: string };
  _meta: { total: number; page: number; limit: number; pages: number };
}

export function single<T>(data: T, self: string): SingleEnvelope<T> {
  return { data, _links: { self } };
}

/** `self` is the request URL (path and query, e.g. req.originalUrl). */
export function collection<T>(items: T[], page: { total: number; page: number; limit: number }, self: string): CollectionEnvelope<T> {
  const url = new URL(self, 'http://local');
  const pages = page.total === 0 ? 0 : Math.ceil(page.total / page.limit);
  const last = Math.max(pages, 1);
  const link = (n: number) => {
    const params = new URLSearchParams(url.search);
    params.set('page', String(n));
    params.set('limit', String(page.limit));
    return `${url.pathname}?${params.toString()}`;
  };
  const links: CollectionEnvelope<T>['_links'] = { self: link(page.page), first: link(1), last: link(last) };
  if (page.page > 1) links.prev = link(Math.min(page.page - 1, last));
  if (page.page < pages) links.next = link(page.page + 1);
  return { data: items, _links: links, _meta: { total: page.total, page: page.page, limit: page.limit, pages } };
}

/** The bare body of action endpoints (Part 1, "REST conventions"). */
export const SUCCESS = Object.freeze({ success: true as const });

/** A whole (small, unpaginated) list as the single page of the collection envelope. */
export function wholeCollection<T>(items: T[], self: string): CollectionEnvelope<T> {
  return collection(items, { total: items.length, page: 1, limit: Math.max(1, items.length) }, self);
}

/** Clamps `page` and `limit` query values to the operation's bounds. */
export function pageParams(query: { page?: number | string; limit?: number | string }, bounds: { defaultLimit: number; maxLimit: number }): { page: number; limit: number; offset: number } {
  const page = Math.max(1, Math.trunc(Number(query.page ?? 1)) || 1);
  const rawLimit = Math.trunc(Number(query.limit ?? bounds.defaultLimit)) || bounds.defaultLimit;
  const limit = Math.min(bounds.maxLimit, Math.max(1, rawLimit));
  return { page, limit, offset: (page - 1) * limit };
}
