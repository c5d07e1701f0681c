/** GraphQL bindings of notifications: the domain shape is already camelCase. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageParams } from '../../http/envelope';
import { NOTIFICATION_PAGE } from './rest';
import type { NotificationsService } from './service';

export function createNotificationsResolvers(service: NotificationsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'notifications' | 'notificationPreferences'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'notificationAction' | 'updateNotificationPreference'>;
} {
  return {
    Query: {
      notifications: async (_p, args, context) => {
        const page = pageParams({ page: args.page ?? undefined, limit: args.limit ?? undefined }, NOTIFICATION_PAGE);
        const { items, total } = await service.list(context.auth, page);
        return { items, total, page: page.page, limit: page.limit, pages: total === 0 ? 0 : Math.ceil(total / page.limit) };
      },
      notificationPreferences: (_p, _a, context) => service.preferences(context.auth),
    },
    Mutation: {
      notificationAction: (_p, { id, action }, context) => service.act(context.auth, id, action),
      updateNotificationPreference: (_p, { type, channel }, context) => service.setPreference(context.auth, type, channel),
    },
  };
}
