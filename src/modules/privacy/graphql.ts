/** GraphQL bindings of privacy erasure: the domain shape is already camelCase. */
import type { MutationResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { PrivacyService } from './service';

export function createPrivacyResolvers(service: PrivacyService): { Mutation: Pick<MutationResolvers<GraphQLContext>, 'adminEraseChatSubject' | 'adminErasePlatformBMember'> } {
  return {
    Mutation: {
      adminEraseChatSubject: (_p, { input }, context) => service.eraseChatSubject(context.auth, input),
      adminErasePlatformBMember: (_p, { id }, context) => service.erasePlatformBMember(context.auth, id),
    },
  };
}
