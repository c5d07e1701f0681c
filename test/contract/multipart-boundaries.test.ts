/**
 * The spec is the whole contract, for forms too: for every operation whose body is
 * `multipart/form-data`, the boundary cases its schema declares (test/contract/multipart-boundaries.ts)
 * are sent as real multipart requests over HTTP by the account's owner, and again through the
 * GraphQL twin as a multipart request (`operations`, `map`, the files; with the
 * `GraphQL-Require-Preflight` header). A form the spec accepts must not be refused as
 * VALIDATION_ERROR; a form it refuses must be refused with exactly 400 VALIDATION_ERROR, in the
 * words the spec declares (`x-error-message`) where it declares some; GraphQL must answer each case
 * with the code and message REST answered.
 */
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { devLogin } from '../helpers/users';
import { formData, graphqlForm, multipartCases, type MultipartCase } from './multipart-boundaries';

const operations = multipartCases();

let t: TestApp;
let ownerToken: string;

beforeAll(async () => {
  t = await startTestApp({ rate_limits: { enabled: false } });
  ownerToken = (await devLogin(t, `multipart-boundaries-${randomUUID()}@contract.test`)).accessToken;
}, 180_000);
afterAll(async () => {
  await t?.stop();
});

interface Answer {
  status: number;
  error?: string;
  message?: string;
}

async function sendRest(method: string, path: string, c: MultipartCase): Promise<Answer> {
  const res = await fetch(`${t.url}${path}`, { method: method.toUpperCase(), headers: { authorization: `Bearer ${ownerToken}` }, body: formData(c.parts) });
  const body = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
  return { status: res.status, error: body.error, message: body.message };
}

async function sendGraphql(c: MultipartCase, route: (typeof operations)[number]['route']): Promise<Answer> {
  const res = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers: { authorization: `Bearer ${ownerToken}`, 'graphql-require-preflight': '1' }, body: formData(graphqlForm(route, c)) });
  const body = (await res.json().catch(() => ({}))) as { errors?: { message: string; extensions?: { code?: string } }[] };
  const first = body.errors?.[0];
  return { status: res.status, error: first?.extensions?.code, message: first?.message };
}

/** What is wrong with one answer to a case, or null. */
function judge(c: MultipartCase, got: Answer, success: number): string | null {
  const refused = got.error === 'VALIDATION_ERROR';
  if (got.status >= 500) return `${got.status} ${got.error ?? ''}`;
  if (c.expect === 'refuse') {
    if (!refused || (success !== 200 && got.status !== 400)) return `expected 400 VALIDATION_ERROR, got ${got.status} ${got.error ?? ''} "${got.message ?? ''}"`;
    if (c.message !== undefined && got.message !== c.message) return `refused with "${got.message ?? ''}", the spec declares "${c.message}"`;
    return null;
  }
  if (refused) return `refused "${got.message ?? ''}"`;
  if (got.status !== success || got.error !== undefined) return `expected ${success}, got ${got.status} ${got.error ?? ''} "${got.message ?? ''}"`;
  return null;
}

test('every multipart operation has boundary cases, accepted and refused ones', () => {
  expect(operations.map((o) => o.route.operationId)).toContain('uploadSound');
  for (const { route, cases } of operations) {
    expect([route.operationId, cases.some((c) => c.expect === 'accept'), cases.some((c) => c.expect === 'refuse')]).toEqual([route.operationId, true, true]);
  }
});

describe.each(operations.map((o) => [`${o.route.method.toUpperCase()} ${o.route.path}`, o] as const))('%s', (_name, { route, cases }) => {
  test('REST accepts the forms the spec accepts and refuses, in its words, the forms it refuses', async () => {
    const wrong: string[] = [];
    for (const c of cases) {
      const problem = judge(c, await sendRest(route.method, route.path, c), route.defaultStatus);
      if (problem) wrong.push(`${c.what}: ${problem}`);
    }
    expect(wrong).toEqual([]);
  }, 120_000);

  (route.graphql ? test : test.skip)(`the GraphQL twin (${route.graphql ?? 'none'}) answers each case with REST's code and message`, async () => {
    const wrong: string[] = [];
    for (const c of cases.filter((k) => k.noGraphql === undefined)) {
      const rest = await sendRest(route.method, route.path, c);
      const graphql = await sendGraphql(c, route);
      const problem = judge(c, graphql, 200);
      if (problem) wrong.push(`${c.what}: ${problem}`);
      else if (c.expect === 'refuse' && (graphql.error !== rest.error || graphql.message !== rest.message)) wrong.push(`${c.what}: GraphQL ${graphql.error ?? ''} "${graphql.message ?? ''}", REST ${rest.error ?? ''} "${rest.message ?? ''}"`);
    }
    expect(wrong).toEqual([]);
  }, 120_000);
});
