/** REST bindings of the webhook receivers (raw bodies through `context.inbound`) and the shop operator path. */
import type { RequestContext } from '../../http/context';
import { SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { WebhooksService } from './service';

/** The raw request; mounted for every /v1/webhooks/ route by src/http/raw-body.ts. */
function inbound(context: RequestContext) {
  if (!context.inbound) throw new Error('webhook route without its raw body (src/http/raw-body.ts is not mounted)');
  return context.inbound;
}

export function createWebhooksRest(service: WebhooksService) {
  return bindRest({
    platformBWebhookChallenge: async ({ query }) => service.challenge(query),
    platformBWebhook: (_r, context) => service.platformB(inbound(context)),
    platformCWebhook: (_r, context) => service.platformC(inbound(context)),
    tipsPlatformWebhook: (_r, context) => service.signedPlatform('tips_platform', inbound(context)),
    discordWebhook: (_r, context) => service.signedPlatform('discord', inbound(context)),
    shopPlatformWebhook: (_r, context) => service.shopPlatform(inbound(context)),
    paymentProviderWebhook: (_r, context) => service.paymentProvider(inbound(context)),
    paymentConnectWebhook: (_r, context) => service.paymentConnect(inbound(context)),
    payoutProviderWebhook: (_r, context) => service.payoutProvider(inbound(context)),
    adminRecordShopConnection: ({ params, body }, context) => service.recordShop(context.auth, params.id, params.shopDomain, body),
    async adminRemoveShopConnection({ params }, context) {
      await service.removeShop(context.auth, params.id, params.shopDomain);
      return SUCCESS;
    },
  });
}
