import fc from 'fast-check';
import { collection, pageParams, single } from '../../src/http/envelope';

describe('envelope', () => {
  test('single', () => {
    expect(single({ a: 1 }, '/v1/x')).toEqual({ data: { a: 1 }, _links: { self: '/v1/x' } });
  });

  test('collection links keep other query parameters and omit prev/next at the ends', () => {
    const first = collection([1, 2], { total: 5, page: 1, limit: 2 }, '/v1/events?type=a&page=1&limit=2');
    expect(first._meta).toEqual({ total: 5, page: 1, limit: 2, pages: 3 });
    expect(first._links).toEqual({
      self: '/v1/events?type=a&page=1&limit=2',
      first: '/v1/events?type=a&page=1&limit=2',
      next: '/v1/events?type=a&page=2&limit=2',
      last: '/v1/events?type=a&page=3&limit=2',
    });
    const last = collection([5], { total: 5, page: 3, limit: 2 }, '/v1/events?page=3&limit=2');
    expect(last._links.prev).toBe('/v1/events?page=2&limit=2');
    expect(last._links.next).toBeUndefined();
  });

  test('an empty collection has one page of links and no prev/next', () => {
    const empty = collection([], { total: 0, page: 1, limit: 25 }, '/v1/events');
    expect(empty._meta).toEqual({ total: 0, page: 1, limit: 25, pages: 0 });
    expect(empty._links).toEqual({ self: '/v1/events?page=1&limit=25', first: '/v1/events?page=1&limit=25', last: '/v1/events?page=1&limit=25' });
  });

  test('property: pages, prev and next agree with page and total', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 500 }), (total, limit, page) => {
        const env = collection([], { total, page, limit }, '/v1/things?q=1');
        const pages = Math.ceil(total / limit);
        expect(env._meta.pages).toBe(pages);
        expect('prev' in env._links).toBe(page > 1);
        expect('next' in env._links).toBe(page < pages);
        expect(env._links.last).toContain(`page=${Math.max(pages, 1)}`);
        expect(env._links.self).toContain('q=1');
      }),
    );
  });

  test('pageParams clamps page and limit', () => {
    expect(pageParams({}, { defaultLimit: 25, maxLimit: 100 })).toEqual({ page: 1, limit: 25, offset: 0 });
    expect(pageParams({ page: '3', limit: '1000' }, { defaultLimit: 25, maxLimit: 100 })).toEqual({ page: 3, limit: 100, offset: 200 });
    expect(pageParams({ page: -2, limit: 0 }, { defaultLimit: 25, maxLimit: 100 })).toEqual({ page: 1, limit: 25, offset: 0 });
    expect(pageParams({ page: 'x', limit: -5 }, { defaultLimit: 50, maxLimit: 200 })).toEqual({ page: 1, limit: 1, offset: 0 });
  });
});
