/**
 * REST bindings of notifications, in domain form: the router maps names, pages with the declared
 * bounds and applies the envelopes the spec declares (src/http/rest.ts).
 */
import { SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { NotificationsService } from './service';

export function createNotificationsRest(service: NotificationsService) {
  return bindRest({
    notifications: ({ paging }, context) => service.list(context.auth, paging),
    notificationAction: ({ params, body }, context) => service.act(context.auth, params.id, body.action),
    notificationUnreadCount: async (_r, context) => ({ unread: await service.unreadCount(context.auth) }),
    markNotificationRead: ({ params }, context) => service.markRead(context.auth, params.id),
    markAllNotificationsRead: async (_r, context) => ({ ...SUCCESS, updated: await service.markAllRead(context.auth) }),
    notificationPreferences: (_r, context) => service.preferences(context.auth),
    updateNotificationPreference: ({ params, body }, context) => service.setPreference(context.auth, params.type, body.channel),
  });
}
