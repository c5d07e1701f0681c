/**
 * The near cache (src/infra/cache.ts, withNearCache) on a real Redis: a delete that overtakes a
 * write of the same key (sent after it, done before its answer came back) is not undone by the
 * late local copy that write would make (reads follow the same rule).
 */
import { randomBytes } from 'node:crypto';
import { createRedisBus } from '../../src/infra/bus';
import { createRedisCache, withNearCache } from '../../src/infra/cache';
import { createLogger } from '../../src/infra/logger';
import { services } from '../helpers/app';

const quiet = createLogger({ level: 'silent', service: 'test', env: 'test', version: 'test' });

(services.redis ? describe : describe.skip)('near cache', () => {
  test('a value written, then deleted before the write answered, is not served from this node afterwards', async () => {
    const prefix = `test:${randomBytes(6).toString('hex')}:`;
    const bus = createRedisBus(process.env.REDIS_URL!, prefix, { log: quiet });
    const cache = withNearCache(createRedisCache(process.env.REDIS_URL!, prefix, { log: quiet }), bus, { prefixes: ['flags'], ttlMs: 60_000, log: quiet });
    try {
      // Trusted once the bus has heard its own heartbeat and the epoch started.
      const deadline = Date.now() + 10_000;
      for (;;) {
        await cache.set('flags:probe', 'x', 60);
        if ((await cache.get('flags:probe')) === 'x') break;
        if (Date.now() > deadline) throw new Error('the near cache never trusted Redis');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      // A reader fills the cache with what it read (not awaited, as the features module does), and
      // a writer deletes the key at once: Redis runs SET then DEL; this node's copy must go too.
      const filling = cache.set('flags:global', 'old', 60);
      await cache.del('flags:global');
      await filling;
      expect(await cache.get('flags:global')).toBeNull();
    } finally {
      await cache.close();
      await bus.close();
    }
  });
});
