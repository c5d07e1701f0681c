/**
 * Scenario helpers over the real HTTP API: development logins, and a member joining another
 * account through an invite (role, invite, notification action, account switch). Factories take
 * overrides; everything goes through REST, as a dashboard would.
 */
import { randomUUID } from 'node:crypto';
import type { TestApp } from './app';

export interface LoggedIn {
  email: string;
  userId: string;
  accountId: string | null;
  sessionId: string;
  accessToken: string;
  refreshToken: string;
}

export interface ApiResult<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T & { error?: string; message?: string };
}

/** One REST call. `token` goes into the Authorization header; `query.token` travels in the URL. */
export async function api<T = any>(
  t: Pick<TestApp, 'url'>,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; query?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<ApiResult<T>> {
  const url = new URL(`${t.url}/v1${path}`);
  for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.set(k, v);
  const res = await fetch(url, {
    method,
    headers: {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...options.headers,
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as ApiResult<T>['body'] };
}

const fromTokens = (email: string, data: Record<string, string | null>): LoggedIn => ({
  email,
  userId: data.user_id!,
  accountId: data.account_id ?? null,
  sessionId: data.session_id!,
  accessToken: data.access_token!,
  refreshToken: data.refresh_token!,
});

/** Logs in (creating the user and its own account on first use). */
export async function devLogin(t: Pick<TestApp, 'url'>, email = `user-${randomUUID()}@example.test`, displayName = email.split('@')[0]!): Promise<LoggedIn> {
  const res = await api(t, 'POST', '/auth/dev/login', { body: { email, display_name: displayName } });
  if (res.status !== 200) throw new Error(`dev login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return fromTokens(email, res.body.data as Record<string, string | null>);
}

/** Switches the session to `accountId` and answers the new tokens. */
export async function switchTo(t: Pick<TestApp, 'url'>, user: LoggedIn, accountId: string): Promise<LoggedIn> {
  const res = await api(t, 'POST', '/auth/switch-account', { token: user.accessToken, body: { account_id: accountId } });
  if (res.status !== 200) throw new Error(`switch failed: ${res.status} ${JSON.stringify(res.body)}`);
  return fromTokens(user.email, res.body.data as Record<string, string | null>);
}

/**
 * `member` joins `owner`'s active account with a role: an existing one by name (`role`), or a
 * new custom role (`roleName` + `permissions`). Answers the member's session switched there.
 */
export async function joinAccount(
  t: Pick<TestApp, 'url'>,
  owner: LoggedIn,
  member: LoggedIn,
  role: { role: string } | { roleName: string; permissions: string[] },
): Promise<LoggedIn> {
  let roleRef: string;
  if ('role' in role) {
    roleRef = role.role;
  } else {
    const created = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: role.roleName, permissions: role.permissions } });
    if (created.status !== 201) throw new Error(`role create failed: ${created.status} ${JSON.stringify(created.body)}`);
    roleRef = (created.body.data as { id: string }).id;
  }
  const invite = await api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: member.userId, role: roleRef } });
  if (invite.status !== 201) throw new Error(`invite failed: ${invite.status} ${JSON.stringify(invite.body)}`);
  const inviteId = (invite.body.data as { id: string }).id;
  const list = await api(t, 'GET', '/notifications', { token: member.accessToken });
  const notification = (list.body.data as { id: string; data: { inviteId?: string } }[]).find((n) => n.data.inviteId === inviteId);
  if (!notification) throw new Error('invite notification not delivered');
  const accepted = await api(t, 'POST', `/notifications/${notification.id}/action`, { token: member.accessToken, body: { action: 'accept_invite' } });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return switchTo(t, member, owner.accountId!);
}
