/** Builds the sessions module (login sessions, JWTs, popout sessions) from its dependencies. */
import { createSessionsResolvers } from './graphql';
import { createSessionsRest } from './rest';
import { createSessionsService, type SessionsDeps } from './service';

export function createSessionsModule(deps: SessionsDeps) {
  const service = createSessionsService(deps);
  return { service, rest: createSessionsRest(service), resolvers: createSessionsResolvers(service) };
}
