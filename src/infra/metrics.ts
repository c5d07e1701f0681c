/**
 * Prometheus metrics (prom-client) on a registry of our own, served by the loopback listener in
 * main.ts, never on the public port. Aggregate gauges only; every series carries `service` and
 * `env` labels.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { JobStats } from './jobs/types';
import { keptAnswers } from './db/hot-read';
import { keptBudget, keptBytes } from './kept';
import { loopDelay, watchLoopDelay } from './loop-delay';
import { readBudgetFigures } from './read-budget';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4';

export interface MetricsSources {
  version: string;
  uptimeSeconds(): number;
  wsSessions(): number;
  wsChannels(): number;
  pools(): Record<string, { connections: number; idle: number }>;
  /** Statements sent per pool since start (src/infra/db/statement.ts `statementCounter`). */
  statements?(): Record<string, number>;
  /** Queue figures of every job kind (src/infra/jobs). */
  jobs?(): Promise<JobStats[]>;
  /** Mail delivered, retries scheduled and mail given up by this node (src/modules/mail). */
  mail?(): { sent: number; retried: number; failed: number };
  /** Inbound platform frames rejected by this node, by `platform:reason` (src/modules/platforms/contracts.ts). */
  platformFrames?(): Record<string, number>;
}

export interface Metrics {
  readonly registry: Registry;
  render(): Promise<string>;
}

export function createMetrics(options: { service: string; env: string; sources: MetricsSources }): Metrics {
  const { sources } = options;
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service, env: options.env });
  /** A counter whose per-label running totals the process keeps itself: each scrape carries them in. */
  const totalsCounter = (name: string, help: string, label: string, totals: () => Record<string, number>) =>
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [registry],
      collect() {
        this.reset();
        for (const [value, count] of Object.entries(totals())) this.inc({ [label]: value }, count);
      },
    });

  new Gauge({
    name: 'svc_build_info',
    help: 'Build information; the value is always 1.',
    labelNames: ['version'],
    registers: [registry],
    collect() {
      this.set({ version: sources.version }, 1);
    },
  });
  new Gauge({
    name: 'svc_kept_bytes',
    help: 'Estimated bytes of results kept in process memory for later requests (config memory.kept_bytes bounds them).',
    registers: [registry],
    collect() {
      this.set(keptBytes());
    },
  });
  totalsCounter('svc_kept_answers_total', 'Calls of a named read (events.page, events.text) that a kept result answered instead of the database, since start.', 'read', keptAnswers);
  new Gauge({
    name: 'svc_event_loop_delay_seconds',
    help: "The event loop's own delay over the last 5 s (p50, p99, max): a busy node, told apart from a slow dependency.",
    labelNames: ['quantile'],
    registers: [registry],
    collect() {
      watchLoopDelay();
      const delay = loopDelay();
      this.set({ quantile: '0.5' }, delay.p50Ms / 1000);
      this.set({ quantile: '0.99' }, delay.p99Ms / 1000);
      this.set({ quantile: '1' }, delay.maxMs / 1000);
    },
  });
  new Gauge({
    name: 'svc_read_budget_bytes_in_flight',
    help: 'Bytes of event pages held for answers not yet written out (config events.read_budget_bytes bounds them per node).',
    registers: [registry],
    collect() {
      this.set(readBudgetFigures.inFlightBytes);
    },
  });
  new Counter({
    name: 'svc_read_budget_refused_total',
    help: 'Large reads refused with 503 because the node budget of bytes in flight had no room within events.read_wait_ms, since start.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(readBudgetFigures.refused);
    },
  });
  new Gauge({
    name: 'svc_kept_bytes_budget',
    help: 'The bound of svc_kept_bytes (config memory.kept_bytes).',
    registers: [registry],
    collect() {
      this.set(keptBudget());
    },
  });
  new Gauge({
    name: 'svc_uptime_seconds',
    help: 'Seconds since the process started.',
    registers: [registry],
    collect() {
      this.set(sources.uptimeSeconds());
    },
  });
  new Gauge({
    name: 'svc_websocket_sessions',
    help: 'Open WebSocket sessions on this node.',
    registers: [registry],
    collect() {
      this.set(sources.wsSessions());
    },
  });
  new Gauge({
    name: 'svc_websocket_channels',
    help: 'Distinct subscribed WebSocket channels on this node.',
    registers: [registry],
    collect() {
      this.set(sources.wsChannels());
    },
  });
  new Gauge({
    name: 'svc_pool_connections',
    help: 'Open connections per pool.',
    labelNames: ['pool'],
    registers: [registry],
    collect() {
      for (const [pool, stats] of Object.entries(sources.pools())) this.set({ pool }, stats.connections);
    },
  });
  new Gauge({
    name: 'svc_pool_idle',
    help: 'Idle connections per pool.',
    labelNames: ['pool'],
    registers: [registry],
    collect() {
      for (const [pool, stats] of Object.entries(sources.pools())) this.set({ pool }, stats.idle);
    },
  });
  totalsCounter('svc_db_statements_total', "Statements this node sent to the database, per pool (queries and transactions' BEGIN and COMMIT alike).", 'pool', () => sources.statements?.() ?? {});
  // Job queues: one query per scrape, shared by the gauges below.
  let pending: Promise<JobStats[]> | null = null;
  const jobStats = () => {
    pending ??= (sources.jobs?.() ?? Promise.resolve([])).finally(() => setImmediate(() => (pending = null)));
    return pending.catch(() => [] as JobStats[]);
  };
  const jobGauge = (name: string, help: string, value: (s: JobStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['job'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const stats of await jobStats()) this.set({ job: stats.name }, value(stats));
      },
    });
  jobGauge('svc_jobs_queued', 'Jobs waiting to run (new or waiting for a retry), per job kind.', (s) => s.queued);
  jobGauge('svc_jobs_running', 'Jobs running now, per job kind.', (s) => s.running);
  jobGauge('svc_jobs_failed', 'Jobs that failed out of retries, per job kind.', (s) => s.failed);
  jobGauge('svc_jobs_dead_lettered', 'Jobs in the dead-letter queue, per job kind.', (s) => s.deadLettered);
  // Mail: the mail module counts; each scrape carries its running totals into the counters.
  const mailCounter = (name: string, help: string, value: (c: { sent: number; retried: number; failed: number }) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const counts = sources.mail?.();
        if (!counts) return;
        this.reset();
        this.inc(value(counts));
      },
    });
  mailCounter('svc_mail_sent_total', 'Mail messages the transport accepted, on this node.', (c) => c.sent);
  mailCounter('svc_mail_retried_total', 'Mail tries that failed and were scheduled again, on this node.', (c) => c.retried);
  mailCounter('svc_mail_failed_total', 'Mail messages given up (out of tries or refused for good), on this node.', (c) => c.failed);
  new Counter({
    name: 'svc_platform_frames_rejected_total',
    help: 'Inbound platform frames and payloads rejected against spec/platforms/ (reason unknown or malformed), on this node.',
    labelNames: ['platform', 'reason'],
    registers: [registry],
    collect() {
      const totals = sources.platformFrames?.();
      if (!totals) return;
      this.reset();
      for (const [key, count] of Object.entries(totals)) {
        const split = key.lastIndexOf(':');
        this.inc({ platform: key.slice(0, split), reason: key.slice(split + 1) }, count);
      }
    },
  });
  jobGauge('svc_jobs_oldest_queued_seconds', 'Age of the oldest job ready to run, per job kind (0: none waits).', (s) => s.oldestQueuedSeconds);
  return { registry, render: () => registry.metrics() };
}
