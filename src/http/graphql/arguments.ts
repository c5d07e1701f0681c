/**
 * The GraphQL side of the input guard (src/http/input-guard.ts): every argument value of the
 * operation, inline literals and variables alike, after graphql-js's own coercion, so the field is
 * named by its argument path (`input.name`, `filter.type`) whichever way it was sent. Opaque JSON
 * arguments are checked whole, keys and nesting depth included.
 */
import {
  BREAK,
  getArgumentValues,
  getVariableValues,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type ASTNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { AppError } from '../../errors';
import { inputProblem, inputProblemError } from '../input-guard';

/**
 * The refusal for the first argument of `operation` (or of a fragment it spreads) holding a string
 * PostgreSQL cannot store (or JSON nested too deep), or null. Variables that fail coercion are left to execution, which
 * reports them as usual; nothing they hold reaches a resolver.
 */
export function invalidArgumentError(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>> | null | undefined,
): AppError | null {
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {}, { maxErrors: 1 });
  if (coerced.errors) return null;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);

  const pending: ASTNode[] = [operation];
  const queued = new Set<string>();
  let found: AppError | null = null;
  const typeInfo = new TypeInfo(schema);
  const visitor = visitWithTypeInfo(typeInfo, {
    Field(node) {
      const field = typeInfo.getFieldDef();
      if (!field || !node.arguments?.length) return undefined;
      let values: Record<string, unknown>;
      try {
        values = getArgumentValues(field, node, coerced.coerced);
      } catch {
        return undefined; // left to execution, which reports it
      }
      const problem = inputProblem(values);
      if (!problem) return undefined;
      found = inputProblemError(problem, node.name.value);
      return BREAK;
    },
    FragmentSpread(node) {
      const fragment = fragments.get(node.name.value);
      if (fragment && !queued.has(node.name.value)) {
        queued.add(node.name.value);
        pending.push(fragment);
      }
    },
  });
  while (pending.length > 0 && !found) visit(pending.pop()!, visitor);
  return found;
}
