/**
 * What the sessions suites share (sessions-*.test.ts): the specification's error bodies and key sets,
 * the GraphQL documents, and the REST, cookie and WebSocket helpers the suites build on. Importing
 * this module registers an afterEach that closes the sockets its helpers opened.
 */
import { PERMISSION_CLAIMS, decodeClaim } from '../../src/auth/permission-claims';
import type { gql, TestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type ApiResult, type LoggedIn } from '../helpers/users';
import { connect, type TestSocket, closeSocketsAfterEach } from '../helpers/ws';

// ------------------------------------------------------------------------------------ constants

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const JWT = /^lm_eyJ[\w-]*\.[\w-]+\.[\w-]+$/;
export const POPOUT_TOKEN = /^lm_pop_[0-9a-f]{64}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export const AUTH_REQUIRED = { error: 'UNAUTHORIZED', message: 'Authentication required' };
export const INVALID_REFRESH = { error: 'UNAUTHORIZED', message: 'Invalid or expired refresh token' };
export const INVALID_POPOUT = { error: 'UNAUTHORIZED', message: 'Invalid or expired popout token' };
export const ACCOUNT_NOT_FOUND = { error: 'NOT_FOUND', message: 'Account not found' };
export const SESSION_NOT_FOUND = { error: 'NOT_FOUND', message: 'Session not found' };
export const MEMBER_NOT_FOUND = { error: 'NOT_FOUND', message: 'Member not found' };
export const SWITCH_NEEDS_SESSION = { error: 'FORBIDDEN', message: 'Switching accounts requires a user session' };
export const PAST_EXPIRY = { error: 'VALIDATION_ERROR', message: 'expires_at cannot be in the past' };
export const FIRST_PARTY_ONLY = { error: 'FORBIDDEN', message: "This operation requires a user session or the user's own API key" };
export const POPOUT_SESSION_ONLY = { error: 'FORBIDDEN', message: 'This operation requires a popout session' };
export const invalidPermission = (p: string) => ({ error: 'VALIDATION_ERROR', message: `Invalid permission: ${p}` });
export const cannotGrant = (p: string) => ({ error: 'FORBIDDEN', message: `Cannot grant permissions you do not hold: ${p}` });

export const SESSION_TOKEN_KEYS = ['access_token', 'account_id', 'expires_at', 'refresh_token', 'session_id', 'user_id'];
export const SESSION_KEYS = ['created_at', 'current', 'expires_at', 'id', 'ip_address', 'last_used_at', 'user_agent'];
export const POPOUT_KEYS = ['account_id', 'created_at', 'created_by', 'expires_at', 'id', 'label', 'last_used_at', 'permissions', 'revoked_at', 'user_id'];

export const Q = {
  myPermissions: '{ myPermissions { context userId accountId permissions adminPermissions userPermissions } }',
  switchAccount: 'mutation($id: UUID!) { switchAccount(accountId: $id) { accessToken refreshToken expiresAt sessionId userId accountId } }',
  sessions: '{ sessions { id createdAt lastUsedAt expiresAt ipAddress userAgent current } }',
  revokeSession: 'mutation($id: UUID!) { revokeSession(id: $id) }',
  issueWsToken: 'mutation { issueWsToken { wsToken expiresAt } }',
  issuePopoutWsToken: 'mutation { issuePopoutWsToken { wsToken expiresAt } }',
  exchange: 'mutation($token: String!) { exchangePopoutToken(token: $token) { token expiresAt accountId } }',
  createPopout:
    'mutation($input: CreatePopoutTokenInput!) { createPopoutToken(input: $input) { token popoutToken { id accountId userId createdBy label permissions expiresAt revokedAt lastUsedAt createdAt } } }',
} as const;

// ------------------------------------------------------------------------------------ helpers

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const cookie = (sessionJwt: string) => ({ cookie: `svc-popout-token=${sessionJwt}` });

/** The payload of an `lm_`-prefixed JWT, its compact permission claims read back as lists. */
export function claims(token: string): Record<string, unknown> {
  const [, payload] = token.slice('lm_'.length).split('.');
  const decoded = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
  for (const name of PERMISSION_CLAIMS) if (decoded[name] !== undefined) decoded[name] = decodeClaim(name, decoded);
  return decoded;
}

export function expectRestError(res: ApiResult, status: number, body: { error: string; message: string }): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body });
}

export type GqlResult = Awaited<ReturnType<typeof gql>>;

export function expectGqlError(res: GqlResult, body: { error: string; message: string }): void {
  expect(res.status).toBeLessThan(500);
  expect(res.body.data ?? null).toBeNull();
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors![0]).toMatchObject({ message: body.message, extensions: { code: body.error } });
}

export function expectGqlData(res: GqlResult): Record<string, unknown> {
  expect(res.body.errors).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data!;
}

/** Milliseconds between an ISO timestamp and now + `seconds`, for "about N seconds from now". */
export const driftFrom = (iso: string, seconds: number) => Math.abs(new Date(iso).getTime() - (Date.now() + seconds * 1000));

const opened = closeSocketsAfterEach();


/** Opens a WebSocket session and consumes its welcome. */
export async function wsSession(url: string): Promise<TestSocket> {
  const socket = await connect(url);
  opened.push(socket);
  expect((await socket.next()).type).toBe('welcome');
  return socket;
}

/** The rejection of an upgrade that must be refused before the 101 switch. */
export async function wsRefused(url: string): Promise<{ status?: number; body: unknown }> {
  try {
    const socket = await connect(url);
    opened.push(socket);
  } catch (error) {
    const e = error as Error & { status?: number; body?: string };
    return { status: e.status, body: e.body ? (JSON.parse(e.body) as unknown) : null };
  }
  throw new Error(`upgrade to ${url} was accepted`);
}

export async function subscribe(s: TestSocket, channel: string) {
  s.send({ type: 'subscribe', channel });
  return s.nextMatching((m) => (m.type === 'subscribed' || m.type === 'error') && (m as { channel?: string }).channel === channel);
}

/** Parses a Set-Cookie header into its name, value and lower-cased attributes. */
export function parseSetCookie(header: string | null): { name: string; value: string; attributes: Record<string, string | true> } {
  expect(header).not.toBeNull();
  const [pair, ...rest] = header!.split(';').map((s) => s.trim());
  const eq = pair!.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const part of rest) {
    const i = part.indexOf('=');
    if (i < 0) attributes[part.toLowerCase()] = true;
    else attributes[part.slice(0, i).toLowerCase()] = part.slice(i + 1);
  }
  return { name: pair!.slice(0, eq), value: decodeURIComponent(pair!.slice(eq + 1)), attributes };
}

/**
 * The popout cookie of a response: the exact attribute set of the spec (Max-Age 900, Path /,
 * HttpOnly, SameSite Lax, Secure unless development); an `Expires` twin of Max-Age is tolerated.
 */
export function expectPopoutCookie(header: string | null, sessionJwt: string, secure: boolean): void {
  const parsed = parseSetCookie(header);
  expect(parsed.name).toBe('svc-popout-token');
  expect(parsed.value).toBe(sessionJwt);
  const { expires, ...rest } = parsed.attributes;
  expect(rest).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax', ...(secure ? { secure: true } : {}) });
  if (expires !== undefined) expect(driftFrom(new Date(expires as string).toISOString(), 900)).toBeLessThan(10_000);
}

/** Creates a popout token through POST /v1/tokens (its own tests assert the full answer). */
export async function createPopout(t: TestApp, creator: LoggedIn, body: { permissions: string[]; label?: string }) {
  const res = await api(t, 'POST', '/tokens', { token: creator.accessToken, body });
  if (res.status !== 201) throw new Error(`popout create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string; token: string; user_id: string; permissions: string[] };
}

export async function exchange(t: TestApp, token: string): Promise<string> {
  const res = await api(t, 'POST', '/auth/popout/exchange', { body: { token } });
  if (res.status !== 200) throw new Error(`exchange failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body.data as { token: string }).token;
}

export async function popoutWsToken(t: TestApp, sessionJwt: string): Promise<string> {
  const res = await api(t, 'POST', '/auth/popout/ws-token', { headers: cookie(sessionJwt) });
  if (res.status !== 200) throw new Error(`popout ws-token failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body.data as { ws_token: string }).ws_token;
}

export const myPermissions = (t: TestApp, options: Parameters<typeof api>[3]) => api(t, 'GET', '/tokens/me', options);

/** An owner and an administrator of the owner's account (joined through a real invite). */
export async function ownerWithAdmin(t: TestApp): Promise<{ owner: LoggedIn; admin: LoggedIn }> {
  const owner = await devLogin(t);
  const admin = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
  return { owner, admin };
}
