/**
 * Publish/subscribe bus on the specification's internal channel names (`events:{account_id}`,
 * `chat:{account_id}`, ...): Redis pub/sub when REDIS_URL is set, so every node sees every
 * message; else an in-process emitter for a single node. Channels match literally; patterns (`*`,
 * as in Redis PSUBSCRIBE) are a separate call so that a client-chosen name is never a pattern.
 */
import { EventEmitter } from 'node:events';
import { createRedisLink, RedisUnavailableError } from './cache';
import { guarded, unowned } from './listeners';
import type { Logger } from './logger';

export type BusHandler = (channel: string, message: string) => void;

export interface Bus {
  readonly kind: 'redis' | 'memory';
  /**
   * Publishes to every node. Never rejects and never waits on a dead Redis: a failure is logged,
   * and while Redis is down the message reaches this node's handlers only.
   */
  publish(channel: string, message: string): Promise<void>;
  /**
   * Subscribes to one channel, matched literally; resolves with the function that unsubscribes.
   * Resolves once Redis confirmed the subscription, or at once while Redis is down (the
   * subscription then goes live when Redis returns).
   */
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
    // One subscriber's failure is its own: not the publisher's, not the other subscribers'.
    const listener = guarded((channel: string, message: string) => {
      if (matches(channel)) return handler(channel, message);
    }, unowned);
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

export interface BusProbeOptions {
  /** Silence on the subscriber connection after which it is PINGed (default 30 s). */
  silenceMs?: number;
  /** How long the PING may go unanswered before the connection counts as dead (default 5 s). */
  timeoutMs?: number;
}

/**
 * Redis pub/sub. Redis is optional at run time: while it is down a subscription is kept locally
 * and a publish reaches this node's own handlers (other nodes miss it), both at once; every
 * (re)connection subscribes the current channel set afresh, so channels added during the outage
 * go live and removed ones stay gone (ioredis's own autoResubscribe only knows the old set).
 *
 * Liveness: a subscriber connection can die silently (a half-open TCP connection: no error, no
 * message, ever). After `silenceMs` without a message or reply it is PINGed; a PING unanswered
 * within `timeoutMs` counts it dead, and it is dropped and reconnected, which resubscribes the set.
 */
/** How long a (P)SUBSCRIBE or (P)UNSUBSCRIBE may take before it counts as failed. */
const SUBSCRIBE_TIMEOUT_MS = 2000;
/** Pause before a failed resubscribe on a live connection asks again. */
const RESUBSCRIBE_RETRY_MS = 500;

export function createRedisBus(url: string, prefix: string, options: { log?: Logger; probe?: BusProbeOptions } = {}): Bus {
  const { log } = options;
  const silenceMs = options.probe?.silenceMs ?? 30_000;
  const probeTimeoutMs = options.probe?.timeoutMs ?? 5_000;
  const publisher = createRedisLink(url, { name: 'bus publisher', log });
  // (P)SUBSCRIBE is never on a request's path, and a start-up that keeps the event loop busy for a
  // few hundred milliseconds (schema and validator compilation) must not time it out: with the
  // cache's 250 ms, two such timeouts in a row took the subscriber down for a reconnect. Nor does
  // a timeout suspend it: the command was sent and Redis applies it whenever it answers, while a
  // (P)SUBSCRIBE refused during a suspension is never sent. A hung connection is the PING's to find.
  const subscriber = createRedisLink(url, {
    name: 'bus subscriber',
    log,
    redis: { autoResubscribe: false, commandTimeout: SUBSCRIBE_TIMEOUT_MS },
    suspendOnTimeouts: false,
  });
  let lastHeard = Date.now();
  let probing = false;
  const heard = () => {
    lastHeard = Date.now();
  };
  subscriber.client.on('message', heard);
  subscriber.client.on('pmessage', heard);
  subscriber.client.on('ready', heard);
  const liveness = setInterval(() => {
    if (probing || subscriber.client.status !== 'ready' || Date.now() - lastHeard < silenceMs) return;
    probing = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('PING unanswered')), probeTimeoutMs)));
    Promise.race([subscriber.client.ping(), deadline])
      .then(heard, (error: unknown) => {
        log?.warn({ err: error, timeoutMs: probeTimeoutMs }, 'bus subscriber did not answer PING; reconnecting');
        // Drop the dead socket; ioredis reconnects and the 'ready' transition resubscribes every channel.
        subscriber.client.disconnect(true);
      })
      .finally(() => {
        clearTimeout(timer);
        probing = false;
      });
  }, Math.min(1000, silenceMs));
  liveness.unref();
  // One Redis subscription per channel or pattern, shared by every local handler on it.
  const handlers = { channel: new Map<string, Set<BusHandler>>(), pattern: new Map<string, Set<BusHandler>>() };
  const patterns = new Map<string, RegExp>();
  // A handler runs inside ioredis's socket events: its failure is logged, never thrown there (listeners.ts).
  const deliverOne = guarded(
    (handler: BusHandler, channel: string, message: string) => handler(channel, message),
    (error: unknown) => log?.warn({ err: error }, 'bus handler failed'),
  );
  const deliver = (set: Set<BusHandler> | undefined, channel: string, message: string) => {
    for (const handler of set ?? []) deliverOne(handler, channel.slice(prefix.length), message);
  };
  subscriber.client.on('message', (channel: string, message: string) => deliver(handlers.channel.get(channel), channel, message));
  subscriber.client.on('pmessage', (pattern: string, channel: string, message: string) => deliver(handlers.pattern.get(pattern), channel, message));

  const redisSubscribe = (kind: 'channel' | 'pattern', names: string[]) =>
    subscriber.run((redis) => (kind === 'channel' ? redis.subscribe(...names) : redis.psubscribe(...names)));
  const redisUnsubscribe = (kind: 'channel' | 'pattern', name: string) =>
    subscriber.run((redis) => (kind === 'channel' ? redis.unsubscribe(name) : redis.punsubscribe(name)));

  let closed = false;
  /**
   * (P)SUBSCRIBEs every channel or pattern a handler is on. A failure on a connection that is up
   * (a timeout: a busy event loop or a slow Redis) asks again shortly; one on a lost connection
   * waits for the next connection, which asks again anyway.
   */
  const resubscribe = (kind: 'channel' | 'pattern') => {
    const names = [...handlers[kind].keys()];
    if (names.length === 0 || closed) return;
    redisSubscribe(kind, names).catch((error: unknown) => {
      const again = !(error instanceof RedisUnavailableError);
      log?.warn({ err: error, count: names.length }, again ? 'bus resubscribe failed; retrying' : 'bus resubscribe failed; retried at the next connection');
      if (again) setTimeout(() => subscriber.up && resubscribe(kind), RESUBSCRIBE_RETRY_MS).unref();
    });
  };
  subscriber.onChange((up) => {
    if (!up) return;
    resubscribe('channel');
    resubscribe('pattern');
  });

  async function add(kind: 'channel' | 'pattern', name: string, handler: BusHandler) {
    const full = prefix + name;
    const map = handlers[kind];
    let set = map.get(full);
    if (!set) {
      set = new Set();
      map.set(full, set);
      if (kind === 'pattern') patterns.set(full, globToRegExp(full));
      // Down or failing Redis: the subscription stays local and goes live at the next connection.
      await redisSubscribe(kind, [full]).catch((error: unknown) => log?.debug({ err: error, channel: full }, 'bus subscription deferred until Redis is back'));
    }
    set.add(handler);
    return async () => {
      const current = map.get(full);
      if (!current) return;
      current.delete(handler);
      if (current.size === 0) {
        map.delete(full);
        patterns.delete(full);
        // A failure here leaves nothing behind: a dead connection took the subscription with it, and
        // the next connection only subscribes what the maps still hold.
        await redisUnsubscribe(kind, full).catch((error: unknown) => log?.debug({ err: error, channel: full }, 'bus unsubscribe not sent'));
      }
    };
  }

  /** This node's own handlers of `full`, for a message Redis could not carry. */
  function deliverLocally(full: string, message: string) {
    deliver(handlers.channel.get(full), full, message);
    for (const [pattern, re] of patterns) if (re.test(full)) deliver(handlers.pattern.get(pattern), full, message);
  }

  return {
    kind: 'redis',
    async publish(channel, message) {
      const full = prefix + channel;
      try {
        await publisher.run((redis) => redis.publish(full, message));
      } catch (error) {
        if (error instanceof RedisUnavailableError) {
          // Never sent: this node's subscribers still hear it (other nodes cannot while Redis is down).
          log?.debug({ channel }, 'Redis is down; bus message delivered on this node only');
          deliverLocally(full, message);
        } else {
          // Sent or not, we cannot know (a timeout): delivering locally could duplicate it.
          log?.warn({ err: error, channel }, 'bus publish failed');
        }
      }
    },
    subscribe: (channel, handler) => add('channel', channel, handler),
    subscribePattern: (pattern, handler) => add('pattern', pattern, handler),
    async close() {
      closed = true;
      clearInterval(liveness);
      await Promise.allSettled([publisher.close(), subscriber.close()]);
    },
  };
}
