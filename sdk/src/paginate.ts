/**
 * Walks every paged REST list row by row: `for await (const e of sdk.paginate('events', { limit: 100 }))`.
 * Collection envelopes are followed by their `_links.next` (the service builds it: the next page
 * number, or the next `offset` where a byte budget cut a page short, as on the events list); the
 * page-numbered lists that answer `{ items, total }` by counting `page` up to the total.
 * The pages are read as the caller consumes them (one request per page, none ahead).
 *
 * Pages are positional: rows added or removed while a walk is under way can shift a row across a
 * page boundary (seen twice or not at all). Filter by time (`to` on the events list) for a stable walk.
 *
 * Owns: paging. Uses the REST client for the first request (so parameters serialise as `sdk.rest` does).
 */
import { errorFromBody, toApiError } from './errors.js';
import type { operations } from './generated/openapi.js';
import { apiBasePath, pagedOperations } from './generated/rest-meta.js';
import type { RestClient } from './rest.js';
import type { Transport } from './transport.js';

/** The operationId of every paged list. */
export type PagedOperation = keyof typeof pagedOperations & keyof operations;

type Parameters<Op extends PagedOperation> = operations[Op]['parameters'];
type QueryOf<Op extends PagedOperation> = Parameters<Op> extends { query?: infer Q } ? NonNullable<Q> : Record<never, never>;
type PathOf<Op extends PagedOperation> = Parameters<Op> extends { path: infer P } ? (P extends Record<string, unknown> ? P : Record<never, never>) : Record<never, never>;

/** What a walk starts from: the list's query parameters and, for a nested list, its path parameters (`{ id }`). */
export type PageParams<Op extends PagedOperation> = QueryOf<Op> & PathOf<Op>;

type JsonBody<Op extends PagedOperation> = operations[Op]['responses'] extends { 200: { content: { 'application/json': infer B } } } ? B : never;
/** One row of a paged list. */
export type PageItem<Op extends PagedOperation> = JsonBody<Op> extends { [K in (typeof pagedOperations)[Op]['items']]: readonly (infer I)[] } ? I : never;

export interface PaginateOptions {
  /** Ends the walk: the pending page request rejects with ABORTED. */
  signal?: AbortSignal;
}

/** Required parameters (a nested list's path) make the second argument required. */
type ParamsArgument<Op extends PagedOperation> = Record<string, never> extends PageParams<Op> ? [params?: PageParams<Op>, options?: PaginateOptions] : [params: PageParams<Op>, options?: PaginateOptions];

export type Paginate = <Op extends PagedOperation>(operation: Op, ...args: ParamsArgument<Op>) => AsyncIterableIterator<PageItem<Op>>;

type Body = Record<string, unknown> & { _links?: { next?: string }; total?: number; page?: number; total_pages?: number };

export function createPaginate(transport: Transport, rest: RestClient): Paginate {
  async function* walk(operation: PagedOperation, params: Record<string, unknown> = {}, options: PaginateOptions = {}): AsyncIterableIterator<unknown> {
    const meta = pagedOperations[operation];
    if (!meta) throw new TypeError(`${String(operation)} is not a paged list`);
    const pathNames = new Set([...meta.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!));
    const path: Record<string, unknown> = {};
    const query: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(params)) (pathNames.has(name) ? path : query)[name] = value;

    const viaRest = async (page?: number): Promise<Body> => {
      let result: { data?: unknown; error?: unknown; response: Response };
      try {
        const init = { params: { path, query: page === undefined ? query : { ...query, page } }, signal: options.signal };
        result = await (rest.GET as (route: string, init: unknown) => Promise<typeof result>)(meta.path, init);
      } catch (error) {
        throw toApiError(error, options.signal);
      }
      if (!result.response.ok || result.error !== undefined) throw errorFromBody(result.response, result.error, typeof result.error === 'string' ? result.error : undefined);
      return result.data as Body;
    };
    const viaLink = async (href: string): Promise<Body> => {
      // Links are service-relative (`/v1/events?...`): keep any prefix of the SDK's base URL.
      const url = href.startsWith(`${apiBasePath}/`) ? `${transport.apiUrl}${href.slice(apiBasePath.length)}` : new URL(href, transport.apiUrl).toString();
      const response = await transport.fetch(new Request(url, { method: 'GET', headers: { accept: 'application/json' }, ...(options.signal ? { signal: options.signal } : {}) }));
      const text = await response.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      if (!response.ok || body === undefined) throw errorFromBody(response, body, text);
      return body as Body;
    };

    let page = typeof query.page === 'number' ? query.page : 1;
    let seen = 0;
    let body = await viaRest();
    for (;;) {
      const rows = (body[meta.items] ?? []) as unknown[];
      for (const row of rows) yield row;
      seen += rows.length;
      if (meta.next === 'links') {
        const next = body._links?.next;
        if (!next || rows.length === 0) return;
        body = await viaLink(next);
      } else {
        const pages = typeof body.total_pages === 'number' ? body.total_pages : undefined;
        const current = typeof body.page === 'number' ? body.page : page;
        if (rows.length === 0 || (pages !== undefined ? current >= pages : seen >= (body.total ?? 0))) return;
        page = current + 1;
        body = await viaRest(page);
      }
    }
  }
  return walk as Paginate;
}
