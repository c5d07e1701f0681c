/** GraphQL bindings of notifications: the domain shape is already camelCase; paging uses the REST twin's declared bounds. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageFor } from '../../http/paging';
import type { NotificationsService } from './service';

export function createNotificationsResolvers(service: NotificationsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'notifications' | 'notificationPreferences' | 'notificationUnreadCount'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'notificationAction' | 'updateNotificationPreference' | 'markNotificationRead' | 'markAllNotificationsRead'>;
} {
  return {
    Query: {
      notifications: (_p, args, context) => service.list(context.auth, pageFor('notifications', args)),
      notificationPreferences: (_p, _a, context) => service.preferences(context.auth),
      notificationUnreadCount: (_p, _a, context) => service.unreadCount(context.auth),
    },
    Mutation: {
      notificationAction: (_p, { id, action }, context) => service.act(context.auth, id, action),
      markNotificationRead: (_p, { id }, context) => service.markRead(context.auth, id),
      markAllNotificationsRead: (_p, _a, context) => service.markAllRead(context.auth),
      updateNotificationPreference: (_p, { type, channel }, context) => service.setPreference(context.auth, type, channel),
    },
  };
}
