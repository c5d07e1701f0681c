/** GraphQL bindings of the extensions module: the access mutations (the domain shape is already camelCase). */
import type { MutationResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { ExtensionsParts } from './rest';

export function createExtensionsResolvers({ access }: Pick<ExtensionsParts, 'access'>): {
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'grantExtensionAccess' | 'createExtensionAccessInvite'>;
} {
  return {
    Mutation: {
      grantExtensionAccess: (_p, { extensionId, userId }, context) => access.grantAccess(context.auth, extensionId, userId),
      createExtensionAccessInvite: (_p, { extensionId, input }, context) => access.createInvite(context.auth, extensionId, input ?? {}),
    },
  };
}
