/**
 * The envelope and the paging helper as units: collection links and `_meta` rendered from a
 * `Page<T>`, self templates, and the one paging rule (defaults, clamping, refusals, and safety
 * against values no validator let through).
 */
import fc from 'fast-check';
import { collection, fillSelf, single } from '../../src/http/envelope';
import { AppError } from '../../src/errors';
import { pageOf, pageRequest, wholePage, type PagingBounds } from '../../src/paging';

const NOTIFICATIONS: PagingBounds = { defaultLimit: 25, minLimit: 1, maxLimit: 100, clampLimit: true, maxPage: 2147483647 };
const AUDIT: PagingBounds = { defaultLimit: 50, minLimit: 1, maxLimit: 200, clampLimit: true, maxPage: 2147483647 };
const STRICT: PagingBounds = { defaultLimit: 25, minLimit: 1, maxLimit: 100, clampLimit: false, maxPage: 1000 };

describe('envelope', () => {
  test('single', () => {
    expect(single({ a: 1 }, '/v1/x')).toEqual({ data: { a: 1 }, _links: { self: '/v1/x' } });
  });

  test('each link is the request query with its page and limit set, as if set on a fresh copy of the query (order, repeats, encoding)', () => {
    // The rule the links follow, spelled out: URLSearchParams.set on the request's own query per link.
    const expected = (self: string, n: number, limit: number) => {
      const url = new URL(self, 'http://local');
      const params = new URLSearchParams(url.search);
      params.set('page', String(n));
      params.set('limit', String(limit));
      return `${url.pathname}?${params.toString()}`;
    };
    const member = fc.constantFrom('page', 'limit', 'types', 'from', 'a b', 'ü', '%41');
    const query = fc.array(fc.tuple(member, fc.string({ maxLength: 6 })), { maxLength: 6 }).map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));
    fc.assert(
      fc.property(query, fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 9 }), fc.integer({ min: 1, max: 100 }), (q, n, pages, limit) => {
        const self = `/v1/events${q ? `?${q}` : ''}`;
        const page = Math.min(n, Math.max(pages, 1));
        const links = collection({ items: [], total: pages * limit, page, limit, pages }, self)._links;
        const last = Math.max(pages, 1);
        expect(links.self).toBe(expected(self, page, limit));
        expect(links.first).toBe(expected(self, 1, limit));
        expect(links.last).toBe(expected(self, last, limit));
        expect(links.prev).toBe(page > 1 ? expected(self, Math.min(page - 1, last), limit) : undefined);
        expect(links.next).toBe(page < pages ? expected(self, page + 1, limit) : undefined);
      }),
      { numRuns: 300 },
    );
  });

  test('collection links keep other query parameters and omit prev/next at the ends', () => {
    const first = collection(pageOf([1, 2], 5, { page: 1, limit: 2 }), '/v1/events?type=a&page=1&limit=2');
    expect(first._meta).toEqual({ total: 5, page: 1, limit: 2, pages: 3 });
    expect(first._links).toEqual({
      self: '/v1/events?type=a&page=1&limit=2',
      first: '/v1/events?type=a&page=1&limit=2',
      next: '/v1/events?type=a&page=2&limit=2',
      last: '/v1/events?type=a&page=3&limit=2',
    });
    const last = collection(pageOf([5], 5, { page: 3, limit: 2 }), '/v1/events?page=3&limit=2');
    expect(last._links.prev).toBe('/v1/events?page=2&limit=2');
    expect(last._links.next).toBeUndefined();
  });

  test('an empty collection has one page of links and no prev/next', () => {
    const empty = collection(pageOf([], 0, { page: 1, limit: 25 }), '/v1/events');
    expect(empty._meta).toEqual({ total: 0, page: 1, limit: 25, pages: 0 });
    expect(empty._links).toEqual({ self: '/v1/events?page=1&limit=25', first: '/v1/events?page=1&limit=25', last: '/v1/events?page=1&limit=25' });
  });

  test('a whole list is its one page, limit at least 1', () => {
    expect(wholePage(['a', 'b'])).toEqual({ items: ['a', 'b'], total: 2, page: 1, limit: 2, pages: 1 });
    expect(wholePage([])).toEqual({ items: [], total: 0, page: 1, limit: 1, pages: 0 });
  });

  test('property: pages, prev and next agree with page and total', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 500 }), (total, limit, page) => {
        const env = collection(pageOf([], total, { page, limit }), '/v1/things?q=1');
        const pages = Math.ceil(total / limit);
        expect(env._meta.pages).toBe(pages);
        expect('prev' in env._links).toBe(page > 1);
        expect('next' in env._links).toBe(page < pages);
        expect(env._links.last).toContain(`page=${Math.max(pages, 1)}`);
        expect(env._links.self).toContain('q=1');
      }),
    );
  });

  test('self templates are filled from the response data, URL-encoded', () => {
    expect(fillSelf('/v1/account/roles/{id}', { id: 'a b/c', name: 'x' })).toBe('/v1/account/roles/a%20b%2Fc');
    expect(fillSelf('/v1/accounts', { id: '1' })).toBe('/v1/accounts');
    expect(() => fillSelf('/v1/tokens/{id}', { name: 'no id' })).toThrow(/has no id/);
  });
});

describe('pageRequest: the one paging rule', () => {
  test('defaults, clamping and offsets', () => {
    expect(pageRequest(NOTIFICATIONS, {})).toEqual({ page: 1, limit: 25, offset: 0 });
    expect(pageRequest(NOTIFICATIONS, { page: '3', limit: '1000' })).toEqual({ page: 3, limit: 100, offset: 200 });
    expect(pageRequest(NOTIFICATIONS, { page: -2, limit: 0 })).toEqual({ page: 1, limit: 1, offset: 0 });
    expect(pageRequest(AUDIT, { page: 'x', limit: -5 })).toEqual({ page: 1, limit: 1, offset: 0 });
    expect(pageRequest(AUDIT, { page: null, limit: null })).toEqual({ page: 1, limit: 50, offset: 0 });
    expect(pageRequest(AUDIT, { page: 2.9, limit: 10.5 })).toEqual({ page: 2, limit: 10, offset: 10 });
  });

  test('limit=0 clamps to the minimum for every operation (one rule, not two)', () => {
    expect(pageRequest(NOTIFICATIONS, { limit: 0 }).limit).toBe(1);
    expect(pageRequest(AUDIT, { limit: 0 }).limit).toBe(1);
  });

  test('a page above the declared maximum is refused with VALIDATION_ERROR', () => {
    for (const page of [2147483648, 2 ** 63, 1e20, '9223372036854775807', '99999999999999999999', 1e308]) {
      const error = (() => {
        try {
          pageRequest(NOTIFICATIONS, { page });
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: 'VALIDATION_ERROR', message: 'page must be <= 2147483647' });
    }
  });

  test('an operation that does not clamp refuses a limit outside its bounds', () => {
    expect(() => pageRequest(STRICT, { limit: 101 })).toThrow('limit must be >= 1 and <= 100');
    expect(() => pageRequest(STRICT, { limit: 0 })).toThrow('limit must be >= 1 and <= 100');
    expect(pageRequest(STRICT, { limit: 100, page: 1000 })).toEqual({ page: 1000, limit: 100, offset: 99_900 });
    expect(() => pageRequest(STRICT, { page: 1001 })).toThrow('page must be <= 1000');
  });

  test('property: whatever the input, the request is safe integers within the bounds', () => {
    const anything = fc.oneof(
      fc.constantFrom(undefined, null, '', 'x', NaN, Infinity, -Infinity, 1e308, -1e308, Number.MAX_SAFE_INTEGER, -0),
      fc.integer({ min: -2147483648, max: 2147483647 }),
      fc.double(),
      fc.string(),
    );
    fc.assert(
      fc.property(anything, anything, (page, limit) => {
        let request;
        try {
          request = pageRequest(AUDIT, { page, limit });
        } catch (error) {
          expect(error).toMatchObject({ code: 'VALIDATION_ERROR' });
          return;
        }
        for (const n of [request.page, request.limit, request.offset]) expect(Number.isSafeInteger(n)).toBe(true);
        expect(request.page).toBeGreaterThanOrEqual(1);
        expect(request.page).toBeLessThanOrEqual(AUDIT.maxPage);
        expect(request.limit).toBeGreaterThanOrEqual(1);
        expect(request.limit).toBeLessThanOrEqual(200);
        expect(request.offset).toBe((request.page - 1) * request.limit);
      }),
    );
  });
});
