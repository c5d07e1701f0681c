/**
 * The tokens module (effective permissions, popout tokens). It holds members' credentials, so it
 * purges them when a member leaves an account (a hook of the accounts module).
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
    const accounts = use('accounts');
    accounts.onMemberLeaving((trx, accountId, userId) => credentials.purgeMember(trx, accountId, userId));
    const service = createTokensService({ store: credentials, accounts, audit: use('audit'), revocations });
    return { api: service, rest: createTokensRest(service), resolvers: createTokensResolvers(service) };
  },
});
