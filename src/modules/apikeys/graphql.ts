/** GraphQL bindings of the apikeys module: the domain shape is already camelCase. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { ApiKeysService } from './service';

export function createApiKeysResolvers(service: ApiKeysService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'apiKeyAssignablePermissions' | 'userApiKeys' | 'accountServiceKeys' | 'adminAccountApiKeys' | 'adminUserApiKeys' | 'adminSystemKeyPermissions'>;
  Mutation: Pick<
    MutationResolvers<GraphQLContext>,
    | 'createUserApiKey'
    | 'updateUserApiKey'
    | 'rotateUserApiKey'
    | 'deleteUserApiKey'
    | 'createAccountServiceKey'
    | 'updateAccountServiceKey'
    | 'rotateAccountServiceKey'
    | 'deleteAccountServiceKey'
    | 'adminUpdateApiKey'
    | 'adminRotateApiKey'
    | 'adminDeleteApiKey'
  >;
} {
  return {
    Query: {
      apiKeyAssignablePermissions: (_p, { kind }) => service.assignablePermissions(kind),
      userApiKeys: (_p, _a, context) => service.userApiKeys(context.auth),
      accountServiceKeys: (_p, _a, context) => service.accountServiceKeys(context.auth),
      adminAccountApiKeys: (_p, { accountId }) => service.adminAccountApiKeys(accountId),
      adminUserApiKeys: (_p, { userId }) => service.adminUserApiKeys(userId),
      adminSystemKeyPermissions: () => service.systemKeyPermissions(),
    },
    Mutation: {
      createUserApiKey: (_p, { input }, context) => service.createUserApiKey(context.auth, input),
      updateUserApiKey: (_p, { id, label }, context) => service.updateUserApiKey(context.auth, id, label),
      rotateUserApiKey: (_p, { id }, context) => service.rotateUserApiKey(context.auth, id),
      deleteUserApiKey: (_p, { id }, context) => service.deleteUserApiKey(context.auth, id),
      createAccountServiceKey: (_p, { input }, context) => service.createAccountServiceKey(context.auth, input),
      updateAccountServiceKey: (_p, { id, label }, context) => service.updateAccountServiceKey(context.auth, id, label),
      rotateAccountServiceKey: (_p, { id }, context) => service.rotateAccountServiceKey(context.auth, id),
      deleteAccountServiceKey: (_p, { id }, context) => service.deleteAccountServiceKey(context.auth, id),
      adminUpdateApiKey: (_p, { kind, id, label, permissions }, context) => service.adminUpdateApiKey(context.auth, kind, id, { label, permissions }),
      adminRotateApiKey: (_p, { kind, id }, context) => service.adminRotateApiKey(context.auth, kind, id),
      adminDeleteApiKey: async (_p, { kind, id }, context) => {
        await service.adminDeleteApiKey(context.auth, kind, id);
        return true;
      },
    },
  };
}
