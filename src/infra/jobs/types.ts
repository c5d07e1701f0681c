/**
 * The job system's interface (docs/adr/005-background-jobs.md): named jobs with a handler, enqueued
 * at least once (optionally inside the transaction of the change that causes them), retried with
 * backoff and dead-lettered after their retry limit; periodic jobs run once per period across the
 * cluster. Two implementations: pg-boss on PostgreSQL (./pgboss.ts) and an in-process queue for the
 * embedded store (./memory.ts), which has one node by construction.
 */
import type { Knex } from 'knex';

export type JobData = Record<string, unknown>;
export type JobHandler = (data: JobData) => Promise<void>;

export interface JobOptions {
  /** Attempts after the first (default 2). */
  retryLimit?: number;
  /** Seconds before the first retry (default 1); doubled each retry when retryBackoff. */
  retryDelaySeconds?: number;
  retryBackoff?: boolean;
  /** An attempt running longer than this counts as lost (its node died) and is retried (default 60 s on pg-boss: DEFAULT_EXPIRE_SECONDS). */
  expireInSeconds?: number;
}

export interface JobStats {
  name: string;
  /** Waiting to run (new or waiting for a retry). */
  queued: number;
  running: number;
  /** Failed attempts out of retries, kept for inspection. */
  failed: number;
  /** Jobs in the name's dead-letter queue. */
  deadLettered: number;
  /** Age in seconds of the oldest job ready to run (0 when none waits). */
  oldestQueuedSeconds: number;
}

export interface Jobs {
  readonly kind: 'pg-boss' | 'in-process';
  /** Declares a job kind (before start). Its dead-letter queue is `${name}.dead`. */
  define(name: string, handler: JobHandler, options?: JobOptions): void;
  /**
   * Declares a periodic job: one job per `seconds`-long time slot across every node (the config's
   * `jobs.periods[name]` overrides the period), handled by whichever node takes it first.
   */
  every(name: string, seconds: number, handler: () => Promise<void>, options?: JobOptions): void;
  /** Enqueues a defined job; with `trx` it is queued only if that transaction commits. */
  enqueue(name: string, data?: JobData, options?: { trx?: Knex.Transaction }): Promise<void>;
  /** Starts working (after every module declared its jobs). */
  start(): Promise<void>;
  /** Stops taking jobs and waits for running handlers. */
  stop(): Promise<void>;
  stats(): Promise<JobStats[]>;
}

export const deadLetterOf = (name: string): string => `${name}.dead`;

/** A period in milliseconds as the job system's whole seconds (at least one). */
export const periodSeconds = (ms: number): number => Math.max(1, Math.round(ms / 1000));
