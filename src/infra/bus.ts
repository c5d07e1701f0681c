/**
 * Publish/subscribe bus on the specification's internal channel names (`events:{account_id}`,
 * `chat:{account_id}`, ...): Redis pub/sub when REDIS_URL is set, so every node sees every
 * message; else an in-process emitter for a single node. Patterns use `*` as in Redis PSUBSCRIBE.
 */
import { EventEmitter } from 'node:events';
import type Redis from 'ioredis';
import { createRedisClient } from './cache';

export type BusHandler = (channel: string, message: string) => void;

export interface Bus {
  readonly kind: 'redis' | 'memory';
  publish(channel: string, message: string): Promise<void>;
  /** Subscribes to a channel pattern; resolves with the function that unsubscribes. */
  subscribe(pattern: string, handler: BusHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

export function createMemoryBus(): Bus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    kind: 'memory',
    async publish(channel, message) {
      emitter.emit('message', channel, message);
    },
    async subscribe(pattern, handler) {
      const re = globToRegExp(pattern);
      const listener = (channel: string, message: string) => {
        if (re.test(channel)) handler(channel, message);
      };
      emitter.on('message', listener);
      return async () => {
        emitter.off('message', listener);
      };
    },
    async close() {
      emitter.removeAllListeners();
    },
  };
}

export function createRedisBus(url: string, prefix: string): Bus {
  const publisher: Redis = createRedisClient(url);
  const subscriber: Redis = createRedisClient(url);
  publisher.on('error', () => undefined);
  subscriber.on('error', () => undefined);
  const handlers = new Map<string, Set<BusHandler>>();
  subscriber.on('pmessage', (pattern: string, channel: string, message: string) => {
    const local = channel.slice(prefix.length);
    for (const handler of handlers.get(pattern) ?? []) handler(local, message);
  });
  return {
    kind: 'redis',
    async publish(channel, message) {
      await publisher.publish(prefix + channel, message);
    },
    async subscribe(pattern, handler) {
      const full = prefix + pattern;
      let set = handlers.get(full);
      if (!set) {
        set = new Set();
        handlers.set(full, set);
        await subscriber.psubscribe(full);
      }
      set.add(handler);
      return async () => {
        const current = handlers.get(full);
        if (!current) return;
        current.delete(handler);
        if (current.size === 0) {
          handlers.delete(full);
          await subscriber.punsubscribe(full);
        }
      };
    },
    async close() {
      await Promise.allSettled([publisher.quit(), subscriber.quit()]);
    },
  };
}
