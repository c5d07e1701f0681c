/**
 * The workers module (docs/adr/005-background-jobs.md): the ingest leases (which node
 * holds which platform channel's ingest) and GET /v1/admin/workers, which shows them beside the
 * job queues. Owns `worker_nodes` and `worker_leases`. Modules with owned work (chat's platform
 * ingest) register it with `leases.own(...)` during their build; the leases start with this
 * module and are given up when it closes.
 */
import { bindRest } from '../../http/rest';
import { defineModule } from '../contract';
import { createLeases, defaultNodeId, type Leases, type WorkersView } from './leases';
import { workerMigrations } from './migrations';

export type { OwnedWork } from './leases';

export interface WorkersApi {
  readonly leases: Leases;
}

declare module '../contract' {
  interface ModuleApis {
    workers: WorkersApi;
  }
}

export const workersModule = defineModule({
  name: 'workers',
  migrations: workerMigrations,
  build: ({ db, log, config, jobs }) => {
    const leases = createLeases({ knex: db.knex, log, nodeId: config.jobs.node_id ?? defaultNodeId(), ttlMs: config.jobs.lease_ttl_ms, renewMs: config.jobs.lease_renew_ms, version: config.version });
    return {
      api: { leases },
      rest: bindRest({
        async adminWorkers(): Promise<WorkersView> {
          const [{ nodes, leases: held }, queues] = await Promise.all([leases.snapshot(), jobs.stats()]);
          const counts = new Map<string, number>();
          for (const lease of held) counts.set(lease.nodeId, (counts.get(lease.nodeId) ?? 0) + 1);
          return {
            nodeId: leases.nodeId,
            nodes: nodes.map((n) => ({ ...n, channels: counts.get(n.nodeId) ?? 0 })),
            channels: held.map((lease) => {
              const split = lease.unit.indexOf(':');
              return {
                platform: lease.kind as 'platform_a' | 'platform_b' | 'music_platform',
                accountId: lease.unit.slice(0, split),
                platformChannelId: lease.unit.slice(split + 1),
                nodeId: lease.nodeId,
                fence: lease.fence,
                acquiredAt: lease.acquiredAt,
                expiresAt: lease.expiresAt,
              };
            }),
            // The jobs' figures (JobStats) are the spec's JobQueueFigures member for member.
            jobs: queues,
          };
        },
      }),
      start: () => leases.start(),
      close: () => leases.stop(),
    };
  },
});
