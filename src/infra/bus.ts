/**
 * Publish/subscribe bus on the specification's internal channel names (`events:{account_id}`,
 * `chat:{account_id}`, ...): Redis pub/sub when REDIS_URL is set, so every node sees every
 * message; else an in-process emitter for a single node. Channels match literally; patterns (`*`,
 * as in Redis PSUBSCRIBE) are a separate call so that a client-chosen name is never a pattern.
 */
import { randomUUID } from 'node:crypto';
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
  /**
   * Whether a message published now demonstrably reaches every node: this node heard its own
   * heartbeat back within the bound (see BusHeartbeatOptions). Always true in process. What a
   * node keeps on the strength of bus notices (node-local credential copies) is trusted only
   * while this holds.
   */
  readonly live: boolean;
  /** Called on every change of `live`; returns the remover. */
  onLiveChange(listener: (live: boolean) => void): () => void;
  /**
   * Called when a message this node published could not be sent and reached this node's handlers
   * only (other nodes missed it); returns the remover. Never in process.
   */
  onLocalOnly?(listener: (channel: string) => void): () => void;
  /**
   * Resolves true once everything this node published before the call has reached every
   * subscribed node (a heartbeat sent after it came back: Redis keeps one connection's order), or
   * false once the heartbeat bound has passed without that, when every other node has stopped
   * trusting what such a notice would have invalidated. At once (true) in process.
   */
  confirm(): Promise<boolean>;
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
    live: true,
    onLiveChange: () => () => undefined,
    confirm: async () => true,
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

export interface BusHeartbeatOptions {
  /** How often this node publishes its heartbeat (default 1 s). */
  intervalMs?: number;
  /** How old the last heartbeat heard back may be while the bus counts as live (default 2 s). */
  boundMs?: number;
}

/** Channel of one node's heartbeat (under the bus prefix); only that node subscribes to it. */
export const HEARTBEAT_CHANNEL_PREFIX = 'bus:heartbeat:';

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

export function createRedisBus(url: string, prefix: string, options: { log?: Logger; probe?: BusProbeOptions; heartbeat?: BusHeartbeatOptions } = {}): Bus {
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
      log?.debug({ err: error, count: names.length }, again ? 'bus resubscribe failed; retrying' : 'bus resubscribe failed; retried at the next connection');
      if (again) setTimeout(() => subscriber.up && resubscribe(kind), RESUBSCRIBE_RETRY_MS).unref();
    });
  };
  subscriber.onChange((up) => {
    // A lost subscriber connection hears nothing until it is back: the bus is not live (listeners
    // that must not miss a message catch up when it is live again).
    if (!up) return setLive(false);
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

  // Heartbeat: a round trip through Redis (publisher → Redis → subscriber) proves that a notice
  // published now reaches every subscribed node; an open connection alone does not (a Redis
  // stopped by SIGSTOP keeps every socket open and answers nothing). Live from the first heartbeat
  // heard back until one is `boundMs` overdue; a change is logged once, not per failed command.
  const heartbeatMs = options.heartbeat?.intervalMs ?? 1000;
  const boundMs = options.heartbeat?.boundMs ?? 2000;
  const heartbeatChannel = `${prefix}${HEARTBEAT_CHANNEL_PREFIX}${randomUUID()}`;
  const liveListeners = new Set<(live: boolean) => void>();
  const localOnlyListeners = new Set<(channel: string) => void>();
  let live = false;
  let lastBeat = 0;
  let downSince = Date.now();
  const setLive = (next: boolean) => {
    if (next === live || closed) return;
    live = next;
    if (next) log?.info({ outage_ms: Date.now() - downSince }, 'bus heartbeat heard: Redis reachable, node-local credential copies trusted again');
    else {
      downSince = Date.now();
      log?.warn({ bound_ms: boundMs }, 'bus heartbeat overdue: Redis unreachable, node-local credential copies are not trusted until it returns');
    }
    for (const listener of liveListeners) listener(next);
  };
  /** Confirmations waiting for their heartbeat to come back, by the heartbeat's text. */
  const confirming = new Map<string, () => void>();
  let beats = 0;
  const subscribed = add('channel', heartbeatChannel.slice(prefix.length), (_channel, message) => {
    lastBeat = Date.now();
    setLive(true);
    confirming.get(message)?.();
  });
  let beatDue = Date.now() + heartbeatMs;
  const beat = () => {
    // A beat that fires late was held up by this node's own busy loop, not by Redis: the heartbeat
    // it waits for may be sitting unread in the socket. Judged only on time (and after the
    // sockets were read), so a busy node does not report (and log) a bus outage it does not have.
    const late = Date.now() - beatDue;
    beatDue = Date.now() + heartbeatMs;
    if (live && late < heartbeatMs / 2) setImmediate(() => live && Date.now() - lastBeat > boundMs && setLive(false));
    // Straight to Redis: a heartbeat must never be delivered locally as `publish` does while down.
    publisher.run((redis) => redis.publish(heartbeatChannel, String((beats += 1)))).catch((error: unknown) => log?.debug({ err: error }, 'bus heartbeat not sent'));
  };
  const confirm = (): Promise<boolean> => {
    // Redis stopped delivering (if it did) after the last heartbeat heard was sent and before the
    // next one went unanswered: every node has noticed `boundMs` after that, or after now.
    const wait = Math.min(boundMs, lastBeat + heartbeatMs + boundMs - Date.now());
    if (wait <= 0 || closed) return Promise.resolve(false);
    const token = `confirm:${(beats += 1)}`;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), wait);
      const done = (ok: boolean) => {
        clearTimeout(timer);
        confirming.delete(token);
        resolve(ok);
      };
      confirming.set(token, () => done(true));
      // A publish that fails at once (Redis known down) still waits out the bound: another node
      // may not have noticed yet.
      publisher.run((redis) => redis.publish(heartbeatChannel, token)).catch(() => undefined);
    });
  };
  const heartbeat = setInterval(beat, heartbeatMs);
  heartbeat.unref();
  // The first one as soon as it can be heard: a node is not live until it has heard one.
  void subscribed.then(() => !closed && beat());

  return {
    kind: 'redis',
    get live() {
      // Strict for what trusts it (credential copies): an overdue heartbeat reads as not live at once;
      // the change itself (its listeners, its log line) is the beat's to decide.
      return live && Date.now() - lastBeat <= boundMs;
    },
    onLiveChange(listener) {
      liveListeners.add(listener);
      return () => liveListeners.delete(listener);
    },
    onLocalOnly(listener) {
      localOnlyListeners.add(listener);
      return () => localOnlyListeners.delete(listener);
    },
    confirm,
    async publish(channel, message) {
      const full = prefix + channel;
      try {
        await publisher.run((redis) => redis.publish(full, message));
      } catch (error) {
        if (error instanceof RedisUnavailableError) {
          // Never sent: this node's subscribers still hear it (other nodes cannot while Redis is down).
          log?.debug({ channel }, 'Redis is down; bus message delivered on this node only');
          // Told first, so that a listener that must keep order holds the local delivery.
          for (const listener of localOnlyListeners) listener(channel);
          deliverLocally(full, message);
        } else {
          // Sent or not, we cannot know (a timeout): delivering locally could duplicate it.
          log?.debug({ err: error, channel }, 'bus publish failed');
        }
      }
    },
    subscribe: (channel, handler) => add('channel', channel, handler),
    subscribePattern: (pattern, handler) => add('pattern', pattern, handler),
    async close() {
      closed = true;
      clearInterval(liveness);
      clearInterval(heartbeat);
      liveListeners.clear();
      localOnlyListeners.clear();
      for (const done of [...confirming.values()]) done();
      await Promise.allSettled([publisher.close(), subscriber.close()]);
    },
  };
}
