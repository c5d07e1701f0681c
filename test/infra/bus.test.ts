import { randomBytes } from 'node:crypto';
import { createMemoryBus, createRedisBus, type Bus } from '../../src/infra/bus';
import { createMemoryCache, createRedisCache } from '../../src/infra/cache';

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
