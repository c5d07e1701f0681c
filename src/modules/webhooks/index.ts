/**
 * The webhooks module: the signed inbound receivers (scaffold).
 */
import { defineModule } from '../contract';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface WebhooksApi {}

declare module '../contract' {
  interface ModuleApis {
    webhooks: WebhooksApi;
  }
}

export const webhooksModule = defineModule({
  name: 'webhooks',
  build: () => ({ api: {} as WebhooksApi }),
});
