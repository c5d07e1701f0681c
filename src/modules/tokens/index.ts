/** Builds the tokens module (effective permissions, popout tokens) from its dependencies. */
import { createTokensResolvers } from './graphql';
import { createTokensRest } from './rest';
import { createTokensService } from './service';

export function createTokensModule(deps: Parameters<typeof createTokensService>[0]) {
  const service = createTokensService(deps);
  return { service, rest: createTokensRest(service), resolvers: createTokensResolvers(service) };
}
