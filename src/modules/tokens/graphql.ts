/** GraphQL bindings of the tokens module: the domain shape is already camelCase. */
import type { QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { TokensService } from './service';

export function createTokensResolvers(service: TokensService): { Query: Pick<QueryResolvers<GraphQLContext>, 'myPermissions'> } {
  return {
    Query: {
      myPermissions: (_parent, _args, context) => service.myPermissions(context.auth),
    },
  };
}
