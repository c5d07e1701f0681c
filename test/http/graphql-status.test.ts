/**
 * GraphQL's one HTTP status policy, under both media types a client may accept: a request that
 * cannot run (syntax, validation, no operation to run, a variable that does not fit, a limit, an
 * argument refused before execution) is 400 with `errors` and no `data`; a field that fails while
 * the operation runs (not found, a resolver's own refusal, a gate) is 200 with `errors[]` carrying
 * the REST code; a success is 200.
 */
import { useTestApp } from '../helpers/app';
import { devLogin, type LoggedIn } from '../helpers/users';

const t = useTestApp();
let user: LoggedIn;
beforeAll(async () => {
  user = await devLogin(t);
});

const CASES: readonly { what: string; query: string; variables?: Record<string, unknown>; operationName?: string; status: number; code?: string }[] = [
  { what: 'a syntax error', query: '{ me { ', status: 400, code: 'BAD_REQUEST' },
  { what: 'an unknown field', query: '{ nope }', status: 400, code: 'BAD_REQUEST' },
  { what: 'two operations and no name', query: 'query A { me { id } } query B { me { id } }', status: 400, code: 'BAD_REQUEST' },
  { what: 'an unknown operation name', query: 'query A { me { id } }', operationName: 'B', status: 400, code: 'BAD_REQUEST' },
  { what: 'a variable of the wrong type', query: 'query($l: Int!) { sounds(limit: $l) { totalCount } }', variables: { l: 'x' }, status: 400, code: 'VALIDATION_ERROR' },
  { what: 'a required variable left out', query: 'query($l: Int!) { sounds(limit: $l) { totalCount } }', status: 400, code: 'VALIDATION_ERROR' },
  { what: 'a string past its REST twin’s bound', query: `mutation { createOverlay(input: { name: "${'x'.repeat(300)}" }) { id } }`, status: 400, code: 'VALIDATION_ERROR' },
  { what: 'a number past its REST twin’s bound', query: '{ sounds(limit: 0) { totalCount } }', status: 400, code: 'VALIDATION_ERROR' },
  { what: 'a resolver’s own refusal', query: 'mutation { createAccountRole(input: { name: "status", permissions: ["nothing:here"] }) { id } }', status: 200, code: 'VALIDATION_ERROR' },
  { what: 'an unknown resource', query: '{ sound(id: "00000000-0000-4000-8000-000000000000") { id } }', status: 200, code: 'NOT_FOUND' },
  { what: 'a success', query: '{ me { id } }', status: 200 },
];

describe.each(['application/json', 'application/graphql-response+json'])('Accept: %s', (accept) => {
  test.each(CASES)('$what: HTTP $status', async ({ query, variables, operationName, status, code }) => {
    const res = await fetch(`${t.url}/v1/gql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${user.accessToken}` },
      body: JSON.stringify({ query, variables, operationName }),
    });
    const body = (await res.json()) as { data?: unknown; errors?: { extensions?: { code?: string } }[] };
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(new RegExp(`^${accept.replace(/[+]/g, '\\+')}`));
    if (code === undefined) expect(body.errors).toBeUndefined();
    else expect(body.errors?.[0]?.extensions?.code).toBe(code);
    if (status === 400) expect(body.data).toBeUndefined();
  });
});
