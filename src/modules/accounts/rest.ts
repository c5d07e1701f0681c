/**
 * REST bindings of users, accounts, members, invites and roles, in domain form: the router maps
 * names and applies the envelopes and self links the spec declares (src/http/rest.ts).
 */
import { bindRest } from '../../http/rest';
import { SUCCESS } from '../../http/envelope';
import type { AccountsService } from './service';

export function createAccountsRest(service: AccountsService) {
  return bindRest({
    me: (_r, context) => service.me(context.auth),
    updateMe: ({ body }, context) => service.updateMe(context.auth, body),
    myAccounts: (_r, context) => service.myAccounts(context.auth),
    createAccount: ({ body }, context) => service.createAccount(context.auth, body),
    account: (_r, context) => service.account(context.auth),
    updateAccount: ({ body }, context) => service.updateAccount(context.auth, body),
    async dissolveAccount(_r, context) {
      await service.dissolveAccount(context.auth);
      return SUCCESS;
    },
    async leaveAccount(_r, context) {
      await service.leaveAccount(context.auth);
      return SUCCESS;
    },
    accountMembers: (_r, context) => service.members(context.auth),
    updateAccountMember: ({ params, body }, context) => service.updateMember(context.auth, params.userId, body.roleId),
    async removeAccountMember({ params }, context) {
      await service.removeMember(context.auth, params.userId);
      return SUCCESS;
    },
    accountInvites: (_r, context) => service.invites(context.auth),
    createAccountInvite: ({ body }, context) => service.createInvite(context.auth, body),
    acceptAccountInvite: ({ body }, context) => service.acceptEmailInvite(context.auth, body.token),
    async cancelAccountInvite({ params }, context) {
      await service.cancelInvite(context.auth, params.id);
      return SUCCESS;
    },
    accountRoles: (_r, context) => service.roles(context.auth),
    createAccountRole: ({ body }, context) => service.createRole(context.auth, body),
    updateAccountRole: ({ params, body }, context) => service.updateRole(context.auth, params.id, body),
    async deleteAccountRole({ params }, context) {
      await service.deleteRole(context.auth, params.id);
      return SUCCESS;
    },
  });
}
