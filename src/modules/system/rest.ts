/**
 * REST bindings of the system module, in domain form: the router maps names and applies the
 * envelope the spec declares (src/http/rest.ts); health answers 503 when every dependency is down,
 * readiness when a store does not answer (with Retry-After).
 */
import { RETRY_AFTER_SECONDS } from '../../errors';
import { reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { SystemService } from './service';

export function createSystemRest(service: SystemService) {
  return bindRest({
    async getHealth() {
      const health = await service.health();
      return health.status === 'unhealthy' ? reply(503, health) : health;
    },
    async getReadiness() {
      const readiness = await service.readiness();
      return readiness.status === 'ready' ? readiness : reply(503, readiness, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
    },
    getSchema: async () => reply(200, service.schemaSdl(), { 'Content-Disposition': 'inline; filename="schema.graphql"' }),
  });
}
