/**
 * Kept values are immutable (src/infra/kept.ts, ADR 006): a value is deep-frozen when it is kept,
 * so a caller that mutates one fails at once instead of changing the answer of every later
 * request it serves. Checked on `keep` itself and on a kept events page served by the events
 * service (a hot read, src/infra/db/hot-read.ts), on whichever store the run uses.
 */
import { ANONYMOUS, type AuthContext } from '../../src/auth/context';
import { estimateBytes, isKept, keep, keptRendering } from '../../src/infra/kept';
import { useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

describe('keep', () => {
  test('freezes objects, arrays and maps at every depth, and sizes the value as estimateBytes does', () => {
    const value = { page: { items: [{ id: 'a', raw: { user_id: 'u1', tags: ['x'] } }], total: 1 }, byId: new Map([['a', { n: 1 }]]) };
    const expected = estimateBytes(value);
    const kept = keep(value);
    expect(kept.value).toBe(value);
    expect(kept.bytes).toBe(expected);
    expect(() => {
      value.page.total = 2;
    }).toThrow(TypeError);
    expect(() => value.page.items.push({ id: 'b', raw: { user_id: 'u2', tags: [] } })).toThrow(TypeError);
    expect(() => {
      value.page.items[0]!.raw.user_id = 'changed';
    }).toThrow(TypeError);
    expect(() => value.page.items[0]!.raw.tags.pop()).toThrow(TypeError);
    expect(() => value.byId.set('b', { n: 2 })).toThrow(TypeError);
    expect(() => value.byId.delete('a')).toThrow(TypeError);
    expect(() => {
      value.byId.get('a')!.n = 3;
    }).toThrow(TypeError);
    expect(value).toEqual({ page: { items: [{ id: 'a', raw: { user_id: 'u1', tags: ['x'] } }], total: 1 }, byId: new Map([['a', { n: 1 }]]) });
  });

  test('leaves byte arrays and dates as they are (they cannot be frozen)', () => {
    const value = { bytes: Buffer.from('abc'), at: new Date(0) };
    expect(() => keep(value)).not.toThrow();
    expect(Object.isFrozen(value)).toBe(true);
  });
});

describe('keptRendering', () => {
  test('renders a kept value once per key, and a value that is not kept every time', () => {
    const { value } = keep({ items: [{ id: 'a' }], total: 1 });
    expect(isKept(value)).toBe(true);
    expect(isKept(value.items)).toBe(true);
    let renders = 0;
    const render = (key: string) => keptRendering(value.items, key, () => `${++renders} ${key} ${JSON.stringify(value.items)}`);
    expect(render('/v1/events?limit=25')).toBe('1 /v1/events?limit=25 [{"id":"a"}]');
    expect(render('/v1/events?limit=25')).toBe('1 /v1/events?limit=25 [{"id":"a"}]');
    expect(render('/v1/events?limit=10')).toBe('2 /v1/events?limit=10 [{"id":"a"}]');
    const plain = { items: [{ id: 'a' }] };
    expect(isKept(plain)).toBe(false);
    expect(keptRendering(plain, 'k', () => ++renders)).toBe(3);
    expect(keptRendering(plain, 'k', () => ++renders)).toBe(4);
  });

  test('a kept Set refuses add, delete and clear, as a kept Map refuses its writes', () => {
    const { value } = keep({ grants: new Set(['a', 'b']) });
    expect(() => value.grants.add('c')).toThrow(TypeError);
    expect(() => value.grants.delete('a')).toThrow(TypeError);
    expect(() => value.grants.clear()).toThrow(TypeError);
    expect([...value.grants]).toEqual(['a', 'b']);
    expect(isKept(value.grants)).toBe(true);
    // Kept again inside another value (two contexts sharing one empty grant set): still refused, no error.
    const again = keep({ also: value.grants, map: new Map([['k', 1]]) });
    expect(isKept(again.value)).toBe(true);
    expect(keep({ map: again.value.map }).value.map).toBe(again.value.map);
    // Frozen by someone else with its writes in place: it cannot be made to refuse, so the value is not kept.
    const foreign = keep({ grants: Object.freeze(new Set(['x'])) });
    expect(isKept(foreign.value)).toBe(false);
  });

  test('marks a kept value and its direct members only; deeper objects are frozen, and rendered each time', () => {
    const { value } = keep({ items: [{ id: 'a', raw: { user_id: 'u1' } }], total: 1 });
    expect(isKept(value)).toBe(true);
    expect(isKept(value.items)).toBe(true);
    expect(isKept(value.items[0])).toBe(false);
    expect(Object.isFrozen(value.items[0]!.raw)).toBe(true);
    let renders = 0;
    keptRendering(value.items[0]!, 'k', () => ++renders);
    keptRendering(value.items[0]!, 'k', () => ++renders);
    expect(renders).toBe(2);
  });

  test('does not memoise against a value holding something that cannot be frozen', () => {
    const { value } = keep({ at: new Date(0) });
    expect(isKept(value)).toBe(false);
    let renders = 0;
    keptRendering(value, 'k', () => ++renders);
    keptRendering(value, 'k', () => ++renders);
    expect(renders).toBe(2);
  });
});

describe('a kept events page', () => {
  const t = useTestApp();

  test('cannot be changed by a caller: the next request gets the page as stored', async () => {
    const owner = await devLogin(t);
    const emitted = await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follow', platform: 'platform_a', raw: { user_id: 'viewer-1', tags: ['a'] } } });
    expect(emitted.status).toBe(201);
    const auth: AuthContext = { ...ANONYMOUS, accountId: owner.accountId! };
    const request = { page: 1, limit: 25, offset: 0 };
    // Twice: the second answer comes from the kept page on either store.
    await t.app.modules.events.list(auth, {}, request);
    const page = await t.app.modules.events.list(auth, {}, request);
    const first = page.items[0]!;
    expect(() => {
      (first as { type: string }).type = 'changed:type';
    }).toThrow(TypeError);
    expect(() => {
      (first.raw as { user_id: string }).user_id = 'changed';
    }).toThrow(TypeError);
    expect(() => page.items.push(first)).toThrow(TypeError);
    const again = await t.app.modules.events.list(auth, {}, request);
    expect(again.items).toHaveLength(1);
    expect(again.items[0]).toMatchObject({ type: 'platform_a:follow', raw: { user_id: 'viewer-1', tags: ['a'] } });
  });

  test('is kept from its second load: a page asked for once is not frozen, sized or kept', async () => {
    const owner = await devLogin(t);
    expect((await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follow', platform: 'platform_a', raw: { user_id: 'viewer-1' } } })).status).toBe(201);
    const auth: AuthContext = { ...ANONYMOUS, accountId: owner.accountId! };
    const request = { page: 1, limit: 10, offset: 0 };
    const once = await t.app.modules.events.list(auth, { platform: 'platform_a' }, request);
    expect(once.items).toHaveLength(1);
    expect(Object.isFrozen(once.items[0])).toBe(false);
    const twice = await t.app.modules.events.list(auth, { platform: 'platform_a' }, request);
    expect(Object.isFrozen(twice.items[0])).toBe(true);
    expect(twice.items).toEqual(once.items);
  });

  test('over REST gives the same bytes and ETag while kept, and the new page after a write', async () => {
    const owner = await devLogin(t);
    const emit = (userId: string) => api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follow', platform: 'platform_a', raw: { user_id: userId } } });
    expect((await emit('viewer-1')).status).toBe(201);
    const read = () => api(t, 'GET', '/events?limit=25', { token: owner.accessToken });
    const first = await read();
    const second = await read();
    expect(second.status).toBe(200);
    expect(JSON.stringify(second.body)).toBe(JSON.stringify(first.body));
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    expect((await emit('viewer-2')).status).toBe(201);
    const third = await read();
    expect(third.headers.get('etag')).not.toBe(first.headers.get('etag'));
    expect((third.body as { data: { raw: { user_id: string } }[]; _meta: { total: number } })._meta.total).toBe(2);
    expect((third.body as { data: { raw: { user_id: string } }[] }).data.map((e) => e.raw.user_id)).toEqual(['viewer-2', 'viewer-1']);
  });
});
