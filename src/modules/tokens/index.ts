/**
 * The tokens module (effective permissions, popout tokens). A member leaving an account is handled
 * by the apikeys module (it purges their personal keys and clears `created_by` on the service keys
 * and popout tokens they created, in the removal's transaction).
 */
import { defineModule } from '../contract';
import { createTokensResolvers } from './graphql';
import { createTokensRest } from './rest';
import { createTokensService, type TokensService } from './service';

declare module '../contract' {
  interface ModuleApis {
    tokens: TokensService;
  }
}

export const tokensModule = defineModule({
  name: 'tokens',
  build: ({ credentials, revocations, use }) => {
    const service = createTokensService({ store: credentials, accounts: use('accounts'), audit: use('audit'), revocations });
    return { api: service, rest: createTokensRest(service), resolvers: createTokensResolvers(service) };
  },
});
