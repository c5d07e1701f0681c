/**
 * What the REST and GraphQL boundary tests share (boundaries.test.ts, graphql-boundaries.test.ts):
 * one running service with callers that pass any operation's gate (an owner holding every account
 * permission and the super-admin role, a system key holding every permission the operations
 * declare, an installed extension's token for the operations only it may call), the refusals no
 * schema of one value can declare, and a REST case sent over real HTTP.
 */
import { randomUUID } from 'node:crypto';
import type { Gate } from '../../generated/gates';
import { systemKey, startTestApp, type TestApp } from '../helpers/app';
import { devLogin } from '../helpers/users';
import type { BoundaryCase } from './boundaries';

/**
 * Refusals that depend on data or on several fields at once, which no schema of one value can
 * declare; each is documented in the operation's description. Matched on the error message.
 */
export const DATA_DEPENDENT: readonly RegExp[] = [
  /^Invalid permission: /, // a name the permission registry (account, admin or key-assignable) does not hold
  /^A paid extension needs pricing_amount and pricing_currency$/, // an update's pricing_type with the fields it requires, which the stored extension may hold (the create declares it)
  /^Unknown category$/, // category_id of no category of the account
  /^Unknown tag: /, // tag_ids naming no tag of the account
  /^No channel connection for /, // chat send before the account connected that platform
  /^redirect_uri is not allowed$/, // a sign-in or connect redirect outside auth.redirect_allow_list
  /^Sign-in expired or not started here$/, // a provider callback without this browser's flow cookie
  /^Exactly one of user_id or email is required$/, // an invite names its invitee one way: a case that adds the other is refused
];

/** Operations that call a third-party platform, which these tests do not fake: their 500 is the documented upstream failure. */
export const UPSTREAM = new Set(['refreshPlatformUserProfile']);

export interface BoundaryCallers {
  /** The running service (set once the suite's `beforeAll` ran). */
  readonly app: TestApp;
  /** The bearer token of a caller that passes `gate`. */
  tokenFor(gate: Gate): string;
}

/** Starts the service and makes the callers before the suite, stops it after. `name` tells the suite's credentials apart. */
export function useBoundaryCallers(name: string, permissions: readonly string[]): BoundaryCallers {
  const allKey = systemKey(`${name}-${randomUUID()}`, [...permissions]);
  let app: TestApp | undefined;
  let ownerToken = '';
  let extensionToken = '';
  beforeAll(async () => {
    app = await startTestApp({ auth: { system_keys: [allKey.config] }, rate_limits: { enabled: false } });
    const first = await devLogin(app, `${name}-${randomUUID()}@contract.test`);
    await app.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
    ownerToken = (await devLogin(app, first.email)).accessToken;
    // An extension token of the owner's account (`x-auth: extension` operations admit nothing else).
    const minted = await app.app.authStore.mint({ kind: 'extension', accountId: first.accountId, subjectId: randomUUID(), extensionId: randomUUID(), expiresAt: new Date(Date.now() + 3_600_000) });
    extensionToken = minted.token;
  }, 180_000);
  afterAll(async () => {
    await app?.stop();
  });
  return {
    get app() {
      if (!app) throw new Error('the boundary callers are made in beforeAll');
      return app;
    },
    tokenFor: (gate) => (gate.auth === 'system-key' ? allKey.key : gate.auth === 'extension' ? extensionToken : ownerToken),
  };
}

/** A REST boundary case sent over HTTP: its status and, when the answer is JSON, its error code and message. */
export async function sendRestCase(baseUrl: string, method: string, c: BoundaryCase, token: string): Promise<{ status: number; error?: string; message?: string }> {
  const url = new URL(`${baseUrl}${c.path}`);
  for (const [k, v] of Object.entries(c.query)) url.searchParams.set(k, v);
  const res = await fetch(url, {
    method: method.toUpperCase(),
    headers: { authorization: `Bearer ${token}`, ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(c.body !== undefined ? { body: JSON.stringify(c.body) } : {}),
  });
  const text = await res.text();
  let body: { error?: string; message?: string } = {};
  try {
    body = text ? (JSON.parse(text) as typeof body) : {};
  } catch {
    // not JSON (a redirect page, a file): no error code
  }
  return { status: res.status, error: body.error, message: body.message };
}
