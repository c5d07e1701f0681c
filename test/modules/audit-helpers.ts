/**
 * What the audit suites share (audit-*.test.ts): the system keys the suites' app is configured
 * with, the expected error bodies, the GraphQL documents, the REST/GraphQL page helpers, and
 * `auditKit`, the request helpers and flows bound to one test app.
 */
import { randomUUID } from 'node:crypto';
import { systemKey, type gql, type useTestApp } from '../helpers/app';
import { api, devLogin, type ApiResult, type LoggedIn } from '../helpers/users';

// ------------------------------------------------------------------ fixtures and helpers

export const ingestKey = systemKey('audit-ingest-bot', ['audit:ingest']);
export const wildcardKey = systemKey('audit-wildcard-bot', ['audit:*']);
export const starKey = systemKey('star-bot', ['*:*']);
export const readerKey = systemKey('audit-reader-bot', ['audit:read', 'events:read']);

export const UNAUTHORIZED = { error: 'UNAUTHORIZED', message: 'Authentication required' };
export const NO_ACTIVE_ACCOUNT = { error: 'UNAUTHORIZED', message: 'No active account' };
export const MISSING_AUDIT_LOG_READ = { error: 'FORBIDDEN', message: 'Missing permission: audit-log:read' };
export const MISSING_AUDIT_INGEST = { error: 'FORBIDDEN', message: 'Missing permission: audit:ingest' };
export const PAGE_KEYS = ['items', 'limit', 'page', 'total', 'total_pages'];
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const ITEM_FIELDS = 'id scope type userId accountId actorId ipAddress userAgent metadata createdAt resolvedNames { id kind displayName }';
export const PAGE_FIELDS = `items { ${ITEM_FIELDS} } total page limit totalPages`;
export const MY_LOG = `query($filter: AuditLogFilter) { myAuditLog(filter: $filter) { ${PAGE_FIELDS} } }`;
export const ACCOUNT_LOG = `query($filter: AuditLogFilter) { accountAuditLog(filter: $filter) { ${PAGE_FIELDS} } }`;
export const ADMIN_LOG = `query($filter: AdminAuditLogFilter) { adminAuditLog(filter: $filter) { ${PAGE_FIELDS} } }`;

export interface ResolvedName {
  id: string;
  kind: 'user' | 'account' | 'role';
  display_name: string;
}

export interface AuditItem {
  id: string;
  scope: 'user' | 'account' | 'system';
  type: string;
  user_id: string | null;
  account_id: string | null;
  actor_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  resolved_names: ResolvedName[];
}

export interface AuditPage {
  items: AuditItem[];
  total: number;
  page: number;
  limit: number;
  total_pages: number;
}

export type GqlResult = Awaited<ReturnType<typeof gql>>;

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const newEmail = (prefix: string) => `${prefix}-${randomUUID()}@example.test`;
export const displayNameOf = (user: LoggedIn) => user.email.split('@')[0]!;
export const accountNameOf = (user: LoggedIn) => `${displayNameOf(user)}'s account`;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const byKindAndId = (a: ResolvedName, b: ResolvedName) => `${a.kind}:${a.id}`.localeCompare(`${b.kind}:${b.id}`);
export const sortedNames = (names: ResolvedName[]) => [...names].sort(byKindAndId);

/** The GraphQL form of a REST page: same values, camelCase names. */
export function toGqlPage(page: AuditPage) {
  return {
    items: page.items.map((i) => ({
      id: i.id,
      scope: i.scope,
      type: i.type,
      userId: i.user_id,
      accountId: i.account_id,
      actorId: i.actor_id,
      ipAddress: i.ip_address,
      userAgent: i.user_agent,
      metadata: i.metadata,
      createdAt: i.created_at,
      resolvedNames: i.resolved_names.map((n) => ({ id: n.id, kind: n.kind, displayName: n.display_name })),
    })),
    total: page.total,
    page: page.page,
    limit: page.limit,
    totalPages: page.total_pages,
  };
}

export function expectGqlError(res: GqlResult, expected: { error: string; message: string }): void {
  expect(res.status).toBeLessThan(500);
  expect(res.body.data ?? null).toBeNull();
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]).toMatchObject({ message: expected.message, extensions: { code: expected.error } });
}

export function expectOkGql(res: GqlResult, field: string): ReturnType<typeof toGqlPage> {
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
  return res.body.data![field] as ReturnType<typeof toGqlPage>;
}

/** A REST 200 page whose top-level shape is exactly `{ items, total, page, limit, total_pages }`. */
export function okPage(res: ApiResult): AuditPage {
  expect(res.status).toBe(200);
  expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
  return res.body as unknown as AuditPage;
}

/** The request helpers and flows of the audit suites, bound to the test app `t`. */
export function auditKit(t: ReturnType<typeof useTestApp>) {
  const myLog = (token: string, query: Record<string, string> = {}) => api(t, 'GET', '/me/audit-log', { token, query });
  const accountLog = (token: string, query: Record<string, string> = {}) => api(t, 'GET', '/account/audit-log', { token, query });
  const adminLog = (token: string, query: Record<string, string> = {}) => api(t, 'GET', '/admin/audit-log', { token, query });
  const ingest = (body: unknown, token: string | null = ingestKey.key) => api(t, 'POST', '/internal/audit-ingest', { token: token ?? undefined, body });

  /** A dev login sending its own user agent and (through the trusted loopback proxy) client ip. */
  async function loginWithClient(email: string, client: { ip: string; userAgent: string }): Promise<{ userId: string; accessToken: string; sessionId: string }> {
    const res = await api(t, 'POST', '/auth/dev/login', {
      body: { email, display_name: email.split('@')[0] },
      headers: { 'user-agent': client.userAgent, 'x-forwarded-for': client.ip },
    });
    expect(res.status).toBe(200);
    const data = res.body.data as { user_id: string; access_token: string; session_id: string };
    return { userId: data.user_id, accessToken: data.access_token, sessionId: data.session_id };
  }

  async function createRole(owner: LoggedIn, name: string, permissions: string[] = ['events:read']): Promise<string> {
    const res = await api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name, permissions } });
    expect(res.status).toBe(201);
    return (res.body.data as { id: string }).id;
  }

  async function createPopout(owner: LoggedIn): Promise<string> {
    const res = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { label: 'audit popout', permissions: ['events:read'] } });
    expect(res.status).toBe(201);
    return (res.body.data as { token: string }).token;
  }

  /** An operator: the super-admin role, then a fresh login so the JWT carries the admin claims. */
  async function operator(): Promise<LoggedIn> {
    const first = await devLogin(t, newEmail('operator'));
    await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
    return devLogin(t, first.email);
  }


  return { myLog, accountLog, adminLog, ingest, loginWithClient, createRole, createPopout, operator };
}
