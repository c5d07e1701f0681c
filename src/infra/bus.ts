/**
 * Publish/subscribe bus on the specification's internal channel names (`events:{account_id}`,
 * `chat:{account_id}`, ...): Redis pub/sub when REDIS_URL is set, so every node sees every
 * message; else an in-process emitter for a single node. Channels match literally; patterns (`*`,
 * as in Redis PSUBSCRIBE) are a separate call so that a client-chosen name is never a pattern.
 */
import { EventEmitter } from 'node:events';
import type Redis from 'ioredis';
import { closeRedis, createRedisClient } from './cache';

export type BusHandler = (channel: string, message: string) => void;

export interface Bus {
  readonly kind: 'redis' | 'memory';
  publish(channel: string, message: string): Promise<void>;
  /** Subscribes to one channel, matched literally; resolves with the function that unsubscribes. */
  subscribe(channel: string, handler: BusHandler): Promise<() => Promise<void>>;
  /** Subscribes to a `*` pattern (Redis PSUBSCRIBE); for server-side consumers, never client input. */
  subscribePattern(pattern: string, handler: BusHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

function globToRegExp(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

export function createMemoryBus(): Bus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  const listen = async (matches: (channel: string) => boolean, handler: BusHandler) => {
    const listener = (channel: string, message: string) => {
      if (matches(channel)) handler(channel, message);
    };
    emitter.on('message', listener);
    return async () => {
      emitter.off('message', listener);
    };
  };
  return {
    kind: 'memory',
    async publish(channel, message) {
      emitter.emit('message', channel, message);
    },
    subscribe: (channel, handler) => listen((c) => c === channel, handler),
    subscribePattern(pattern, handler) {
      const re = globToRegExp(pattern);
      return listen((c) => re.test(c), handler);
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
  // One Redis subscription per channel or pattern, shared by every local handler on it.
  const handlers = { channel: new Map<string, Set<BusHandler>>(), pattern: new Map<string, Set<BusHandler>>() };
  const deliver = (set: Set<BusHandler> | undefined, channel: string, message: string) => {
    for (const handler of set ?? []) handler(channel.slice(prefix.length), message);
  };
  subscriber.on('message', (channel: string, message: string) => deliver(handlers.channel.get(channel), channel, message));
  subscriber.on('pmessage', (pattern: string, channel: string, message: string) => deliver(handlers.pattern.get(pattern), channel, message));

  async function add(kind: 'channel' | 'pattern', name: string, handler: BusHandler) {
    const full = prefix + name;
    const map = handlers[kind];
    let set = map.get(full);
    if (!set) {
      set = new Set();
      map.set(full, set);
      await (kind === 'channel' ? subscriber.subscribe(full) : subscriber.psubscribe(full));
    }
    set.add(handler);
    return async () => {
      const current = map.get(full);
      if (!current) return;
      current.delete(handler);
      if (current.size === 0) {
        map.delete(full);
        await (kind === 'channel' ? subscriber.unsubscribe(full) : subscriber.punsubscribe(full));
      }
    };
  }

  return {
    kind: 'redis',
    async publish(channel, message) {
      await publisher.publish(prefix + channel, message);
    },
    subscribe: (channel, handler) => add('channel', channel, handler),
    subscribePattern: (pattern, handler) => add('pattern', pattern, handler),
    async close() {
      await Promise.allSettled([closeRedis(publisher), closeRedis(subscriber)]);
    },
  };
}
