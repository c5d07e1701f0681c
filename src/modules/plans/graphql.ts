/** GraphQL bindings of plans, the account-creation override and the active account's features. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { PlansService } from './service';

export function createPlansResolvers(service: PlansService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'adminPlans' | 'plans' | 'accountFeatures'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'adminCreatePlan' | 'adminUpdatePlan' | 'adminDeletePlan' | 'adminUpdateUserAccountCreationOverride'>;
} {
  return {
    Query: {
      adminPlans: () => service.adminPlans(),
      plans: () => service.publicPlans(),
      accountFeatures: (_p, _a, context) => service.accountFeatures(context.auth),
    },
    Mutation: {
      adminCreatePlan: (_p, { input }, context) => service.createPlan(context.auth, input),
      adminUpdatePlan: (_p, { id, input }, context) => service.updatePlan(context.auth, id, input),
      adminDeletePlan: async (_p, { id }, context) => {
        await service.deletePlan(context.auth, id);
        return true;
      },
      adminUpdateUserAccountCreationOverride: (_p, { userId, override }, context) => service.setUserCreationOverride(context.auth, userId, override),
    },
  };
}
