/** GraphQL bindings of users, accounts, members, invites and roles: the domain shape is already camelCase. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { AccountsService } from './service';

type QueryFields = 'me' | 'myAccounts' | 'account' | 'accountMembers' | 'accountInvites' | 'accountRoles';
type MutationFields =
  | 'updateMe'
  | 'createAccount'
  | 'updateAccount'
  | 'dissolveAccount'
  | 'leaveAccount'
  | 'updateAccountMember'
  | 'removeAccountMember'
  | 'createAccountInvite'
  | 'acceptAccountInvite'
  | 'cancelAccountInvite'
  | 'createAccountRole'
  | 'updateAccountRole'
  | 'deleteAccountRole';

const done = async (work: Promise<void>) => {
  await work;
  return true;
};

export function createAccountsResolvers(service: AccountsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, QueryFields>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, MutationFields>;
} {
  return {
    Query: {
      me: (_p, _a, context) => service.me(context.auth),
      myAccounts: (_p, _a, context) => service.myAccounts(context.auth),
      account: (_p, _a, context) => service.account(context.auth),
      accountMembers: (_p, _a, context) => service.members(context.auth),
      accountInvites: (_p, _a, context) => service.invites(context.auth),
      accountRoles: (_p, _a, context) => service.roles(context.auth),
    },
    Mutation: {
      updateMe: (_p, { input }, context) => service.updateMe(context.auth, input),
      createAccount: (_p, { input }, context) => service.createAccount(context.auth, input),
      updateAccount: (_p, { input }, context) => service.updateAccount(context.auth, input),
      dissolveAccount: (_p, _a, context) => done(service.dissolveAccount(context.auth)),
      leaveAccount: (_p, _a, context) => done(service.leaveAccount(context.auth)),
      updateAccountMember: (_p, { userId, roleId }, context) => service.updateMember(context.auth, userId, roleId),
      removeAccountMember: (_p, { userId }, context) => done(service.removeMember(context.auth, userId)),
      createAccountInvite: (_p, { input }, context) => service.createInvite(context.auth, input),
      acceptAccountInvite: (_p, { token }, context) => service.acceptEmailInvite(context.auth, token),
      cancelAccountInvite: (_p, { id }, context) => done(service.cancelInvite(context.auth, id)),
      createAccountRole: (_p, { input }, context) => service.createRole(context.auth, input),
      updateAccountRole: (_p, { id, input }, context) => service.updateRole(context.auth, id, input),
      deleteAccountRole: (_p, { id }, context) => done(service.deleteRole(context.auth, id)),
    },
  };
}
