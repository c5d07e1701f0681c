/**
 * `sdk.paginate` against a started service: 1,000 events emitted through the service are walked
 * page by page by following each page's `_links.next`, every event once, in the list's order,
 * one request per page. Rate limits are off: the emits would spend a session's budget.
 */
import { createSdk, unwrap } from '../../sdk/src/index';
import { useTestApp } from '../helpers/app';

describe('SDK paging against a started service', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test('walks 1,000 events in pages of 100, following _links.next', async () => {
    const pages: string[] = [];
    const sdk = createSdk({
      baseUrl: t.url,
      fetch: (input, init) => {
        const request = new Request(input, init);
        if (request.method === 'GET') pages.push(new URL(request.url).search);
        return fetch(request);
      },
    });
    await sdk.devLogin({ email: `paging-${Date.now()}@example.test`, display_name: 'Paging' });

    const emitted: string[] = [];
    for (let batch = 0; batch < 50; batch++) {
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          unwrap(sdk.rest.POST('/events/emit', { body: { type: 'platform_a:follow', platform: 'platform_a', raw: { n: batch * 20 + i } } })).then((r) => r.data.id),
        ),
      );
      emitted.push(...ids);
    }

    const listedFirst = await unwrap(sdk.rest.GET('/events', { params: { query: { limit: 100 } } }));
    expect(listedFirst._meta.total).toBe(1000);
    pages.length = 0;

    const walked: string[] = [];
    for await (const event of sdk.paginate('events', { limit: 100 })) walked.push(event.id);
    expect(walked).toHaveLength(1000);
    expect(new Set(walked).size).toBe(1000);
    expect([...walked].sort()).toEqual([...emitted].sort());
    // The list's own order: the first page of the walk is the first page of the list.
    expect(walked.slice(0, 100)).toEqual(listedFirst.data.map((e) => e.id));
    expect(pages).toHaveLength(10);
    expect(pages[0]).toBe('?limit=100');
    expect(pages[1]).toContain('page=2');

    // Stopping early asks for no page beyond the one being read.
    pages.length = 0;
    let taken = 0;
    for await (const event of sdk.paginate('events', { limit: 100, types: 'platform_a:follow' })) {
      expect(event.type).toBe('platform_a:follow');
      if (++taken === 150) break;
    }
    expect(pages).toHaveLength(2);
  });
});
