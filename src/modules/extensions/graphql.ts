/** GraphQL bindings of the extensions module: the access mutations and the install secret store (the domain shape is already camelCase). */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { ExtensionsParts } from './rest';

export function createExtensionsResolvers({ access, secrets }: Pick<ExtensionsParts, 'access' | 'secrets'>): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'extensionInstallSecrets' | 'extensionSecret'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'grantExtensionAccess' | 'createExtensionAccessInvite' | 'setExtensionInstallSecret' | 'deleteExtensionInstallSecret'>;
} {
  return {
    Query: {
      extensionInstallSecrets: (_p, { installId }, context) => secrets.list(context.auth, installId),
      extensionSecret: (_p, { name }, context) => secrets.read(context.auth, name),
    },
    Mutation: {
      grantExtensionAccess: (_p, { extensionId, userId }, context) => access.grantAccess(context.auth, extensionId, userId),
      createExtensionAccessInvite: (_p, { extensionId, input }, context) => access.createInvite(context.auth, extensionId, input ?? {}),
      setExtensionInstallSecret: (_p, { installId, name, value }, context) => secrets.set(context.auth, installId, name, value),
      deleteExtensionInstallSecret: async (_p, { installId, name }, context) => {
        await secrets.remove(context.auth, installId, name);
        return true;
      },
    },
  };
}
