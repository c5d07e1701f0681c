/** What the accounts suites share (accounts-*.test.ts): the specification's tables, request helpers and the flows the suites build on. */
import { randomUUID } from 'node:crypto';
import type { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type ApiResult, type LoggedIn } from '../helpers/users';
import { SPEC_ACCOUNT_PERMISSIONS, SPEC_ADMINISTRATOR, SPEC_ADMINISTRATOR_EXCLUDED, SPEC_MODERATOR, SPEC_VIEWER } from '../helpers/spec-permissions';

// ------------------------------------------------------------------------------------------------
// The specification's tables, literally
// ------------------------------------------------------------------------------------------------

export const ALL_ACCOUNT_PERMISSIONS = SPEC_ACCOUNT_PERMISSIONS;
export const ADMINISTRATOR_EXCLUDED = SPEC_ADMINISTRATOR_EXCLUDED;
export const ADMINISTRATOR = SPEC_ADMINISTRATOR;
export const MODERATOR = SPEC_MODERATOR;
export const VIEWER = SPEC_VIEWER;

export const sorted = (list: readonly string[]) => [...list].sort();
export const inRegistryOrder = (list: readonly string[]) => ALL_ACCOUNT_PERMISSIONS.filter((p) => list.includes(p));

// ------------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------------

export type GqlResult = Awaited<ReturnType<typeof gql>>;

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const uniqueEmail = (label: string) => `${label}-${randomUUID()}@accounts.test`;
export const uniqueName = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

export function expectRestError(res: ApiResult, status: number, code: string, message?: string): void {
  expect({ status: res.status, error: res.body.error }).toEqual({ status, error: code });
  if (message !== undefined) expect(res.body).toEqual({ error: code, message });
  else expect(typeof res.body.message).toBe('string');
}

export function expectGqlError(res: GqlResult, code: string, message: string | undefined): void {
  expect(res.status).toBeLessThan(500);
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]!.extensions?.code).toBe(code);
  if (message !== undefined) expect(res.body.errors![0]!.message).toBe(message);
  expect(res.body.data ?? null).toBeNull();
}

/** The same failure on both protocols: REST status, code and message, and GraphQL code and message. */
export function expectSameFailure(rest: ApiResult, graphql: GqlResult, status: number, code: string, message?: string): void {
  expectRestError(rest, status, code, message);
  expectGqlError(graphql, code, rest.body.message);
}

export function expectGqlData(res: GqlResult): Record<string, any> {
  expect(res.body.errors).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data as Record<string, any>;
}

export const ROLE_FIELDS = 'id name position isSystem permissions memberCount createdAt updatedAt';
export const MEMBER_FIELDS = 'userId displayName email avatarUrl roleId role isOwner joinedAt';
export const INVITE_FIELDS = 'id accountId userId roleId role invitedBy createdAt';
export const NOTIFICATION_FIELDS = 'id type data status createdAt readAt';

export const Q = {
  accountRoles: `{ accountRoles { ${ROLE_FIELDS} } }`,
  createRole: `mutation($input: CreateAccountRoleInput!) { createAccountRole(input: $input) { ${ROLE_FIELDS} } }`,
  updateRole: `mutation($id: UUID!, $input: UpdateAccountRoleInput!) { updateAccountRole(id: $id, input: $input) { ${ROLE_FIELDS} } }`,
  deleteRole: 'mutation($id: UUID!) { deleteAccountRole(id: $id) }',
  members: `{ accountMembers { ${MEMBER_FIELDS} } }`,
  updateMember: `mutation($userId: UUID!, $roleId: UUID!) { updateAccountMember(userId: $userId, roleId: $roleId) { ${MEMBER_FIELDS} } }`,
  removeMember: 'mutation($userId: UUID!) { removeAccountMember(userId: $userId) }',
  invites: `{ accountInvites { ${INVITE_FIELDS} } }`,
  createInvite: `mutation($input: CreateAccountInviteInput!) { createAccountInvite(input: $input) { ${INVITE_FIELDS} } }`,
  cancelInvite: 'mutation($id: UUID!) { cancelAccountInvite(id: $id) }',
  notifications: `{ notifications { items { ${NOTIFICATION_FIELDS} } total page limit pages } }`,
  notificationAction: `mutation($id: UUID!, $action: String!) { notificationAction(id: $id, action: $action) { ${NOTIFICATION_FIELDS} } }`,
  preferences: '{ notificationPreferences { type channel locked } }',
  updatePreference: 'mutation($type: String!, $channel: String!) { updateNotificationPreference(type: $type, channel: $channel) { type channel locked } }',
  createAccount: 'mutation($input: CreateAccountInput!) { createAccount(input: $input) { id name ownerId plan role createdAt updatedAt } }',
  dissolveAccount: 'mutation { dissolveAccount }',
  leaveAccount: 'mutation { leaveAccount }',
  me: '{ me { id email displayName activeAccountId ownedAccountCount } }',
  myAccounts: '{ myAccounts { id name ownerId role } }',
  myPermissions: '{ myPermissions { context userId accountId permissions } }',
  sessions: '{ sessions { id current } }',
};

export const toGqlRole = (r: any) => ({
  id: r.id,
  name: r.name,
  position: r.position,
  isSystem: r.is_system,
  permissions: r.permissions,
  memberCount: r.member_count,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
export const toGqlMember = (m: any) => ({
  userId: m.user_id,
  displayName: m.display_name,
  email: m.email,
  avatarUrl: m.avatar_url,
  roleId: m.role_id,
  role: m.role,
  isOwner: m.is_owner,
  joinedAt: m.joined_at,
});
export const toGqlNotification = (n: any) => ({ id: n.id, type: n.type, data: n.data, status: n.status, createdAt: n.created_at, readAt: n.read_at });

// ------------------------------------------------------------------------------------------------
/** The flows every accounts suite uses, bound to its app. */
export function accountsKit(t: ReturnType<typeof useTestApp>) {
const login = (label: string) => devLogin(t, uniqueEmail(label));

async function rolesByName(owner: LoggedIn): Promise<Record<string, any>> {
  const res = await api(t, 'GET', '/account/roles', { token: owner.accessToken });
  expect(res.status).toBe(200);
  return Object.fromEntries((res.body.data as any[]).map((r) => [r.name, r]));
}

async function notificationsOf(user: LoggedIn): Promise<any[]> {
  const res = await api(t, 'GET', '/notifications', { token: user.accessToken });
  expect(res.status).toBe(200);
  return res.body.data as any[];
}

/** Invites `invitee` into `owner`'s active account; answers the invite and its notification. */
async function invite(owner: LoggedIn, invitee: LoggedIn, role: string): Promise<{ invite: any; notification: any }> {
  const res = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: invitee.userId, role } });
  expect(res.status).toBe(201);
  const created = res.body.data as any;
  const notification = (await notificationsOf(invitee)).find((n) => n.data?.inviteId === created.id);
  expect(notification).toBeDefined();
  return { invite: created, notification };
}

async function myPermissions(token: string): Promise<any> {
  const res = await api(t, 'GET', '/tokens/me', { token });
  expect(res.status).toBe(200);
  return res.body.data;
}

  return { login, rolesByName, notificationsOf, invite, myPermissions };
}
