/** REST bindings of the system module: name mapping only. */
import type { RestHandlers } from '../../../generated/rest';
import type { RequestContext } from '../../http/context';
import { single } from '../../http/envelope';
import type { DependencyHealth, SystemService } from './service';

const dependency = (d: DependencyHealth) => ({ status: d.status, latency_ms: d.latencyMs });

export function createSystemRest(service: SystemService): Pick<RestHandlers<RequestContext>, 'getHealth' | 'getSchema'> {
  return {
    async getHealth(_request, context) {
      const health = await service.health();
      const body = single(
        {
          status: health.status,
          version: health.version,
          uptime_seconds: health.uptimeSeconds,
          services: {
            relational: dependency(health.services.relational),
            timeseries: dependency(health.services.timeseries),
            cache: dependency(health.services.cache),
          },
          websocket: health.websocket,
        },
        context.selfUrl,
      );
      return health.status === 'unhealthy' ? { status: 503, body } : { status: 200, body };
    },
    async getSchema() {
      return {
        status: 200,
        body: service.schemaSdl(),
        headers: { 'Content-Disposition': 'inline; filename="schema.graphql"' },
      };
    },
  };
}
