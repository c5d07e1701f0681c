/** GraphQL bindings of payout requests: the domain shape is already camelCase; paging uses the REST twin's declared bounds. */
import type { QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageFor } from '../../http/paging';
import type { PayoutsService } from './service';
import type { PayoutStatus } from './types';

export function createPayoutsResolvers(service: PayoutsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'developerPayouts' | 'developerPayout'>;
} {
  return {
    Query: {
      developerPayouts: (_p, { teamId, status, page, limit }, context) => service.list(context.auth, { teamId: teamId ?? undefined, status: (status ?? undefined) as PayoutStatus | undefined }, pageFor('developerPayouts', { page, limit })),
      developerPayout: (_p, { id }, context) => service.get(context.auth, id),
    },
  };
}
