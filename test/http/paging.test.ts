/**
 * Paging bounds over real HTTP, for every paged operation of the route table (generated from the
 * spec, so a new paged operation is covered without new test code) and its GraphQL twin: `page`
 * and `limit` beyond 32 bits are refused with 400 VALIDATION_ERROR on REST and the same code on
 * GraphQL (they used to give 500 or silently page 1), the largest page answers
 * an empty page, and `limit` defaults and clamps to the declared numbers on both protocols alike.
 */
import { randomUUID } from 'node:crypto';
import { buildSchema, getNamedType, isInputObjectType, type GraphQLField } from 'graphql';
import { typeDefs } from '../../generated/graphql-schema';
import { routes, type RouteSpec } from '../../generated/rest';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const OPERATOR = `paging-operator-${Date.now()}@example.test`;
const paged = routes.filter((r): r is RouteSpec & { paging: NonNullable<RouteSpec['paging']> } => r.paging !== null);
const schema = buildSchema(typeDefs);
const INT32_MAX = 2147483647;

/** `page`, `limit` and `total` of a REST page, whatever the declared envelope. */
function restPage(route: RouteSpec, body: Record<string, unknown>): { page: number; limit: number; total: number; items: unknown[] } {
  if (route.envelope.kind === 'collection') {
    const meta = body._meta as { page: number; limit: number; total: number };
    return { ...meta, items: body.data as unknown[] };
  }
  const page = (route.envelope.kind === 'data' || route.envelope.kind === 'single') && body.data && typeof body.data === 'object' ? (body.data as Record<string, unknown>) : body;
  return { page: page.page as number, limit: page.limit as number, total: page.total as number, items: page.items as unknown[] };
}

/**
 * Whether the page echoes `page` and `limit` (the shared collection shape) and needs no path
 * parameter: the answer-shape checks below apply to those. Operations whose spec gives a body of
 * their own (`{ items, total }`, a public list) or that page under a resource are still held to
 * the bounds (the refusals), which the validator enforces before any handler runs.
 */
const standardPage = (route: RouteSpec, body: Record<string, unknown>) => !route.path.includes('{') && typeof restPage(route, body).page === 'number';

/** Whether the GraphQL twin pages with `page`/`limit` (directly or in a filter) and answers `{ items, page, limit, total }`. */
function standardTwin(route: RouteSpec): boolean {
  if (!route.graphql) return false;
  const field = schema.getQueryType()!.getFields()[route.graphql.split('.')[1]!];
  if (!field) return false;
  const result = getNamedType(field.type);
  if (!('getFields' in result) || !('page' in (result as { getFields(): Record<string, unknown> }).getFields())) return false;
  return field.args.some((a) => a.name === 'page' || (isInputObjectType(getNamedType(a.type)) && 'page' in (getNamedType(a.type) as { getFields(): Record<string, unknown> }).getFields()));
}

/** A GraphQL document for the twin, passing page and limit as variables where the field takes them. */
function twinQuery(route: RouteSpec): { query: string; variables: (page: unknown, limit?: unknown) => Record<string, unknown>; inline: (page: number) => string } {
  const fieldName = route.graphql!.split('.')[1]!;
  const field = schema.getQueryType()!.getFields()[fieldName] as GraphQLField<unknown, unknown>;
  if (field.args.some((a) => a.name === 'page')) {
    return {
      query: `query($page: Int, $limit: Int) { ${fieldName}(page: $page, limit: $limit) { items { __typename } page limit total } }`,
      variables: (page, limit) => ({ page, ...(limit === undefined ? {} : { limit }) }),
      inline: (page) => `{ ${fieldName}(page: ${page}) { page } }`,
    };
  }
  const holder = field.args.find((a) => {
    const type = getNamedType(a.type);
    return isInputObjectType(type) && 'page' in type.getFields();
  });
  if (!holder) throw new Error(`${route.graphql} takes no page argument`);
  return {
    query: `query($filter: ${getNamedType(holder.type).name}) { ${fieldName}(${holder.name}: $filter) { items { __typename } page limit total } }`,
    variables: (page, limit) => ({ filter: { page, ...(limit === undefined ? {} : { limit }) } }),
    inline: (page) => `{ ${fieldName}(${holder.name}: { page: ${page} }) { page } }`,
  };
}

describe('paging bounds', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, auth: { bootstrap_admins: [OPERATOR] } });
  let operator: LoggedIn;

  beforeAll(async () => {
    // A bootstrap admin who owns an account and is an approved developer: passes the user,
    // first-party, account, admin and developer gates (the payout list needs the last).
    operator = await devLogin(t, OPERATOR);
    const applied = await api(t, 'POST', '/developer/application', {
      token: operator.accessToken,
      body: { application_type: 'solo', display_name: 'Paging', slug: `paging-${randomUUID().slice(0, 8)}`, description: 'Pages', motivation: 'Bounds', what_to_build: 'Lists' },
    });
    const approved = await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as { id: string }).id}/approve`, { token: operator.accessToken, body: {} });
    if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${JSON.stringify(approved.body)}`);
  });

  // Path parameters get a well-formed id: the bounds are refused before the resource is looked up.
  const get = (route: RouteSpec, query: Record<string, string>) =>
    api(t, 'GET', route.path.replace(/^\/v1/, '').replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000'), { token: operator.accessToken, query });

  test('the route table has paged operations, each with 32-bit page bounds', () => {
    expect(paged.map((r) => r.operationId).sort()).toEqual(expect.arrayContaining(['accountAuditLog', 'adminAuditLog', 'myAuditLog', 'notifications']));
    for (const route of paged) expect(route.paging.maxPage).toBe(INT32_MAX);
  });

  describe.each(paged.map((r) => [r.operationId, r] as const))('%s', (_id, route) => {
    test.each(['99999999999999999999', '9223372036854775807', '1e308', '2147483648', '-2147483649'])('REST page=%s: 400 VALIDATION_ERROR naming query.page', async (page) => {
      const res = await get(route, { page });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('VALIDATION_ERROR');
      expect(res.body.message).toMatch(/^query\.page /);
      expect((res.body as { details?: { fields?: { field: string }[] } }).details?.fields?.[0]?.field).toBe('query.page');
    });

    test.each(['99999999999999999999', '1e308', '-9223372036854775808'])('REST limit=%s: 400 VALIDATION_ERROR naming query.limit', async (limit) => {
      const res = await get(route, { limit });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('VALIDATION_ERROR');
      expect(res.body.message).toMatch(/^query\.limit /);
    });

    test('the largest page answers an empty page, on REST and GraphQL', async () => {
      const res = await get(route, { page: String(INT32_MAX) });
      if (route.path.includes('{')) return;
      expect(res.status).toBe(200);
      if (!standardPage(route, res.body)) return;
      expect(restPage(route, res.body)).toMatchObject({ page: INT32_MAX, items: [] });
      if (standardTwin(route) && route.graphql) {
        const twin = twinQuery(route);
        const g = await gql(t.url, twin.query, twin.variables(INT32_MAX), { authorization: `Bearer ${operator.accessToken}` });
        expect(g.body.errors).toBeUndefined();
        expect(g.body.data![route.graphql.split('.')[1]!]).toMatchObject({ page: INT32_MAX, items: [] });
      }
    });

    test('GraphQL refuses a page beyond 32 bits with the code REST gives', async () => {
      if (!route.graphql || !standardTwin(route)) return;
      const rest = await get(route, { page: '2147483648' });
      const twin = twinQuery(route);
      const g = await gql(t.url, twin.query, twin.variables(2147483648), { authorization: `Bearer ${operator.accessToken}` });
      expect(g.body.data ?? null).toBeNull();
      expect(g.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
      expect(g.body.errors?.[0]?.extensions?.code).toBe(rest.body.error);
      // The same number written inline in the document.
      const inline = await gql(t.url, twin.inline(2147483648), undefined, { authorization: `Bearer ${operator.accessToken}` });
      expect(inline.body.errors?.[0]?.extensions?.code).toBe(rest.body.error);
    });

    test('limit defaults and clamps (or is refused) within the declared bounds, with the same numbers on both protocols', async () => {
      const { defaultLimit, minLimit, maxLimit } = route.paging;
      const cases: [string | undefined, number][] = [
        [undefined, defaultLimit],
        ['0', minLimit],
        ['-5', minLimit],
        [String(maxLimit + 1), maxLimit],
        ['2147483647', maxLimit],
      ];
      for (const [limit, expected] of cases) {
        const res = await get(route, limit === undefined ? { page: '0' } : { page: '0', limit });
        if (!route.paging.clampLimit && limit !== undefined) {
          // Operations whose spec does not say "clamped" refuse a limit outside the served range.
          expect(res.status).toBe(400);
          expect(res.body.error).toBe('VALIDATION_ERROR');
          if (standardTwin(route)) {
            const twin = twinQuery(route);
            const g = await gql(t.url, twin.query, twin.variables(0, Number(limit)), { authorization: `Bearer ${operator.accessToken}` });
            expect(g.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
          }
          continue;
        }
        if (route.path.includes('{')) continue;
        expect(res.status).toBe(200);
        if (!standardPage(route, res.body)) continue;
        expect(restPage(route, res.body)).toMatchObject({ page: 1, limit: expected });
        if (standardTwin(route) && route.graphql) {
          const twin = twinQuery(route);
          const g = await gql(t.url, twin.query, twin.variables(0, limit === undefined ? undefined : Number(limit)), { authorization: `Bearer ${operator.accessToken}` });
          expect(g.body.errors).toBeUndefined();
          expect(g.body.data![route.graphql.split('.')[1]!]).toMatchObject({ page: 1, limit: expected });
        }
      }
    });
  });
});
