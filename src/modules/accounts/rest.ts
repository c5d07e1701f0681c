/** REST bindings of users, accounts, members, invites and roles: name mapping only. */
import type { RestHandlers } from '../../../generated/rest';
import type { RequestContext } from '../../http/context';
import { SUCCESS, single, wholeCollection as all } from '../../http/envelope';
import type { Account, AccountInvite, AccountMember, AccountRole, AccountsService } from './service';

const account = (a: Account) => ({ id: a.id, name: a.name, owner_id: a.ownerId, plan: a.plan, role: a.role, created_at: a.createdAt, updated_at: a.updatedAt });
const member = (m: AccountMember) => ({
  user_id: m.userId,
  display_name: m.displayName,
  email: m.email,
  avatar_url: m.avatarUrl,
  role_id: m.roleId,
  role: m.role,
  is_owner: m.isOwner,
  joined_at: m.joinedAt,
});
const invite = (i: AccountInvite) => ({ id: i.id, account_id: i.accountId, user_id: i.userId, role_id: i.roleId, role: i.role, invited_by: i.invitedBy, created_at: i.createdAt });
const role = (r: AccountRole) => ({
  id: r.id,
  name: r.name,
  position: r.position,
  is_system: r.isSystem,
  permissions: r.permissions,
  member_count: r.memberCount,
  created_at: r.createdAt,
  updated_at: r.updatedAt,
});


type Handlers = Pick<
  RestHandlers<RequestContext>,
  | 'me'
  | 'myAccounts'
  | 'createAccount'
  | 'account'
  | 'dissolveAccount'
  | 'leaveAccount'
  | 'accountMembers'
  | 'updateAccountMember'
  | 'removeAccountMember'
  | 'accountInvites'
  | 'createAccountInvite'
  | 'cancelAccountInvite'
  | 'accountRoles'
  | 'createAccountRole'
  | 'updateAccountRole'
  | 'deleteAccountRole'
>;

export function createAccountsRest(service: AccountsService): Handlers {
  return {
    async me(_request, context) {
      const me = await service.me(context.auth);
      return {
        status: 200,
        body: single(
          {
            id: me.id,
            email: me.email,
            display_name: me.displayName,
            avatar_url: me.avatarUrl,
            active_account_id: me.activeAccountId,
            owned_account_count: me.ownedAccountCount,
            created_at: me.createdAt,
          },
          context.selfUrl,
        ),
      };
    },
    async myAccounts(_request, context) {
      return { status: 200, body: all((await service.myAccounts(context.auth)).map(account), context.selfUrl) };
    },
    async createAccount({ body }, context) {
      const created = await service.createAccount(context.auth, { name: body.name });
      return { status: 201, body: single(account(created), '/v1/accounts') };
    },
    async account(_request, context) {
      return { status: 200, body: single(account(await service.account(context.auth)), context.selfUrl) };
    },
    async dissolveAccount(_request, context) {
      await service.dissolveAccount(context.auth);
      return { status: 200, body: SUCCESS };
    },
    async leaveAccount(_request, context) {
      await service.leaveAccount(context.auth);
      return { status: 200, body: SUCCESS };
    },
    async accountMembers(_request, context) {
      return { status: 200, body: all((await service.members(context.auth)).map(member), context.selfUrl) };
    },
    async updateAccountMember({ params, body }, context) {
      return { status: 200, body: single(member(await service.updateMember(context.auth, params.user_id, body.role_id)), context.selfUrl) };
    },
    async removeAccountMember({ params }, context) {
      await service.removeMember(context.auth, params.user_id);
      return { status: 200, body: SUCCESS };
    },
    async accountInvites(_request, context) {
      return { status: 200, body: all((await service.invites(context.auth)).map(invite), context.selfUrl) };
    },
    async createAccountInvite({ body }, context) {
      const created = await service.createInvite(context.auth, { userId: body.user_id, role: body.role });
      return { status: 201, body: single(invite(created), `/v1/account/invites/${created.id}`) };
    },
    async cancelAccountInvite({ params }, context) {
      await service.cancelInvite(context.auth, params.id);
      return { status: 200, body: SUCCESS };
    },
    async accountRoles(_request, context) {
      return { status: 200, body: all((await service.roles(context.auth)).map(role), context.selfUrl) };
    },
    async createAccountRole({ body }, context) {
      const created = await service.createRole(context.auth, { name: body.name, permissions: body.permissions });
      return { status: 201, body: single(role(created), `/v1/account/roles/${created.id}`) };
    },
    async updateAccountRole({ params, body }, context) {
      return { status: 200, body: single(role(await service.updateRole(context.auth, params.id, body)), context.selfUrl) };
    },
    async deleteAccountRole({ params }, context) {
      await service.deleteRole(context.auth, params.id);
      return { status: 200, body: SUCCESS };
    },
  };
}
