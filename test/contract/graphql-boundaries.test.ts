/**
 * The spec is the whole contract on GraphQL too: for every Query and Mutation field with arguments
 * and a REST twin, the boundary values the twin's schema declares for the field each argument
 * stands for (test/contract/graphql-boundaries.ts) are sent to POST /v1/gql as variables, by a
 * caller that passes the field's gate (as test/contract/boundaries.test.ts does on REST).
 *
 * - A value the spec accepts, and an explicit null wherever the SDL makes the argument or input
 *   field nullable, is not refused as VALIDATION_ERROR (a 404, 409 or 403 for data reasons is fine).
 * - A value the REST twin's schema refuses is refused before execution, as an argument refused
 *   before execution is (docs/guides/using-the-api.md, "Protocols"): HTTP 400, no `data`,
 *   `extensions.code` VALIDATION_ERROR, with the message the REST twin answers for the same value.
 * - A value GraphQL's own types refuse (a non-member of a GraphQL enum, a wrong type, null for a
 *   non-null type) is a variable that does not fit its type: HTTP 400 VALIDATION_ERROR too, in
 *   graphql-js's words.
 */
import { randomUUID } from 'node:crypto';
import { errorStatus, type ErrorCode } from '../../src/errors';
import { gql, systemKey, startTestApp, type TestApp } from '../helpers/app';
import { devLogin } from '../helpers/users';
import type { BoundaryCase } from './boundaries';
import { graphqlBoundaryCases } from './graphql-boundaries';

/**
 * Refusals that depend on data or on several values at once, which no schema of one value can
 * declare; REST's test excuses the same ones (test/contract/boundaries.test.ts). Matched on the message.
 */
const DATA_DEPENDENT: readonly RegExp[] = [
  /^Invalid permission: /, // a name the permission registry (account, admin or key-assignable) does not hold
  /^A paid extension needs pricing_amount and pricing_currency$/, // an update's pricing_type with the fields the stored extension may hold
  /^Unknown category$/, // category_id of no category of the account
  /^Unknown tag: /, // tag_ids naming no tag of the account
  /^No channel connection for /, // chat send before the account connected that platform
  /^redirect_uri is not allowed$/, // a sign-in or connect redirect outside auth.redirect_allow_list
  /^Exactly one of user_id or email is required$/, // an invite names its invitee one way: a case that adds the other is refused
];

/** Fields that call a third-party platform, which this test does not fake: their 500 is the documented upstream failure. */
const UPSTREAM = new Set(['refreshPlatformUserProfile']);

const fields = graphqlBoundaryCases();
const everyPermission = [...new Set(fields.flatMap((f) => f.twin.gate.permissions?.list ?? []))];
const allKey = systemKey(`graphql-boundaries-${randomUUID()}`, everyPermission);

let t: TestApp;
let ownerToken: string;
let extensionToken: string;

beforeAll(async () => {
  t = await startTestApp({ auth: { system_keys: [allKey.config] }, rate_limits: { enabled: false } });
  const first = await devLogin(t, `graphql-boundaries-${randomUUID()}@contract.test`);
  await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
  ownerToken = (await devLogin(t, first.email)).accessToken;
  const minted = await t.app.authStore.mint({ kind: 'extension', accountId: first.accountId, subjectId: randomUUID(), extensionId: randomUUID(), expiresAt: new Date(Date.now() + 3_600_000) });
  extensionToken = minted.token;
}, 180_000);
afterAll(async () => {
  await t?.stop();
});

/** The REST twin's answer to its case of the same value: the message GraphQL must give. */
async function restAnswer(method: string, c: BoundaryCase, token: string): Promise<{ status: number; error?: string; message?: string }> {
  const url = new URL(`${t.url}${c.path}`);
  for (const [k, v] of Object.entries(c.query)) url.searchParams.set(k, v);
  const res = await fetch(url, {
    method: method.toUpperCase(),
    headers: { authorization: `Bearer ${token}`, ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(c.body !== undefined ? { body: JSON.stringify(c.body) } : {}),
  });
  const body = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
  return { status: res.status, error: body.error, message: body.message };
}

test('every field with arguments standing for REST fields has boundary cases, accepted and refused ones', () => {
  expect(fields.length).toBeGreaterThan(80);
  for (const { twin, cases } of fields) {
    expect([twin.graphql, cases.some((c) => c.expect === 'accept'), cases.some((c) => c.expect === 'refuse')]).toEqual([twin.graphql, true, true]);
  }
});

describe.each(fields.map((f) => [f.twin.graphql, f] as const))('%s', (_name, { twin, query, cases }) => {
  test('accepts what the spec and the SDL accept and refuses what they refuse, with REST\'s words', async () => {
    expect(t).toBeDefined();
    const token = twin.gate.auth === 'system-key' ? allKey.key : twin.gate.auth === 'extension' ? extensionToken : ownerToken;
    const wrong: string[] = [];
    for (const c of cases) {
      const got = await gql(t.url, query, c.variables, { authorization: `Bearer ${token}` });
      const errors = got.body.errors ?? [];
      const codes = errors.map((e) => e.extensions?.code);
      const refusal = errors.find((e) => e.extensions?.code === 'VALIDATION_ERROR');
      const failed = codes.find((code) => (errorStatus[code as ErrorCode] ?? 500) >= 500);
      if (failed && !UPSTREAM.has(twin.operationId)) wrong.push(`${c.what}: ${got.status} ${failed} ${errors[0]?.message ?? ''}`);
      else if (c.expect === 'accept') {
        if (refusal && !DATA_DEPENDENT.some((re) => re.test(refusal.message))) wrong.push(`${c.what}: refused "${refusal.message}"`);
      } else if (!(got.status === 400 && refusal && got.body.data == null)) {
        wrong.push(`${c.what}: expected 400 VALIDATION_ERROR before execution, got ${got.status} ${codes.join(',') || 'no error'} ${errors[0]?.message ?? ''}`);
      } else if (c.refusedBy && c.refusedBy !== 'graphql') {
        const rest = await restAnswer(twin.method, c.refusedBy, token);
        if (rest.status === 400 && rest.error === 'VALIDATION_ERROR' && rest.message !== refusal.message) wrong.push(`${c.what}: GraphQL says "${refusal.message}", REST "${rest.message}"`);
      }
    }
    expect(wrong).toEqual([]);
  }, 120_000);
});
