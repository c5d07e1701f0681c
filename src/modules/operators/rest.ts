/** REST bindings of the operators' user and account levers, in domain form (the router maps names and envelopes). */
import { SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { OperatorsService } from './service';

export function createOperatorsRest(service: OperatorsService) {
  return bindRest({
    accountPlan: (_r, context) => service.accountPlan(context.auth),
    adminUsers: ({ query, paging }) => service.users(query.q, paging),
    adminUser: ({ params }) => service.user(params.id),
    adminSuspendUser: ({ params, body }, context) => service.suspendUser(context.auth, params.id, body?.reason),
    async adminDeleteUser({ params }, context) {
      await service.deleteUser(context.auth, params.id);
      return SUCCESS;
    },
    adminRestoreUser: ({ params }, context) => service.restoreUser(context.auth, params.id),
    adminUpdateUserOverrides: ({ params, body }, context) => service.updateUserOverrides(context.auth, params.id, body),
    adminSetUserRoles: ({ params, body }, context) => service.setUserRoles(context.auth, params.id, body.roleIds),
    adminUserRoles: () => service.userRoles(),
    adminAccounts: ({ query, paging }) => service.accounts(query.q, paging),
    adminAccount: ({ params }) => service.account(params.id),
    adminAccountOverrides: ({ params }) => service.accountOverrides(params.id),
    adminSuspendAccount: ({ params, body }, context) => service.suspendAccount(context.auth, params.id, body?.reason),
    adminRestoreAccount: ({ params }, context) => service.restoreAccount(context.auth, params.id),
  });
}
