/**
 * No silent gap across a bus outage: a throwaway `redis-server` of this file's own is killed while
 * events are emitted, and started again on the same port. Subscribers of events:{account_id} are
 * caught up from the stored events, so every subscriber ends with every event, in order, exactly
 * once; subscribers of a buffered family (chat), whose log lives in Redis, are told RESUME_GAP when
 * the bus is back. Three nodes on one PostgreSQL need DATABASE_URL; the single-node case (events
 * stored by another writer while the bus is down) runs on both storage modes.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { WsServerMessage } from '../../generated/ws';
import { services, startTestApp, systemKey, type TestApp } from '../helpers/app';
import { freePort, hasRedisServer, killRedis, startRedis } from '../helpers/redis-server';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { connect, type TestSocket } from '../helpers/ws';

const describeWithRedis = hasRedisServer ? describe : describe.skip;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Collects the events frames (and errors) a socket receives on one channel. */
function collector(socket: TestSocket, channel: string) {
  const ids: string[] = [];
  const errors: WsServerMessage[] = [];
  let stopped = false;
  void (async () => {
    while (!stopped) {
      const message = await socket.next(250).catch(() => null);
      if (!message) continue;
      if (message.type === 'event' && (message as { channel?: string }).channel === undefined) ids.push((message as { data: { id: string } }).data.id);
      else if (message.type === 'event' && (message as { channel?: string }).channel === channel) ids.push((message as { data: { id: string } }).data.id);
      else if (message.type === 'error') errors.push(message);
    }
  })();
  return {
    ids,
    errors,
    stop() {
      stopped = true;
    },
  };
}

async function subscribe(t: TestApp, token: string, channel: string, sockets: TestSocket[]): Promise<TestSocket> {
  const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${token}` } });
  sockets.push(s);
  expect((await s.next()).type).toBe('welcome');
  s.send({ type: 'subscribe', channel });
  expect(await s.next()).toEqual({ type: 'subscribed', channel });
  return s;
}

async function until(what: string, done: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describeWithRedis('a bus outage while events are emitted', () => {
  let port: number;
  let redis: ChildProcess | null = null;
  const nodes: TestApp[] = [];
  const sockets: TestSocket[] = [];
  const key = systemKey('outage-chat', ['chat:read']);

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
  });

  afterAll(async () => {
    for (const s of sockets) s.socket.terminate();
    for (const node of nodes.splice(0)) await node.stop().catch(() => undefined);
    await killRedis(redis);
  });

  const config = () => ({ redis_url: `redis://127.0.0.1:${port}`, rate_limits: { enabled: false }, auth: { system_keys: [key.config] } });

  (services.postgres ? test : test.skip)(
    'three nodes: 152 events emitted round the nodes across a 20 s Redis kill reach every subscriber on every node once, in order',
    async () => {
      const a = await startTestApp(config());
      nodes.push(a);
      const shared = { database_url: a.app.config.database_url, redis_prefix: a.app.config.redis_prefix };
      nodes.push(await startTestApp({ ...config(), ...shared }), await startTestApp({ ...config(), ...shared }));
      const owner: LoggedIn = await devLogin(a);
      const channel = `events:${owner.accountId}`;
      const collectors: ReturnType<typeof collector>[] = [];
      for (const node of nodes) for (let i = 0; i < 2; i += 1) collectors.push(collector(await subscribe(node, owner.accessToken, channel, sockets), channel));
      const chat = `chat:${owner.accountId}`;
      const chatSocket = await subscribe(nodes[1]!, key.key, chat, sockets);

      const emitted: string[] = [];
      const emit = async (n: number) => {
        const node = nodes[n % nodes.length]!;
        const res = await api(node, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { n } } });
        expect(res.status).toBe(201);
        emitted.push((res.body.data as { id: string }).id);
      };
      let n = 0;
      for (; n < 50; n += 1) await emit(n);
      await killRedis(redis);
      redis = null;
      // Redis stays down 20 s: longer than every timeout and heartbeat bound on the way.
      const downUntil = Date.now() + 20_000;
      for (; n < 102; n += 1) {
        await emit(n);
        await sleep(Math.max(0, (downUntil - Date.now()) / (102 - n)));
      }
      redis = await startRedis(port);
      // The nodes reconnect on their own; emits go on meanwhile.
      for (; n < 152; n += 1) {
        await emit(n);
        await sleep(20);
      }
      await until('every subscriber to hold 152 events', () => collectors.every((c) => c.ids.length >= 152), 30_000);
      await sleep(300);
      for (const c of collectors) {
        c.stop();
        expect(c.errors).toEqual([]);
        expect(c.ids).toEqual(emitted);
      }
      // The chat channel's log could not record the outage: its subscriber was told.
      const told = await chatSocket.nextMatching((m) => m.type === 'error', 10_000);
      expect(told).toMatchObject({ type: 'error', code: 'RESUME_GAP', channel: chat });
    },
    120_000,
  );

  test('one node: events another writer stores while the bus is down reach the subscriber from the stored events', async () => {
    if (!redis) redis = await startRedis(port);
    const t = await startTestApp(config());
    nodes.push(t);
    const owner = await devLogin(t);
    const channel = `events:${owner.accountId}`;
    const c = collector(await subscribe(t, owner.accessToken, channel, sockets), channel);
    const store = (n: number) =>
      t.app.db
        .knex('events')
        .insert({ id: randomUUID(), account_id: owner.accountId, type: 'platform_a:follower', platform: 'platform_a', raw: JSON.stringify({ n }), hidden: false })
        .returning('id')
        .then((rows: { id: string }[]) => rows[0]!.id);
    const first = (await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { n: 0 } } })).body.data as { id: string };
    await until('the first event', () => c.ids.length === 1, 5000);
    await killRedis(redis);
    redis = null;
    // Another node's writes: stored, never published here.
    const stored: string[] = [];
    for (let n = 1; n <= 5; n += 1) {
      stored.push(await store(n));
      await sleep(100);
    }
    await until('the stored events, while the bus is down', () => c.ids.length === 6, 10_000);
    redis = await startRedis(port);
    const last = (await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { n: 6 } } })).body.data as { id: string };
    await until('the last event', () => c.ids.length >= 7, 10_000);
    await sleep(300);
    c.stop();
    expect(c.errors).toEqual([]);
    expect(c.ids).toEqual([first.id, ...stored, last.id]);
  }, 60_000);
});
