/** GraphQL bindings of the extensions module: the access mutations, the install secret store, bundles and ratings (the domain shape is already camelCase). */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { ExtensionsParts } from './rest';

export function createExtensionsResolvers({ access, secrets, ratings, bundles }: Pick<ExtensionsParts, 'access' | 'secrets' | 'ratings' | 'bundles'>): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'extensionInstallSecrets' | 'extensionSecret' | 'myExtensionRating' | 'extensionInstallBundle'>;
  Mutation: Pick<
    MutationResolvers<GraphQLContext>,
    'grantExtensionAccess' | 'createExtensionAccessInvite' | 'setExtensionInstallSecret' | 'deleteExtensionInstallSecret' | 'rateExtension' | 'deleteExtensionRating'
  >;
} {
  return {
    Query: {
      extensionInstallSecrets: (_p, { installId }, context) => secrets.list(context.auth, installId),
      extensionSecret: (_p, { name }, context) => secrets.read(context.auth, name),
      myExtensionRating: (_p, { extensionId }, context) => ratings.mine(context.auth, extensionId),
      extensionInstallBundle: (_p, { id }, context) => bundles.forInstall(context.auth, id),
    },
    Mutation: {
      grantExtensionAccess: (_p, { extensionId, userId }, context) => access.grantAccess(context.auth, extensionId, userId),
      createExtensionAccessInvite: (_p, { extensionId, input }, context) => access.createInvite(context.auth, extensionId, input ?? {}),
      setExtensionInstallSecret: (_p, { installId, name, value }, context) => secrets.set(context.auth, installId, name, value),
      deleteExtensionInstallSecret: async (_p, { installId, name }, context) => {
        await secrets.remove(context.auth, installId, name);
        return true;
      },
      rateExtension: (_p, { extensionId, rating }, context) => ratings.rate(context.auth, extensionId, rating),
      deleteExtensionRating: async (_p, { extensionId }, context) => {
        await ratings.remove(context.auth, extensionId);
        return true;
      },
    },
  };
}
