/**
 * The extensions module: extensions owned by a developer profile or team, their
 * versions, screenshots, testers, analytics and purchases (the publishing routes a developer key
 * reaches on its `extension-dev:*` scope), limit requests and the admin limit levers, public
 * developer and team profiles, account installs, and the internal bot and automation feeds.
 * Beside those, each in its own file: version review (review.ts), installs with their purchase
 * check, `lm_ext_` tokens and the refund hook (installs.ts), install storage and runtime logs
 * published on their channels (runtime.ts), access grants and invites (access.ts), and the
 * account-scoped secret store of installs, sealed at rest (secrets.ts).
 * Supplies the `install_id` channel-account resolver (`ext-storage:{install_id}`) and the
 * `extension_id` owner check of the ExtensionOwner gate kind (`ext-logs:{extension_id}`). Owns its
 * tables only; developer profiles and teams are read through `use('developer')`, sound limits
 * written through `use('sounds')`, which is told extension names for the sounds they upload.
 */
import type { Knex } from 'knex';
import type { ResourceGrantChecker } from '../../auth/gates';
import { defineModule } from '../contract';
import { createAccess } from './access';
import { createBundles } from './bundles';
import { createRatings } from './ratings';
import { createExtensionsResolvers } from './graphql';
import { createInstalls } from './installs';
import { extensionMigrations } from './migrations';
import { createExtensionsRepo } from './repo';
import { createExtensionsRest } from './rest';
import { createReview } from './review';
import { createRuntime } from './runtime';
import { createSecrets } from './secrets';
import { createExtensionsService, type PurchaseRecord } from './service';

export type { PurchaseRecord } from './service';

/** The resource grant an install's own extension token holds on that install (its isolated storage). */
export const OWN_INSTALL_GRANT = 'extension-install:own';

export interface ExtensionsApi {
  /**
   * The gates' resource grants this module answers (`x-resource-grant`): `extension-install:own`
   * is held by an extension token on the install it is bound to, so the install's storage routes
   * admit it without `extension-store:*` (Part 1: "plus its isolated install storage").
   */
  readonly resourceGrants: ResourceGrantChecker;
  recordPurchase(purchase: PurchaseRecord): Promise<void>;
  /**
   * The refund hook (payment-connect `charge.refunded`): marks a purchase refunded by its external
   * id (checkout session or payment intent), disables the account's installs of the extension it
   * paid for and revokes their `lm_ext_` tokens, in one transaction; unknown ids are ignored.
   */
  refundPurchase(externalId: string): Promise<void>;
  /**
   * The subscription hook (payment-connect subscription and invoice events), run in the caller's
   * transaction after it recorded the change: disables the account's installs of a
   * subscription-priced extension while no subscription is active (revoking their tokens), and
   * enables the past-due ones when one is active again. Answers what to run after the commit.
   */
  subscriptionChanged(change: { extensionId: string; accountId: string }, trx: Knex.Transaction): Promise<() => Promise<void>>;
}

declare module '../contract' {
  interface ModuleApis {
    extensions: ExtensionsApi;
  }
}

export const extensionsModule = defineModule({
  name: 'extensions',
  migrations: extensionMigrations,
  build: ({ db, log, use, bus, credentials, revocations, secrets: box }) => {
    const repo = createExtensionsRepo(db.knex);
    const notifications = use('notifications');
    const service = createExtensionsService({ repo, knex: db.knex, developer: use('developer'), sounds: use('sounds'), log, notifications });
    const installs = createInstalls({ repo, knex: db.knex, credentials, revocations, log, mayTest: (userId, row) => service.mayTest(userId, row) });
    const bundles = createBundles({ knex: db.knex, bus, log, develops: (auth, id) => service.ownsExtension(auth, id) });
    const review = createReview({ repo, knex: db.knex, notifications, published: (extensionId) => bundles.announcePublished(extensionId) });
    const runtime = createRuntime({ knex: db.knex, bus, log, ownedExtension: (auth, id) => service.ownedFor(auth, id, 'read') });
    const access = createAccess({ repo, knex: db.knex, ownedForInvite: (auth, id) => service.ownedFor(auth, id, 'inviteTester') });
    const api: ExtensionsApi = {
      resourceGrants: {
        // `extension-install:own` (the storage routes' x-resource-grant): an extension token on its own install.
        async holds(grant, resourceId, ctx) {
          return grant === OWN_INSTALL_GRANT && ctx.kind === 'extension' && resourceId !== null && ctx.binding?.installId === resourceId;
        },
      },
      recordPurchase: (purchase) => service.recordPurchase(purchase), refundPurchase: (externalId) => installs.refundPurchase(externalId), subscriptionChanged: (change, trx) => installs.subscriptionChanged(change, trx) };
    const secrets = createSecrets({ knex: db.knex, box, audit: use('audit') });
    // A sound an extension token uploads is shown with the extension's name (`source_extension_name`).
    use('sounds').useExtensionNames(async (id) => (await repo.extensionById(id))?.name ?? null);
    const parts = { service, installs, review, runtime, access, secrets, bundles, ratings: createRatings({ knex: db.knex }) };
    return {
      api,
      rest: createExtensionsRest(parts),
      resolvers: createExtensionsResolvers(parts),
      channelAccounts: { install_id: ({ install_id: id }: Record<string, string>) => service.installAccount(id ?? '') },
      channelOwners: { extension_id: ({ extension_id: id }: Record<string, string>, ctx) => service.ownsExtension(ctx, id ?? '') },
    };
  },
});
