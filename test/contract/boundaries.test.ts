/**
 * The spec is the whole contract: for every operation with a JSON body or path/query parameters,
 * the boundary values its schemas declare (test/contract/boundaries.ts) are sent over real HTTP
 * by a caller that passes the operation's gate (an owner holding every account permission and the
 * super-admin role, a system key holding every permission, or an installed extension's token for
 * the operations only it may call). A value the spec accepts must not
 * be refused as VALIDATION_ERROR (404, 409 or 403 for data reasons are fine); a value the spec
 * refuses must be refused with 400 VALIDATION_ERROR. A rule the code enforces but the spec does
 * not declare shows up here as an accepted value refused.
 */
import { randomUUID } from 'node:crypto';
import { systemKey, startTestApp, type TestApp } from '../helpers/app';
import { devLogin } from '../helpers/users';
import { boundaryCases, type BoundaryCase } from './boundaries';

/**
 * Refusals that depend on data or on several fields at once, which no schema of one value can
 * declare; each is documented in the operation's description. Matched on the error message.
 */
const DATA_DEPENDENT: readonly RegExp[] = [
  /^Invalid permission: /, // a name the permission registry (account, admin or key-assignable) does not hold
  /^A paid extension needs pricing_amount and pricing_currency$/, // an update's pricing_type with the fields it requires, which the stored extension may hold (the create declares it)
  /^Unknown category$/, // category_id of no category of the account
  /^Unknown tag: /, // tag_ids naming no tag of the account
  /^No channel connection for /, // chat send before the account connected that platform
  /^redirect_uri is not allowed$/, // a sign-in or connect redirect outside auth.redirect_allow_list
  /^Sign-in expired or not started here$/, // a provider callback without this browser's flow cookie
  /^Exactly one of user_id or email is required$/, // an invite names its invitee one way: a case that adds the other is refused
];

/** Operations that call a third-party platform, which this test does not fake: their 500 is the documented upstream failure. */
const UPSTREAM = new Set(['refreshPlatformUserProfile']);

const operations = boundaryCases();
const everyPermission = [...new Set(operations.flatMap((o) => o.route.gate.permissions?.list ?? []))];
const allKey = systemKey(`boundaries-${randomUUID()}`, everyPermission);

let t: TestApp;
let ownerToken: string;
let extensionToken: string;

beforeAll(async () => {
  t = await startTestApp({ auth: { system_keys: [allKey.config] }, rate_limits: { enabled: false } });
  const first = await devLogin(t, `boundaries-${randomUUID()}@contract.test`);
  await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
  ownerToken = (await devLogin(t, first.email)).accessToken;
  // An extension token of the owner's account (`x-auth: extension` operations admit nothing else).
  const minted = await t.app.authStore.mint({ kind: 'extension', accountId: first.accountId, subjectId: randomUUID(), extensionId: randomUUID(), expiresAt: new Date(Date.now() + 3_600_000) });
  extensionToken = minted.token;
}, 180_000);
afterAll(async () => {
  await t?.stop();
});

async function send(method: string, c: BoundaryCase, token: string): Promise<{ status: number; error?: string; message?: string }> {
  const url = new URL(`${t.url}${c.path}`);
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

test('every operation with inputs has boundary cases, accepted and refused ones', () => {
  expect(operations.length).toBeGreaterThan(150);
  for (const { route, cases } of operations) expect([route.operationId, cases.length > 1]).toEqual([route.operationId, true]);
});

describe.each(operations.map((o) => [`${o.route.method.toUpperCase()} ${o.route.path}`, o] as const))('%s', (_name, { route, cases }) => {
  test('accepts what the spec accepts and refuses what it refuses', async () => {
    expect(t).toBeDefined();
    const token = route.gate.auth === 'system-key' ? allKey.key : route.gate.auth === 'extension' ? extensionToken : ownerToken;
    const wrong: string[] = [];
    for (const c of cases) {
      const got = await send(route.method, c, token);
      const refused = got.status === 400 && got.error === 'VALIDATION_ERROR';
      if (got.status >= 500 && !UPSTREAM.has(route.operationId)) wrong.push(`${c.what}: ${got.status} ${got.error}`);
      else if (c.expect === 'refuse' && !refused) wrong.push(`${c.what}: expected 400 VALIDATION_ERROR, got ${got.status} ${got.error ?? ''}`);
      else if (c.expect === 'accept' && refused && !DATA_DEPENDENT.some((re) => re.test(got.message ?? ''))) wrong.push(`${c.what}: refused "${got.message}"`);
    }
    expect(wrong).toEqual([]);
  }, 120_000);
});
