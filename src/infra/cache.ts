/**
 * Key-value cache with TTLs: Redis (ioredis) when REDIS_URL is set, else in-process (lru-cache).
 * Shared state across nodes (rate limits, cooldowns, invalidation) must go through here, never
 * through module-level maps. Also owns the Redis connection policy that the bus reuses: a cache
 * is a cache, so a Redis outage costs a caller one fast CacheError, never a wait.
 */
import Redis, { Command, type RedisOptions } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { guardFor } from './listeners';
import type { Logger } from './logger';

export interface Cache {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  del(key: string): Promise<void>;
  /** Several keys in one round trip, in order (null for a missing one). */
  mget(keys: readonly string[]): Promise<(string | null)[]>;
  /** Increments an integer key (missing: 0) and answers its new value. */
  incr(key: string): Promise<number>;
  /** Resolves with the round trip in milliseconds or rejects. */
  ping(timeoutMs?: number): Promise<number>;
  /** Whether a command can be sent right now (always true in process). */
  readonly available: boolean;
  /** Called when the cache goes down or comes back, so health can re-probe at once; returns the remover. */
  onAvailabilityChange(listener: (available: boolean) => void): () => void;
  /** The Redis client when there is one (rate limiters reuse it). */
  readonly redis: Redis | null;
  close(): Promise<void>;
}

export class CacheError extends Error {
  override name = 'CacheError';
}

/** Redis is known to be down (or still suspended after a timeout): the command was never sent. */
export class RedisUnavailableError extends CacheError {}

/** A Redis command that takes longer than this counts as failed: callers fall back instead of waiting. */
export const REDIS_COMMAND_TIMEOUT_MS = 250;
/**
 * One connection attempt; also the longest a command waits for the client's very first
 * connection. Only a black-holed address waits it out (a dead server refuses at once), so it is
 * generous: a start-up that blocks the event loop must not make a live Redis look dead.
 */
export const REDIS_CONNECT_TIMEOUT_MS = 3000;
/**
 * After two commands in a row timed out on an open connection (a hung Redis, not one slow
 * moment), commands fail at once for this long; a health ping may still try and reopens it.
 */
const REDIS_SUSPEND_MS = 1000;

/**
 * Client options for every connection. No offline queue: while the connection is down a command
 * is refused at once instead of piling up until a retry limit (which used to answer REDIS_ERROR after 3–6 s).
 * Unanswered commands are never re-sent after a reconnection (their callers already gave up), and
 * reconnection keeps trying about once a second, so recovery follows Redis within a second.
 */
export function createRedisClient(url: string, overrides: Partial<RedisOptions> = {}): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    ...overrides,
  });
}

/** QUIT when connected; a client that never connected is disconnected at once (no retry timer left). */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
  else redis.disconnect();
}

/**
 * One Redis connection with an availability state that ioredis alone does not give: ioredis says
 * `connecting` both before the first connection and while re-dialling a dead server. Here a command
 * waits (bounded) only for the first outcome; afterwards it is sent when the connection is ready
 * and refused at once otherwise. Transitions are logged once each, not once per failed command.
 */
export interface RedisLink {
  readonly client: Redis;
  /** Ready, and not suspended after timeouts. */
  readonly up: boolean;
  /**
   * Runs a command when Redis is usable; rejects at once with RedisUnavailableError when it is
   * known down, and with CacheError when the command itself fails or times out. A `probe` (the
   * health ping) is sent even while suspended, so that an answer reopens the link.
   */
  run<T>(command: (client: Redis) => Promise<T>, options?: { probe?: boolean }): Promise<T>;
  /** Listeners for up/down transitions; returns the remover. */
  onChange(listener: (up: boolean) => void): () => void;
  close(): Promise<void>;
}

export interface RedisLinkOptions {
  name: string;
  log?: Logger;
  redis?: Partial<RedisOptions>;
  /**
   * Suspend after two timeouts in a row (default true). A link whose callers can wait out a
   * timeout, and that has its own check of a hung connection (the bus subscriber's PING), turns it
   * off: a timeout there is as often this process's own busy event loop, and a command refused
   * during the pause is a command never sent.
   */
  suspendOnTimeouts?: boolean;
}

export function createRedisLink(url: string, options: RedisLinkOptions): RedisLink {
  const client = createRedisClient(url, options.redis);
  const listeners = new Set<(up: boolean) => void>();
  let settled = false;
  let wasUp = false;
  let suspendedUntil = 0;
  let timeoutsInARow = 0;
  let closing = false;
  let settle: () => void = () => undefined;
  const firstOutcome = new Promise<void>((resolve) => (settle = resolve));

  const isUp = () => client.status === 'ready' && Date.now() >= suspendedUntil;
  const transition = (up: boolean) => {
    settled = true;
    settle();
    if (up === wasUp || closing) return;
    wasUp = up;
    // Debug only: a hung Redis flaps between these every second; the outage itself is logged once
    // at each end by the bus heartbeat (bus.ts).
    if (up) options.log?.debug({ redis: options.name }, 'Redis connection ready');
    else options.log?.debug({ redis: options.name }, 'Redis connection lost; working without it until it returns');
    for (const listener of listeners) listener(up);
  };
  // ioredis's events: a listener's failure is logged, never thrown into the client (src/infra/listeners.ts).
  const guard = guardFor((error) => options.log?.warn({ err: error, redis: options.name }, 'Redis connection listener failed'));
  client.on('error', guard((error: Error) => options.log?.debug({ err: error, redis: options.name }, 'Redis connection error')));
  client.on(
    'ready',
    guard(() => {
      suspendedUntil = 0;
      timeoutsInARow = 0;
      transition(true);
    }),
  );
  client.on('close', guard(() => transition(false)));
  client.on('end', guard(() => transition(false)));

  /** Ends a pause (see `run`) once its time is up, if nothing ended it before. */
  function announceReturn(): void {
    if (closing || !suspendedUntil || client.status !== 'ready') return;
    const left = suspendedUntil - Date.now();
    if (left > 0) {
      setTimeout(announceReturn, left).unref();
      return;
    }
    suspendedUntil = 0;
    transition(true);
  }

  async function usable(probe: boolean): Promise<void> {
    if (!settled) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([firstOutcome, new Promise<void>((resolve) => (timer = setTimeout(resolve, REDIS_CONNECT_TIMEOUT_MS + 250)))]);
      clearTimeout(timer);
    }
    if (probe ? client.status !== 'ready' : !isUp()) throw new RedisUnavailableError(`Redis (${options.name}) is unavailable`);
  }

  return {
    client,
    get up() {
      return isUp();
    },
    async run(command, runOptions = {}) {
      await usable(runOptions.probe === true);
      try {
        const result = await command(client);
        timeoutsInARow = 0;
        if (suspendedUntil) {
          suspendedUntil = 0; // a hung Redis answers again
          transition(client.status === 'ready');
        }
        return result;
      } catch (error) {
        const message = (error as Error).message;
        options.log?.debug({ err: error, redis: options.name }, 'Redis command failed');
        if (options.suspendOnTimeouts !== false && /timed out/.test(message) && client.status === 'ready' && ++timeoutsInARow >= 2) {
          // The connection is open but Redis does not answer: stop sending for a while rather than
          // make every caller wait out the timeout.
          suspendedUntil = Date.now() + REDIS_SUSPEND_MS;
          transition(false);
          // The end of the pause is a return too: announce it, as the pause was announced, rather
          // than at some later command that happens to succeed (there may be none). A timer runs on
          // the loop's monotonic clock and may fire a millisecond before `Date.now()` reaches the
          // end: it waits out the rest instead of giving up, or the return would never be announced
          // (and the bus subscriber, which resubscribes on it, would stay deaf to Redis).
          setTimeout(announceReturn, REDIS_SUSPEND_MS).unref();
        }
        throw new CacheError(message);
      }
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closing = true;
      listeners.clear();
      await closeRedis(client);
    },
  };
}

export function createRedisCache(url: string, prefix: string, options: { log?: Logger } = {}): Cache {
  const link = createRedisLink(url, { name: 'cache', log: options.log });
  return {
    kind: 'redis',
    redis: link.client,
    get: (key) => link.run((redis) => redis.get(prefix + key)),
    async set(key, value, ttlSeconds) {
      await link.run((redis) => (ttlSeconds ? redis.set(prefix + key, value, 'EX', ttlSeconds) : redis.set(prefix + key, value)));
    },
    async del(key) {
      await link.run((redis) => redis.del(prefix + key));
    },
    mget: (keys) => link.run((redis) => redis.mget(keys.map((key) => prefix + key))),
    incr: (key) => link.run((redis) => redis.incr(prefix + key)),
    async ping(timeoutMs = 1000) {
      const started = performance.now();
      await link.run(
        (redis) => {
          // The probe's own timeout instead of the short command timeout: a busy event loop must
          // not make a live Redis look dead (sendCommand keeps a timeout already set).
          const ping = new Command('ping', [], { replyEncoding: 'utf8' });
          ping.setTimeout(timeoutMs);
          redis.sendCommand(ping);
          return ping.promise;
        },
        { probe: true },
      );
      return Math.round(performance.now() - started);
    },
    get available() {
      return link.up;
    },
    onAvailabilityChange: (listener) => link.onChange(listener),
    close: () => link.close(),
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
    mget: async (keys) => keys.map((key) => lru.get(key) ?? null),
    async incr(key) {
      const next = (Number(lru.get(key) ?? 0) || 0) + 1;
      lru.set(key, String(next));
      return next;
    },
    ping: async () => 0,
    available: true,
    onAvailabilityChange: () => () => undefined,
    async close() {
      lru.clear();
    },
  };
}

/**
 * Stored formats are versioned per key family (docs/guides/production.md, "Upgrades and
 * rollbacks"): each family that keeps a value in the shared cache declares the version of the form
 * it writes, and its key carries that version, so nodes of two releases never read an entry in a
 * form they do not know. Version 1 is the bare name (every release before the rule wrote it);
 * version n > 1 appends `:v<n>`.
 */
export function versionedKey(family: string, version: number): string {
  return version <= 1 ? family : `${family}:v${version}`;
}

/**
 * The keys a change of a family's value must clear: its own version's and the one before (the
 * previous release, which may serve beside this one, still reads and fills that).
 */
export function keysToClear(family: string, version: number): string[] {
  return version <= 1 ? [family] : [versionedKey(family, version), versionedKey(family, version - 1)];
}

/** Bus channel on which a node announces a near-cached key it changed; the others drop their copy. */
export const NEAR_INVALIDATIONS_CHANNEL = 'cache:near-invalidations';

/** Shared-cache key of the near-cache epoch (see withNearCache). */
export const NEAR_EPOCH_KEY = 'cache:near-epoch';

/** What withNearCache needs of the bus: publishing notices, and whether they demonstrably arrive. */
export interface NearCacheBus {
  publish(channel: string, message: string): Promise<void>;
  readonly live: boolean;
  onLiveChange(listener: (live: boolean) => void): () => void;
  confirm(): Promise<boolean>;
}

/**
 * A node-local copy in front of the shared cache for the keys read on every request (API key
 * look-ups, the global feature switches), so a hit costs no Redis round trip. A node that sets or
 * deletes such a key drops its own copy at once and announces the key on the bus; every other node
 * drops its copy when the notice arrives. A copy lives at most `ttlMs` (and never past the TTL it
 * was set with), which bounds a lost notice. Other keys go straight to the shared cache.
 *
 * Fail closed: these keys stand for credentials, so neither copy is trusted unless notices
 * demonstrably arrive. While the bus is not live (bus.ts: no heartbeat heard back within its bound,
 * as when Redis hangs under SIGSTOP with every socket open) a read of such a key is a miss and the
 * caller reads the database; nothing is written. A notice or a delete lost in the outage could have
 * left a stale entry in Redis itself, so entries carry the epoch they were written under (a counter
 * in Redis): a node whose bus comes back increments the epoch before it trusts anything again, and
 * an entry of another epoch (read in one MGET with the counter) is a miss. Every entry from before
 * an outage any node noticed is thereby dead on every node.
 */
export function withNearCache(shared: Cache, bus: NearCacheBus, options: { prefixes: readonly string[]; ttlMs: number; max?: number; log?: Logger }): Cache & { onNearInvalidation(message: string): void } {
  const near = new LRUCache<string, string>({ max: options.max ?? 10_000, ttl: options.ttlMs, ttlAutopurge: false });
  /**
   * Local copies dropped so far (a delete, a notice, a new epoch). A read or write that awaited
   * Redis copies its value only if none was dropped meanwhile: a delete that overtook it (the
   * value written, then deleted, before its answer came back) must not be undone by a late copy.
   */
  let drops = 0;
  const forget = (key: string) => {
    drops += 1;
    near.delete(key);
  };
  const forgetAll = () => {
    drops += 1;
    near.clear();
  };
  const node = Math.random().toString(36).slice(2);
  const isNear = (key: string) => options.prefixes.some((prefix) => key.startsWith(prefix));
  const announce = (key: string) => bus.publish(NEAR_INVALIDATIONS_CHANNEL, JSON.stringify({ node, key })).catch(() => undefined);
  /** The epoch this node trusts entries of; null while it trusts none (bus not live, or not bumped since). */
  let epoch: string | null = null;
  let bumping = false;
  let closed = false;
  const trusted = () => epoch !== null && bus.live;
  const adopt = (next: string) => {
    if (epoch !== null && Number(next) > Number(epoch)) {
      epoch = next;
      forgetAll();
    }
  };
  /** Starts a new epoch: every entry written before it (and every local copy) is dead. Retried while the bus is live. */
  const bump = () => {
    if (bumping || closed || !bus.live) return;
    bumping = true;
    shared
      .incr(NEAR_EPOCH_KEY)
      .then(
        (value) => {
          if (!bus.live) return;
          forgetAll();
          epoch = String(value);
          void bus.publish(NEAR_INVALIDATIONS_CHANNEL, JSON.stringify({ node, epoch })).catch(() => undefined);
        },
        (error: unknown) => {
          options.log?.debug({ err: error }, 'near-cache epoch not started; retrying');
          setTimeout(bump, 500).unref();
        },
      )
      .finally(() => {
        bumping = false;
      });
  };
  const stopListening = bus.onLiveChange((live) => {
    if (live) return bump();
    epoch = null;
    forgetAll();
  });
  bump();
  return {
    ...shared,
    get kind() {
      return shared.kind;
    },
    get available() {
      return shared.available;
    },
    async get(key) {
      if (!isNear(key)) return shared.get(key);
      // Not demonstrably notified: a miss, so the caller's fallback (the database) answers.
      if (!trusted()) return null;
      const copy = near.get(key);
      if (copy !== undefined) return copy;
      const seen = drops;
      const [current, entry] = await shared.mget([NEAR_EPOCH_KEY, key]);
      if (current === null || current === undefined) {
        // The counter is gone (a Redis restarted empty): trust nothing until a new epoch starts.
        epoch = null;
        forgetAll();
        bump();
        return null;
      }
      adopt(current);
      const cut = entry ? entry.indexOf('\n') : -1;
      if (!entry || cut < 0 || entry.slice(0, cut) !== current) return null;
      const value = entry.slice(cut + 1);
      if (trusted() && epoch === current && drops === seen) near.set(key, value);
      return value;
    },
    async set(key, value, ttlSeconds) {
      if (!isNear(key)) return shared.set(key, value, ttlSeconds);
      const under = epoch;
      if (under === null || !trusted()) return;
      const seen = drops;
      await shared.set(key, `${under}\n${value}`, ttlSeconds);
      if (drops === seen) near.set(key, value, ttlSeconds ? { ttl: Math.min(ttlSeconds * 1000, options.ttlMs) } : undefined);
      await announce(key);
    },
    async del(key) {
      if (!isNear(key)) return shared.del(key);
      // This node's copy goes at once; the others' after the shared entry is gone, so a node that
      // re-reads on the notice cannot copy the old value back.
      forget(key);
      let failure: unknown = null;
      await shared.del(key).catch((error: unknown) => (failure = error));
      if (failure !== null) {
        // The entry may still be in Redis: no entry of this epoch is trusted any more, here at
        // once, everywhere once a new epoch starts (this node starts it as soon as Redis answers).
        epoch = null;
        forgetAll();
        bump();
      }
      await announce(key);
      // A delete stands for a revocation: it is done only once every node has the notice, or has
      // stopped trusting its copies (the heartbeat bound passed without the notice confirmed).
      await bus.confirm();
      if (failure !== null) throw failure;
    },
    onNearInvalidation(message) {
      try {
        const notice = JSON.parse(message) as { node?: unknown; key?: unknown; epoch?: unknown };
        if (notice.node === node) return;
        if (typeof notice.key === 'string') forget(notice.key);
        else if (typeof notice.epoch === 'string') adopt(notice.epoch);
      } catch {
        forgetAll();
      }
    },
    async close() {
      closed = true;
      stopListening();
      await shared.close();
    },
  };
}
