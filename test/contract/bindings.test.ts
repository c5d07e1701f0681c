/**
 * An operation of the spec that no module binds is reported in words, naming the module whose spec
 * part declares it: at start-up (foldModules refuses with unboundMessages) and at compile time
 * (src/app.ts's bindingsComplete; the type assertions below are checked by `npm run typecheck`).
 */
import { graphqlFieldModules, operationModules } from '../../generated/parity';
import { routes } from '../../generated/rest';
import { fieldGates } from '../../generated/graphql-schema';
import { unboundMessages, type UnboundGraphql, type UnboundRest } from '../../src/modules/bindings';

/** Every operation and field bound, as the modules bind them (only the names matter here). */
function allBound() {
  const rest: Record<string, unknown> = Object.fromEntries(routes.map((r) => [r.operationId, () => undefined]));
  const Query: Record<string, unknown> = {};
  const Mutation: Record<string, unknown> = {};
  for (const field of Object.keys(fieldGates)) {
    const [root, name] = field.split('.') as ['Query' | 'Mutation', string];
    (root === 'Query' ? Query : Mutation)[name] = () => undefined;
  }
  return { rest, resolvers: { Query, Mutation } };
}

// Compile time: the missing names read as sentences, not as a `never` constraint.
const restComplete: UnboundRest<never> = 'complete';
const restMissing: UnboundRest<'createOverlay'> = 'operation createOverlay has no REST handler in module overlays (bind it in src/modules/overlays/rest.ts)';
const graphqlMissing: UnboundGraphql<'Mutation', 'createOverlay'> = 'Mutation.createOverlay has no GraphQL resolver in module overlays (bind it in src/modules/overlays/graphql.ts)';

describe('bindings of the spec', () => {
  test('every operation and root field has the module that declares it', () => {
    expect(Object.keys(operationModules).sort()).toEqual(routes.map((r) => r.operationId).sort());
    expect(Object.keys(graphqlFieldModules).sort()).toEqual(Object.keys(fieldGates).sort());
    expect((operationModules as Record<string, string>).createOverlay).toBe('overlays');
    expect(Object.values(operationModules).every((m) => /^[a-z][a-z0-9-]*$/.test(m))).toBe(true);
    expect(Object.values(graphqlFieldModules).every((m) => /^[a-z][a-z0-9-]*$/.test(m))).toBe(true);
  });

  test('nothing is reported when every operation and field is bound', () => {
    const { rest, resolvers } = allBound();
    expect(unboundMessages(rest, resolvers)).toEqual([]);
    expect(restComplete).toBe('complete');
  });

  test('an unbound REST operation and GraphQL field are named with their module', () => {
    const { rest, resolvers } = allBound();
    delete rest.createOverlay;
    delete resolvers.Mutation.createOverlay;
    expect(unboundMessages(rest, resolvers)).toEqual([restMissing, graphqlMissing]);
  });
});
