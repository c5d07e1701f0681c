/** GraphQL bindings of the operators' user and account levers: the domain shape is already camelCase; paging uses the REST twins' bounds. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageFor } from '../../http/paging';
import type { OperatorsService } from './service';

type QueryFields = 'accountPlan' | 'adminUsers' | 'adminUser' | 'adminUserRoles' | 'adminAccounts' | 'adminAccount' | 'adminAccountOverrides';
type MutationFields = 'adminSuspendUser' | 'adminDeleteUser' | 'adminRestoreUser' | 'adminUpdateUserOverrides' | 'adminSetUserRoles' | 'adminSuspendAccount' | 'adminRestoreAccount';

export function createOperatorsResolvers(service: OperatorsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, QueryFields>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, MutationFields>;
} {
  return {
    Query: {
      accountPlan: (_p, _a, context) => service.accountPlan(context.auth),
      adminUsers: (_p, args) => service.users(args.q, pageFor('adminUsers', args)),
      adminUser: (_p, { id }) => service.user(id),
      adminUserRoles: () => service.userRoles(),
      adminAccounts: (_p, args) => service.accounts(args.q, pageFor('adminAccounts', args)),
      adminAccount: (_p, { id }) => service.account(id),
      adminAccountOverrides: (_p, { id }) => service.accountOverrides(id),
    },
    Mutation: {
      adminSuspendUser: (_p, { id, reason }, context) => service.suspendUser(context.auth, id, reason),
      adminDeleteUser: async (_p, { id }, context) => {
        await service.deleteUser(context.auth, id);
        return true;
      },
      adminRestoreUser: (_p, { id }, context) => service.restoreUser(context.auth, id),
      adminUpdateUserOverrides: (_p, { id, input }, context) => service.updateUserOverrides(context.auth, id, input),
      adminSetUserRoles: (_p, { id, roleIds }, context) => service.setUserRoles(context.auth, id, roleIds),
      adminSuspendAccount: (_p, { id, reason }, context) => service.suspendAccount(context.auth, id, reason),
      adminRestoreAccount: (_p, { id }, context) => service.restoreAccount(context.auth, id),
    },
  };
}
