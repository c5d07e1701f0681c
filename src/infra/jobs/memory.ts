/**
 * Jobs in this process, for the embedded store (PGlite: one node by construction, so "once per
 * cluster" is "once per process"). The same contract as the pg-boss implementation: at least once
 * while the process lives, retries with delay and backoff, `${name}.dead` after the retry limit,
 * one job per period slot, and an enqueue inside a transaction that counts only once it commits.
 * Queued jobs do not survive a restart (the embedded store serves development and tests).
 */
import type { Logger } from '../logger';
import { type JobData, type JobHandler, type JobOptions, type Jobs, type JobStats } from './types';

interface Queued {
  name: string;
  data: JobData;
  attempt: number;
  runAt: number;
  createdAt: number;
}

interface Lane {
  handler: JobHandler;
  options: Required<Pick<JobOptions, 'retryLimit' | 'retryDelaySeconds' | 'retryBackoff'>>;
  every?: number;
  queued: Queued[];
  running: number;
  failed: number;
  dead: Queued[];
  lastSlot: number;
}

export function createMemoryJobs(deps: { log: Logger; pollIntervalMs: number; periods: Readonly<Record<string, number>>; now?: () => number }): Jobs {
  const now = deps.now ?? Date.now;
  const lanes = new Map<string, Lane>();
  const timers: NodeJS.Timeout[] = [];
  const inFlight = new Set<Promise<void>>();
  let started = false;
  let stopped = false;
  let pump: NodeJS.Timeout | undefined;

  const define = (name: string, handler: JobHandler, options: JobOptions, every?: number) => {
    if (started) throw new Error(`job ${name} is defined after the job system started`);
    if (lanes.has(name)) throw new Error(`job ${name} is defined twice`);
    lanes.set(name, {
      handler,
      options: { retryLimit: options.retryLimit ?? 2, retryDelaySeconds: options.retryDelaySeconds ?? 1, retryBackoff: options.retryBackoff ?? true },
      every,
      queued: [],
      running: 0,
      failed: 0,
      dead: [],
      lastSlot: -1,
    });
  };

  /** Starts the first due job of every idle lane (one job at a time per name). */
  function drain(): void {
    if (stopped || !started) return;
    for (const lane of lanes.values()) {
      if (lane.running > 0) continue;
      const index = lane.queued.findIndex((job) => job.runAt <= now());
      if (index < 0) continue;
      const [job] = lane.queued.splice(index, 1);
      lane.running += 1;
      const run: Promise<void> = lane
        .handler(job!.data)
        .catch((error: unknown) => {
          deps.log.warn({ err: error, job: job!.name, attempt: job!.attempt }, 'job failed');
          if (job!.attempt >= lane.options.retryLimit) {
            lane.failed += 1;
            lane.dead.push(job!);
            return;
          }
          const delay = lane.options.retryDelaySeconds * 1000 * (lane.options.retryBackoff ? 2 ** job!.attempt : 1);
          lane.queued.push({ ...job!, attempt: job!.attempt + 1, runAt: now() + delay });
        })
        .finally(() => {
          lane.running -= 1;
          inFlight.delete(run);
          setImmediate(drain);
        });
      inFlight.add(run);
    }
  }

  function push(name: string, data: JobData): void {
    lanes.get(name)!.queued.push({ name, data, attempt: 0, runAt: now(), createdAt: now() });
    setImmediate(drain);
  }

  function offer(name: string, lane: Lane): void {
    const slot = Math.floor(now() / (lane.every! * 1000));
    if (slot === lane.lastSlot || stopped) return;
    lane.lastSlot = slot;
    push(name, {});
  }

  return {
    kind: 'in-process',
    define(name, handler, options = {}) {
      define(name, handler, options);
    },
    every(name, seconds, handler, options = {}) {
      define(name, () => handler(), options, deps.periods[name] ?? seconds);
    },
    async enqueue(name, data = {}, options = {}) {
      if (!lanes.has(name)) throw new Error(`job ${name} is not defined`);
      if (!options.trx) return push(name, data);
      // Queued once the transaction commits; nothing when it rolls back.
      options.trx.executionPromise.then(
        () => push(name, data),
        () => undefined,
      );
      return Promise.resolve();
    },
    start() {
      started = true;
      for (const [name, lane] of lanes) {
        if (!lane.every) continue;
        offer(name, lane);
        const timer = setInterval(() => offer(name, lane), Math.max(100, (lane.every * 1000) / 2));
        timer.unref();
        timers.push(timer);
      }
      pump = setInterval(drain, deps.pollIntervalMs);
      pump.unref();
      drain();
      return Promise.resolve();
    },
    async stop() {
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      clearInterval(pump);
      await Promise.allSettled([...inFlight]);
    },
    stats() {
      const at = now();
      return Promise.resolve(
        [...lanes].map(([name, lane]): JobStats => {
          const ready = lane.queued.filter((job) => job.runAt <= at);
          return {
            name,
            queued: lane.queued.length,
            running: lane.running,
            failed: lane.failed,
            deadLettered: lane.dead.length,
            oldestQueuedSeconds: ready.length ? (at - Math.min(...ready.map((job) => job.createdAt))) / 1000 : 0,
          };
        }),
      );
    },
  };
}
