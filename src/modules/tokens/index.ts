/** Builds the tokens module from its dependencies. */
import { createTokensResolvers } from './graphql';
import { createTokensRest } from './rest';
import { createTokensService } from './service';

export function createTokensModule() {
  const service = createTokensService();
  return { service, rest: createTokensRest(service), resolvers: createTokensResolvers(service) };
}
