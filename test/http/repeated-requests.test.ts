/**
 * Repeated requests, as a dashboard polls them, with response validation off (as in production):
 * the bytes a REST answer renders once from a kept value (src/http/rest.ts, `keptRendering`), a
 * GraphQL operation executed again from kept values (src/http/graphql/endpoint.ts) and a URL the
 * validator checks again each time (src/http/validator.ts) must answer exactly what a first
 * request answers. Each answer follows every change (a new event, a new member), per request URL
 * or operation; a URL the validator refuses stays refused; conditional requests still get 304.
 */
import { ANONYMOUS } from '../../src/auth/context';
import { isKept } from '../../src/infra/kept';
import { useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const t = useTestApp({ http: { validate_responses: false } });

let owner: LoggedIn;
beforeAll(async () => {
  owner = await devLogin(t);
});

async function raw(path: string, token: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.url}/v1${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  return { status: res.status, etag: res.headers.get('etag'), type: res.headers.get('content-type'), text: await res.text() };
}

const emit = (n: number) =>
  api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { user_id: `viewer-${n}` } } });

describe('a kept page answers the same bytes until it changes', () => {
  test('the same URL gives identical bytes and ETag; a new event changes both', async () => {
    for (let n = 0; n < 3; n += 1) expect((await emit(n)).status).toBe(201);
    const first = await raw('/events?limit=2', owner.accessToken);
    const again = await raw('/events?limit=2', owner.accessToken);
    expect(first.status).toBe(200);
    expect(first.type).toBe('application/json; charset=utf-8');
    expect(again).toEqual(first);
    const body = JSON.parse(first.text);
    expect(body._meta).toEqual({ total: 3, page: 1, limit: 2, pages: 2 });
    expect(body.data.map((e: { raw: { user_id: string } }) => e.raw.user_id)).toEqual(['viewer-2', 'viewer-1']);

    expect((await emit(3)).status).toBe(201);
    const after = await raw('/events?limit=2', owner.accessToken);
    expect(after.etag).not.toBe(first.etag);
    const changed = JSON.parse(after.text);
    expect(changed._meta.total).toBe(4);
    expect(changed.data[0].raw.user_id).toBe('viewer-3');
  });

  test('each URL of one page gets its own links', async () => {
    const a = JSON.parse((await raw('/events?limit=2&page=1', owner.accessToken)).text);
    const b = JSON.parse((await raw('/events?page=1&limit=2', owner.accessToken)).text);
    const c = JSON.parse((await raw('/events?limit=2', owner.accessToken)).text);
    expect(a.data).toEqual(b.data);
    expect(a.data).toEqual(c.data);
    expect(a._links.self).toBe('/v1/events?limit=2&page=1');
    expect(b._links.self).toBe('/v1/events?page=1&limit=2');
    expect(c._links.self).toBe('/v1/events?limit=2&page=1');
    expect(a._links.next).toBe('/v1/events?limit=2&page=2');
  });

  test('a conditional request with the kept ETag gets 304 and no body', async () => {
    const page = await raw('/events?limit=2', owner.accessToken);
    // fetch adds `Cache-Control: no-cache` to a conditional request unless one is set (which makes any answer fresh-exempt).
    const conditional = await raw('/events?limit=2', owner.accessToken, { 'if-none-match': page.etag!, 'cache-control': 'max-age=0' });
    expect(conditional.status).toBe(304);
    expect(conditional.text).toBe('');
  });

  test('another account reading the same URL gets its own page', async () => {
    const other = await devLogin(t);
    const mine = JSON.parse((await raw('/events?limit=2', owner.accessToken)).text);
    const theirs = JSON.parse((await raw('/events?limit=2', other.accessToken)).text);
    expect(mine._meta.total).toBeGreaterThan(0);
    expect(theirs).toMatchObject({ data: [], _meta: { total: 0 } });
  });

  test('the member list is kept in its domain form, so its rendering is kept with it', async () => {
    const ctx = { ...ANONYMOUS, kind: 'jwt' as const, userId: owner.userId, accountId: owner.accountId };
    const first = await t.app.modules.accounts.members(ctx);
    expect(first.length).toBeGreaterThan(0);
    // A kept value is frozen all the way down: a Date among its members would have kept it unmarked.
    expect(isKept(first)).toBe(true);
    expect(await t.app.modules.accounts.members(ctx)).toBe(first);
    expect(typeof first[0]!.joinedAt).toBe('string');
  });

  test('the member list follows a new member', async () => {
    const before = await raw('/account/members', owner.accessToken);
    expect(await raw('/account/members', owner.accessToken)).toEqual(before);
    const member = await devLogin(t);
    await joinAccount(t, owner, member, { role: 'moderator' });
    const after = JSON.parse((await raw('/account/members', owner.accessToken)).text);
    expect(after.data.map((m: { user_id: string }) => m.user_id)).toEqual(expect.arrayContaining([owner.userId, member.userId]));
    expect(after.data).toHaveLength(JSON.parse(before.text).data.length + 1);
  });
});

describe('a URL the validator checks on every request', () => {
  test('coerced parameters reach every request of the URL, and a refused URL stays refused', async () => {
    const first = JSON.parse((await raw('/events?limit=1&types=platform_a:follower', owner.accessToken)).text);
    const again = JSON.parse((await raw('/events?limit=1&types=platform_a:follower', owner.accessToken)).text);
    expect(first._meta.limit).toBe(1);
    expect(again).toEqual(first);
    for (let i = 0; i < 2; i += 1) {
      const refused = await raw('/events?limit=abc', owner.accessToken);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.text).error).toBe('VALIDATION_ERROR');
      const unknown = await raw('/events?limit=1&nope=1', owner.accessToken);
      expect(unknown.status).toBe(400);
    }
  });
});

describe('a GraphQL operation executed again from kept values', () => {
  async function graphql(query: string, variables: Record<string, unknown>, token: string) {
    const res = await fetch(`${t.url}/v1/gql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const text = await res.text();
    // An answer without errors is written whole with its length, not chunked.
    if (!('errors' in JSON.parse(text))) expect([res.headers.get('content-length'), res.headers.get('transfer-encoding')]).toEqual([String(Buffer.byteLength(text)), null]);
    return { status: res.status, type: res.headers.get('content-type'), text };
  }
  const page = 'query Page($filter: EventFilterInput) { events(filter: $filter) { items { id eventType raw createdAt } total page limit pages } }';
  type PageData = { data: { events: { items: { raw: { user_id: string } }[]; total: number } } };

  test('repeats the first answer byte for byte, equals an answer written afresh, and follows a new event', async () => {
    const first = await graphql(page, { filter: { limit: 2 } }, owner.accessToken);
    expect(first.status).toBe(200);
    expect(first.type).toBe('application/json; charset=utf-8');
    for (let i = 0; i < 3; i += 1) expect(await graphql(page, { filter: { limit: 2 } }, owner.accessToken)).toEqual(first);
    // Another text of the same operation is another cache entry: its first answer is written afresh.
    const fresh = await graphql(`${page} `, { filter: { limit: 2 } }, owner.accessToken);
    expect(fresh.text).toBe(first.text);
    const before = JSON.parse(first.text) as PageData;
    expect(before.data.events.items).toHaveLength(2);

    expect((await emit(100)).status).toBe(201);
    const after = JSON.parse((await graphql(page, { filter: { limit: 2 } }, owner.accessToken)).text) as PageData;
    expect(after.data.events.total).toBe(before.data.events.total + 1);
    expect(after.data.events.items[0]!.raw.user_id).toBe('viewer-100');
  });

  test('other variables, another account and other root fields each get their own answer', async () => {
    const two = JSON.parse((await graphql(page, { filter: { limit: 2 } }, owner.accessToken)).text) as PageData;
    const one = JSON.parse((await graphql(page, { filter: { limit: 1 } }, owner.accessToken)).text) as PageData;
    expect(one.data.events.items).toEqual(two.data.events.items.slice(0, 1));

    const other = await devLogin(t);
    for (let i = 0; i < 2; i += 1) {
      const theirs = JSON.parse((await graphql(page, { filter: { limit: 2 } }, other.accessToken)).text) as PageData;
      expect(theirs.data.events).toMatchObject({ items: [], total: 0 });
    }

    // Two root fields: the kept text is given only when both resolve to what they resolved to before.
    const both = 'query Both($a: EventFilterInput, $b: EventFilterInput) { a: events(filter: $a) { total } b: events(filter: $b) { total items { raw } } }';
    const variables = { a: { limit: 1 }, b: { limit: 1, types: ['platform_a:follower'] } };
    const firstBoth = await graphql(both, variables, owner.accessToken);
    expect(await graphql(both, variables, owner.accessToken)).toEqual(firstBoth);
    expect((await emit(101)).status).toBe(201);
    const afterBoth = JSON.parse((await graphql(both, variables, owner.accessToken)).text) as { data: { a: { total: number }; b: { total: number; items: { raw: { user_id: string } }[] } } };
    expect(afterBoth.data.a.total).toBe(JSON.parse(firstBoth.text).data.a.total + 1);
    expect(afterBoth.data.b.items[0]!.raw.user_id).toBe('viewer-101');
  });

  test('an answer with two kept root values follows either one changing alone', async () => {
    // The text is kept beside one of the two values; each change below leaves the other one as it was.
    type Mixed = { data: { events: { total: number }; accountMembers: unknown[] } };
    const mixed = '{ events(filter: { limit: 1 }) { total } accountMembers { userId } }';
    const read = async () => {
      const answer = await graphql(mixed, {}, owner.accessToken);
      expect(await graphql(mixed, {}, owner.accessToken)).toEqual(answer);
      return JSON.parse(answer.text) as Mixed;
    };
    const first = await read();
    expect((await emit(102)).status).toBe(201);
    const second = await read();
    expect(second.data.events.total).toBe(first.data.events.total + 1);
    expect(second.data.accountMembers).toEqual(first.data.accountMembers);
    await joinAccount(t, owner, await devLogin(t), { role: 'moderator' });
    const third = await read();
    expect(third.data.events).toEqual(second.data.events);
    expect(third.data.accountMembers).toHaveLength(second.data.accountMembers.length + 1);
  });

  test('a kept answer is refused to a member whose role lost the permission, as a first request is', async () => {
    const roleName = `reader-${Date.now()}`;
    const reader = await joinAccount(t, owner, await devLogin(t), { roleName, permissions: ['events:read'] });
    for (let i = 0; i < 3; i += 1) expect((await graphql(page, { filter: { limit: 2 } }, reader.accessToken)).status).toBe(200);
    const roles = await api(t, 'GET', '/account/roles', { token: owner.accessToken });
    const role = (roles.body.data as { id: string; name: string }[]).find((r) => r.name === roleName)!;
    expect((await api(t, 'PATCH', `/account/roles/${role.id}`, { token: owner.accessToken, body: { permissions: ['members:read'] } })).status).toBe(200);
    const refused = await graphql(page, { filter: { limit: 2 } }, reader.accessToken);
    const fresh = await graphql(`${page}  `, { filter: { limit: 2 } }, reader.accessToken);
    const body = JSON.parse(refused.text) as { data: unknown; errors: { extensions: { code: string }; path: string[]; message: string }[] };
    expect(body.errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' }, path: ['events'] });
    expect(body).toEqual(JSON.parse(fresh.text));
    expect(refused.status).toBe(fresh.status);
  });

  test('the member list through GraphQL follows a new member', async () => {
    const members = '{ accountMembers { userId role isOwner } }';
    const before = await graphql(members, {}, owner.accessToken);
    expect(before.status).toBe(200);
    expect(await graphql(members, {}, owner.accessToken)).toEqual(before);
    await joinAccount(t, owner, await devLogin(t), { role: 'moderator' });
    const after = JSON.parse((await graphql(members, {}, owner.accessToken)).text) as { data: { accountMembers: unknown[] } };
    expect(after.data.accountMembers).toHaveLength(JSON.parse(before.text).data.accountMembers.length + 1);
  });
});
