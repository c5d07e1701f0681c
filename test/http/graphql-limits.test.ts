/**
 * GraphQL cost limits through real HTTP: depth (a depth-5000 document gets our
 * message, not a stack overflow), aliases, directives, tokens and cost, each refused with HTTP 400
 * and `{ errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] }` before anything executes;
 * list arguments multiplying the cost; the rate limit charged by cost; introspection and "Did you
 * mean" suggestions off in production unless `graphql.introspection`; the hostile alias documents
 * of the issue.
 */
import { jest } from '@jest/globals';
import { getIntrospectionQuery } from 'graphql';
import { messages } from '../../src/errors';
import { maxNesting } from '../../src/http/graphql/limits';
import { useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

interface GqlResponse {
  status: number;
  headers: Headers;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: Record<string, unknown> }[]; error?: string; message?: string };
}

async function post(t: Pick<TestApp, 'url'>, query: string, options: { variables?: Record<string, unknown>; token?: string; accept?: string } = {}): Promise<GqlResponse> {
  const res = await fetch(`${t.url}/v1/gql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: options.accept ?? 'application/json',
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
    body: JSON.stringify({ query, variables: options.variables ?? {} }),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as GqlResponse['body'] };
}

/** The one shape of a limit refusal: HTTP 400, one error, our message, code BAD_REQUEST, nothing executed. */
function expectRefused(res: GqlResponse, message: string): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] } });
}

const nested = (field: string, depth: number, leaf = '__typename') => `{ ${`${field} { `.repeat(depth - 1)}${leaf}${' }'.repeat(depth - 1)} }`;
const aliases = (n: number, selection: string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${selection}`).join(' ')} }`;

describe('document limits at the defaults', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test('a depth-5000 document → 400 with our depth message, not a stack overflow', async () => {
    const res = await post(t, nested('a', 5000));
    expectRefused(res, messages.graphqlDepthLimit(12));
    expect(JSON.stringify(res.body)).not.toContain('call stack');
  });

  test('deep nesting of argument lists and objects is refused the same way', async () => {
    expectRefused(await post(t, `{ myAuditLog(filter: { type: ${'['.repeat(3000)}"x"${']'.repeat(3000)} }) { total } }`), messages.graphqlDepthLimit(12));
  });

  test('depth 13 is refused by the depth rule; depth 12 passes it (and fails on the unknown field)', async () => {
    expectRefused(await post(t, nested('a', 13)), messages.graphqlDepthLimit(12));
    const twelve = await post(t, nested('a', 12));
    expect(twelve.status).toBe(400);
    expect(twelve.body.errors?.[0]).toMatchObject({ message: expect.stringContaining('Cannot query field "a"'), extensions: { code: 'BAD_REQUEST' } });
  });

  test('fragments do not hide depth', async () => {
    const query = `{ ...F0 } ${Array.from({ length: 13 }, (_, i) => `fragment F${i} on Query { a { ${i < 12 ? `...F${i + 1}` : '__typename'} } }`).join(' ')}`;
    expectRefused(await post(t, query), messages.graphqlDepthLimit(12));
  });

  test('braces inside strings and comments do not count as nesting', async () => {
    const braces = '{'.repeat(500);
    // Inside the strings, 100 braces: far past the depth limit if they counted, and within the
    // argument's own maxLength (100, its REST twin's), which is checked before the gate.
    const inString = braces.slice(0, 100);
    const res = await post(t, `# ${braces}\n{ myAuditLog(filter: { type: "${inString}" }) { total } a: myAuditLog(filter: { type: """${inString}""" }) { total } }`);
    expect(res.status).toBe(200);
    // Past every limit and validation: the gate answers (the non-null field nulls the data after its first error).
    expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
    expect(maxNesting(`{ a(s: "${braces}\\"${braces}") # ${braces}\n { b } }`)).toBe(2);
  });

  test('31 aliases → 400; 30 run', async () => {
    expectRefused(await post(t, aliases(31, '__typename')), messages.graphqlAliasLimit(30));
    const ok = await post(t, aliases(30, '__typename'));
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body.data ?? {})).toHaveLength(30);
  });

  test('aliases inside fragments count too', async () => {
    const query = `{ ...A ...B } fragment A on Query { ${Array.from({ length: 16 }, (_, i) => `x${i}: __typename`).join(' ')} } fragment B on Query { ${Array.from({ length: 16 }, (_, i) => `y${i}: __typename`).join(' ')} }`;
    expectRefused(await post(t, query), messages.graphqlAliasLimit(30));
  });

  test('51 directives → 400; 50 pass the limit', async () => {
    const repeated = (n: number) => `{ ${'__typename @include(if: true) '.repeat(n)} }`;
    expectRefused(await post(t, repeated(51)), messages.graphqlDirectiveLimit(50));
    const ok = await post(t, repeated(50));
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual({ __typename: 'Query' });
  });

  test('more than 5000 tokens → 400 with our message', async () => {
    expectRefused(await post(t, `{ ${'__typename '.repeat(5000)}}`), messages.graphqlTokenLimit(5000));
    // Within the token limit, a document goes on to validation (where graphql-js's own budget for
    // comparing 4,990 fields of one name refuses this one: "Validation aborted.").
    const under = await post(t, `{ ${'__typename '.repeat(4990)}}`);
    expect(under.body.errors?.[0]?.message).toBe('Validation aborted.');
    expect((await post(t, `{ ${'__typename '.repeat(100)}}`)).status).toBe(200);
  });

  test('the limit refusal is HTTP 400 with application/graphql-response+json too', async () => {
    const res = await post(t, nested('a', 13), { accept: 'application/graphql-response+json' });
    expectRefused(res, messages.graphqlDepthLimit(12));
    expect(res.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
  });

  test('a syntax error is a request error: HTTP 400, BAD_REQUEST, graphql-js message', async () => {
    const res = await post(t, '{ myPermissions { context ');
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]).toMatchObject({ message: expect.stringMatching(/^Syntax Error/), extensions: { code: 'BAD_REQUEST' } });
  });

  test('GraphiQL’s full introspection query runs within every limit', async () => {
    const res = await post(t, getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true, specifiedByUrl: true, directiveIsRepeatable: true }));
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect((res.body.data?.__schema as { queryType: { name: string } }).queryType.name).toBe('Query');
  });

  test('the issue’s 3,000 aliases of __schema → 400 before execution', async () => {
    const res = await post(t, aliases(3000, '__schema { types { name fields { name type { name ofType { name } } } } }'));
    expectRefused(res, messages.graphqlTokenLimit(5000));
  });

  test('the issue’s 5,000 aliases of myAuditLog(limit: 200) → 400 before execution', async () => {
    const user = await devLogin(t);
    const res = await post(t, aliases(5000, 'myAuditLog(filter: { limit: 200 }) { items { id metadata } total }'), { token: user.accessToken });
    expectRefused(res, messages.graphqlTokenLimit(5000));
  });
});

describe('with the token limit raised, the alias limit still stops the issue’s documents', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, graphql: { max_tokens: 500_000 } });

  test('3,000 aliases of __schema and 5,000 of myAuditLog(limit: 200) → 400 aliases', async () => {
    expectRefused(await post(t, aliases(3000, '__schema { types { name fields { name type { name ofType { name } } } } }')), messages.graphqlAliasLimit(30));
    expectRefused(await post(t, aliases(5000, 'myAuditLog(filter: { limit: 200 }) { items { id metadata } total }')), messages.graphqlAliasLimit(30));
  });
});

describe('cost: list arguments multiply their subtree', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  let token: string;
  beforeAll(async () => {
    token = (await devLogin(t)).accessToken;
  });

  test('a page of 200 with nested lists is within the limit; three of them are not', async () => {
    // myAuditLog 1 + items 200 + resolvedNames 200 × 10 (a list without a size argument) = 2201.
    const page = 'myAuditLog(filter: { limit: 200 }) { items { id resolvedNames { id } } }';
    const one = await post(t, `{ ${page} }`, { token });
    expect(one.status).toBe(200);
    expect(one.body.errors).toBeUndefined();
    expectRefused(await post(t, aliases(3, page), { token }), messages.graphqlCostLimit(3 * 2201, 5000));
  });

  test('a size beyond the twin’s paging bounds costs the clamped page the service serves', async () => {
    // limit 1000 is clamped to 200 by the audit log (spec), so this is the 2201 of the page above.
    const res = await post(t, '{ myAuditLog(filter: { limit: 1000 }) { items { id resolvedNames { id } } } }', { token });
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expectRefused(await post(t, aliases(3, 'myAuditLog(filter: { limit: 1000 }) { items { id resolvedNames { id } } }'), { token }), messages.graphqlCostLimit(3 * 2201, 5000));
  });
});

describe('cost under a small limit (graphql.max_cost 100)', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, graphql: { max_cost: 100 } });
  let token: string;
  beforeAll(async () => {
    token = (await devLogin(t)).accessToken;
  });

  test('the size may come as a literal, a variable or a whole input-object variable', async () => {
    expectRefused(await post(t, '{ myAuditLog(filter: { limit: 150 }) { items { id } } }', { token }), messages.graphqlCostLimit(151, 100));
    expectRefused(
      await post(t, 'query ($n: Int) { myAuditLog(filter: { limit: $n }) { items { id } } }', { token, variables: { n: 150 } }),
      messages.graphqlCostLimit(151, 100),
    );
    expectRefused(
      await post(t, 'query ($f: AuditLogFilter) { myAuditLog(filter: $f) { items { id } } }', { token, variables: { f: { limit: 150 } } }),
      messages.graphqlCostLimit(151, 100),
    );
    // notifications clamp to 100 (spec): 1 + 100.
    expectRefused(await post(t, 'query ($n: Int) { notifications(limit: $n) { items { id } } }', { token, variables: { n: 9999 } }), messages.graphqlCostLimit(101, 100));
  });

  test('no size: the twin’s default page (audit 50, notifications 25)', async () => {
    expectRefused(await post(t, '{ myAuditLog { items { id resolvedNames { id } } } }', { token }), messages.graphqlCostLimit(1 + 50 + 500, 100));
    // Four notification pages of the default 25: 4 × (1 + 25).
    const notifications = await post(t, '{ notifications { items { id } } a: notifications { items { id } } b: notifications { items { id } } c: notifications { items { id } } }', { token });
    expectRefused(notifications, messages.graphqlCostLimit(4 * 26, 100));
  });

  test('through fragments too', async () => {
    const query = '{ ...P } fragment P on Query { myAuditLog(filter: { limit: 40 }) { ...Items } } fragment Items on AuditLogPage { items { resolvedNames { id } } }';
    expectRefused(await post(t, query, { token }), messages.graphqlCostLimit(1 + 40 + 400, 100));
  });

  test('the operation chosen by operationName is the one costed', async () => {
    const document = 'query Cheap { __typename } query Costly { myAuditLog(filter: { limit: 150 }) { items { id } } }';
    const run = (operationName: string) =>
      fetch(`${t.url}/v1/gql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: document, operationName }),
      }).then(async (res) => ({ status: res.status, headers: res.headers, body: (await res.json()) as GqlResponse['body'] }));
    expect((await run('Cheap')).body).toEqual({ data: { __typename: 'Query' } });
    expectRefused(await run('Costly'), messages.graphqlCostLimit(151, 100));
  });
});

describe('a refused operation never executes', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, graphql: { max_cost: 3 } });

  test('four account creations over a cost limit of 3 create nothing', async () => {
    const user = await devLogin(t);
    const before = await api(t, 'GET', '/accounts', { token: user.accessToken });
    const mutation = `mutation { ${[1, 2, 3, 4].map((i) => `a${i}: createAccount(input: { name: "costly ${i}" }) { id }`).join(' ')} }`;
    expectRefused(await post(t, mutation, { token: user.accessToken }), messages.graphqlCostLimit(4, 3));
    const after = await api(t, 'GET', '/accounts', { token: user.accessToken });
    expect(after.body).toEqual(before.body);
  });
});

describe('the rate limit charges a GraphQL request by its cost', () => {
  const t = useTestApp({ rate_limits: { anonymous: 20 } });

  test('one point per 100 of cost (at least 1), then 429 like REST once the budget is spent', async () => {
    const cheap = await post(t, '{ __typename }');
    expect(cheap.status).toBe(200);
    expect(cheap.headers.get('x-ratelimit-remaining')).toBe('19');
    // Cost 1 + 200 = 201 → 3 points: one by the middleware, two more by the endpoint.
    const page = await post(t, '{ myAuditLog(filter: { limit: 200 }) { items { id } } }');
    expect(page.status).toBe(200);
    expect(page.body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
    expect(page.headers.get('x-ratelimit-remaining')).toBe('16');
    // Cost 1 + 200 + 200 × 10 = 2201 → 23 points, more than the 16 left.
    const res = await fetch(`${t.url}/v1/gql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: '{ myAuditLog(filter: { limit: 200 }) { items { resolvedNames { id } } } }' }),
    });
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ error: 'RATE_LIMIT_EXCEEDED', message: 'Rate limit exceeded' });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get('x-ratelimit-limit')).toBe('20');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    const after = await fetch(`${t.url}/v1/health`);
    expect(after.status).toBe(429);
    await after.text();
  });
});

describe('introspection and suggestions outside production', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test('introspection answers and "Did you mean" suggestions stay', async () => {
    const schema = await post(t, '{ __schema { queryType { name } } __type(name: "Query") { name } }');
    expect(schema.body).toEqual({ data: { __schema: { queryType: { name: 'Query' } }, __type: { name: 'Query' } } });
    const typo = await post(t, '{ myPermision { context } }');
    expect(typo.body.errors?.[0]?.message).toBe('Cannot query field "myPermision" on type "Query". Did you mean "myPermissions"?');
  });
});

const production = { env: 'production', mail: { allow_log_transport: true }, log: { level: 'silent' }, auth: { jwt_secret: 'p'.repeat(40), dev_login: false }, rate_limits: { enabled: false }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } };

describe('production', () => {
  const t = useTestApp(production);

  test('refuses __schema and __type with 400 BAD_REQUEST; __typename still answers', async () => {
    expectRefused(await post(t, '{ __schema { queryType { name } } }'), messages.graphqlIntrospectionDisabled);
    expectRefused(await post(t, '{ __type(name: "Query") { name } }'), messages.graphqlIntrospectionDisabled);
    expectRefused(await post(t, getIntrospectionQuery()), messages.graphqlIntrospectionDisabled);
    expect((await post(t, '{ __typename }')).body).toEqual({ data: { __typename: 'Query' } });
  });

  test('drops "Did you mean" suggestions from request errors', async () => {
    const typo = await post(t, '{ myPermision { context } }');
    expect(typo.body.errors?.[0]).toEqual({ message: 'Cannot query field "myPermision" on type "Query".', locations: [{ line: 1, column: 3 }], extensions: { code: 'BAD_REQUEST' } });
    const argument = await post(t, '{ notifications(limt: 5) { total } }');
    expect(argument.body.errors?.[0]?.message).toBe('Unknown argument "limt" on field "Query.notifications".');
    // A public field, so the gate (checked before the arguments) lets the anonymous caller through.
    const inputField = await post(t, 'query ($f: PublicBrowseFilter) { publicChannelBrowse(filter: $f) { __typename } }', { variables: { f: { limt: 5 } } });
    expect(inputField.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    expect(inputField.body.errors?.[0]?.message).not.toContain('Did you mean');
  });

  test('the SDL stays downloadable at /v1/schema', async () => {
    const res = await fetch(`${t.url}/v1/schema`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('type Query');
  });
});

describe('production with graphql.introspection: true', () => {
  const t = useTestApp({ ...production, graphql: { introspection: true } });

  test('introspection and suggestions are back', async () => {
    expect((await post(t, '{ __schema { queryType { name } } }')).body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
    const typo = await post(t, '{ myPermision { context } }');
    expect(typo.body.errors?.[0]?.message).toContain('Did you mean "myPermissions"?');
  });
});

describe('configured limits', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, graphql: { max_depth: 3, max_aliases: 2, max_directives: 1, max_tokens: 100, max_cost: 10 } });

  test('each limit follows its config key', async () => {
    expectRefused(await post(t, nested('a', 4)), messages.graphqlDepthLimit(3));
    expectRefused(await post(t, aliases(3, '__typename')), messages.graphqlAliasLimit(2));
    expectRefused(await post(t, '{ __typename @include(if: true) __typename @skip(if: false) }'), messages.graphqlDirectiveLimit(1));
    expectRefused(await post(t, `{ ${'__typename '.repeat(100)}}`), messages.graphqlTokenLimit(100));
    expectRefused(await post(t, '{ myAuditLog(filter: { limit: 10 }) { items { id } } }'), messages.graphqlCostLimit(11, 10));
    // A depth the nesting scan refuses before parsing gets the same message.
    expectRefused(await post(t, nested('a', 70)), messages.graphqlDepthLimit(3));
  });
});

describe('hostile documents and variables found by the edge fuzzer', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  /** The body is written by hand: JSON.stringify of variables nested 5,000 deep would overflow here too. */
  async function postRaw(body: string): Promise<{ status: number; type: string | null; body: GqlResponse['body'] }> {
    const res = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body, signal: AbortSignal.timeout(20_000) });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type'), body: JSON.parse(text) as GqlResponse['body'] };
  }
  const deepArray = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
  const nestedTooDeep = (field: string) => ({
    errors: [{ message: messages.nestedTooDeep(field, 64), extensions: { code: 'VALIDATION_ERROR', details: { fields: [{ field, message: messages.nestedTooDeepDetail(64) }] } } }],
  });

  async function expectStillServing(): Promise<void> {
    const res = await post(t, '{ __typename }');
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
  }

  test('~105 KB of repeated directives → 400 token limit; with variables nested 5,000 deep → 400 VALIDATION_ERROR, not an empty 500', async () => {
    for (const directive of ['@include(if: true)', '@deprecated']) {
      const query = `{ __typename ${Array.from({ length: 5000 }, () => directive).join(' ')} }`;
      expectRefused(await post(t, query), messages.graphqlTokenLimit(5000));
      const res = await postRaw(`{"query":${JSON.stringify(query)},"variables":{"filter":${deepArray(5000)}}}`);
      expect(res.status).toBe(400);
      expect(res.type).toMatch(/^application\/json/);
      expect(res.body).toEqual(nestedTooDeep('filter'));
      await expectStillServing();
    }
    const small = await postRaw(`{"query":"{ __typename @include(if: true) @include(if: true) @include(if: true) }","variables":{"filter":${deepArray(5000)}}}`);
    expect({ status: small.status, body: small.body }).toEqual({ status: 400, body: nestedTooDeep('filter') });
    await expectStillServing();
  });

  test('adminCreatePlan with deeply nested arrays (and objects) in its variables → 400 VALIDATION_ERROR naming the variable', async () => {
    const query = 'mutation($input: AdminCreatePlanInput!) { adminCreatePlan(input: $input) { id } }';
    for (const value of [deepArray(5000), deepArray(20_000), `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`, `{"name":"x","slug":${deepArray(1000)}}`]) {
      const res = await postRaw(`{"query":${JSON.stringify(query)},"variables":{"input":${value}}}`);
      expect(res.status).toBe(400);
      expect(res.type).toMatch(/^application\/json/);
      expect(res.body).toEqual(nestedTooDeep('input'));
      await expectStillServing();
    }
  });

  test('variables nested 64 deep still reach graphql-js’s own coercion', async () => {
    // A public field: gates come before arguments, so an admin mutation would answer 401 here.
    const res = await postRaw(`{"query":"query($input: PublicBrowseFilter) { publicChannelBrowse(filter: $input) { __typename } }","variables":{"input":${deepArray(63)}}}`);
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]).toMatchObject({ message: expect.stringContaining('Variable "$input" got invalid value'), extensions: { code: 'VALIDATION_ERROR' } });
  });

  test('an unexpected throw inside the endpoint ends as a scrubbed JSON 500, and the server keeps serving', async () => {
    // The endpoint serialises the variables for its operation cache; make exactly that call throw.
    const original = JSON.stringify;
    const spy = jest.spyOn(JSON, 'stringify').mockImplementation(function (this: unknown, value: unknown, ...rest: unknown[]) {
      if (value && typeof value === 'object' && Object.keys(value).join() === 'fuzzBoom') throw new Error('internal detail that must not leak');
      return (original as (...args: unknown[]) => string).call(JSON, value, ...rest);
    } as typeof JSON.stringify);
    try {
      const res = await postRaw('{"query":"{ __typename }","variables":{"fuzzBoom":1}}');
      expect({ status: res.status, type: res.type, body: res.body }).toEqual({
        status: 500,
        type: expect.stringMatching(/^application\/json/),
        body: { error: 'INTERNAL_SERVER_ERROR', message: 'An internal server error occurred' },
      });
    } finally {
      spy.mockRestore();
    }
    await expectStillServing();
  });
});
