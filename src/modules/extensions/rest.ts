/** REST bindings of the extensions surface, in domain form (the router maps names, pages and applies the declared envelopes). */
import { SUCCESS, reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { Access } from './access';
import type { Bundles } from './bundles';
import type { Ratings } from './ratings';
import type { Installs } from './installs';
import type { Review } from './review';
import type { Runtime } from './runtime';
import type { Secrets } from './secrets';
import type { ExtensionsService } from './service';

export interface ExtensionsParts {
  service: ExtensionsService;
  installs: Installs;
  review: Review;
  runtime: Runtime;
  access: Access;
  secrets: Secrets;
  bundles: Bundles;
  ratings: Ratings;
}

export function createExtensionsRest({ service, installs, review, runtime, access, secrets, bundles, ratings }: ExtensionsParts) {
  return bindRest({
    developerExtensions: (_r, context) => service.list(context.auth),
    createDeveloperExtension: async ({ body }, context) => reply(201, await service.create(context.auth, body)),
    developerExtension: ({ params }, context) => service.get(context.auth, params.id),
    updateDeveloperExtension: ({ params, body }, context) => service.update(context.auth, params.id, body),
    async deleteDeveloperExtension({ params }, context) {
      await service.remove(context.auth, params.id);
      return SUCCESS;
    },
    extensionVersions: ({ params }, context) => service.versions(context.auth, params.id),
    createExtensionVersion: async ({ params, body }, context) => reply(201, await service.createVersion(context.auth, params.id, body)),
    uploadExtensionVersion: ({ params, body }, context) => service.uploadVersion(context.auth, params.id, params.versionId, body),
    publishExtensionVersion: ({ params }, context) => service.publishVersion(context.auth, params.id, params.versionId),
    extensionAnalytics: ({ params }, context) => service.analytics(context.auth, params.id),
    developerExtensionLimits: ({ params }, context) => service.limits(context.auth, params.id),
    extensionPurchases: ({ params, paging }, context) => service.purchases(context.auth, params.id, paging),
    extensionTesters: ({ params }, context) => service.testers(context.auth, params.id),
    addExtensionTester: async ({ params, body }, context) => reply(201, await service.addTester(context.auth, params.id, body.userId)),
    async removeExtensionTester({ params }, context) {
      await service.removeTester(context.auth, params.id, params.userId);
      return SUCCESS;
    },
    extensionScreenshots: ({ params }, context) => service.screenshots(context.auth, params.id),
    addExtensionScreenshot: async ({ params, body }, context) => reply(201, await service.addScreenshot(context.auth, params.id, body)),
    async removeExtensionScreenshot({ params }, context) {
      await service.removeScreenshot(context.auth, params.id, params.screenshotId);
      return SUCCESS;
    },
    developerLimits: ({ query }, context) => service.developerLimits(context.auth, query.extensionId),
    developerLimitRequests: ({ query }, context) => service.limitRequests(context.auth, query.status),
    createLimitRequest: async ({ body }, context) => reply(201, await service.createLimitRequest(context.auth, body)),
    developerLimitRequestEvents: ({ params }, context) => service.limitRequestEvents(context.auth, params.id),
    developerPublicProfile: ({ params }) => service.developerProfile(params.slug),
    teamPublicProfile: ({ params }) => service.teamProfile(params.slug),
    adminLimitRequests: ({ query }) => service.adminLimitRequests(query.status),
    reviewLimitRequest: ({ params, body }, context) => service.review(context.auth, params.id, body),
    startLimitRequestReview: ({ params }, context) => service.startReview(context.auth, params.id),
    adminLimitRequestEvents: ({ params }) => service.adminLimitRequestEvents(params.id),
    adminDeveloperLimitRequests: ({ params }) => service.adminDeveloperLimitRequests(params.id),
    adminSetExtensionLimits: ({ params, body }) => service.adminSetLimits(params.id, body),
    extensionInstalls: (_r, context) => installs.installs(context.auth),
    installExtension: async ({ body }, context) => reply(201, await installs.install(context.auth, body)),
    updateExtensionInstall: ({ params, body }, context) => installs.updateInstall(context.auth, params.id, body),
    async uninstallExtension({ params }, context) {
      await installs.uninstall(context.auth, params.id);
      return SUCCESS;
    },
    issueExtensionInstallToken: ({ params }, context) => installs.issueToken(context.auth, params.id),
    extensionInstallStorage: ({ params }, context) => runtime.storage(context.auth, params.id),
    setExtensionInstallStorage: ({ params, body }, context) => runtime.setStorage(context.auth, params.id, params.key, body.value),
    async deleteExtensionInstallStorage({ params }, context) {
      await runtime.deleteStorage(context.auth, params.id, params.key);
      return SUCCESS;
    },
    extensionInstallSecrets: ({ params }, context) => secrets.list(context.auth, params.id),
    setExtensionInstallSecret: ({ params, body }, context) => secrets.set(context.auth, params.id, params.name, body.value),
    async deleteExtensionInstallSecret({ params }, context) {
      await secrets.remove(context.auth, params.id, params.name);
      return SUCCESS;
    },
    extensionSecret: ({ params }, context) => secrets.read(context.auth, params.name),
    extensionInstallBundle: ({ params }, context) => bundles.forInstall(context.auth, params.id),
    myExtensionRating: ({ params }, context) => ratings.mine(context.auth, params.id),
    rateExtension: ({ params, body }, context) => ratings.rate(context.auth, params.id, body.rating),
    async deleteExtensionRating({ params }, context) {
      await ratings.remove(context.auth, params.id);
      return SUCCESS;
    },
    async extensionBundle({ params }) {
      const { bundle, headers } = await bundles.byHash(params.sha256);
      return reply(200, bundle, headers);
    },
    extensionInstallLogs: ({ params }, context) => runtime.installLogs(context.auth, params.id),
    developerExtensionLogs: ({ params }, context) => runtime.extensionLogs(context.auth, params.id),
    writeExtensionLog: async ({ body }) => reply(201, await runtime.writeLog(body)),
    adminExtensionReviews: ({ query }) => review.list(query.status),
    approveExtensionVersion: ({ params, body }, context) => review.approve(context.auth, params.versionId, body?.notes),
    rejectExtensionVersion: ({ params, body }, context) => review.reject(context.auth, params.versionId, body.notes),
    grantExtensionAccess: ({ params, body }, context) => access.grantAccess(context.auth, params.id, body.userId),
    createExtensionAccessInvite: async ({ params, body }, context) => reply(201, await access.createInvite(context.auth, params.id, body ?? {})),
    acceptExtensionAccessInvite: ({ body }, context) => access.acceptInvite(context.auth, body.code),
    botModuleTriggers: ({ params }) => service.botTriggers(params.accountId),
    botModuleHandlers: ({ query }) => service.botHandlers(query),
    automationNodeHandlers: ({ query }) => service.automationHandlers(query),
  });
}
