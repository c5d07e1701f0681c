/**
 * Per-authentication-context rate limits (Part 1, "Limits"): a fixed budget per context kind, not
 * derived from the plan. Owns the tier of each context, its bucket key and the X-RateLimit-*
 * headers; counting is rate-limiter-flexible's (Redis when configured, so every node shares one
 * budget, else process memory). A request costs one point; the GraphQL endpoint charges the rest of
 * a query's points once it knows its cost. Must not decide anything about permissions or features.
 *
 * A limiter that holds: while Redis fails or hangs, every request is still counted, on this node's
 * own counters (rate-limiter-flexible's insurance limiter, the same budget per node), never let
 * through uncounted. A hung Redis costs one short timeout: the first draw that times out opens a
 * breaker, and until a background PING is answered again every draw counts locally at once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Redis from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterLike } from 'rate-limiter-flexible';
import { ANONYMOUS, type AuthContext, type AuthContextKind } from '../auth/context';
import type { Config } from '../config/config';
import { AppError, messages } from '../errors';
import { fairTimeout } from '../infra/loop-delay';
import type { RequestContext } from './context';

/** The budgets of `config.rate_limits`, one per tier. */
export type RateTier = 'api_key' | 'jwt' | 'token' | 'anonymous';

const WINDOW_SECONDS = 60;
/**
 * A Redis that hangs must not hold requests: past this (of time the event loop was free to read the
 * answer, loop-delay.ts) the draw counts on this node and the breaker opens.
 */
const REDIS_TIMEOUT_MS = 250;
/** While the breaker is open, how often a PING asks whether Redis answers again. */
const BREAKER_PROBE_MS = 1000;

/** System keys have no tier: they are never limited. */
const tierOfKind: Record<AuthContextKind, RateTier | null> = {
  system_key: null,
  user_api_key: 'api_key',
  service_key: 'api_key',
  developer_api_key: 'api_key',
  jwt: 'jwt',
  popout: 'token',
  overlay: 'token',
  shared_overlay: 'token',
  extension: 'token',
  widget: 'token',
  anonymous: 'anonymous',
};

export function rateTier(ctx: AuthContext): RateTier | null {
  const tier = tierOfKind[ctx.kind];
  return tier === undefined ? 'anonymous' : tier;
}

/**
 * `<tier>:<identity>`. A credential keys on its stable id (a popout token's hash, so each popout
 * token has its own bucket; a session id for JWTs), then on its user; Anonymous keys on the client
 * address, which is also the last resort for a credential that carries neither.
 */
export function rateBucketKey(ctx: AuthContext, clientAddress: string): string | null {
  const tier = rateTier(ctx);
  if (!tier) return null;
  const identity = tier === 'anonymous' ? clientAddress : (ctx.credentialId ?? ctx.userId ?? `addr:${clientAddress}`);
  return `${tier}:${identity}`;
}

export type RateDecision =
  /** Not counted: a system key, or limits are off. No headers. */
  | { readonly outcome: 'skipped' }
  | {
      readonly outcome: 'allowed' | 'rejected';
      readonly tier: RateTier;
      readonly key: string;
      readonly limit: number;
      readonly remaining: number;
      /** Unix epoch seconds when the current window ends. */
      readonly resetAt: number;
      /** Whole seconds until the window ends, at least 1. */
      readonly retryAfterSeconds: number;
    }
  /**
   * The store failed; the request goes through uncounted (fail open). `first`: the first failure
   * since the store last answered (the outage is logged once, on it).
   */
  | { readonly outcome: 'unavailable'; readonly tier: RateTier; readonly key: string; readonly error: unknown; readonly first: boolean };

export interface RateLimiter {
  readonly enabled: boolean;
  /** Draws `points` (default 1: one request) from the context's budget for the current window. */
  consume(ctx: AuthContext, clientAddress: string, points?: number): Promise<RateDecision>;
  close?(): Promise<void>;
}

const SKIPPED: RateDecision = Object.freeze({ outcome: 'skipped' });

/** What one draw left: the window's count after it (this draw's points included) and the time to the window's end. */
interface Drawn {
  consumed: number;
  msBeforeNext: number;
}

/** One increment of `points`; over budget is an outcome here, only a store failure rejects. */
async function drawOnce(limiter: RateLimiterLike, identity: string, points: number): Promise<Drawn> {
  try {
    const res = await limiter.consume(identity, points);
    return { consumed: res.consumedPoints, msBeforeNext: res.msBeforeNext };
  } catch (error) {
    // rate-limiter-flexible rejects with a RateLimiterRes when over budget (the count still grew).
    if (error instanceof RateLimiterRes) return { consumed: error.consumedPoints, msBeforeNext: error.msBeforeNext };
    throw error;
  }
}

/**
 * Draws on a shared store, batched per bucket: while one increment of a bucket is on its way to
 * Redis, the requests of that bucket that arrive queue, and the next increment draws all their
 * points at once. The count after it is split back in arrival order, so each request gets exactly
 * the outcome and remaining budget it would have got with an increment of its own; under load a
 * bucket costs one round trip per batch instead of one per request. `beforeSend` runs before each
 * increment is started (sendsTogether, below).
 */
function batchedDraw(tiers: Record<RateTier, RateLimiterLike>, beforeSend: () => void) {
  interface Waiting {
    points: number;
    resolve(drawn: Drawn): void;
    reject(error: unknown): void;
  }
  const buckets = new Map<string, { queue: Waiting[] }>();
  const flush = (tier: RateTier, identity: string, id: string, bucket: { queue: Waiting[] }): void => {
    const batch = bucket.queue;
    bucket.queue = [];
    const total = batch.reduce((sum, w) => sum + w.points, 0);
    beforeSend();
    drawOnce(tiers[tier], identity, total).then(
      (drawn) => {
        let consumed = drawn.consumed - total;
        for (const w of batch) {
          consumed += w.points;
          w.resolve({ consumed, msBeforeNext: drawn.msBeforeNext });
        }
      },
      (error: unknown) => {
        for (const w of batch) w.reject(error);
      },
    ).finally(() => {
      if (bucket.queue.length > 0) flush(tier, identity, id, bucket);
      else buckets.delete(id);
    });
  };
  return (tier: RateTier, identity: string, points: number): Promise<Drawn> =>
    new Promise<Drawn>((resolve, reject) => {
      const id = `${tier}:${identity}`;
      const running = buckets.get(id);
      if (running) {
        running.queue.push({ points, resolve, reject });
        return;
      }
      const bucket = { queue: [{ points, resolve, reject }] };
      buckets.set(id, bucket);
      flush(tier, identity, id, bucket);
    });
}

/**
 * Lets the increments of different buckets that start in one turn of the job queues leave in one
 * socket write: the client's connection is corked at the first of them and uncorked once the
 * queues drained (a `process.nextTick` runs after the microtasks queued before it). The requests a
 * counter round releases together (hot-read.ts) reach their rate limit in the same turn, each with
 * a bucket of its own (one Redis send per request was the second socket write of a cold
 * page). Each increment is still its own atomic script on Redis, answered in order: only the
 * sends are joined, not the counting.
 */
function sendsTogether(redis: Redis): () => void {
  let corked = false;
  return () => {
    const stream = redis.stream;
    if (corked || redis.status !== 'ready' || !stream?.writable) return;
    corked = true;
    stream.cork();
    process.nextTick(() => {
      corked = false;
      stream.uncork();
    });
  };
}

/**
 * One limiter per tier over a fixed one-minute window. With `redis` the counters live under
 * `<prefix>ratelimit:<tier>:<identity>`, so every node on that Redis draws from one budget.
 */
export function createRateLimiter(deps: {
  config: Readonly<Config>;
  redis: Redis | null;
  prefix: string;
  log?: { info(obj: object, msg: string): void; warn?(obj: object, msg: string): void };
  /** How long a Redis draw may take (default REDIS_TIMEOUT_MS) and how often an open breaker probes (default BREAKER_PROBE_MS). */
  timeoutMs?: number;
  probeMs?: number;
}): RateLimiter {
  const limits = deps.config.rate_limits;
  const timeoutMs = deps.timeoutMs ?? REDIS_TIMEOUT_MS;
  const probeMs = deps.probeMs ?? BREAKER_PROBE_MS;
  const options = (tier: RateTier) => ({ keyPrefix: `${deps.prefix}ratelimit:${tier}`, points: limits[tier], duration: WINDOW_SECONDS });
  /** Called whenever the insurance counts a draw that Redis could not (rate-limiter-flexible calls it on a store error). */
  let insured: (error: unknown) => void = () => undefined;
  /** This node's own counters: the only ones without Redis, the insurance with it. */
  class Insurance extends RateLimiterMemory {
    override consume(...args: Parameters<RateLimiterMemory['consume']>): ReturnType<RateLimiterMemory['consume']> {
      if (deps.redis) insured(null);
      return super.consume(...args);
    }
  }
  const local: Record<RateTier, RateLimiterMemory> = {
    api_key: new Insurance(options('api_key')),
    jwt: new Insurance(options('jwt')),
    token: new Insurance(options('token')),
    anonymous: new Insurance(options('anonymous')),
  };
  // A store error (Redis refused, not connected, a command timed out) falls to the insurance
  // limiter inside rate-limiter-flexible, which opens the breaker; a hang past this limiter's own
  // timeout does too (below), so that it costs one timeout, not one per request.
  const make = (tier: RateTier): RateLimiterLike =>
    deps.redis ? new RateLimiterRedis({ ...options(tier), storeClient: deps.redis, insuranceLimiter: local[tier] }) : local[tier];
  const tiers: Record<RateTier, RateLimiterLike> = {
    api_key: make('api_key'),
    jwt: make('jwt'),
    token: make('token'),
    anonymous: make('anonymous'),
  };
  // On Redis, concurrent requests of one bucket share one increment (batched below); in process
  // there is no round trip to save.
  const shared = deps.redis ? batchedDraw(tiers, sendsTogether(deps.redis)) : null;
  /** When the store stopped answering (null while it answers) and how many draws counted locally since. */
  let downSince: number | null = null;
  let failed = 0;
  /** The breaker: open while Redis hangs (every draw counts locally at once); a PING closes it. */
  let open = false;
  let probe: NodeJS.Timeout | null = null;
  const closeBreaker = () => {
    open = false;
    if (probe) clearInterval(probe);
    probe = null;
  };
  const openBreaker = () => {
    if (open || !deps.redis) return;
    open = true;
    const redis = deps.redis;
    let asking = false;
    probe = setInterval(() => {
      if (asking) return;
      asking = true;
      fairTimeout(redis.ping(), timeoutMs, 'rate limiter PING')
        .then(closeBreaker, () => undefined)
        .finally(() => (asking = false));
    }, probeMs);
    probe.unref();
  };
  const countedLocally = (error: unknown) => {
    if (downSince === null) {
      downSince = Date.now();
      deps.log?.warn?.({ err: error }, 'rate limiter counting on this node: Redis does not answer');
    }
    failed += 1;
  };
  insured = (error) => {
    openBreaker();
    countedLocally(error);
  };

  async function draw(tier: RateTier, identity: string, points: number): Promise<Drawn> {
    if (!shared) return drawOnce(local[tier], identity, points);
    if (!open) {
      try {
        const drawn = await fairTimeout(shared(tier, identity, points), timeoutMs, 'rate limiter draw');
        // Answered by the insurance (Redis failed or its command timed out): the breaker is open now.
        if (open) return drawn;
        if (downSince !== null) {
          deps.log?.info({ outage_ms: Date.now() - downSince, requests_counted_locally: failed }, 'rate limiter on Redis again');
          downSince = null;
          failed = 0;
        }
        return drawn;
      } catch (error) {
        // A hang (or an error the insurance did not take): count here, and stop asking Redis until it answers a PING.
        openBreaker();
        if (downSince === null) countedLocally(error);
      }
    }
    // Counted here (the insurance's consume notes it).
    return drawOnce(local[tier], identity, points);
  }

  return {
    enabled: limits.enabled,
    async consume(ctx, clientAddress, points = 1) {
      const tier = rateTier(ctx);
      const key = rateBucketKey(ctx, clientAddress);
      if (!limits.enabled || !tier || !key) return SKIPPED;
      const identity = key.slice(tier.length + 1);
      let drawn: Drawn;
      try {
        drawn = await draw(tier, identity, Math.max(1, Math.ceil(points)));
      } catch (error) {
        // Not even this node's counters answered (never expected): let the request through.
        return { outcome: 'unavailable', tier, key, error, first: true };
      }
      const msBeforeNext = Math.max(drawn.msBeforeNext, 0);
      return {
        // Over budget once the window's count passes the limit (rate-limiter-flexible's rule).
        outcome: drawn.consumed > limits[tier] ? 'rejected' : 'allowed',
        tier,
        key,
        limit: limits[tier],
        remaining: Math.max(limits[tier] - drawn.consumed, 0),
        resetAt: Math.ceil((Date.now() + msBeforeNext) / 1000),
        retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
      };
    },
    async close() {
      closeBreaker();
    },
  };
}

/**
 * Writes the X-RateLimit-* headers of a counted decision (and Retry-After when rejected), and
 * returns the error to answer with when over budget. Skipped and unavailable decisions write
 * nothing; an unavailable store is logged (once per outage) and the request goes through.
 */
export function applyRateDecision(
  decision: RateDecision,
  res: Pick<ServerResponse, 'setHeader'>,
  // The request context, whose `log` (a child logger built on first use) is read only to warn.
  context: { readonly log: { warn(obj: object, msg: string): void; debug(obj: object, msg: string): void } } | undefined,
): AppError | null {
  switch (decision.outcome) {
    case 'skipped':
      return null;
    case 'unavailable':
      // Once per outage (its end is logged by the limiter), not once per request.
      if (decision.first) context?.log.warn({ err: decision.error, tier: decision.tier }, 'rate limiter unavailable; request allowed');
      else context?.log.debug({ tier: decision.tier }, 'rate limiter unavailable; request allowed');
      return null;
    default:
      res.setHeader('X-RateLimit-Limit', String(decision.limit));
      res.setHeader('X-RateLimit-Remaining', String(decision.remaining));
      res.setHeader('X-RateLimit-Reset', String(decision.resetAt));
      if (decision.outcome === 'allowed') return null;
      res.setHeader('Retry-After', String(decision.retryAfterSeconds));
      return new AppError('RATE_LIMIT_EXCEEDED', messages.rateLimitExceeded);
  }
}

/**
 * Counts every request against its context's budget before any route runs. Over budget → 429
 * RATE_LIMIT_EXCEEDED through the one error mapper, with Retry-After; a store failure lets the
 * request through with a warning rather than failing it.
 */
export function rateLimitStep(limiter: RateLimiter, clientAddress: (req: IncomingMessage) => string) {
  return async (req: IncomingMessage & { context?: RequestContext }, res: ServerResponse): Promise<void> => {
    if (!limiter.enabled) return;
    const decision = await limiter.consume(req.context?.auth ?? ANONYMOUS, clientAddress(req));
    const refusal = applyRateDecision(decision, res, req.context);
    if (refusal) throw refusal;
  };
}
