/**
 * Service health and the GraphQL schema download. Health probes each dependency live (relational
 * store, time-series store, cache) with a short timeout; it owns no storage of its own.
 */
import { typeDefs } from '../../../generated/graphql-schema';

export type DependencyStatus = 'healthy' | 'unhealthy';
export type OverallStatus = 'healthy' | 'degraded' | 'unhealthy';

export interface DependencyHealth {
  status: DependencyStatus;
  latencyMs: number;
}

export interface Health {
  status: OverallStatus;
  version: string;
  uptimeSeconds: number;
  services: { relational: DependencyHealth; timeseries: DependencyHealth; cache: DependencyHealth };
  websocket: { sessions: number; channels: number };
}

/** Resolves with a latency in milliseconds, or rejects when the dependency does not answer. */
export type Probe = () => Promise<number>;

export interface SystemServiceDeps {
  version: string;
  startedAt: number;
  probes: { relational: Probe; timeseries: Probe; cache: Probe };
  websocket: () => { sessions: number; channels: number };
  now?: () => number;
}

export function overallStatus(statuses: DependencyStatus[]): OverallStatus {
  const up = statuses.filter((s) => s === 'healthy').length;
  if (up === statuses.length) return 'healthy';
  return up === 0 ? 'unhealthy' : 'degraded';
}

export function createSystemService(deps: SystemServiceDeps) {
  const now = deps.now ?? Date.now;

  async function probe(run: Probe): Promise<DependencyHealth> {
    const started = performance.now();
    try {
      return { status: 'healthy', latencyMs: Math.max(0, Math.round(await run())) };
    } catch {
      return { status: 'unhealthy', latencyMs: Math.round(performance.now() - started) };
    }
  }

  return {
    async health(): Promise<Health> {
      const [relational, timeseries, cache] = await Promise.all([
        probe(deps.probes.relational),
        probe(deps.probes.timeseries),
        probe(deps.probes.cache),
      ]);
      return {
        status: overallStatus([relational.status, timeseries.status, cache.status]),
        version: deps.version,
        uptimeSeconds: Math.max(0, Math.floor((now() - deps.startedAt) / 1000)),
        services: { relational, timeseries, cache },
        websocket: deps.websocket(),
      };
    },
    schemaSdl(): string {
      return typeDefs;
    },
  };
}

export type SystemService = ReturnType<typeof createSystemService>;
