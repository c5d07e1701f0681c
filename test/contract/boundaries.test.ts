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
import { boundaryCases } from './boundaries';
import { DATA_DEPENDENT, UPSTREAM, sendRestCase, useBoundaryCallers } from './boundary-callers';

const operations = boundaryCases();
const callers = useBoundaryCallers('boundaries', [...new Set(operations.flatMap((o) => o.route.gate.permissions?.list ?? []))]);

test('every operation with inputs has boundary cases, accepted and refused ones', () => {
  expect(operations.length).toBeGreaterThan(150);
  for (const { route, cases } of operations) expect([route.operationId, cases.length > 1]).toEqual([route.operationId, true]);
});

describe.each(operations.map((o) => [`${o.route.method.toUpperCase()} ${o.route.path}`, o] as const))('%s', (_name, { route, cases }) => {
  test('accepts what the spec accepts and refuses what it refuses', async () => {
    const token = callers.tokenFor(route.gate);
    const wrong: string[] = [];
    for (const c of cases) {
      const got = await sendRestCase(callers.app.url, route.method, c, token);
      const refused = got.status === 400 && got.error === 'VALIDATION_ERROR';
      if (got.status >= 500 && !UPSTREAM.has(route.operationId)) wrong.push(`${c.what}: ${got.status} ${got.error}`);
      else if (c.expect === 'refuse' && !refused) wrong.push(`${c.what}: expected 400 VALIDATION_ERROR, got ${got.status} ${got.error ?? ''}`);
      else if (c.expect === 'accept' && refused && !DATA_DEPENDENT.some((re) => re.test(got.message ?? ''))) wrong.push(`${c.what}: refused "${got.message}"`);
    }
    expect(wrong).toEqual([]);
  }, 120_000);
});
