/**
 * The events surface (Part 2, "Events surface") over real HTTP, GraphQL and WebSocket: emit and
 * read on both protocols, idempotent redelivery on (account, external id) also under concurrent
 * emits, the filters and paging bounds, the broadcast on `events:{account_id}` only after the
 * commit, test and bot events that are broadcast and never stored, and account isolation.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { eventMigrations } from '../../src/modules/events/migrations';
import { gql, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const bot = systemKey('events-bot', ['events:read']);
const operatorEmail = `ops-${randomUUID()}@example.test`;
const t = useTestApp({ auth: { system_keys: [bot.config], bootstrap_admins: [operatorEmail] } });
const opened = closeSocketsAfterEach();

let owner: LoggedIn;
let other: LoggedIn;
beforeAll(async () => {
  owner = await devLogin(t);
  other = await devLogin(t);
});

const emit = (user: LoggedIn, body: Record<string, unknown>) => api(t, 'POST', '/events/emit', { token: user.accessToken, body });

async function subscribed(user: LoggedIn): Promise<TestSocket> {
  const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${user.accessToken}` } });
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  s.send({ type: 'subscribe', channel: `events:${user.accountId}` });
  expect(await s.next()).toEqual({ type: 'subscribed', channel: `events:${user.accountId}` });
  return s;
}

describe('emit and read', () => {
  test('REST emit answers 201 with the stored event; GET by id and the list return it', async () => {
    const res = await emit(owner, { type: 'platform_a:follower', platform: 'platform_a', raw: { user_id: 'u1', user_name: 'Alice' } });
    expect(res.status).toBe(201);
    const data = res.body.data as { id: string; duplicate: boolean; event: Record<string, unknown> };
    expect(data.duplicate).toBe(false);
    expect(data.event).toEqual({
      id: data.id,
      account_id: owner.accountId,
      type: 'platform_a:follower',
      platform: 'platform_a',
      external_id: null,
      raw: { user_id: 'u1', user_name: 'Alice' },
      created_at: expect.any(String),
    });
    expect((res.body._links as { self: string }).self).toBe(`/v1/events/${data.id}`);
    const one = await api(t, 'GET', `/events/${data.id}`, { token: owner.accessToken });
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(data.event);
    const listed = await api(t, 'GET', '/events', { token: owner.accessToken });
    expect((listed.body.data as { id: string }[]).map((e) => e.id)).toContain(data.id);
  });

  test('GraphQL emitEvent, event and events answer the same rows with eventType', async () => {
    const created = await gql(
      t.url,
      'mutation($input: EmitEventInput!) { emitEvent(input: $input) { id duplicate event { id accountId eventType platform externalId raw createdAt } } }',
      { input: { type: 'platform_b:superchat', platform: 'platform_b', raw: { amount: 5 }, externalId: `gql-${randomUUID()}` } },
      { authorization: `Bearer ${owner.accessToken}` },
    );
    expect(created.body.errors).toBeUndefined();
    const result = created.body.data!.emitEvent as { id: string; duplicate: boolean; event: { eventType: string; accountId: string } };
    expect(result.duplicate).toBe(false);
    expect(result.event).toMatchObject({ eventType: 'platform_b:superchat', accountId: owner.accountId });
    const read = await gql(t.url, 'query($id: UUID!) { event(id: $id) { id eventType raw } }', { id: result.id }, { authorization: `Bearer ${owner.accessToken}` });
    expect(read.body.data!.event).toEqual({ id: result.id, eventType: 'platform_b:superchat', raw: { amount: 5 } });
    const page = await gql(
      t.url,
      'query($f: EventFilterInput) { events(filter: $f) { items { id } total page limit pages } }',
      { f: { types: ['platform_b:superchat'] } },
      { authorization: `Bearer ${owner.accessToken}` },
    );
    expect(page.body.data!.events).toMatchObject({ items: [{ id: result.id }], total: 1, page: 1, limit: 25, pages: 1 });
  });

  test('another account neither reads nor lists the event (404 Event not found on both protocols)', async () => {
    const res = await emit(owner, { type: 'platform_a:raid', platform: 'platform_a', raw: {} });
    const id = (res.body.data as { id: string }).id;
    const rest = await api(t, 'GET', `/events/${id}`, { token: other.accessToken });
    expect(rest.status).toBe(404);
    expect(rest.body).toMatchObject({ error: 'NOT_FOUND', message: 'Event not found' });
    const graph = await gql(t.url, 'query($id: UUID!) { event(id: $id) { id } }', { id }, { authorization: `Bearer ${other.accessToken}` });
    expect(graph.body.errors?.[0]).toMatchObject({ message: 'Event not found', extensions: { code: 'NOT_FOUND' } });
    const listed = await api(t, 'GET', '/events', { token: other.accessToken, query: { types: 'platform_a:raid' } });
    expect(listed.body.data).toEqual([]);
  });

  test('bad input is a 400 VALIDATION_ERROR on both protocols, never a 500', async () => {
    for (const body of [
      { type: 'no-colon', platform: 'platform_a', raw: {} },
      { type: 'platform_a:follower', platform: '', raw: {} },
      { type: 'platform_a:follower', platform: 'platform_a', raw: [1] },
      { type: 'platform_a:follower', platform: 'platform_a' },
      { type: 'platform_a:follower', platform: 'platform_a', raw: {}, external_id: '' },
    ]) {
      const res = await emit(owner, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('VALIDATION_ERROR');
    }
    for (const input of [
      { type: 'no-colon', platform: 'platform_a', raw: {} },
      { type: 'platform_a:follower', platform: 'platform_a', raw: [1] },
      { type: 'platform_a:follower', platform: 'platform_a', raw: 'text' },
    ]) {
      const res = await gql(t.url, 'mutation($input: EmitEventInput!) { emitEvent(input: $input) { id } }', { input }, { authorization: `Bearer ${owner.accessToken}` });
      expect(res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    }
    const badTime = await api(t, 'GET', '/events', { token: owner.accessToken, query: { from: 'yesterday' } });
    expect(badTime.status).toBe(400);
    expect(badTime.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'from must be an RFC 3339 timestamp' });
  });

  test('there is no deletion operation', async () => {
    const res = await emit(owner, { type: 'platform_a:cheer', platform: 'platform_a', raw: {} });
    const id = (res.body.data as { id: string }).id;
    const del = await api(t, 'DELETE', `/events/${id}`, { token: owner.accessToken });
    expect([404, 405]).toContain(del.status);
    expect((await api(t, 'GET', `/events/${id}`, { token: owner.accessToken })).status).toBe(200);
  });
});

describe('idempotent redelivery on (account, external id)', () => {
  test('a redelivery answers the stored event with duplicate: true (200) and is not broadcast again', async () => {
    const s = await subscribed(owner);
    const externalId = `ext-${randomUUID()}`;
    const first = await emit(owner, { type: 'platform_a:subscribe', platform: 'platform_a', raw: { n: 1 }, external_id: externalId });
    expect(first.status).toBe(201);
    const id = (first.body.data as { id: string }).id;
    expect(await s.next()).toMatchObject({ type: 'event', kind: 'event', data: { id, external_id: externalId } });
    const again = await emit(owner, { type: 'platform_a:subscribe', platform: 'platform_a', raw: { n: 2 }, external_id: externalId });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id, duplicate: true, event: { id, raw: { n: 1 } } });
    // Nothing more on the socket: a marker test event arrives next.
    await api(t, 'POST', '/events/test', { token: owner.accessToken, body: { type: 'test:marker' } });
    expect(await s.next()).toMatchObject({ type: 'event', kind: 'event', data: { type: 'test:marker' } });
    // The same external id in another account is another event.
    const elsewhere = await emit(other, { type: 'platform_a:subscribe', platform: 'platform_a', raw: {}, external_id: externalId });
    expect(elsewhere.status).toBe(201);
    expect((elsewhere.body.data as { id: string }).id).not.toBe(id);
  });

  test('concurrent emits of one external id store one row; every answer names it', async () => {
    const externalId = `race-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 12 }, (_, n) => emit(owner, { type: 'platform_a:gift', platform: 'platform_a', raw: { n }, external_id: externalId })));
    expect(answers.map((a) => a.status).sort()).toEqual([...Array<number>(11).fill(200), 201]);
    const ids = new Set(answers.map((a) => (a.body.data as { id: string }).id));
    expect(ids.size).toBe(1);
    const rows = await t.app.db.knex('events').where({ account_id: owner.accountId, external_id: externalId });
    expect(rows).toHaveLength(1);
  });
});

describe('filters and paging', () => {
  let user: LoggedIn;
  beforeAll(async () => {
    user = await devLogin(t);
    const rows = [
      { type: 'platform_a:follower', platform: 'platform_a', raw: { user_id: 'a1', user_name: 'Zed', note: '100% Fun_Stuff' } },
      { type: 'platform_a:cheer', platform: 'platform_a', raw: { user_id: 'a2', bits: 100 } },
      { type: 'platform_b:superchat', platform: 'platform_b', raw: { user_id: 'a1', message: 'Hello WORLD' } },
      { type: 'platform_c:follower', platform: 'platform_c', raw: { user_id: 'c9' } },
    ];
    for (const row of rows) expect((await emit(user, row)).status).toBe(201);
  });
  const list = (query: Record<string, string>) => api(t, 'GET', '/events', { token: user.accessToken, query });
  const types = (res: { body: { data?: unknown } }) => (res.body.data as { type: string }[]).map((e) => e.type).sort();

  test('types, platform (comma-separated), user_id inside raw and case-insensitive search', async () => {
    expect(types(await list({ types: 'platform_a:follower,platform_c:follower' }))).toEqual(['platform_a:follower', 'platform_c:follower']);
    expect(types(await list({ platform: 'platform_b,platform_c' }))).toEqual(['platform_b:superchat', 'platform_c:follower']);
    expect(types(await list({ user_id: 'a1' }))).toEqual(['platform_a:follower', 'platform_b:superchat']);
    const hello = await list({ search: 'hello world' });
    expect(hello.body).toMatchObject({ data: expect.any(Array) });
    expect(types(hello)).toEqual(['platform_b:superchat']);
    expect(types(await list({ search: '100%' }))).toEqual(['platform_a:follower']);
    expect(types(await list({ search: 'n_stuff' }))).toEqual(['platform_a:follower']);
    expect(types(await list({ search: '%' }))).toEqual(['platform_a:follower']);
  });

  test('time range: after from, before to', async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const past = new Date(Date.now() - 3_600_000).toISOString();
    expect((await list({ from: past })).body._meta).toMatchObject({ total: 4 });
    expect((await list({ from: future })).body._meta).toMatchObject({ total: 0 });
    expect((await list({ to: past })).body._meta).toMatchObject({ total: 0 });
    expect((await list({ from: past, to: future })).body._meta).toMatchObject({ total: 4 });
  });

  test('paging: default 25, at most 100 (beyond: 400), newest first', async () => {
    const page = await list({ limit: '3' });
    expect(page.body._meta).toEqual({ total: 4, page: 1, limit: 3, pages: 2 });
    const second = await list({ limit: '3', page: '2' });
    expect((second.body.data as unknown[]).length).toBe(1);
    expect((await list({})).body._meta).toMatchObject({ limit: 25 });
    expect((await list({ limit: '101' })).status).toBe(400);
    expect((await list({ limit: '0' })).status).toBe(400);
    const all = (await list({})).body.data as { created_at: string }[];
    const times = all.map((e) => e.created_at);
    expect([...times].sort().reverse()).toEqual(times);
  });
});

describe('exact totals from the per-day counts', () => {
  const day = 86_400_000;
  let user: LoggedIn;
  const start = Date.UTC(2026, 0, 10, 0, 0, 0);
  const kinds = [
    { type: 'platform_a:follower', platform: 'platform_a' },
    { type: 'platform_a:cheer', platform: 'platform_a' },
    { type: 'platform_b:superchat', platform: 'platform_b' },
  ];
  const list = (query: Record<string, string>) => api(t, 'GET', '/events', { token: user.accessToken, query: { limit: '1', ...query } });
  /** The oracle: the rows themselves, counted in the database. */
  async function counted(query: { types?: string[]; platform?: string[]; from?: Date; to?: Date }): Promise<number> {
    const q = t.app.db.knex('events').where({ account_id: user.accountId, hidden: false });
    if (query.types) q.whereIn('type', query.types);
    if (query.platform) q.whereIn('platform', query.platform);
    if (query.from) q.where('created_at', '>', query.from);
    if (query.to) q.where('created_at', '<', query.to);
    return Number((await q.count<{ n: string }[]>({ n: '*' }).first())?.n ?? 0);
  }

  beforeAll(async () => {
    user = await devLogin(t);
    // The rows lie in the past beyond the plan's retention: this account keeps its events forever,
    // so a retention sweep (global; on PostgreSQL any app of the shared test database may run it)
    // cannot take them while the totals are checked.
    await t.app.db.knex('accounts').where({ id: user.accountId }).update({ chat_retention_days: 0 });
    // 60 rows over 10 UTC days, some on the stroke of midnight; emitted through the API, then
    // moved in time in the database (the counts follow updates too).
    const ids: string[] = [];
    for (let i = 0; i < 60; i += 1) {
      const res = await emit(user, { ...kinds[i % 3]!, raw: { i } });
      ids.push((res.body.data as { id: string }).id);
    }
    for (let i = 0; i < ids.length; i += 1) {
      const at = new Date(start + Math.floor(i / 6) * day + (i % 6 === 0 ? 0 : (i % 6) * 3_700_000 + i));
      await t.app.db.knex('events').where({ id: ids[i] }).update({ created_at: at });
    }
    // A hidden row is never counted; hiding and unhiding move it out of and into the counts.
    await t.app.db.knex('events').insert({ id: randomUUID(), account_id: user.accountId, type: 'platform_a:gift_sub', platform: 'platform_a', raw: '{}', hidden: true, created_at: new Date(start + 2 * day + 5) });
    await t.app.db.knex('events').where({ id: ids[7] }).update({ hidden: true });
    await t.app.db.knex('events').where({ id: ids[8] }).update({ hidden: true });
    await t.app.db.knex('events').where({ id: ids[8] }).update({ hidden: false });
  });

  test('types, platform and time ranges (within a day, across days, on midnight) match the rows counted one by one', async () => {
    const instants = [...Array.from({ length: 12 }, (_, d) => new Date(start + (d - 1) * day)), new Date(start + 3 * day + 3_700_000 * 2 + 20), new Date(start + 4 * day - 1), new Date(start + 5 * day + 1)];
    const filters = fc.record({
      types: fc.option(fc.subarray(kinds.map((k) => k.type), { minLength: 1 }), { nil: undefined }),
      platform: fc.option(fc.subarray(['platform_a', 'platform_b', 'platform_c'], { minLength: 1 }), { nil: undefined }),
      from: fc.option(fc.oneof(fc.constantFrom(...instants), fc.integer({ min: -day, max: 11 * day }).map((ms) => new Date(start + ms))), { nil: undefined }),
      to: fc.option(fc.oneof(fc.constantFrom(...instants), fc.integer({ min: -day, max: 11 * day }).map((ms) => new Date(start + ms))), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(filters, async (f) => {
        const query: Record<string, string> = {};
        if (f.types) query.types = f.types.join(',');
        if (f.platform) query.platform = f.platform.join(',');
        if (f.from) query.from = f.from.toISOString();
        if (f.to) query.to = f.to.toISOString();
        const res = await list(query);
        expect(res.status).toBe(200);
        expect((res.body._meta as { total: number }).total).toBe(await counted(f));
      }),
      { numRuns: 60, seed: 20261124 },
    );
    expect((await list({})).body._meta).toMatchObject({ total: 59 });
  });

  test('the retention sweep and content filters keep the totals exact', async () => {
    await t.app.db.knex('accounts').where({ id: user.accountId }).update({ chat_retention_days: Math.ceil((Date.now() - start) / day) - 4 });
    expect(await t.app.modules.events.sweepRetention()).toBeGreaterThan(0);
    const left = await counted({});
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(59);
    expect((await list({})).body._meta).toMatchObject({ total: left });
    expect((await list({ types: 'platform_a:cheer', from: new Date(start).toISOString() })).body._meta).toMatchObject({ total: await counted({ types: ['platform_a:cheer'], from: new Date(start) }) });
    const gql200 = await gql(t.url, 'query($f: EventFilterInput) { events(filter: $f) { total } }', { f: { platform: 'platform_b', search: '"i"' } }, { authorization: `Bearer ${user.accessToken}` });
    expect(gql200.body.data!.events).toEqual({ total: await counted({ platform: ['platform_b'] }) });
    await t.app.db.knex('accounts').where({ id: user.accountId }).update({ chat_retention_days: null });
  });

  test('an account holding events can be dissolved; its counts and versions go with it', async () => {
    const owner = await devLogin(t);
    const created = await api(t, 'POST', '/accounts', { token: owner.accessToken, body: { name: 'dissolved with events' } });
    const accountId = (created.body.data as { id: string }).id;
    const switched = await api(t, 'POST', '/auth/switch-account', { token: owner.accessToken, body: { account_id: accountId } });
    const token = (switched.body.data as { access_token: string }).access_token;
    for (const kind of kinds) expect((await api(t, 'POST', '/events/emit', { token, body: { ...kind, raw: {} } })).status).toBe(201);
    expect((await api(t, 'DELETE', '/account', { token })).status).toBe(200);
    for (const table of ['events', 'event_counts', 'event_versions']) expect(await t.app.db.knex(table).where({ account_id: accountId }).first()).toBeUndefined();
  });

  test('the migration counts the rows stored before it, once', async () => {
    const migration = eventMigrations.find((m) => m.name.endsWith('_create_event_counts'))!;
    const knex = t.app.db.knex;
    await migration.down(knex);
    await knex('events').insert({ id: randomUUID(), account_id: user.accountId, type: 'platform_c:follower', platform: 'platform_c', raw: '{}', hidden: false, created_at: new Date(start + 3 * day) });
    await knex.transaction((trx) => migration.up(trx));
    for (const f of [{}, { platform: ['platform_c'] }, { from: new Date(start + day), to: new Date(start + 6 * day + 1) }]) {
      const query = Object.fromEntries(Object.entries(f).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v as Date).toISOString()]));
      expect((await list(query)).body._meta).toMatchObject({ total: await counted(f) });
    }
  });
});

describe('broadcast', () => {
  test('the emitted event reaches the subscribed socket only after it is committed', async () => {
    const s = await subscribed(owner);
    const res = await emit(owner, { type: 'platform_a:raid', platform: 'platform_a', raw: { viewers: 3 } });
    const id = (res.body.data as { id: string }).id;
    const message = await s.next();
    expect(message).toEqual({ type: 'event', kind: 'event', data: (res.body.data as { event: unknown }).event, cursor: expect.any(String) });
    // Read back at once: the row is already visible.
    expect((await api(t, 'GET', `/events/${id}`, { token: owner.accessToken })).status).toBe(200);
  });

  test('POST /v1/events/test broadcasts and stores nothing', async () => {
    const s = await subscribed(owner);
    const res = await api(t, 'POST', '/events/test', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { user_name: 'Test' } } });
    expect(res.status).toBe(200);
    const event = res.body.data as { id: string };
    expect(await s.next()).toEqual({ type: 'event', kind: 'event', data: event, cursor: expect.any(String) });
    expect((await api(t, 'GET', `/events/${event.id}`, { token: owner.accessToken })).status).toBe(404);
    const empty = await api(t, 'POST', '/events/test', { token: owner.accessToken });
    expect(empty.status).toBe(200);
    expect(empty.body.data).toMatchObject({ type: 'test:event', platform: 'test', raw: {}, external_id: null });
    expect(await s.next()).toMatchObject({ type: 'event', kind: 'event', data: { type: 'test:event' } });
  });

  test('emitBotEvent: system keys only; broadcast, never stored', async () => {
    const s = await subscribed(owner);
    const mutation = 'mutation($a: ID!, $r: JSON!) { emitBotEvent(accountId: $a, eventType: "platform_a:follower", platform: "platform_a", username: "botty", raw: $r) { id eventType raw accountId } }';
    const res = await gql(t.url, mutation, { a: owner.accountId, r: { user_id: 'x' } }, { authorization: `Bearer ${bot.key}` });
    expect(res.body.errors).toBeUndefined();
    const event = res.body.data!.emitBotEvent as { id: string };
    expect(event).toMatchObject({ eventType: 'platform_a:follower', raw: { username: 'botty', user_id: 'x' }, accountId: owner.accountId });
    expect(await s.next()).toMatchObject({ type: 'event', kind: 'event', data: { id: event.id, type: 'platform_a:follower', account_id: owner.accountId } });
    expect((await api(t, 'GET', `/events/${event.id}`, { token: owner.accessToken })).status).toBe(404);
    const asUser = await gql(t.url, mutation, { a: owner.accountId, r: {} }, { authorization: `Bearer ${owner.accessToken}` });
    expect(asUser.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const unknown = await gql(t.url, mutation, { a: randomUUID(), r: {} }, { authorization: `Bearer ${bot.key}` });
    expect(unknown.body.errors?.[0]).toMatchObject({ message: 'Account not found', extensions: { code: 'NOT_FOUND' } });
    const notUuid = await gql(t.url, mutation, { a: 'nope', r: {} }, { authorization: `Bearer ${bot.key}` });
    expect(notUuid.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
  });
});

describe('community gift bundling (platform_a)', () => {
  const header = (gift: string, total: number) => ({ type: 'platform_a:gift', platform: 'platform_a', raw: { community_gift_id: gift, total, user_name: 'gifter' } });
  const notice = (gift: string, n: number) => ({ type: 'platform_a:gift_sub', platform: 'platform_a', raw: { community_gift_id: gift, recipient_user_id: `r${n}`, recipient_user_name: `recipient${n}` } });
  const recipients = (...ns: number[]) => ns.map((n) => ({ user_id: `r${n}`, user_name: `recipient${n}`, display_name: null }));

  test('the header is broadcast at once, notices are hidden, and the header is patched with giftRecipients when the count is reached', async () => {
    const user = await devLogin(t);
    const s = await subscribed(user);
    const gift = randomUUID();
    const head = await emit(user, header(gift, 2));
    const event = (head.body.data as { event: { id: string; created_at: string } }).event;
    expect(await s.next()).toEqual({ type: 'event', kind: 'event', data: event, cursor: expect.any(String) });
    const first = await emit(user, notice(gift, 1));
    expect(first.status).toBe(201);
    const listed = await api(t, 'GET', '/events', { token: user.accessToken });
    expect((listed.body.data as { id: string }[]).map((e) => e.id)).toEqual([event.id]);
    await emit(user, notice(gift, 2));
    // The next message is the patched header: the notices themselves are never broadcast.
    const patched = await s.next();
    expect(patched).toEqual({ type: 'event', kind: 'event', data: { ...event, raw: { community_gift_id: gift, total: 2, user_name: 'gifter', giftRecipients: recipients(1, 2) } }, cursor: expect.any(String) });
    const stored = await api(t, 'GET', `/events/${event.id}`, { token: user.accessToken });
    expect((stored.body.data as { raw: unknown }).raw).toMatchObject({ giftRecipients: recipients(1, 2) });
    // A late extra notice does not patch again.
    await emit(user, notice(gift, 3));
    await api(t, 'POST', '/events/test', { token: user.accessToken, body: { type: 'test:marker' } });
    expect(await s.next()).toMatchObject({ data: { type: 'test:marker' } });
  });

  test('notices arriving before their header complete the bundle as soon as the header is stored', async () => {
    const user = await devLogin(t);
    const s = await subscribed(user);
    const gift = randomUUID();
    await emit(user, notice(gift, 1));
    await emit(user, notice(gift, 2));
    const head = await emit(user, header(gift, 2));
    const event = (head.body.data as { event: { id: string } }).event;
    expect(await s.next()).toEqual({ type: 'event', kind: 'event', data: event, cursor: expect.any(String) });
    expect(await s.next()).toMatchObject({ type: 'event', kind: 'event', data: { id: event.id, raw: { giftRecipients: recipients(1, 2) } } });
  });

  test('an incomplete bundle is aged out by the sweep with the recipients that arrived', async () => {
    const user = await devLogin(t);
    const s = await subscribed(user);
    const gift = randomUUID();
    const head = await emit(user, header(gift, 5));
    const event = (head.body.data as { event: { id: string; created_at: string } }).event;
    expect(await s.next()).toEqual({ type: 'event', kind: 'event', data: event, cursor: expect.any(String) });
    await emit(user, notice(gift, 1));
    expect(await t.app.modules.events.sweepGifts()).toBe(0);
    await t.app.db.knex('events').where({ id: event.id }).update({ created_at: new Date(Date.now() - 120_000) });
    expect(await t.app.modules.events.sweepGifts()).toBeGreaterThanOrEqual(1);
    const patched = (await s.next()) as { data: { id: string; created_at: string; raw: Record<string, unknown> } };
    expect(patched.data.id).toBe(event.id);
    expect(patched.data.raw.giftRecipients).toEqual(recipients(1));
  });

  const standalone = (gifter: string, total: number) => ({ type: 'platform_a:gift', platform: 'platform_a', raw: { user_name: gifter, total } });
  const age = (id: string) => t.app.db.knex('events').where({ id }).update({ created_at: new Date(Date.now() - 120_000) });
  const listed = async (user: LoggedIn) => ((await api(t, 'GET', '/events', { token: user.accessToken })).body.data as { id: string }[]).map((e) => e.id);

  test('a standalone gift record is held: superseded by a canonical header of the same gifter and total, before or after it', async () => {
    const user = await devLogin(t);
    const s = await subscribed(user);
    // Standalone first, then the header.
    const first = (await emit(user, standalone('gifter-a', 3))).body.data as { id: string };
    const head = (await emit(user, { ...header(randomUUID(), 3), raw: { ...header('x', 3).raw, community_gift_id: randomUUID(), user_name: 'gifter-a' } })).body.data as { event: { id: string } };
    expect(((await s.next()) as { data: { id: string } }).data.id).toBe(head.event.id);
    // Header first, then the standalone.
    const head2 = (await emit(user, { ...header('y', 4), raw: { community_gift_id: randomUUID(), total: 4, user_name: 'gifter-b' } })).body.data as { event: { id: string } };
    expect(((await s.next()) as { data: { id: string } }).data.id).toBe(head2.event.id);
    const second = (await emit(user, standalone('gifter-b', 4))).body.data as { id: string };
    // Neither standalone record is ever shown or broadcast, even once the hold has passed.
    await age(first.id);
    await age(second.id);
    await t.app.modules.events.sweepGifts();
    const ids = await listed(user);
    expect(ids).not.toContain(first.id);
    expect(ids).not.toContain(second.id);
    const rows = await t.app.db.knex('events').whereIn('id', [first.id, second.id]).select('id', 'raw', 'hidden');
    const superseded = Object.fromEntries(rows.map((r: { id: string; raw: unknown; hidden: boolean }) => [r.id, (typeof r.raw === 'string' ? JSON.parse(r.raw) : r.raw).superseded_by]));
    expect(superseded).toEqual({ [first.id]: head.event.id, [second.id]: head2.event.id });
    await expect(s.next(300)).rejects.toThrow();
  });

  test('a standalone gift record with no header (or a header of another total) is released by the sweep with its own id and created_at', async () => {
    const user = await devLogin(t);
    const s = await subscribed(user);
    const held = (await emit(user, standalone('gifter-c', 2))).body.data as { id: string; event: { created_at: string } };
    await emit(user, { ...header('z', 5), raw: { community_gift_id: randomUUID(), total: 5, user_name: 'gifter-c' } });
    expect(((await s.next()) as { data: { raw: { total: number } } }).data.raw.total).toBe(5);
    expect(await listed(user)).not.toContain(held.id);
    await age(held.id);
    expect(await t.app.modules.events.sweepGifts()).toBeGreaterThanOrEqual(1);
    const released = (await s.next()) as { type: string; data: { id: string; created_at: string; raw: Record<string, unknown> } };
    expect(released.type).toBe('event');
    expect(released.data.id).toBe(held.id);
    expect(released.data.raw).toEqual({ user_name: 'gifter-c', total: 2 });
    expect(await listed(user)).toContain(held.id);
    // Released once: another sweep broadcasts nothing more for it.
    await t.app.modules.events.sweepGifts();
    expect(await listed(user)).toContain(held.id);
  });
});

describe('retention', () => {
  test("the sweep deletes rows older than the plan's chat_retention_days; 0 keeps forever", async () => {
    const user = await devLogin(t);
    const ids: string[] = [];
    for (const n of [1, 2]) ids.push(((await emit(user, { type: 'platform_a:follower', platform: 'platform_a', raw: { n } })).body.data as { id: string }).id);
    const plan = await t.app.db.knex('accounts').join('plans', 'plans.id', 'accounts.plan_id').where('accounts.id', user.accountId).first('plans.chat_retention_days as days');
    const days = Number(plan?.days ?? 30);
    expect(days).toBeGreaterThan(0);
    const day = 86_400_000;
    await t.app.db.knex('events').where({ id: ids[0] }).update({ created_at: new Date(Date.now() - (days + 1) * day) });
    await t.app.db.knex('events').where({ id: ids[1] }).update({ created_at: new Date(Date.now() - (days - 1) * day) });
    expect(await t.app.modules.events.sweepRetention()).toBeGreaterThanOrEqual(1);
    expect((await api(t, 'GET', `/events/${ids[0]}`, { token: user.accessToken })).status).toBe(404);
    expect((await api(t, 'GET', `/events/${ids[1]}`, { token: user.accessToken })).status).toBe(200);
    // A plan with 0 keeps events forever.
    const keepForever = await t.app.db.knex('plans').where({ chat_retention_days: 0 }).first('id');
    expect(keepForever).toBeDefined();
    await t.app.db.knex('accounts').where({ id: user.accountId }).update({ plan_id: keepForever!.id });
    await t.app.db.knex('events').where({ id: ids[1] }).update({ created_at: new Date(Date.now() - 10_000 * day) });
    await t.app.modules.events.sweepRetention();
    expect((await api(t, 'GET', `/events/${ids[1]}`, { token: user.accessToken })).status).toBe(200);
  });

  test("an account's own chat_retention_days wins over its plan's; null gives the plan's back; other modules' sweeps run too", async () => {
    const user = await devLogin(t);
    const operator = await devLogin(t, operatorEmail, 'Operator');
    const day = 86_400_000;
    const emitAged = async (ageDays: number) => {
      const id = ((await emit(user, { type: 'platform_a:follower', platform: 'platform_a', raw: { ageDays } })).body.data as { id: string }).id;
      await t.app.db.knex('events').where({ id }).update({ created_at: new Date(Date.now() - ageDays * day) });
      return id;
    };
    const setRetention = (days: number | null, token = operator.accessToken) =>
      api(t, 'PUT', `/admin/accounts/${user.accountId}/retention`, { token, body: { chat_retention_days: days } });

    // Gate, validation and unknown account.
    expect((await setRetention(2, user.accessToken)).status).toBe(403);
    expect((await setRetention(-1)).body).toMatchObject({ error: 'VALIDATION_ERROR' });
    expect((await api(t, 'PUT', `/admin/accounts/${randomUUID()}/retention`, { token: operator.accessToken, body: { chat_retention_days: 1 } })).body).toEqual({ error: 'NOT_FOUND', message: 'Account not found' });

    const set = await setRetention(2);
    expect(set.status).toBe(200);
    expect(set.body.data).toEqual({ account_id: user.accountId, chat_retention_days: 2, effective_chat_retention_days: 2 });
    let swept = 0;
    t.app.modules.events.retention.register(() => {
      swept += 1;
      return Promise.resolve(0);
    });
    const old = await emitAged(3);
    const young = await emitAged(1);
    await t.app.modules.events.sweepRetention();
    // The job system's own hourly sweep (offered when the node starts) may run beside this one.
    expect(swept).toBeGreaterThanOrEqual(1);
    expect((await api(t, 'GET', `/events/${old}`, { token: user.accessToken })).status).toBe(404);
    expect((await api(t, 'GET', `/events/${young}`, { token: user.accessToken })).status).toBe(200);

    // 0 on the account keeps forever whatever the plan says.
    expect((await setRetention(0)).body.data).toMatchObject({ chat_retention_days: 0, effective_chat_retention_days: 0 });
    const ancient = await emitAged(5000);
    await t.app.modules.events.sweepRetention();
    expect((await api(t, 'GET', `/events/${ancient}`, { token: user.accessToken })).status).toBe(200);

    // null removes the override: the plan's window applies again.
    const cleared = await setRetention(null);
    const plan = await t.app.db.knex('accounts').join('plans', 'plans.id', 'accounts.plan_id').where('accounts.id', user.accountId).first('plans.chat_retention_days as days');
    expect(cleared.body.data).toEqual({ account_id: user.accountId, chat_retention_days: null, effective_chat_retention_days: Number(plan!.days) });
    const audit = await t.app.db.knex('audit_log').where({ account_id: user.accountId, type: 'system:account_retention_set' }).count<{ n: string }[]>('* as n');
    expect(Number(audit[0]!.n)).toBe(3);
  });
});
