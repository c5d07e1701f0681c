/** REST bindings of notifications: name mapping only. */
import type { RestHandlers } from '../../../generated/rest';
import type { RequestContext } from '../../http/context';
import { collection, pageParams, single } from '../../http/envelope';
import type { Notification, NotificationPreference, NotificationsService } from './service';

export const NOTIFICATION_PAGE = { defaultLimit: 25, maxLimit: 100 };

const notification = (n: Notification) => ({ id: n.id, type: n.type, data: n.data, status: n.status, created_at: n.createdAt, read_at: n.readAt });
const preference = (p: NotificationPreference) => ({ type: p.type, channel: p.channel, locked: p.locked });

type Handlers = Pick<RestHandlers<RequestContext>, 'notifications' | 'notificationAction' | 'notificationPreferences' | 'updateNotificationPreference'>;

export function createNotificationsRest(service: NotificationsService): Handlers {
  return {
    async notifications({ query }, context) {
      const page = pageParams(query ?? {}, NOTIFICATION_PAGE);
      const { items, total } = await service.list(context.auth, page);
      return { status: 200, body: collection(items.map(notification), { total, page: page.page, limit: page.limit }, context.selfUrl) };
    },
    async notificationAction({ params, body }, context) {
      return { status: 200, body: single(notification(await service.act(context.auth, params.id, body.action)), `/v1/notifications/${params.id}`) };
    },
    async notificationPreferences(_request, context) {
      return { status: 200, body: single((await service.preferences(context.auth)).map(preference), context.selfUrl) };
    },
    async updateNotificationPreference({ params, body }, context) {
      return { status: 200, body: single(preference(await service.setPreference(context.auth, params.type, body.channel)), context.selfUrl) };
    },
  };
}
