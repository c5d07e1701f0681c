/**
 * Service health and the GraphQL schema download. Health probes each dependency (relational
 * store, time-series store, cache) in the background, on a short interval and with a timeout each;
 * `health()` serves the last result, so a request never waits on a dead dependency and never runs
 * probes of its own. It owns no storage of its own.
 */
import { typeDefs } from '../../../generated/graphql-schema';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { fairTimeout, loopDelay, watchLoopDelay, type LoopDelay } from '../../infra/loop-delay';
import type { Logger } from '../../infra/logger';

type Schemas = components['schemas'];
export type DependencyHealth = Camelize<Schemas['DependencyHealth']>;
export type DependencyStatus = DependencyHealth['status'];
/** GET /v1/health's data (the spec's HealthResponse). */
export type Health = Camelize<Schemas['HealthResponse']['data']>;
export type OverallStatus = Health['status'];

/** Resolves with a latency in milliseconds, or rejects when the dependency does not answer within `timeoutMs`. */
export type Probe = (timeoutMs: number) => Promise<number>;

type Dependency = keyof Health['services'];

/** Time between two background probe rounds. */
export const PROBE_INTERVAL_MS = 2000;
/** How long one probe may take before its dependency counts as unhealthy. */
export const PROBE_TIMEOUT_MS = 1000;
/**
 * The first round's timeout. It runs before the listener opens (nobody waits on it) while the
 * process is busiest, and also waits out Redis's first connection, so a loaded start-up does not
 * report a live dependency as down.
 */
export const FIRST_PROBE_TIMEOUT_MS = 5000;
/** How long a readiness probe (run on the readiness request itself) may take per store. */
export const READY_PROBE_TIMEOUT_MS = 500;

/** GET /v1/ready's data (the spec's ReadinessResponse). */
export type Readiness = Camelize<Schemas['ReadinessResponse']['data']>;

export interface SystemServiceDeps {
  version: string;
  startedAt: number;
  probes: Record<Dependency, Probe>;
  websocket: () => Health['websocket'];
  now?: () => number;
  probeIntervalMs?: number;
  probeTimeoutMs?: number;
  firstProbeTimeoutMs?: number;
  readyTimeoutMs?: number;
  /**
   * Where an outage of a store is logged: once when a probe first finds it down, once when one
   * finds it back (requests failing meanwhile log at debug only). Only the stores named in
   * `logged` (default: both; the cache's outages are the bus heartbeat's to log).
   */
  log?: Logger;
  logged?: readonly Dependency[];
  /** The event loop's p99 delay past which readiness answers `unavailable` (default LOOP_DELAY_BOUND_MS). */
  loopDelayBoundMs?: number;
  /** The loop delay figures (default: this process's, loop-delay.ts). */
  loopDelay?: () => LoopDelay;
}

/**
 * The event loop's p99 delay (over the last 5 s) past which this node is not ready: it is too
 * busy to answer in time whatever its stores say, and a load balancer should send requests
 * elsewhere until it catches up. A reason of its own, named as such in the readiness answer.
 */
export const LOOP_DELAY_BOUND_MS = 1000;

export function overallStatus(statuses: DependencyStatus[]): OverallStatus {
  const up = statuses.filter((s) => s === 'healthy').length;
  if (up === statuses.length) return 'healthy';
  return up === 0 ? 'unhealthy' : 'degraded';
}

export function createSystemService(deps: SystemServiceDeps) {
  const now = deps.now ?? Date.now;
  const intervalMs = deps.probeIntervalMs ?? PROBE_INTERVAL_MS;
  const timeoutMs = deps.probeTimeoutMs ?? PROBE_TIMEOUT_MS;
  const firstTimeoutMs = deps.firstProbeTimeoutMs ?? Math.max(timeoutMs, FIRST_PROBE_TIMEOUT_MS);
  const names = Object.keys(deps.probes) as Dependency[];
  /** Probes still running past their timeout: a hung dependency is not probed again until it answers. */
  const hanging = new Map<Dependency, number>();
  let last: Health['services'] | null = null;
  let round: Promise<void> | null = null;
  let again = false;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const readyTimeoutMs = deps.readyTimeoutMs ?? READY_PROBE_TIMEOUT_MS;
  const logged = new Set<Dependency>(deps.logged ?? ['relational', 'timeseries']);
  /** Each logged store's last known state and since when (an outage's start and end are logged once each). */
  const known = new Map<Dependency, { status: DependencyStatus; since: number }>();
  let readinessRound: Promise<Readiness['services']> | null = null;
  const loopBoundMs = deps.loopDelayBoundMs ?? LOOP_DELAY_BOUND_MS;
  const loop = deps.loopDelay ?? loopDelay;
  if (!deps.loopDelay) watchLoopDelay();

  function note(name: Dependency, result: DependencyHealth): DependencyHealth {
    if (!logged.has(name)) return result;
    const before = known.get(name);
    if (before?.status === result.status || (!before && result.status === 'healthy')) {
      if (!before) known.set(name, { status: result.status, since: now() });
      return result;
    }
    known.set(name, { status: result.status, since: now() });
    if (result.status === 'unhealthy') deps.log?.warn({ dependency: name }, `${name} store unreachable: requests that need it answer 503 until it returns`);
    else deps.log?.info({ dependency: name, outage_ms: before ? now() - before.since : null }, `${name} store reachable again`);
    return result;
  }

  async function probe(name: Dependency, limitMs: number): Promise<DependencyHealth> {
    return note(name, await probeOnce(name, limitMs));
  }

  async function probeOnce(name: Dependency, limitMs: number): Promise<DependencyHealth> {
    const started = performance.now();
    const since = hanging.get(name);
    if (since !== undefined) return { status: 'unhealthy', latencyMs: Math.round(started - since) };
    let settled = false;
    const running = Promise.resolve()
      .then(() => deps.probes[name](limitMs))
      .finally(() => {
        settled = true;
        hanging.delete(name);
      });
    try {
      // A store is down when its call fails or stays unanswered while the loop was free to read it,
      // not when a busy loop fired the timer late (loop-delay.ts).
      const latency = await fairTimeout(running, limitMs, `${name} probe`);
      return { status: 'healthy', latencyMs: Math.max(0, Math.round(latency)) };
    } catch {
      if (!settled) hanging.set(name, started);
      return { status: 'unhealthy', latencyMs: Math.round(performance.now() - started) };
    }
  }

  /** One round of every probe; a round asked for while one runs follows it (once). */
  function runRound(): Promise<void> {
    if (round) {
      again = true;
      return round;
    }
    round = (async () => {
      const timeout = last ? timeoutMs : firstTimeoutMs;
      const results = await Promise.all(names.map((name) => probe(name, timeout)));
      last = Object.fromEntries(names.map((name, i) => [name, results[i]!])) as Health['services'];
    })().finally(() => {
      round = null;
      if (again && !stopped) {
        again = false;
        void runRound();
      }
    });
    return round;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void runRound().finally(schedule);
    }, intervalMs);
    timer.unref();
  }

  return {
    /**
     * Runs the first probe round, then keeps probing in the background (unref'd timers: the loop
     * never keeps the process alive). Awaited before the listener opens, so the first request has
     * a result to serve.
     */
    async start(): Promise<void> {
      stopped = false;
      await runRound();
      if (!timer && !stopped) schedule();
    },
    /** Stops the background loop (app.close()). */
    stop(): void {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
    },
    /**
     * Probes again now, without waiting for the next tick: a dependency that reports its own
     * outage or recovery (the cache's connection events) is reflected at once.
     */
    probeNow(): void {
      if (!stopped) void runRound();
    },
    /**
     * Readiness for load balancers: the stores probed now, on the asking request (concurrent
     * requests share one round) with a short timeout, so a recovery shows at the first probe after
     * it. Also refreshes what health serves for them.
     */
    async readiness(): Promise<Readiness> {
      readinessRound ??= (async () => {
        const [relational, timeseries] = await Promise.all([probe('relational', readyTimeoutMs), probe('timeseries', readyTimeoutMs)]);
        if (last) last = { ...last, relational, timeseries };
        return { relational, timeseries };
      })().finally(() => {
        readinessRound = null;
      });
      const services = await readinessRound;
      const delay = loop();
      const eventLoop = { status: delay.p99Ms > loopBoundMs ? ('unhealthy' as const) : ('healthy' as const), delayMs: Math.round(delay.p99Ms) };
      const ready = services.relational.status === 'healthy' && services.timeseries.status === 'healthy' && eventLoop.status === 'healthy';
      return { status: ready ? 'ready' : 'unavailable', services, eventLoop };
    },
    /** The last probe result with live uptime and WebSocket gauges; waits only for the very first round. */
    async health(): Promise<Health> {
      if (!last) await runRound();
      const services = last!;
      return {
        status: overallStatus(names.map((name) => services[name].status)),
        version: deps.version,
        uptimeSeconds: Math.max(0, Math.floor((now() - deps.startedAt) / 1000)),
        services,
        websocket: deps.websocket(),
      };
    },
    schemaSdl(): string {
      return typeDefs;
    },
  };
}

export type SystemService = ReturnType<typeof createSystemService>;
