/**
 * The authorization matrix (authorization-matrix.ts): every REST operation with its GraphQL twin,
 * and every GraphQL-only root field, against every credential kind. One running service serves the
 * whole file; each test is one operation's row and lists every cell that disagrees with its gate.
 */
import { routes } from '../../generated/rest';
import { CREDENTIAL_KINDS, checkField, checkRoute, expectedAnswer, graphqlOnlyFields, startMatrix, type MatrixFixture } from './authorization-matrix';

let fixture: MatrixFixture | undefined;
beforeAll(async () => {
  fixture = await startMatrix();
}, 120_000);
afterAll(async () => {
  await fixture?.t.stop();
});
const f = () => {
  if (!fixture) throw new Error('the matrix service did not start');
  return fixture;
};

describe(`authorization matrix: ${routes.length} operations and ${graphqlOnlyFields.length} GraphQL-only fields × ${CREDENTIAL_KINDS.length} credential kinds`, () => {
  for (const route of routes) {
    test(`${route.method.toUpperCase()} ${route.path} (${route.operationId}${route.graphql ? ` ⇄ ${route.graphql}` : ''})`, async () => {
      expect(await checkRoute(f(), route)).toEqual([]);
    });
  }
  for (const field of graphqlOnlyFields) {
    test(`GraphQL ${field}`, async () => {
      expect(await checkField(f(), field)).toEqual([]);
    });
  }
});

describe('the matrix oracle follows Part 1, not the gate engine', () => {
  const gate = (auth: string, permission?: string, scope = 'account') =>
    ({ auth, permissions: permission ? { mode: 'all', scope, list: [permission] } : null, feature: null }) as Parameters<typeof expectedAnswer>[0];

  test('no key and no non-owner holds account:delete; the owner session does', () => {
    const dissolve = gate('first-party', 'account:delete');
    const allowed = CREDENTIAL_KINDS.filter((kind) => expectedAnswer(dissolve, kind).kind === 'allowed');
    expect(allowed).toEqual(['owner session']);
  });

  test('bound tokens and popouts are refused by the first-party gate; a service key by user scope', () => {
    for (const kind of ['popout session', 'overlay token', 'shared overlay token', 'widget token', 'extension token', 'service key', 'developer key', 'system key'] as const) {
      expect(expectedAnswer(gate('first-party'), kind)).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    }
    expect(expectedAnswer(gate('user', 'ideas:create', 'user'), 'service key')).toMatchObject({ status: 401 });
    expect(expectedAnswer(gate('authenticated', 'ideas:create', 'user'), 'service key')).toMatchObject({ status: 403, message: 'Missing permission: ideas:create' });
    expect(expectedAnswer(gate('authenticated', 'events:read'), 'anonymous')).toMatchObject({ status: 401, message: 'Authentication required' });
  });
});
