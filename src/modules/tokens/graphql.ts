/** GraphQL bindings of the tokens module: the domain shape is already camelCase. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { TokensService } from './service';

export function createTokensResolvers(service: TokensService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'myPermissions' | 'popoutTokens'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'createPopoutToken' | 'revokePopoutToken'>;
} {
  return {
    Query: {
      myPermissions: (_parent, _args, context) => service.myPermissions(context.auth),
      popoutTokens: (_parent, _args, context) => service.popoutTokens(context.auth),
    },
    Mutation: {
      createPopoutToken: (_parent, { input }, context) => service.createPopoutToken(context.auth, input),
      revokePopoutToken: async (_parent, { id }, context) => {
        await service.revokePopoutToken(context.auth, id);
        return true;
      },
    },
  };
}
