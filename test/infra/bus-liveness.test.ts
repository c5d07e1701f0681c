/**
 * The bus subscriber's liveness probe (Part 2, "WebSocket" relay): a subscriber connection that
 * dies silently (a half-open TCP connection: no error, no message) is PINGed after its silence
 * window, counted dead when the PING goes unanswered, dropped and reconnected, and every
 * subscription comes back. The silent death is made with a TCP relay of this file's own between
 * the bus and Redis that stops forwarding without closing anything. A hung Redis (commands time
 * out, then it answers again) is made by the same relay holding bytes back and letting them go.
 * Needs REDIS_URL.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { createRedisBus, type Bus } from '../../src/infra/bus';
import { createRedisLink, RedisUnavailableError } from '../../src/infra/cache';
import { waitUntil } from '../helpers/wait';

const redisUrl = process.env.REDIS_URL;
const describeWithRedis = redisUrl ? describe : describe.skip;

/** A TCP relay to Redis; `blackhole()` keeps every open connection open but forwards nothing on them. */
async function startRelay(target: URL) {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  let blackholed = new WeakSet<net.Socket>();
  /** Bytes held back while `hold()` is on, per destination socket, in order. */
  let held: Map<net.Socket, Buffer[]> | null = null;
  const server = net.createServer((client) => {
    connections += 1;
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from);
      from.on('data', (chunk: Buffer) => {
        if (blackholed.has(client)) return;
        if (held) held.set(to, [...(held.get(to) ?? []), chunk]);
        else to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    /** Every connection open now stops carrying bytes, in both directions; new ones work. */
    blackhole() {
      for (const s of sockets) blackholed.add(s);
    },
    /** Every connection stops carrying bytes but keeps them, in order, until `release()`. */
    hold() {
      held = new Map();
    },
    release() {
      const pending = held;
      held = null;
      for (const [to, chunks] of pending ?? []) for (const chunk of chunks) to.write(chunk);
    },
    async close() {
      blackholed = new WeakSet();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describeWithRedis('bus subscriber liveness', () => {
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let bus: Bus;
  let publisher: Bus;
  afterEach(async () => {
    await bus?.close();
    await publisher?.close();
    await relay?.close();
  });

  test('a silently dead subscriber connection is PINGed, dropped and reconnected with its subscriptions', async () => {
    const prefix = `liveness-${randomUUID()}:`;
    relay = await startRelay(new URL(redisUrl!));
    // The subscribing bus goes through the relay; the publisher talks to Redis directly.
    bus = createRedisBus(relay.url, prefix, { probe: { silenceMs: 300, timeoutMs: 300 } });
    publisher = createRedisBus(redisUrl!, prefix);
    const received: string[] = [];
    await bus.subscribe('events:a', (_channel, message) => received.push(message));
    await publisher.publish('events:a', 'before');
    await waitUntil(() => received.includes('before'), 'the first message', 5000);
    const before = relay.connections;

    // Quiet but alive: PINGs are answered, nothing reconnects.
    await new Promise((r) => setTimeout(r, 1000));
    expect(relay.connections).toBe(before);

    // Silent death: nothing arrives any more, and no error says so.
    relay.blackhole();
    await publisher.publish('events:a', 'lost');
    // The probe finds it dead and the bus reconnects through a new connection, resubscribed.
    await waitUntil(() => relay.connections > before, 'a reconnection', 10_000);
    const deadline = Date.now() + 10_000;
    while (!received.includes('after')) {
      if (Date.now() > deadline) throw new Error('the subscription did not come back');
      await publisher.publish('events:a', 'after');
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(received).not.toContain('lost');
  });

  test('subscriptions asked for while Redis hangs go live once it answers, with nothing else asked of it', async () => {
    const prefix = `paused-${randomUUID()}:`;
    relay = await startRelay(new URL(redisUrl!));
    bus = createRedisBus(relay.url, prefix);
    publisher = createRedisBus(redisUrl!, prefix);
    await bus.subscribe('events:warm', () => undefined);

    // Redis stops answering: two SUBSCRIBEs time out in a row (which would pause a cache link),
    // then a third is asked for. Each subscribe still resolves.
    relay.hold();
    await Promise.all([bus.subscribe('events:a', () => undefined), bus.subscribe('events:b', () => undefined)]);
    const received: string[] = [];
    await bus.subscribe('events:c', (_channel, message) => received.push(message));
    // Redis answers again; nothing else is asked of the subscriber connection.
    relay.release();
    const deadline = Date.now() + 10_000;
    while (!received.includes('live')) {
      if (Date.now() > deadline) throw new Error('the subscription asked for while Redis hung never went live');
      await publisher.publish('events:c', 'live');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  test('a Redis link paused by two timeouts in a row announces its return when the pause ends', async () => {
    relay = await startRelay(new URL(redisUrl!));
    const link = createRedisLink(relay.url, { name: 'test link', redis: { commandTimeout: 200 } });
    const changes: boolean[] = [];
    link.onChange((up) => changes.push(up));
    try {
      await link.run((redis) => redis.ping());
      relay.hold();
      await Promise.all([link.run((redis) => redis.ping()), link.run((redis) => redis.ping())].map((p) => p.catch(() => undefined)));
      expect(link.up).toBe(false);
      await expect(link.run((redis) => redis.ping())).rejects.toThrow(RedisUnavailableError);
      relay.release();
      // No command is sent; the end of the pause alone brings the link back, and says so.
      await waitUntil(() => changes.at(-1) === true, 'the link to announce its return', 5000);
      expect(changes).toEqual([true, false, true]);
      expect(link.up).toBe(true);
      await expect(link.run((redis) => redis.ping())).resolves.toBe('PONG');
    } finally {
      await link.close();
    }
  });
});
