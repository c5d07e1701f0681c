/** Builds the system module (health, schema download) from its dependencies. */
import { createSystemRest } from './rest';
import { createSystemService, type SystemServiceDeps } from './service';

export function createSystemModule(deps: SystemServiceDeps) {
  const service = createSystemService(deps);
  return { service, rest: createSystemRest(service) };
}
