/**
 * Resumable channels (spec/ws-protocol/, "Resume"): relayed frames carry a cursor; a
 * subscribe with `since` replays what the socket missed (the events table for events:{id}, the
 * per-channel buffer for the other relayed families: Redis Streams with REDIS_URL, memory
 * otherwise), then goes live with no duplicate and no gap; a since that cannot be served is
 * RESUME_GAP and the channel stays live. Over real connections, across a reconnect, and across
 * two nodes on one Redis and PostgreSQL.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createMemoryBus, createRedisBus } from '../../src/infra/bus';
import { createLogger } from '../../src/infra/logger';
import { compareCursors, createMemoryChannelLog, createRedisChannelLog, unframe, type ChannelLog, type ResumeLimits } from '../../src/realtime/resume';
import type { WsServerMessage } from '../../generated/ws';
import { wsLimits } from '../../generated/ws';
import { services, startTestApp, systemKey, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const small: ResumeLimits = { bufferFrames: 3, bufferTtlMs: 60_000, eventsWindowMs: 60_000, maxFrames: 10 };
const cursorOf = (m: WsServerMessage) => (m as { cursor?: string }).cursor!;
const quiet = createLogger({ level: 'silent', service: 'test', env: 'test', version: 'test' });

/** Publishes five messages through `log`, collecting the framed bus messages; checks the replay rules. */
async function exerciseLog(log: ChannelLog, heard: string[], channel: string): Promise<void> {
  for (let n = 1; n <= 5; n += 1) expect(await log.publish(channel, JSON.stringify({ n }))).toBe(true);
  for (let i = 0; i < 100 && heard.length < 5; i += 1) await new Promise((r) => setTimeout(r, 20));
  const frames = heard.map(unframe);
  expect(frames.map((f) => f.message)).toEqual([1, 2, 3, 4, 5].map((n) => JSON.stringify({ n })));
  const cursors = frames.map((f) => f.cursor!);
  for (let i = 1; i < 5; i += 1) expect(compareCursors(cursors[i - 1]!, cursors[i]!)).toBeLessThan(0);
  // Three kept (3, 4, 5): after 2 is whole, after 1 is not (2 was dropped).
  expect(await log.after(channel, cursors[1]!)).toEqual({ frames: [2, 3, 4].map((i) => ({ cursor: cursors[i], message: JSON.stringify({ n: i + 1 }) })) });
  expect(await log.after(channel, cursors[0]!)).toEqual({ gap: true });
  expect(await log.after(channel, cursors[4]!)).toEqual({ frames: [] });
  for (const bad of ['nope', '', 'm:zz:1', 's:1-0', 'e:1:00000000-0000-0000-0000-000000000000']) expect(await log.after(channel, bad)).toEqual({ gap: true });
  // A cursor from the future, or of a channel that never had a frame, cannot be vouched for.
  expect(await log.after(`${channel}x`, cursors[4]!)).toEqual({ gap: true });
}

describe('the channel log', () => {
  test('memory: bounded, ordered, gaps detected', async () => {
    const bus = createMemoryBus();
    const heard: string[] = [];
    await bus.subscribe('chat:a', (_c, m) => heard.push(m));
    const log = createMemoryChannelLog(bus, small);
    await exerciseLog(log, heard, 'chat:a');
    // Another process's cursor (memory mode after a restart) is a gap.
    expect(await createMemoryChannelLog(bus, small).after('chat:a', unframe(heard[4]!).cursor!)).toEqual({ gap: true });
    await log.close();
    await bus.close();
  });

  (services.redis ? test : test.skip)('Redis Streams: bounded, ordered, gaps detected, shared by the nodes', async () => {
    const prefix = `test:${randomBytes(6).toString('hex')}:`;
    const bus = createRedisBus(process.env.REDIS_URL!, prefix, { log: quiet });
    const heard: string[] = [];
    await bus.subscribe('chat:a', (_c, m) => heard.push(m));
    const nodeA = createRedisChannelLog(process.env.REDIS_URL!, prefix, quiet, small);
    const nodeB = createRedisChannelLog(process.env.REDIS_URL!, prefix, quiet, small);
    try {
      await exerciseLog(nodeA, heard, 'chat:a');
      const cursors = heard.map((h) => unframe(h).cursor!);
      expect(await nodeB.after('chat:a', cursors[2]!)).toEqual({ frames: [3, 4].map((i) => ({ cursor: cursors[i], message: JSON.stringify({ n: i + 1 }) })) });
    } finally {
      await Promise.all([nodeA.close(), nodeB.close(), bus.close()]);
    }
  });
});

async function open(t: Pick<TestApp, 'wsUrl'>, bearer: string, opened: TestSocket[]): Promise<TestSocket> {
  const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${bearer}` } });
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  return s;
}

/** Proves nothing else is queued on the socket: the next frame is the pong of a ping sent now. */
async function nothingMore(s: TestSocket): Promise<void> {
  s.send({ type: 'ping' });
  expect(await s.next()).toEqual({ type: 'pong' });
}

describe('resume over real connections', () => {
  const key = systemKey('resume', ['chat:read', 'events:read']);
  const t = useTestApp({ auth: { system_keys: [key.config] }, rate_limits: { enabled: false } });
  const opened = closeSocketsAfterEach();
  const chat = (n: number) => ({ id: `m${n}`, username: 'viewer', message: `hi ${n}` });

  test('a buffered channel: what was sent while away is replayed after subscribed, then live, with no duplicate and no gap', async () => {
    const channel = `chat:${randomUUID()}`;
    const first = await open(t, key.key, opened);
    first.send({ type: 'subscribe', channel });
    expect(await first.next()).toEqual({ type: 'subscribed', channel });
    for (const n of [1, 2]) await t.app.bus.publish(channel, JSON.stringify(chat(n)));
    expect((await first.next()).type).toBe('chat:message');
    const seen = await first.next();
    expect(seen).toEqual({ type: 'chat:message', data: chat(2), cursor: expect.any(String) });
    first.close();
    await first.closed;

    for (const n of [3, 4]) await t.app.bus.publish(channel, JSON.stringify(chat(n)));
    const again = await open(t, key.key, opened);
    again.send({ type: 'subscribe', channel, since: cursorOf(seen) });
    expect(await again.next()).toEqual({ type: 'subscribed', channel });
    const three = await again.next();
    const four = await again.next();
    expect([three, four]).toEqual([3, 4].map((n) => ({ type: 'chat:message', data: chat(n), cursor: expect.any(String) })));
    expect(compareCursors(cursorOf(seen), cursorOf(three))).toBeLessThan(0);
    expect(compareCursors(cursorOf(three), cursorOf(four))).toBeLessThan(0);
    await t.app.bus.publish(channel, JSON.stringify(chat(5)));
    expect(await again.next()).toEqual({ type: 'chat:message', data: chat(5), cursor: expect.any(String) });
    await nothingMore(again);
  });

  test('events: stored events missed while away are replayed from the events table; never-stored test events are live only', async () => {
    const owner = await devLogin(t);
    const channel = `events:${owner.accountId}`;
    const emit = async (n: number) => {
      const res = await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { n } } });
      expect(res.status).toBe(201);
      return (res.body.data as { event: unknown }).event;
    };
    const first = await open(t, owner.accessToken, opened);
    first.send({ type: 'subscribe', channel });
    expect(await first.next()).toEqual({ type: 'subscribed', channel });
    const one = await emit(1);
    const seen = await first.next();
    expect(seen).toEqual({ type: 'event', kind: 'event', data: one, cursor: expect.any(String) });
    first.close();
    await first.closed;

    const two = await emit(2);
    expect((await api(t, 'POST', '/events/test', { token: owner.accessToken, body: {} })).status).toBeLessThan(300);
    const three = await emit(3);
    const again = await open(t, owner.accessToken, opened);
    again.send({ type: 'subscribe', channel, since: cursorOf(seen) });
    expect(await again.next()).toEqual({ type: 'subscribed', channel });
    expect(await again.next()).toEqual({ type: 'event', kind: 'event', data: two, cursor: expect.any(String) });
    const replayedThree = await again.next();
    expect(replayedThree).toEqual({ type: 'event', kind: 'event', data: three, cursor: expect.any(String) });
    const four = await emit(4);
    const live = await again.next();
    expect(live).toEqual({ type: 'event', kind: 'event', data: four, cursor: expect.any(String) });
    expect(compareCursors(cursorOf(replayedThree), cursorOf(live))).toBeLessThan(0);
    await nothingMore(again);
  });

  test('RESUME_GAP: a malformed, foreign or too old cursor gets an error after subscribed, and the channel stays live', async () => {
    const owner = await devLogin(t);
    const s = await open(t, owner.accessToken, opened);
    const events = `events:${owner.accountId}`;
    const old = `e:${Date.now() - wsLimits.resume_events_window_ms - 60_000}:${randomUUID()}`;
    for (const since of ['not-a-cursor', old, 's:1-0']) {
      s.send({ type: 'subscribe', channel: events, since });
      expect(await s.next()).toEqual({ type: 'subscribed', channel: events });
      expect(await s.next()).toEqual({ type: 'error', code: 'RESUME_GAP', message: `Cannot resume ${events} after the given cursor; reload its state`, channel: events });
      s.send({ type: 'unsubscribe', channel: events });
      expect(await s.next()).toEqual({ type: 'unsubscribed', channel: events });
    }
    s.send({ type: 'subscribe', channel: events, since: 'x'.repeat(129) });
    expect(await s.next()).toMatchObject({ type: 'error', code: 'INVALID_FORMAT' });
    s.send({ type: 'subscribe', channel: events, since: old });
    expect(await s.next()).toEqual({ type: 'subscribed', channel: events });
    expect(await s.next()).toMatchObject({ type: 'error', code: 'RESUME_GAP', channel: events });
    const res = await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: {} } });
    expect(await s.next()).toEqual({ type: 'event', kind: 'event', data: (res.body.data as { event: unknown }).event, cursor: expect.any(String) });
  });

  test('a since older than the bounded buffer is RESUME_GAP', async () => {
    const channel = `chat:${randomUUID()}`;
    const s = await open(t, key.key, opened);
    s.send({ type: 'subscribe', channel });
    expect(await s.next()).toEqual({ type: 'subscribed', channel });
    await t.app.bus.publish(channel, JSON.stringify(chat(0)));
    const oldest = cursorOf(await s.next());
    s.send({ type: 'unsubscribe', channel });
    expect(await s.next()).toEqual({ type: 'unsubscribed', channel });
    // One more than the buffer holds after the oldest: the frame right after it is gone too.
    for (let n = 1; n <= wsLimits.resume_buffer_frames + 1; n += 1) await t.app.bus.publish(channel, JSON.stringify(chat(n)));
    s.send({ type: 'subscribe', channel, since: oldest });
    expect(await s.next()).toEqual({ type: 'subscribed', channel });
    expect(await s.next()).toMatchObject({ type: 'error', code: 'RESUME_GAP', channel });
    await nothingMore(s);
  });
});

describe('resume across two nodes on one Redis and PostgreSQL', () => {
  const shared = services.postgres && services.redis;
  const key = systemKey('resume2', ['chat:read']);
  const t = useTestApp({ auth: { system_keys: [key.config] }, rate_limits: { enabled: false } });
  const opened = closeSocketsAfterEach();

  (shared ? test : test.skip)('a client that moves from node A to node B resumes the events channel and a buffered channel there', async () => {
    const b = await startTestApp({ database_url: t.app.config.database_url, redis_prefix: t.app.config.redis_prefix, auth: { system_keys: [key.config] }, rate_limits: { enabled: false } });
    try {
      const owner = await devLogin(t);
      const events = `events:${owner.accountId}`;
      const chat = `chat:${owner.accountId}`;
      const emit = async (on: TestApp, n: number) => {
        const res = await api(on, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { n } } });
        expect(res.status).toBe(201);
        return (res.body.data as { event: unknown }).event;
      };
      const onA = await open(t, owner.accessToken, opened);
      const chatOnA = await open(t, key.key, opened);
      onA.send({ type: 'subscribe', channel: events });
      expect(await onA.next()).toEqual({ type: 'subscribed', channel: events });
      chatOnA.send({ type: 'subscribe', channel: chat });
      expect(await chatOnA.next()).toEqual({ type: 'subscribed', channel: chat });
      await emit(t, 1);
      const lastEvent = cursorOf(await onA.next());
      await t.app.bus.publish(chat, JSON.stringify({ id: 'c1', message: 'one' }));
      const lastChat = cursorOf(await chatOnA.next());
      onA.close();
      chatOnA.close();

      // While away: one event stored through node B, one chat message published on node B's bus.
      const two = await emit(b, 2);
      await b.app.bus.publish(chat, JSON.stringify({ id: 'c2', message: 'two' }));

      const onB = await open(b, owner.accessToken, opened);
      onB.send({ type: 'subscribe', channel: events, since: lastEvent });
      expect(await onB.next()).toEqual({ type: 'subscribed', channel: events });
      expect(await onB.next()).toEqual({ type: 'event', kind: 'event', data: two, cursor: expect.any(String) });
      const chatOnB = await open(b, key.key, opened);
      chatOnB.send({ type: 'subscribe', channel: chat, since: lastChat });
      expect(await chatOnB.next()).toEqual({ type: 'subscribed', channel: chat });
      expect(await chatOnB.next()).toEqual({ type: 'chat:message', data: { id: 'c2', message: 'two' }, cursor: expect.any(String) });
      // Live again, from either node's publishers, in the stream's one order.
      const three = await emit(t, 3);
      expect(await onB.next()).toEqual({ type: 'event', kind: 'event', data: three, cursor: expect.any(String) });
      await t.app.bus.publish(chat, JSON.stringify({ id: 'c3', message: 'three' }));
      expect(await chatOnB.next()).toEqual({ type: 'chat:message', data: { id: 'c3', message: 'three' }, cursor: expect.any(String) });
      await nothingMore(onB);
      await nothingMore(chatOnB);
    } finally {
      for (const s of opened.splice(0)) s.socket.terminate();
      await b.stop();
    }
  });
});
