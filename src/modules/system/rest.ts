/**
 * REST bindings of the system module, in domain form: the router maps names and applies the
 * envelope the spec declares (src/http/rest.ts); health answers 503 when every dependency is down.
 */
import { reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { SystemService } from './service';

export function createSystemRest(service: SystemService) {
  return bindRest({
    async getHealth() {
      const health = await service.health();
      return health.status === 'unhealthy' ? reply(503, health) : health;
    },
    getSchema: async () => reply(200, service.schemaSdl(), { 'Content-Disposition': 'inline; filename="schema.graphql"' }),
  });
}
