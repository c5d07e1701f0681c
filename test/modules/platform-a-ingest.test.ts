/**
 * platform_a ingest of stream events over a real platform socket (the fake
 * platform's) and a real WebSocket subscriber: follow, subscription, gift, cheer and raid
 * notifications are stored and broadcast as events through the path of POST /v1/events/emit,
 * once per platform message id (a replayed frame stores and broadcasts nothing); ban and unban
 * reach the events channel as `platform_a:ban` / `platform_a:unban` but are never stored.
 */
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { startFakePlatform, type FakePlatform } from '../helpers/fake-platform';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const opsEmail = `ops-${randomUUID()}@example.test`;
const opened = closeSocketsAfterEach();

let fake: FakePlatform;
let t: TestApp;
let ops: LoggedIn;
beforeAll(async () => {
  fake = await startFakePlatform();
  t = await startTestApp({
    auth: { bootstrap_admins: [opsEmail] },
    chat: { platforms: { platform_a: { api_url: fake.apiUrl('platform_a'), socket_url: fake.socketUrl, reconnect_ms: 50 } } },
  });
  ops = await devLogin(t, opsEmail);
});
afterAll(async () => {
  await t?.stop();
  await fake?.close();
});

async function connectChannel(user: LoggedIn): Promise<string> {
  const channel = `chan-${randomUUID()}`;
  const res = await api(t, 'PUT', `/admin/accounts/${user.accountId}/connections/platform_a`, { token: ops.accessToken, body: { platform_channel_id: channel } });
  expect(res.status).toBe(200);
  return channel;
}

async function subscribed(user: LoggedIn, channel: string): Promise<TestSocket> {
  const s = await connect(t.wsUrl, { headers: { authorization: `Bearer ${user.accessToken}` } });
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  s.send({ type: 'subscribe', channel });
  expect(await s.next()).toEqual({ type: 'subscribed', channel });
  return s;
}

/** The account's stored events, oldest first. */
async function stored(user: LoggedIn): Promise<{ type: string; external_id: string | null; raw: Record<string, unknown> }[]> {
  const res = await api(t, 'GET', '/events', { token: user.accessToken, query: { limit: '100' } });
  expect(res.status).toBe(200);
  return [...(res.body.data as { type: string; external_id: string | null; raw: Record<string, unknown>; created_at: string }[])].reverse();
}

/**
 * A last follow frame on the same socket: a channel's frames are handled in order, so once its
 * broadcast arrives every earlier frame was handled. It must be the next event: nothing between.
 */
async function sentinel(channel: string, s: TestSocket): Promise<void> {
  const id = `sentinel-${randomUUID()}`;
  await fake.push(channel, { type: 'notification', id, event: 'follow', user_id: 'last', login: 'last' });
  expect(((await s.nextMatching((m) => m.type === 'event', 10_000)) as { data: unknown }).data).toMatchObject({ type: 'platform_a:follower', external_id: `platform_a:${id}` });
}

test('follow, subscription, gift, cheer and raid notifications are stored and broadcast once per platform message id', async () => {
  const owner = await devLogin(t);
  const s = await subscribed(owner, `events:${owner.accountId}`);
  const channel = await connectChannel(owner);
  const frames = [
    { type: 'notification', id: 'n-1', event: 'follow', user_id: 'u1', login: 'alice' },
    { type: 'notification', id: 'n-2', event: 'subscription', user_id: 'u2', login: 'bob', tier: '1000' },
    { type: 'notification', id: 'n-3', event: 'gift', user_id: 'u3', login: 'carol', recipient_user_id: 'r1', recipient_user_name: 'rita', tier: '1000' },
    { type: 'notification', id: 'n-4', event: 'cheer', user_id: 'u4', login: 'dave', bits: 100 },
    { type: 'notification', id: 'n-5', event: 'raid', from_channel_id: 'c9', from_login: 'erin', viewers: 42 },
  ];
  const expected = ['platform_a:follower', 'platform_a:subscribe', 'platform_a:gift', 'platform_a:cheer', 'platform_a:raid'];
  for (const [i, frame] of frames.entries()) {
    await fake.push(channel, frame);
    const message = (await s.nextMatching((m) => m.type === 'event', 10_000)) as { data: { type: string; platform: string; external_id: string; raw: unknown } };
    expect(message.data).toMatchObject({ type: expected[i], platform: 'platform_a', external_id: `platform_a:${frame.id}`, raw: frame });
  }
  // The platform replays frames (a reconnect, a handover): nothing is stored or broadcast twice.
  for (const frame of frames) await fake.push(channel, frame);
  await sentinel(channel, s);
  const rows = (await stored(owner)).slice(0, -1);
  expect(rows.map((r) => [r.type, r.external_id])).toEqual(expected.map((type, i) => [type, `platform_a:${frames[i]!.id}`]));
  expect(rows[3]!.raw).toEqual(frames[3]);
});

test('an unknown notification or one without an id is ignored', async () => {
  const owner = await devLogin(t);
  const s = await subscribed(owner, `events:${owner.accountId}`);
  const channel = await connectChannel(owner);
  await fake.push(channel, { type: 'notification', id: 'x-1', event: 'hype_party', user_id: 'u1' });
  await fake.push(channel, { type: 'notification', event: 'follow', user_id: 'u1' });
  await sentinel(channel, s);
  expect((await stored(owner)).map((r) => r.raw.user_id)).toEqual(['last']);
});

test('ban and unban are broadcast as platform_a:ban / platform_a:unban, never stored as events; the chat path logs them once', async () => {
  const owner = await devLogin(t);
  const events = await subscribed(owner, `events:${owner.accountId}`);
  const channel = await connectChannel(owner);
  const ban = { type: 'moderation', id: 'act-1', action: 'ban', target_user_id: 'troll-1', target_login: 'troll', moderator_login: 'mod' };
  await fake.push(channel, ban);
  expect(((await events.nextMatching((m) => m.type === 'event', 10_000)) as { data: unknown }).data).toMatchObject({ type: 'platform_a:ban', platform: 'platform_a', raw: { username: 'troll', action: 'ban', target_user_id: 'troll-1' } });
  await fake.push(channel, { type: 'moderation', id: 'act-2', action: 'unban', target_user_id: 'troll-1', target_login: 'troll' });
  expect(((await events.nextMatching((m) => m.type === 'event', 10_000)) as { data: unknown }).data).toMatchObject({ type: 'platform_a:unban', platform: 'platform_a' });
  // A replayed ban: the moderation log already has it, so no second broadcast.
  await fake.push(channel, ban);
  // A timeout is not a ban: chat path only.
  await fake.push(channel, { type: 'moderation', id: 'act-3', action: 'timeout', target_user_id: 'troll-1', duration_secs: 10 });
  await sentinel(channel, events);
  expect((await stored(owner)).map((r) => r.type)).toEqual(['platform_a:follower']);
  const log = await t.app.db.knex('chat_moderation_log').where({ account_id: owner.accountId }).orderBy('created_at').select('action');
  expect(log.map((r: { action: string }) => r.action).sort()).toEqual(['ban', 'timeout', 'unban']);
});
