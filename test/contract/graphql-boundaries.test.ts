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
import { errorStatus, type ErrorCode } from '../../src/errors';
import { gql } from '../helpers/app';
import { DATA_DEPENDENT, UPSTREAM, sendRestCase, useBoundaryCallers } from './boundary-callers';
import { graphqlBoundaryCases } from './graphql-boundaries';

const fields = graphqlBoundaryCases();
const callers = useBoundaryCallers('graphql-boundaries', [...new Set(fields.flatMap((f) => f.twin.gate.permissions?.list ?? []))]);

test('every field with arguments standing for REST fields has boundary cases, accepted and refused ones', () => {
  expect(fields.length).toBeGreaterThan(80);
  for (const { twin, cases } of fields) {
    expect([twin.graphql, cases.some((c) => c.expect === 'accept'), cases.some((c) => c.expect === 'refuse')]).toEqual([twin.graphql, true, true]);
  }
});

describe.each(fields.map((f) => [f.twin.graphql, f] as const))('%s', (_name, { twin, query, cases }) => {
  test('accepts what the spec and the SDL accept and refuses what they refuse, with REST\'s words', async () => {
    const token = callers.tokenFor(twin.gate);
    const wrong: string[] = [];
    for (const c of cases) {
      const got = await gql(callers.app.url, query, c.variables, { authorization: `Bearer ${token}` });
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
        const rest = await sendRestCase(callers.app.url, twin.method, c.refusedBy, token);
        if (rest.status === 400 && rest.error === 'VALIDATION_ERROR' && rest.message !== refusal.message) wrong.push(`${c.what}: GraphQL says "${refusal.message}", REST "${rest.message}"`);
      }
    }
    expect(wrong).toEqual([]);
  }, 120_000);
});
