/**
 * Key-value cache with TTLs: Redis (ioredis) when REDIS_URL is set, else in-process (lru-cache).
 * Shared state across nodes (rate limits, cooldowns, invalidation) must go through here, never
 * through module-level maps.
 */
import Redis from 'ioredis';
import { LRUCache } from 'lru-cache';
import { withTimeout } from './db/database';

export interface Cache {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  del(key: string): Promise<void>;
  /** Resolves with the round trip in milliseconds or rejects. */
  ping(timeoutMs?: number): Promise<number>;
  /** The Redis client when there is one (rate limiters reuse it). */
  readonly redis: Redis | null;
  close(): Promise<void>;
}

export class CacheError extends Error {
  override name = 'CacheError';
}

export function createRedisClient(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    connectTimeout: 5000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
}

/** QUIT when connected; a client that never connected is disconnected at once (no retry timer left). */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
  else redis.disconnect();
}

export function createRedisCache(url: string, prefix: string): Cache {
  const redis = createRedisClient(url);
  redis.on('error', () => undefined); // surfaced per call and by the health probe
  const wrapError = (error: unknown): never => {
    throw new CacheError((error as Error).message);
  };
  return {
    kind: 'redis',
    redis,
    get: (key) => redis.get(prefix + key).catch(wrapError),
    async set(key, value, ttlSeconds) {
      await (ttlSeconds ? redis.set(prefix + key, value, 'EX', ttlSeconds) : redis.set(prefix + key, value)).catch(wrapError);
    },
    async del(key) {
      await redis.del(prefix + key).catch(wrapError);
    },
    async ping(timeoutMs = 2000) {
      const started = performance.now();
      await withTimeout(redis.ping(), timeoutMs, 'cache ping');
      return Math.round(performance.now() - started);
    },
    close: () => closeRedis(redis),
  };
}

export function createMemoryCache(): Cache {
  const lru = new LRUCache<string, string>({ max: 100_000, ttlAutopurge: false });
  return {
    kind: 'memory',
    redis: null,
    get: async (key) => lru.get(key) ?? null,
    async set(key, value, ttlSeconds) {
      lru.set(key, value, ttlSeconds ? { ttl: ttlSeconds * 1000 } : undefined);
    },
    async del(key) {
      lru.delete(key);
    },
    ping: async () => 0,
    async close() {
      lru.clear();
    },
  };
}
