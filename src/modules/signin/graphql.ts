/** GraphQL binding of provider sign-in: only the code exchange (the redirects are browser-only). */
import type { MutationResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { SigninService } from './service';

export function createSigninResolvers(service: SigninService): { Mutation: Pick<MutationResolvers<GraphQLContext>, 'exchangeLoginCode'> } {
  return {
    Mutation: {
      exchangeLoginCode: (_p, { loginCode }, context) => service.exchange(loginCode, context.client),
    },
  };
}
