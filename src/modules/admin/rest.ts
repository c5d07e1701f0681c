/** REST bindings of admin roles, in domain form (the router maps names and writes envelopes). */
import { SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { AdminRolesService } from './service';

export function createAdminRest(service: AdminRolesService) {
  return bindRest({
    adminRoles: () => service.roles(),
    adminCreateRole: ({ body }, context) => service.createRole(context.auth, body),
    adminRole: ({ params }) => service.role(params.id),
    adminUpdateRole: ({ params, body }, context) => service.updateRole(context.auth, params.id, body),
    async adminDeleteRole({ params }, context) {
      await service.deleteRole(context.auth, params.id);
      return SUCCESS;
    },
    adminRoleMembers: ({ params }) => service.members(params.id),
    adminAssignUserRole: async ({ params }, context) => ({ ...SUCCESS, created: await service.assign(context.auth, params.userId, params.id) }),
    adminUnassignUserRole: async ({ params }, context) => ({ ...SUCCESS, removed: await service.unassign(context.auth, params.userId, params.id) }),
    allAdminPermissions: async () => service.permissions(),
  });
}
