/** GraphQL bindings of the developer module: the domain shape is already camelCase. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { DeveloperService } from './service';

export function createDeveloperResolvers(service: DeveloperService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'developerApiKeys' | 'myDeveloperApplication' | 'developerVerificationStatus'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'createDeveloperApiKey' | 'updateDeveloperApiKey' | 'revokeDeveloperApiKey' | 'submitDeveloperApplication' | 'submitDeveloperVerification'>;
} {
  return {
    Query: {
      developerApiKeys: (_p, _a, context) => service.developerApiKeys(context.auth),
      myDeveloperApplication: (_p, _a, context) => service.myDeveloperApplication(context.auth),
      developerVerificationStatus: (_p, _a, context) => service.developerVerificationStatus(context.auth),
    },
    Mutation: {
      createDeveloperApiKey: (_p, { input }, context) => service.createDeveloperApiKey(context.auth, input),
      updateDeveloperApiKey: (_p, { id, label }, context) => service.updateDeveloperApiKey(context.auth, id, label),
      revokeDeveloperApiKey: (_p, { id }, context) => service.revokeDeveloperApiKey(context.auth, id),
      submitDeveloperApplication: (_p, { input }, context) => service.submitDeveloperApplication(context.auth, input),
      submitDeveloperVerification: (_p, { input }, context) => service.submitDeveloperVerification(context.auth, input),
    },
  };
}
