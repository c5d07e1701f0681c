/**
 * The watchlist (Part 2, "Watchlist") over real HTTP and GraphQL: signed-in users only (401
 * otherwise, whatever the kill-switch), handles resolved through the channel directory the
 * crawler feeds (a handle it does not know yet is kept pending and follows the channel once a
 * batch brings it), idempotent add and delete, newest first, the 500-channel cap (also under
 * concurrent adds), and the GraphQL twins answering the same.
 */
import { randomUUID } from 'node:crypto';
import { gql, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const crawler = systemKey('crawler', []);
const t = useTestApp({ auth: { system_keys: [crawler.config] } });

const ingest = (body: unknown) => api(t, 'POST', '/internal/public-stats/samples', { token: crawler.key, body });
const add = (user: LoggedIn, platform: string, channel: string) => api(t, 'POST', '/watchlist', { token: user.accessToken, body: { platform, channel } });
const list = (user: LoggedIn) => api(t, 'GET', '/watchlist', { token: user.accessToken });

let alice: LoggedIn;
let bob: LoggedIn;

beforeAll(async () => {
  alice = await devLogin(t);
  bob = await devLogin(t);
  const res = await ingest({
    channels: [
      { platform: 'platform_a', platform_channel_id: '1001', login: 'StreamerOne', display_name: 'Streamer One' },
      { platform: 'platform_a', platform_channel_id: '1002', login: 'streamertwo', display_name: null },
      { platform: 'platform_b', platform_channel_id: 'UC-three', login: 'three', display_name: 'Three' },
    ],
  });
  expect(res.status).toBe(200);
});

describe('authentication', () => {
  test('every operation answers 401 without a signed-in user, on both protocols', async () => {
    expect((await api(t, 'GET', '/watchlist')).status).toBe(401);
    expect((await api(t, 'POST', '/watchlist', { body: { platform: 'platform_a', channel: 'streamerone' } })).status).toBe(401);
    expect((await api(t, 'DELETE', '/watchlist', { body: { platform: 'platform_a', platform_channel_id: '1001' } })).status).toBe(401);
    expect((await api(t, 'GET', '/watchlist', { token: crawler.key })).status).toBe(401);
    for (const query of ['{ myWatchlist { items { platform } } }', 'mutation { addToWatchlist(platform: "platform_a", channel: "streamerone") { platform } }', 'mutation { removeFromWatchlist(platform: "platform_a", platformChannelId: "1001") }']) {
      const res = await gql(t.url, query);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
    }
  });
});

describe('list, add, delete', () => {
  test('empty at first; add resolves the handle case-insensitively to the stable id; newest first', async () => {
    const empty = await list(alice);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ data: { items: [] } });

    const one = await add(alice, 'platform_a', 'STREAMERONE');
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual({ platform: 'platform_a', platform_channel_id: '1001', channel_login: 'StreamerOne', channel_display_name: 'Streamer One', added_at: expect.any(String), pending: false });
    const two = await add(alice, 'platform_b', 'three');
    expect(two.body.data).toMatchObject({ platform: 'platform_b', platform_channel_id: 'UC-three' });

    const listed = await list(alice);
    expect(listed.body.data.items.map((i: { platform_channel_id: string }) => i.platform_channel_id)).toEqual(['UC-three', '1001']);
    expect((await list(bob)).body.data.items).toEqual([]);
  });

  test('adding again is idempotent: the stored item, unchanged', async () => {
    const first = await add(alice, 'platform_a', 'streamerone');
    const again = await add(alice, 'platform_a', 'StreamerOne');
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    expect((await list(alice)).body.data.items).toHaveLength(2);
  });

  test('400 for an unsupported platform; a handle the crawler does not know is kept pending, then follows the channel a batch brings', async () => {
    const platform = await add(alice, 'platform_z', 'streamerone');
    expect(platform.status).toBe(400);
    expect(platform.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'Unsupported platform: platform_z' });
    expect((await api(t, 'POST', '/watchlist', { token: alice.accessToken, body: { platform: 'platform_a' } })).status).toBe(400);

    const pending = await add(alice, 'platform_a', 'Newcomer');
    expect(pending.status).toBe(200);
    expect(pending.body.data).toEqual({ platform: 'platform_a', platform_channel_id: 'pending:newcomer', channel_login: 'Newcomer', channel_display_name: null, added_at: expect.any(String), pending: true });
    expect((await add(alice, 'platform_a', 'NEWCOMER')).body.data).toEqual(pending.body.data);
    // Removable by its pending id, and addable again.
    const removed = await api(t, 'DELETE', '/watchlist', { token: alice.accessToken, body: { platform: 'platform_a', platform_channel_id: 'pending:newcomer' } });
    expect(removed.body).toEqual({ success: true });
    expect((await list(alice)).body.data.items.some((i: { pending: boolean }) => i.pending)).toBe(false);
    const again = await add(alice, 'platform_a', 'newcomer');
    expect((await list(alice)).body.data.items[0]).toEqual(again.body.data);

    // The crawler's next batch brings the channel: the item becomes it, with its added_at.
    expect((await ingest({ channels: [{ platform: 'platform_a', platform_channel_id: '1009', login: 'NewComer', display_name: 'New Comer' }] })).status).toBe(200);
    const adopted = (await list(alice)).body.data.items.find((i: { platform_channel_id: string }) => i.platform_channel_id === '1009');
    expect(adopted).toEqual({ platform: 'platform_a', platform_channel_id: '1009', channel_login: 'NewComer', channel_display_name: 'New Comer', added_at: again.body.data.added_at, pending: false });
    expect((await list(alice)).body.data.items.some((i: { pending: boolean }) => i.pending)).toBe(false);
    await api(t, 'DELETE', '/watchlist', { token: alice.accessToken, body: { platform: 'platform_a', platform_channel_id: '1009' } });
  });

  test('delete is idempotent and answers { success: true }', async () => {
    const gone = await api(t, 'DELETE', '/watchlist', { token: alice.accessToken, body: { platform: 'platform_b', platform_channel_id: 'UC-three' } });
    expect(gone.status).toBe(200);
    expect(gone.body).toEqual({ success: true });
    const again = await api(t, 'DELETE', '/watchlist', { token: alice.accessToken, body: { platform: 'platform_b', platform_channel_id: 'UC-three' } });
    expect(again.body).toEqual({ success: true });
    expect((await list(alice)).body.data.items.map((i: { platform_channel_id: string }) => i.platform_channel_id)).toEqual(['1001']);
  });

  test('GraphQL twins answer the same items and results', async () => {
    const added = await gql(t.url, 'mutation { addToWatchlist(platform: "platform_a", channel: "streamertwo") { platform platformChannelId channelLogin channelDisplayName addedAt } }', {}, { authorization: `Bearer ${bob.accessToken}` });
    expect(added.body.data?.addToWatchlist).toEqual({ platform: 'platform_a', platformChannelId: '1002', channelLogin: 'streamertwo', channelDisplayName: null, addedAt: expect.any(String) });
    const listed = await gql(t.url, '{ myWatchlist { items { platformChannelId channelLogin } } }', {}, { authorization: `Bearer ${bob.accessToken}` });
    expect(listed.body.data?.myWatchlist).toEqual({ items: [{ platformChannelId: '1002', channelLogin: 'streamertwo' }] });
    const rest = await list(bob);
    expect(rest.body.data.items[0].added_at).toBe((added.body.data?.addToWatchlist as { addedAt: string }).addedAt);
    const pending = await gql(t.url, 'mutation { addToWatchlist(platform: "platform_a", channel: "nobody") { platformChannelId pending } }', {}, { authorization: `Bearer ${bob.accessToken}` });
    expect(pending.body.data?.addToWatchlist).toEqual({ platformChannelId: 'pending:nobody', pending: true });
    expect((await gql(t.url, 'mutation { removeFromWatchlist(platform: "platform_a", platformChannelId: "pending:nobody") }', {}, { authorization: `Bearer ${bob.accessToken}` })).body.data?.removeFromWatchlist).toBe(true);
    const removed = await gql(t.url, 'mutation { removeFromWatchlist(platform: "platform_a", platformChannelId: "1002") }', {}, { authorization: `Bearer ${bob.accessToken}` });
    expect(removed.body.data?.removeFromWatchlist).toBe(true);
    expect((await list(bob)).body.data.items).toEqual([]);
  });
});

describe('the 500-channel cap', () => {
  test('a new channel beyond 500 gives 400; an existing one stays idempotent; a delete frees a slot', async () => {
    const carol = await devLogin(t);
    // 500 channels in the directory, 499 of them on Carol's list (written directly: the cap is what is tested).
    const channels = Array.from({ length: 500 }, (_, i) => ({ platform: 'platform_c', platform_channel_id: `c${i}`, login: `cap${i}` }));
    expect((await ingest({ channels })).status).toBe(200);
    await t.app.db.knex('stats_watchlist').insert(channels.slice(0, 499).map((c, i) => ({ user_id: carol.userId, platform: 'platform_c', platform_channel_id: c.platform_channel_id, added_at: new Date(Date.now() - (1000 - i) * 1000) })));

    const last = await add(carol, 'platform_c', 'cap499');
    expect(last.status).toBe(200);
    const over = await add(carol, 'platform_a', 'streamerone');
    expect(over.status).toBe(400);
    expect(over.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Watchlist limit of 500 channels reached' });
    const gqlOver = await gql(t.url, 'mutation { addToWatchlist(platform: "platform_a", channel: "streamerone") { platform } }', {}, { authorization: `Bearer ${carol.accessToken}` });
    expect(gqlOver.body.errors?.[0]).toMatchObject({ message: 'Watchlist limit of 500 channels reached', extensions: { code: 'VALIDATION_ERROR' } });
    expect((await add(carol, 'platform_c', 'cap0')).status).toBe(200);
    const items = (await list(carol)).body.data.items as { platform_channel_id: string }[];
    expect(items).toHaveLength(500);
    expect(items[0]!.platform_channel_id).toBe('c499');

    await api(t, 'DELETE', '/watchlist', { token: carol.accessToken, body: { platform: 'platform_c', platform_channel_id: 'c10' } });
    expect((await add(carol, 'platform_a', 'streamerone')).status).toBe(200);
  });

  test('concurrent adds at 499 store exactly one more channel', async () => {
    const dave = await devLogin(t, `dave-${randomUUID()}@example.test`);
    await t.app.db.knex('stats_watchlist').insert(Array.from({ length: 499 }, (_, i) => ({ user_id: dave.userId, platform: 'platform_c', platform_channel_id: `c${i}` })));
    const results = await Promise.all([add(dave, 'platform_a', 'streamerone'), add(dave, 'platform_a', 'streamertwo'), add(dave, 'platform_b', 'three')]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    expect((await list(dave)).body.data.items).toHaveLength(500);
  });
});
