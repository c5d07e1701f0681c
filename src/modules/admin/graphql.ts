/** GraphQL bindings of admin roles: the domain shape is already camelCase. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { AdminRolesService } from './service';

type QueryFields = 'adminRoles' | 'adminRole' | 'adminRoleMembers' | 'allAdminPermissions';
type MutationFields = 'adminCreateRole' | 'adminUpdateRole' | 'adminDeleteRole' | 'adminAssignUserRole' | 'adminUnassignUserRole';

export function createAdminResolvers(service: AdminRolesService): {
  Query: Pick<QueryResolvers<GraphQLContext>, QueryFields>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, MutationFields>;
} {
  return {
    Query: {
      adminRoles: () => service.roles(),
      adminRole: (_p, { id }) => service.role(id),
      adminRoleMembers: (_p, { roleId }) => service.members(roleId),
      allAdminPermissions: () => service.permissions(),
    },
    Mutation: {
      adminCreateRole: (_p, { input }, context) => service.createRole(context.auth, input),
      adminUpdateRole: (_p, { id, input }, context) => service.updateRole(context.auth, id, input),
      adminDeleteRole: async (_p, { id }, context) => {
        await service.deleteRole(context.auth, id);
        return true;
      },
      adminAssignUserRole: (_p, { userId, roleId }, context) => service.assign(context.auth, userId, roleId),
      adminUnassignUserRole: (_p, { userId, roleId }, context) => service.unassign(context.auth, userId, roleId),
    },
  };
}
