/**
 * A document's first execution runs on graphql-js; from its second on, the compiled executor
 * (graphql-jit, src/http/graphql/endpoint.ts) runs it. Every answer must be the same whichever ran:
 * data, error codes and messages, paths, refusals of variables and of gates, and HTTP statuses.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

describe('the compiled executor answers as graphql-js does', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  let owner: LoggedIn;
  let viewer: LoggedIn;

  beforeAll(async () => {
    owner = await devLogin(t);
    viewer = await joinAccount(t, owner, await devLogin(t), { roleName: `compiled-${randomUUID().slice(0, 8)}`, permissions: ['members:read'] });
    for (let i = 0; i < 3; i += 1) {
      const emitted = await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { user_id: `u${i}`, n: i } } });
      expect(emitted.status).toBe(201);
    }
  });

  /** The same request three times: the first through graphql-js, the others compiled. */
  async function thrice(query: string, variables: Record<string, unknown>, token: string) {
    const answers = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await gql(t.url, query, variables, { authorization: `Bearer ${token}` });
      answers.push({ status: res.status, body: res.body });
    }
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    return answers[0]!;
  }

  const page = 'query Page($filter: EventFilterInput) { events(filter: $filter) { items { id accountId eventType platform externalId raw createdAt } total page limit pages } }';

  test('an events page with its JSON payloads, timestamps and totals', async () => {
    const answer = await thrice(page, { filter: { limit: 2 } }, owner.accessToken);
    const events = (answer.body.data as { events: { items: { raw: { n: number } }[]; total: number; pages: number } }).events;
    expect(events.total).toBe(3);
    expect(events.pages).toBe(2);
    expect(events.items.map((e) => e.raw.n)).toEqual([2, 1]);
  });

  test('a gate refusal: the same FORBIDDEN code, message and path', async () => {
    const answer = await thrice(page, { filter: { limit: 2 } }, viewer.accessToken);
    expect(answer.body.data).toBeNull();
    expect(answer.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((answer.body.errors?.[0] as { path?: unknown } | undefined)?.path).toEqual(['events']);
  });

  test('a variable of the wrong type: the same VALIDATION_ERROR before execution', async () => {
    const answer = await thrice(page, { filter: { limit: 'many' } }, owner.accessToken);
    expect(answer.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
  });

  test('a value the service refuses: the same error as REST gives', async () => {
    const answer = await thrice(page, { filter: { limit: 1000 } }, owner.accessToken);
    const rest = await api(t, 'GET', '/events?limit=1000', { token: owner.accessToken });
    expect(answer.body.errors?.[0]?.extensions?.code).toBe(rest.body.error);
  });

  test('an unknown id: NOT_FOUND with a null field', async () => {
    const missing = await thrice('query A($id: UUID!) { event(id: $id) { id } }', { id: randomUUID() }, owner.accessToken);
    expect(missing.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  test('a document of two operations runs the one named, compiled per operation', async () => {
    const query = 'query A { myPermissions { context } } query B { events(filter: { limit: 1 }) { total } }';
    const run = async (operationName: string) => {
      const res = await fetch(`${t.url}/v1/gql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.accessToken}` },
        body: JSON.stringify({ query, operationName }),
      });
      return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown> } };
    };
    const first = [await run('A'), await run('B')];
    const second = [await run('A'), await run('B'), await run('A')];
    expect(second).toEqual([first[0], first[1], first[0]]);
    expect(Object.keys(first[0]!.body.data!)).toEqual(['myPermissions']);
    expect(first[1]!.body.data).toEqual({ events: { total: 3 } });
  });
  test('a successful answer has the media type graphql-http picks for each Accept header', async () => {
    const cases: [string | undefined, string][] = [
      [undefined, 'application/json; charset=utf-8'],
      ['*/*', 'application/json; charset=utf-8'],
      ['application/graphql-response+json', 'application/graphql-response+json; charset=utf-8'],
      ['application/json, application/graphql-response+json', 'application/json; charset=utf-8'],
      ['application/graphql-response+json, application/json', 'application/graphql-response+json; charset=utf-8'],
      ['application/graphql-response+json;charset=latin1, application/*', 'application/json; charset=utf-8'],
      ['text/html, */*;q=0.8', 'application/json; charset=utf-8'],
    ];
    for (const [accept, type] of cases) {
      const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${owner.accessToken}` };
      if (accept) headers.accept = accept;
      // Twice: the first run on graphql-js, the second on the compiled executor.
      for (let i = 0; i < 2; i += 1) {
        const res = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers, body: JSON.stringify({ query: '{ me { id } }' }) });
        expect({ accept, status: res.status, type: res.headers.get('content-type') }).toEqual({ accept, status: 200, type });
        expect(((await res.json()) as { data: { me: { id: string } } }).data.me.id).toBe(owner.userId);
      }
    }
  });
});
