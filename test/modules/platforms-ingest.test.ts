/**
 * Every stream event type of the catalogue (Part 2, "Event types") through its platform's real
 * transport, end to end: the fake platform sends frames built from the declared contracts
 * (spec/platforms/, test/helpers/fake-platform.ts `contractFrame`) over platform_a's socket (opened
 * with the channel grant's token), platform_b's live chat poller (with the channel grant's token)
 * and WebSub receiver, and platform_c's signed receiver; each type is seen delivered on
 * `events:{account_id}`, stored once although the platform sends it twice, and listed by
 * `GET /v1/events?types=…`. A stream start and end also send `channel:online` / `channel:offline`
 * on the events channel and the stream session on `history:{account_id}`. An extension installed
 * in the account with `events:read` receives every type too, on the same channel through its own
 * token. Unknown and malformed frames are counted, never stored, and the socket lives on.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { approvedDeveloper, installExtension, publishedExtension } from '../helpers/extensions';
import { contractFrame, contractMessages, startFakePlatform, type FakePlatform } from '../helpers/fake-platform';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';
import type { WsServerMessage } from '../../generated/ws';

const B_SECRET = 'platform-b-websub-secret';
const C_SECRET = 'platform-c-legacy-secret';
const TIPS_SECRET = 'tips-platform-secret';
const DISCORD_SECRET = 'discord-secret';

/** Part 2 "Event types": the catalogue and the stored extras, per platform (ban/unban flow through the chat path). */
const CATALOGUE = {
  platform_a: [
    'follower', 'subscribe', 'gift_sub', 'resub', 'cheer', 'raid', 'reward', 'hype_train', 'hype_train_end', 'poll', 'poll_end', 'prediction', 'prediction_lock', 'prediction_end',
    'goal', 'goal_end', 'ad_break', 'stream_online', 'stream_offline', 'stream_update',
    // stored extras
    'gift', 'gift_upgrade', 'prime_upgrade', 'pay_it_forward', 'bits_badge', 'poll_delete', 'raid_out', 'raid_done', 'unraid', 'first_message', 'watch_streak',
  ],
  platform_b: ['subscribe', 'member', 'superchat', 'supersticker', 'gift_membership', 'gift_membership_received', 'poll'],
  platform_c: ['follower', 'subscribe', 'gift', 'stream_online', 'stream_offline'],
  music_platform: ['track', 'play', 'pause', 'skip', 'volume', 'queue_add', 'device', 'playlist_add', 'playlist_remove', 'playlist_create', 'playlist_edit', 'playlist_delete'],
  tips_platform: ['tip'],
  discord: ['member_join', 'member_leave', 'boost'],
};

const opsEmail = `ops-${randomUUID()}@example.test`;
const opened = closeSocketsAfterEach();

let fake: FakePlatform;
let t: TestApp;
/** A published extension declaring `events:read`: what alerts and overlays built by developers listen with. */
let alerts: Record<string, unknown>;
beforeAll(async () => {
  fake = await startFakePlatform();
  t = await startTestApp({
    auth: { bootstrap_admins: [opsEmail] },
    webhooks: { require_signatures: true, platform_b_secret: B_SECRET, platform_c_secret: C_SECRET, tips_platform_secret: TIPS_SECRET, discord_secret: DISCORD_SECRET },
    platforms: { music_platform: { api_url: fake.apiUrl('music_platform'), poll_interval_ms: 100 } },
    chat: {
      platforms: {
        platform_a: { api_url: fake.apiUrl('platform_a'), socket_url: fake.socketUrl, reconnect_ms: 50 },
        platform_b: { api_url: fake.apiUrl('platform_b'), poll_interval_ms: 100 },
      },
    },
  });
  const ops = await devLogin(t, opsEmail);
  alerts = await publishedExtension(t, await approvedDeveloper(t, ops), ops, 'Alerts', ['events:read']);
});
afterAll(async () => {
  await t?.stop();
  await fake?.close();
});

/** The stored types each platform's contract declares. */
const declaredTypes = (platform: string) => contractMessages(platform).flatMap((m) => (m.ingest.kind === 'event' ? [m.ingest.type] : []));

async function subscribed(user: LoggedIn, channel: string): Promise<TestSocket> {
  const s = await connect(t.wsUrl, { headers: { authorization: `Bearer ${user.accessToken}` } });
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  s.send({ type: 'subscribe', channel });
  expect(await s.next()).toEqual({ type: 'subscribed', channel });
  return s;
}

/** The account's events channel as an extension installed with `events:read` hears it, through the install's own token. */
async function extensionSubscribed(user: LoggedIn): Promise<TestSocket> {
  const install = await installExtension(t, user, alerts, ['events:read']);
  const s = await connect(t.wsUrl, { headers: { authorization: `Bearer ${install.token}` } });
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  const channel = `events:${user.accountId}`;
  s.send({ type: 'subscribe', channel });
  expect(await s.next()).toEqual({ type: 'subscribed', channel });
  return s;
}

/** A channel connection with a stored grant, as the sign-in flow leaves it. */
async function grant(user: LoggedIn, platform: string, channel: string, token: string): Promise<void> {
  await t.app.modules.connections.storeAccountGrant({ accountId: user.accountId!, platform, type: 'channel', subject: channel, actorId: null, grant: { accessToken: token, refreshToken: null, expiresAt: null, scopes: [] } });
}

type EventData = { type: string; external_id?: string | null; raw?: Record<string, unknown> };

/** `event` frames' data until `done` says the collection is complete. */
async function collect(s: TestSocket, done: (seen: EventData[]) => boolean, timeoutMs = 30_000): Promise<EventData[]> {
  const seen: EventData[] = [];
  const deadline = Date.now() + timeoutMs;
  while (!done(seen)) {
    const message = (await s.nextMatching((m: WsServerMessage) => m.type === 'event', Math.max(1, deadline - Date.now()))) as { data: EventData };
    seen.push(message.data);
  }
  return seen;
}

const hasAll = (types: readonly string[]) => (seen: EventData[]) => types.every((type) => seen.some((e) => e.type === type));

/** The account's stored events of `types` (one GET /v1/events?types=…), by type. */
async function listed(user: LoggedIn, types: readonly string[]): Promise<Map<string, EventData[]>> {
  const res = await api(t, 'GET', '/events', { token: user.accessToken, query: { types: types.join(','), limit: '100' } });
  expect(res.status).toBe(200);
  const byType = new Map<string, EventData[]>();
  for (const row of res.body.data as EventData[]) byType.set(row.type, [...(byType.get(row.type) ?? []), row]);
  return byType;
}

async function historyFrames(s: TestSocket, count: number): Promise<{ event_type: string; data: Record<string, unknown> }[]> {
  const frames: { event_type: string; data: Record<string, unknown> }[] = [];
  while (frames.length < count) frames.push((await s.nextMatching((m) => m.type === 'event', 20_000)) as unknown as { event_type: string; data: Record<string, unknown> });
  return frames;
}

test('the contracts declare every catalogue type and stored extra of every platform', () => {
  for (const [platform, names] of Object.entries(CATALOGUE)) expect(declaredTypes(platform).sort()).toEqual(names.map((n) => `${platform}:${n}`).sort());
});

test('platform_a: every declared notification arrives over the socket opened with the channel token, stored once, listed and delivered', async () => {
  const owner = await devLogin(t);
  const channel = `chan-a-${randomUUID()}`;
  const token = `tok-a-${randomUUID()}`;
  const events = await subscribed(owner, `events:${owner.accountId}`);
  const extension = await extensionSubscribed(owner);
  const history = await subscribed(owner, `history:${owner.accountId}`);
  await grant(owner, 'platform_a', channel, token);
  const stream = ['notification_stream_online', 'notification_stream_update', 'notification_stream_offline'];
  const notes = contractMessages('platform_a').filter((m) => m.ingest.kind === 'event');
  const ordered = [...notes.filter((m) => !stream.includes(m.name)), ...stream.map((name) => notes.find((m) => m.name === name)!)];
  const frames = ordered.map((m) =>
    contractFrame('platform_a', m.name, {
      id: `${m.name}-${randomUUID()}`,
      // A plain gift (no community bundle): the bundling has its own tests.
      ...(m.name === 'notification_gift' ? { community_gift_id: undefined, total: undefined } : {}),
    }),
  );
  for (const frame of frames) await fake.push(channel, frame);
  const types = declaredTypes('platform_a');
  const seen = await collect(events, hasAll([...types, 'channel:online', 'channel:offline']));
  await collect(extension, hasAll(types));
  for (const [i, m] of ordered.entries()) {
    const type = (m.ingest as { type: string }).type;
    expect(seen.find((e) => e.type === type)).toMatchObject({ external_id: `platform_a:${String(frames[i]!.id)}`, raw: frames[i] });
  }
  expect(seen.find((e) => e.type === 'channel:online')).toMatchObject({ platform: 'platform_a', platform_channel_id: channel });
  // The socket was opened with the channel grant's token, in the upgrade's header only.
  expect(fake.socketAuthorizations(channel)[0]).toBe(`Bearer ${token}`);
  // The stream session: started by stream_online, updated by stream_update and by stream_offline.
  const sessions = await historyFrames(history, 3);
  expect(sessions.map((f) => f.event_type)).toEqual(['history:session_started', 'history:session_updated', 'history:session_updated']);
  expect(sessions[0]!.data).toMatchObject({ platform: 'platform_a', platform_channel_id: channel, started_at: '2026-11-28T09:00:00.000Z', ended_at: null });
  expect(sessions[2]!.data).toMatchObject({ id: sessions[0]!.data.id, ended_at: expect.any(String) });

  // The platform sends everything again (a replay after a reconnect): nothing is stored twice.
  for (const frame of frames) await fake.push(channel, frame);
  // Unknown and malformed frames are counted and dropped; the socket lives on.
  const before = t.app.modules.platforms.rejected();
  await fake.push(channel, { type: 'notification', id: `x-${randomUUID()}`, event: 'hype_party' });
  await fake.push(channel, { type: 'notification', id: `x-${randomUUID()}`, event: 'cheer', bits: 'many' });
  const last = contractFrame('platform_a', 'notification_follow', { id: `last-${randomUUID()}` });
  await fake.push(channel, last);
  await collect(events, (seen) => seen.some((e) => e.external_id === `platform_a:${String(last.id)}`));
  const after = t.app.modules.platforms.rejected();
  expect(after['platform_a:unknown']).toBe((before['platform_a:unknown'] ?? 0) + 1);
  expect(after['platform_a:malformed']).toBe((before['platform_a:malformed'] ?? 0) + 1);

  const stored = await listed(owner, types);
  for (const type of types) expect([type, stored.get(type)?.length ?? 0]).toEqual([type, type === 'platform_a:follower' ? 2 : 1]);
});

test('platform_b: every polled type (with the channel token) and WebSub subscribe arrive, stored once, listed and delivered', async () => {
  const owner = await devLogin(t);
  const channel = `UC-${randomUUID()}`;
  const token = `tok-b-${randomUUID()}`;
  const live = `live-${randomUUID()}`;
  const events = await subscribed(owner, `events:${owner.accountId}`);
  const extension = await extensionSubscribed(owner);
  const itemNames = contractMessages('platform_b').filter((m) => m.name !== 'websub_entry').map((m) => m.name);
  const items = itemNames.map((name) => contractFrame('platform_b', name, { id: `${name}-${randomUUID()}`, ...(name === 'text' ? { type: undefined, message: 'hello from b' } : {}) }));
  // The platform answers an item again on a later page (a replay): stored once.
  fake.liveChatItems.set(live, [...items, ...items]);
  fake.liveChats.set(`platform_b:${channel}`, live);
  await grant(owner, 'platform_b', channel, token);

  const video = `vid-${randomUUID()}`;
  const atom = `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns:yt="http://www.youtube.com/xml/schemas/2015" xmlns="http://www.w3.org/2005/Atom">
  <entry><yt:videoId>${video}</yt:videoId><yt:channelId>${channel}</yt:channelId><title>New video</title><published>2026-11-28T09:00:00+00:00</published><updated>2026-11-28T09:00:05+00:00</updated></entry>
</feed>`;
  for (let i = 0; i < 2; i += 1) {
    const res = await fetch(`${t.url}/v1/webhooks/platform_b`, { method: 'POST', headers: { 'content-type': 'application/atom+xml', 'x-hub-signature-256': `sha256=${createHmac('sha256', B_SECRET).update(atom).digest('hex')}` }, body: atom });
    expect(res.status).toBe(200);
  }
  const types = declaredTypes('platform_b');
  const seen = await collect(events, hasAll(types));
  await collect(extension, hasAll(types));
  expect(seen.find((e) => e.type === 'platform_b:subscribe')).toMatchObject({ external_id: `platform_b:video:${video}`, raw: { channel_id: channel, video_id: video } });
  for (const item of items.filter((i) => i.type !== undefined)) expect(seen.find((e) => e.external_id === `platform_b:${String(item.id)}`)).toMatchObject({ raw: item });
  // Wait for the poller to have read the replayed page too.
  const pages = () => fake.requests.filter((r) => r.platform === 'platform_b' && r.path === `/live-chats/${live}/messages`);
  for (let i = 0; i < 200 && !pages().some((r) => Number(r.query.page_token ?? 0) >= items.length * 2); i += 1) await new Promise((done) => setTimeout(done, 50));
  expect(pages().length).toBeGreaterThan(0);
  expect(new Set(pages().map((r) => r.authorization))).toEqual(new Set([`Bearer ${token}`]));

  const stored = await listed(owner, types);
  for (const type of types) expect([type, stored.get(type)?.length ?? 0]).toEqual([type, 1]);
  const chat = await api(t, 'GET', '/chat/history', { token: owner.accessToken, query: { platform: 'platform_b' } });
  expect((chat.body.data as { message: string }[]).filter((m) => m.message === 'hello from b')).toHaveLength(1);
});

test('platform_c: every mapped type arrives through the signed receiver, stored once, listed and delivered, with the channel notices and the session', async () => {
  const owner = await devLogin(t);
  const channel = String(Math.floor(Math.random() * 1e9));
  expect((await api(t, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_c`, { token: (await devLogin(t, opsEmail)).accessToken, body: { platform_channel_id: channel } })).status).toBe(200);
  const events = await subscribed(owner, `events:${owner.accountId}`);
  const extension = await extensionSubscribed(owner);
  const history = await subscribed(owner, `history:${owner.accountId}`);
  const order = ['subscription_new', 'subscription_gifts', 'followed', 'livestream_online', 'livestream_offline'];
  const bodies = order.map((name) => ({ name, id: randomUUID(), body: contractFrame('platform_c', name, { broadcaster: { user_id: Number(channel), username: 'streamer' } }) }));
  const eventType = (name: string) => String(contractMessages('platform_c').find((m) => m.name === name)!.match.event_type);
  for (let i = 0; i < 2; i += 1) {
    for (const { name, id, body } of bodies) {
      const text = JSON.stringify(body);
      const res = await fetch(`${t.url}/v1/webhooks/platform_c`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'platform-c-event-type': eventType(name), 'platform-c-event-message-id': id, 'platform-c-signature': createHmac('sha256', C_SECRET).update(text).digest('hex') },
        body: text,
      });
      expect(res.status).toBe(200);
    }
  }
  const types = declaredTypes('platform_c');
  const seen = await collect(events, hasAll([...types, 'channel:online', 'channel:offline']));
  await collect(extension, hasAll(types));
  for (const { name, id, body } of bodies) {
    const type = (contractMessages('platform_c').find((m) => m.name === name)!.ingest as { type: string }).type;
    expect(seen.find((e) => e.type === type)).toMatchObject({ external_id: `platform_c:${id}`, raw: body });
  }
  expect(seen.filter((e) => e.type === 'channel:online')).toHaveLength(1);
  const sessions = await historyFrames(history, 2);
  expect(sessions.map((f) => [f.event_type, f.data.platform])).toEqual([
    ['history:session_started', 'platform_c'],
    ['history:session_updated', 'platform_c'],
  ]);
  const stored = await listed(owner, types);
  for (const type of types) expect([type, stored.get(type)?.length ?? 0]).toEqual([type, 1]);
});

test('without feature:stream_history a stream start still sends channel:online but opens no session', async () => {
  const ops = await devLogin(t, opsEmail);
  const owner = await devLogin(t);
  const plan = await api(t, 'POST', '/admin/plans', {
    token: ops.accessToken,
    body: { slug: `nohist-${randomUUID().slice(0, 8)}`, name: 'No history', price_monthly: 0, price_yearly: 0, is_public: false, sort_order: 9, max_overlays: 5, max_storage_bytes: 1_000_000, max_upload_size_bytes: 1_000_000, max_integrations: 5, chat_retention_days: 0, max_setting_presets: 0, max_sounds: 1, max_sound_file_size: 1000, max_sound_storage_bytes: 1000 },
  });
  expect([plan.status, plan.body.error]).toEqual([201, undefined]);
  const planId = (plan.body.data as { id: string }).id;
  expect((await api(t, 'PUT', `/admin/plans/${planId}/features`, { token: ops.accessToken, body: { features: [{ feature_key: 'feature:events', enabled: true }, { feature_key: 'feature:stream_history', enabled: false }] } })).status).toBe(200);
  expect((await api(t, 'PUT', `/admin/accounts/${owner.accountId}/plan`, { token: ops.accessToken, body: { plan_id: planId } })).status).toBe(200);
  const channel = `chan-a-${randomUUID()}`;
  const events = await subscribed(owner, `events:${owner.accountId}`);
  await grant(owner, 'platform_a', channel, `tok-${randomUUID()}`);
  await fake.push(channel, contractFrame('platform_a', 'notification_stream_online', { id: `on-${randomUUID()}` }));
  const seen = await collect(events, hasAll(['platform_a:stream_online', 'channel:online']));
  expect(seen.map((e) => e.type)).toEqual(['platform_a:stream_online', 'channel:online']);
  const [{ n }] = (await t.app.db.knex('platform_stream_sessions').where({ account_id: owner.accountId }).count({ n: '*' })) as { n: string | number }[];
  expect(Number(n)).toBe(0);
});

test('music_platform: every activity type arrives through the leased poller with the channel token, stored once, listed and delivered; playback also as now-playing', async () => {
  const owner = await devLogin(t);
  const token = `tok-m-${randomUUID()}`;
  const events = await subscribed(owner, `events:${owner.accountId}`);
  const extension = await extensionSubscribed(owner);
  const music = await subscribed(owner, `music_platform:${owner.accountId}`);
  const items = contractMessages('music_platform').map((m) => contractFrame('music_platform', m.name, { id: `${m.name}-${randomUUID()}` }));
  // The feed answers every item twice (a replay): stored once.
  fake.musicActivity.set(token, [...items, ...items]);
  await grant(owner, 'music_platform', `music-user-${randomUUID()}`, token);
  const types = declaredTypes('music_platform');
  const seen = await collect(events, hasAll(types));
  await collect(extension, hasAll(types));
  for (const item of items) expect(seen.find((e) => e.external_id === `music_platform:${String(item.id)}`)).toMatchObject({ type: `music_platform:${String(item.type)}`, raw: item });
  const playback = contractMessages('music_platform').filter((m) => m.ingest.kind === 'event' && (m.ingest as { publish?: string }).publish === 'now-playing').map((m) => `music_platform:${m.name}`);
  expect(playback).toHaveLength(6);
  const nowPlaying: string[] = [];
  while (nowPlaying.length < playback.length) {
    const frame = (await music.nextMatching((m) => m.type === 'music_platform:now-playing', 20_000)) as unknown as { data: { type: string; account_id: string } };
    expect(frame.data.account_id).toBe(owner.accountId);
    nowPlaying.push(frame.data.type);
  }
  expect(nowPlaying.sort()).toEqual([...playback].sort());
  const feed = () => fake.requests.filter((r) => r.platform === 'music_platform' && r.path === '/me/activity' && r.authorization === `Bearer ${token}`);
  for (let i = 0; i < 200 && !feed().some((r) => Number(r.query.cursor ?? 0) >= items.length * 2); i += 1) await new Promise((done) => setTimeout(done, 50));
  const stored = await listed(owner, types);
  for (const type of types) expect([type, stored.get(type)?.length ?? 0]).toEqual([type, 1]);
});

describe.each([
  ['tips_platform', TIPS_SECRET, 'channel_id'],
  ['discord', DISCORD_SECRET, 'guild_id'],
] as const)('%s: the signed receiver', (platform, secret, key) => {
  const send = (body: unknown, signature?: string) => {
    const text = JSON.stringify(body);
    return fetch(`${t.url}/v1/webhooks/${platform}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-signature-256': signature ?? `sha256=${createHmac('sha256', secret).update(text).digest('hex')}` }, body: text });
  };

  test('every declared type arrives, stored once although delivered twice, listed and delivered', async () => {
    const owner = await devLogin(t);
    const connection = `${platform}-${randomUUID()}`;
    await grant(owner, platform, connection, `tok-${randomUUID()}`);
    const events = await subscribed(owner, `events:${owner.accountId}`);
    const extension = await extensionSubscribed(owner);
    const bodies = contractMessages(platform).map((m) => contractFrame(platform, m.name, { id: `${m.name}-${randomUUID()}`, [key]: connection }));
    for (let i = 0; i < 2; i += 1) for (const body of bodies) expect((await send(body)).status).toBe(200);
    const types = declaredTypes(platform);
    const seen = await collect(events, hasAll(types));
    await collect(extension, hasAll(types));
    for (const body of bodies) expect(seen.find((e) => e.external_id === `${platform}:${String(body.id)}`)).toMatchObject({ type: `${platform}:${String(body.type)}`, raw: body });
    const stored = await listed(owner, types);
    for (const type of types) expect([type, stored.get(type)?.length ?? 0]).toEqual([type, 1]);
  });

  test('a forged or unsigned body is 401, one that is not a JSON object 400, an unknown type or connection 200 with nothing stored', async () => {
    const body = contractFrame(platform, contractMessages(platform)[0]!.name, { id: `x-${randomUUID()}`, [key]: 'nobody' });
    expect((await send(body, `sha256=${createHmac('sha256', 'wrong').update(JSON.stringify(body)).digest('hex')}`)).status).toBe(401);
    const unsigned = await fetch(`${t.url}/v1/webhooks/${platform}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect([unsigned.status, await unsigned.json()]).toEqual([401, { error: 'UNAUTHORIZED', message: 'Missing webhook signature' }]);
    expect((await send([1, 2])).status).toBe(400);
    const before = t.app.modules.platforms.rejected()[`${platform}:unknown`] ?? 0;
    expect((await send({ ...body, type: 'something_else' })).status).toBe(200);
    expect(t.app.modules.platforms.rejected()[`${platform}:unknown`]).toBe(before + 1);
    expect((await send(body)).status).toBe(200);
  });
});

test('platform_a: every (re)open of the socket asks for the channel grant token again, so a refreshed or replaced token is the one sent', async () => {
  const owner = await devLogin(t);
  const channel = `chan-a-${randomUUID()}`;
  await grant(owner, 'platform_a', channel, 'first-token');
  const first = await fake.socketFor(channel);
  await t.app.modules.connections.replaceAccountGrant(owner.accountId!, 'platform_a', 'channel', { accessToken: 'second-token', refreshToken: null, expiresAt: null, scopes: [] });
  first.terminate();
  for (let i = 0; i < 200 && fake.socketAuthorizations(channel).length < 2; i += 1) await new Promise((done) => setTimeout(done, 25));
  expect(fake.socketAuthorizations(channel)).toEqual(['Bearer first-token', 'Bearer second-token']);
});
