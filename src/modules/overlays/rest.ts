/** REST bindings of overlays, widget instances, their tokens and widget access entries (domain form; the router maps names and envelopes). */
import { SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { OverlaysService } from './service';

export function createOverlaysRest(service: OverlaysService) {
  return bindRest({
    overlays: (_r, context) => service.list(context.auth, 'overlays'),
    createOverlay: ({ body }, context) => service.create(context.auth, 'overlays', body),
    overlay: ({ params }, context) => service.get(context.auth, 'overlays', params.id),
    updateOverlay: ({ params, body }, context) => service.update(context.auth, 'overlays', params.id, body),
    async deleteOverlay({ params }, context) {
      await service.deleteOverlay(context.auth, params.id);
      return SUCCESS;
    },
    rotateOverlayToken: ({ params }, context) => service.rotateOverlayToken(context.auth, params.id),
    createSharedOverlayToken: ({ params, body }, context) => service.createSharedOverlayToken(context.auth, params.id, body.expiresAt),
    async revokeOverlayToken({ params }, context) {
      await service.revokeOverlayToken(context.auth, params.id, params.tokenId);
      return SUCCESS;
    },
    widgets: (_r, context) => service.list(context.auth, 'widgets'),
    createWidget: ({ body }, context) => service.create(context.auth, 'widgets', body),
    widget: ({ params }, context) => service.get(context.auth, 'widgets', params.id),
    updateWidget: ({ params, body }, context) => service.update(context.auth, 'widgets', params.id, body),
    async deleteWidget({ params }, context) {
      await service.deleteWidget(context.auth, params.id);
      return SUCCESS;
    },
    rotateWidgetToken: ({ params }, context) => service.rotateWidgetToken(context.auth, params.id),
    async revokeWidgetToken({ params }, context) {
      await service.revokeWidgetToken(context.auth, params.id);
      return SUCCESS;
    },
    widgetAccess: ({ params }, context) => service.access(context.auth, params.id),
    grantWidgetAccess: ({ params, body }, context) => service.grantAccess(context.auth, params.id, body),
    async revokeWidgetAccess({ params }, context) {
      await service.revokeAccess(context.auth, params.id, params.accessId);
      return SUCCESS;
    },
  });
}
