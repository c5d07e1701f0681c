/**
 * The extensions module (issue 14): extensions owned by a developer profile or team, their
 * versions, screenshots, testers, analytics and purchases (the publishing routes a developer key
 * reaches on its `extension-dev:*` scope), limit requests and the admin limit levers, public
 * developer and team profiles, account installs, and the internal bot and automation feeds.
 * Supplies the `install_id` channel-account resolver (`ext-storage:{install_id}`) and the
 * `extension_id` owner check of the ExtensionOwner gate kind (`ext-logs:{extension_id}`). Owns its
 * tables only; developer profiles and teams are read through `use('developer')`, sound limits
 * written through `use('sounds')`.
 */
import { defineModule } from '../contract';
import { extensionMigrations } from './migrations';
import { createExtensionsRepo } from './repo';
import { createExtensionsRest } from './rest';
import { createExtensionsService, type PurchaseRecord } from './service';

export type { PurchaseRecord } from './service';

export interface ExtensionsApi {
  recordPurchase(purchase: PurchaseRecord): Promise<void>;
  /** Marks a purchase refunded by its external id (checkout session or payment intent); unknown ids are ignored. */
  refundPurchase(externalId: string): Promise<void>;
}

declare module '../contract' {
  interface ModuleApis {
    extensions: ExtensionsApi;
  }
}

export const extensionsModule = defineModule({
  name: 'extensions',
  migrations: extensionMigrations,
  build: ({ db, log, use }) => {
    const service = createExtensionsService({ repo: createExtensionsRepo(db.knex), knex: db.knex, developer: use('developer'), sounds: use('sounds'), log, notifications: use('notifications') });
    const api: ExtensionsApi = { recordPurchase: (purchase) => service.recordPurchase(purchase), refundPurchase: (externalId) => service.refundPurchase(externalId) };
    return {
      api,
      rest: createExtensionsRest(service),
      channelAccounts: { install_id: ({ install_id: id }: Record<string, string>) => service.installAccount(id ?? '') },
      channelOwners: { extension_id: ({ extension_id: id }: Record<string, string>, ctx) => service.ownsExtension(ctx, id ?? '') },
    };
  },
});
