/**
 * The bus and the cache on both backends (Redis when REDIS_URL is set), and both against a Redis
 * that refuses connections: nothing waits, nothing throws but the cache's CacheError, and the bus
 * keeps working on this node. The outage-and-recovery story is test/infra/redis-outage.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { createMemoryBus, createRedisBus, type Bus } from '../../src/infra/bus';
import { CacheError, createMemoryCache, createRedisCache } from '../../src/infra/cache';

const kinds: [string, () => Bus][] = [['in-process', () => createMemoryBus()]];
if (process.env.REDIS_URL) kinds.push(['redis', () => createRedisBus(process.env.REDIS_URL!, `bus:${randomBytes(4).toString('hex')}:`)]);

function collector() {
  const received: [string, string][] = [];
  return { received, handler: (channel: string, message: string) => received.push([channel, message]) };
}

const settle = () => new Promise((r) => setTimeout(r, 100));

describe.each(kinds)('%s bus', (_name, make) => {
  let bus: Bus;
  beforeEach(() => {
    bus = make();
  });
  afterEach(() => bus.close());

  test('a channel name matches literally, even one that looks like a pattern', async () => {
    const literal = collector();
    const star = collector();
    await bus.subscribe('events:a', literal.handler);
    await bus.subscribe('events:*', star.handler);
    await bus.publish('events:a', '1');
    await bus.publish('events:*', '2');
    await settle();
    expect(literal.received).toEqual([['events:a', '1']]);
    expect(star.received).toEqual([['events:*', '2']]);
  });

  test('patterns match by glob and report the concrete channel', async () => {
    const all = collector();
    await bus.subscribePattern('events:*', all.handler);
    await bus.publish('events:a', '1');
    await bus.publish('chat:a', '2');
    await settle();
    expect(all.received).toEqual([['events:a', '1']]);
  });

  test('unsubscribe stops delivery; other handlers on the channel keep theirs', async () => {
    const first = collector();
    const second = collector();
    const stop = await bus.subscribe('c:1', first.handler);
    await bus.subscribe('c:1', second.handler);
    await stop();
    await bus.publish('c:1', 'x');
    await settle();
    expect(first.received).toEqual([]);
    expect(second.received).toEqual([['c:1', 'x']]);
  });
});

describe('cache', () => {
  const caches = [['in-process', () => createMemoryCache()] as const];
  const all = process.env.REDIS_URL ? [...caches, ['redis', () => createRedisCache(process.env.REDIS_URL!, `cache:${randomBytes(4).toString('hex')}:`)] as const] : caches;
  test.each(all)('%s: set, get, expire, delete, ping', async (_name, make) => {
    const cache = make();
    try {
      await cache.set('k', 'v');
      expect(await cache.get('k')).toBe('v');
      await cache.set('short', 'v', 1);
      await cache.del('k');
      expect(await cache.get('k')).toBeNull();
      expect(await cache.ping()).toBeGreaterThanOrEqual(0);
      await new Promise((r) => setTimeout(r, 1100));
      expect(await cache.get('short')).toBeNull();
    } finally {
      await cache.close();
    }
  });
});

describe('with Redis unreachable (connection refused)', () => {
  const DOWN = 'redis://127.0.0.1:1';
  /** Resolves with how long `run` took, in milliseconds. */
  const took = async (run: () => Promise<unknown>) => {
    const started = performance.now();
    await run();
    return performance.now() - started;
  };

  test('bus: subscribe and publish resolve at once, and the message reaches this node’s channel and pattern handlers', async () => {
    const bus = createRedisBus(DOWN, 'down:');
    try {
      const literal = collector();
      const pattern = collector();
      const other = collector();
      let stop: () => Promise<void> = async () => undefined;
      expect(await took(async () => (stop = await bus.subscribe('events:a', literal.handler)))).toBeLessThan(1000);
      await bus.subscribePattern('events:*', pattern.handler);
      await bus.subscribe('events:b', other.handler);
      expect(await took(() => bus.publish('events:a', '1'))).toBeLessThan(250);
      expect(literal.received).toEqual([['events:a', '1']]);
      expect(pattern.received).toEqual([['events:a', '1']]);
      expect(other.received).toEqual([]);
      await stop();
      await bus.publish('events:a', '2');
      expect(literal.received).toEqual([['events:a', '1']]);
      expect(pattern.received).toEqual([['events:a', '1'], ['events:a', '2']]);
    } finally {
      await bus.close();
    }
  });

  test('cache: every call rejects at once with a CacheError (callers fall back to the database)', async () => {
    const cache = createRedisCache(DOWN, 'down:');
    try {
      await expect(cache.get('k')).rejects.toBeInstanceOf(CacheError);
      for (const call of [() => cache.get('k'), () => cache.set('k', 'v', 5), () => cache.del('k'), () => cache.ping()]) {
        expect(await took(() => call().catch((error: unknown) => expect(error).toBeInstanceOf(CacheError)))).toBeLessThan(250);
      }
      expect(cache.available).toBe(false);
    } finally {
      await cache.close();
    }
  });
});

