/**
 * Completeness of the modules' bindings, said in words. Every REST operation of the spec needs a
 * handler and every Query and Mutation field a resolver, bound by the module whose spec part
 * declares it (generated/parity.ts's operationModules and graphqlFieldModules).
 *
 * At compile time, src/app.ts assigns `'complete'` to `Unbound<...>`: when something is missing,
 * tsc says `Type '"complete"' is not assignable to type '"operation X has no REST handler in module
 * Y"'` instead of a bare `never` constraint. At start-up, foldModules calls unboundMessages and
 * refuses to start with the same words (test/contract/bindings.test.ts).
 */
import { graphqlFieldModules, operationModules, type GraphqlFieldModules, type OperationModules } from '../../generated/parity';
import type { OperationId } from '../../generated/rest';

/** `'complete'` when nothing is missing, else one sentence per missing REST operation. */
export type UnboundRest<Missing extends OperationId> = [Missing] extends [never]
  ? 'complete'
  : { [K in Missing]: `operation ${K} has no REST handler in module ${OperationModules[K]} (bind it in src/modules/${OperationModules[K]}/rest.ts)` }[Missing];

/** `'complete'` when nothing is missing, else one sentence per missing Query or Mutation field. */
export type UnboundGraphql<Root extends 'Query' | 'Mutation', Missing extends string> = [Missing] extends [never]
  ? 'complete'
  : { [K in Missing]: `${Root}.${K} has no GraphQL resolver in module ${ModuleOfField<`${Root}.${K}`>} (bind it in src/modules/${ModuleOfField<`${Root}.${K}`>}/graphql.ts)` }[Missing];
type ModuleOfField<F extends string> = F extends keyof GraphqlFieldModules ? GraphqlFieldModules[F] : '(none declares it)';

/**
 * What is unbound, in words: every operation of the spec without a handler in `rest`, and every
 * Query and Mutation field without a resolver in `resolvers`.
 */
export function unboundMessages(rest: Readonly<Record<string, unknown>>, resolvers: { Query: Readonly<Record<string, unknown>>; Mutation: Readonly<Record<string, unknown>> }): string[] {
  const messages: string[] = [];
  for (const [id, module] of Object.entries(operationModules as Readonly<Record<string, string>>)) {
    if (!(id in rest)) messages.push(`operation ${id} has no REST handler in module ${module} (bind it in src/modules/${module}/rest.ts)`);
  }
  for (const [field, module] of Object.entries(graphqlFieldModules as Readonly<Record<string, string>>)) {
    const [root, name] = field.split('.') as ['Query' | 'Mutation', string];
    if (!(name in resolvers[root])) messages.push(`${field} has no GraphQL resolver in module ${module} (bind it in src/modules/${module}/graphql.ts)`);
  }
  return messages;
}
