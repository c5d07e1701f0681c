/**
 * Prometheus metrics (prom-client) on a registry of our own, served by the loopback listener in
 * main.ts, never on the public port. Aggregate gauges only; every series carries `service` and
 * `env` labels.
 */
import { Gauge, Registry } from 'prom-client';
import { keptBudget, keptBytes } from './kept';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4';

export interface MetricsSources {
  version: string;
  uptimeSeconds(): number;
  wsSessions(): number;
  wsChannels(): number;
  pools(): Record<string, { connections: number; idle: number }>;
}

export interface Metrics {
  readonly registry: Registry;
  render(): Promise<string>;
}

export function createMetrics(options: { service: string; env: string; sources: MetricsSources }): Metrics {
  const { sources } = options;
  const registry = new Registry();
  registry.setDefaultLabels({ service: options.service, env: options.env });

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
  return { registry, render: () => registry.metrics() };
}
