/**
 * The GraphQL side of the input guard (src/http/input-guard.ts): every argument value of the
 * operation, inline literals and variables alike, after graphql-js's own coercion, so the field is
 * named by its argument path (`input.name`, `filter.type`) whichever way it was sent. Opaque JSON
 * arguments are checked whole, keys and nesting depth included. An explicit null where the REST
 * twin's body schema refuses null means what the SDL says of a nullable input field: the same as
 * leaving it out (`nullsAsAbsent`, applied before the resolver runs); where REST takes null (it
 * clears a value), GraphQL's null does the same. A string longer than the `maxLength` of the
 * REST twin's field is refused with the REST validator's refusal, word for word
 * (generated/graphql-string-limits.ts), rather than reaching the database.
 */
import {
  getNamedType,
  isInputObjectType,
  getArgumentValues,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { graphqlStringLimits, type StringLimit } from '../../../generated/graphql-string-limits';
import { openapiDocument } from '../../../generated/openapi-document';
import { twins } from '../../../generated/parity';
import { AppError } from '../../errors';
import { inputProblem, inputProblemError } from '../input-guard';

type Schema = { $ref?: string; type?: string; nullable?: boolean; properties?: Record<string, Schema>; content?: Record<string, { schema?: Schema }> };

function deref(node: Schema | undefined): Schema | undefined {
  let current = node;
  while (current?.$ref) {
    current = current.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((acc, key) => (acc as Record<string, unknown> | undefined)?.[key], openapiDocument) as Schema | undefined;
  }
  return current;
}

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Per `Mutation.field`: the argument paths (`input.extensionDevMode`) whose REST body property refuses null. */
type NullRefusals = Map<string, Set<string>>;
const nullRefusalsBySchema = new WeakMap<GraphQLSchema, NullRefusals>();

function nullRefusals(schema: GraphQLSchema): NullRefusals {
  let known = nullRefusalsBySchema.get(schema);
  if (known) return known;
  known = new Map();
  const paths = openapiDocument.paths as Record<string, Record<string, { requestBody?: Schema } | undefined>>;
  for (const twin of twins) {
    const body = deref(deref(paths[twin.path.replace(/^\/v1/, '')]?.[twin.method]?.requestBody)?.content?.['application/json']?.schema);
    const [typeName, fieldName] = twin.graphql.split('.') as [string, string];
    const field = schema.getType(typeName) && (schema.getType(typeName) as { getFields?: () => Record<string, { args: readonly { name: string; type: unknown }[] }> }).getFields?.()[fieldName];
    if (!body?.properties || !field) continue;
    const refused = new Set<string>();
    const add = (path: string, name: string) => {
      const property = deref(body.properties![snake(name)]);
      if (property?.type && property.nullable !== true) refused.add(path);
    };
    for (const arg of field.args) {
      const named = getNamedType(arg.type as never);
      // Fields of an input object (a body's shape); a top-level null argument stays "not given".
      if (isInputObjectType(named)) for (const name of Object.keys(named.getFields())) add(`${arg.name}.${name}`, name);
    }
    if (refused.size > 0) known.set(twin.graphql, refused);
  }
  nullRefusalsBySchema.set(schema, known);
  return known;
}

/**
 * `args` without the explicit nulls of input fields whose REST twin refuses null: such a null is
 * "not given", as the SDL's nullable input field promises, so the service sees what REST would
 * see with the member left out. Other nulls (REST's nullable members, which clear a value) stay.
 */
export function nullsAsAbsent(schema: GraphQLSchema, key: string, args: Record<string, unknown>): Record<string, unknown> {
  const paths = nullRefusals(schema).get(key);
  if (!paths) return args;
  let out = args;
  for (const path of paths) {
    const [head, tail] = path.split('.') as [string, string];
    const input = out[head];
    if (input === null || typeof input !== 'object' || !(tail in input) || (input as Record<string, unknown>)[tail] !== null) continue;
    const { [tail]: _dropped, ...rest } = input as Record<string, unknown>;
    out = { ...out, [head]: rest };
  }
  return out;
}

/** Ajv's `maxLength` counts code points (a surrogate pair is one character), as this does. */
const longerThan = (value: string, max: number) => value.length > max && [...value].length > max;

/** Every value at `path` under `value` (`*` = each list item), with the list positions it went through. */
function* valuesAt(value: unknown, path: readonly string[], positions: number[] = []): Generator<{ value: unknown; positions: number[] }> {
  if (value === null || value === undefined) return;
  if (path.length === 0) {
    yield { value, positions };
    return;
  }
  const [head, ...tail] = path as [string, ...string[]];
  if (head === '*') {
    if (Array.isArray(value)) for (const [i, item] of value.entries()) yield* valuesAt(item, tail, [...positions, i]);
    return;
  }
  if (typeof value === 'object' && !Array.isArray(value)) yield* valuesAt((value as Record<string, unknown>)[head], tail, positions);
}

/** The first string of `values` over its REST twin's `maxLength`, refused as the REST validator refuses it. */
function overLong(limits: readonly StringLimit[] | undefined, values: Record<string, unknown>): AppError | null {
  for (const limit of limits ?? []) {
    for (const { value, positions } of valuesAt(values, limit.path)) {
      if (typeof value !== 'string' || !longerThan(value, limit.maxLength)) continue;
      let index = 0;
      const words = (text: string) => text.replace(/\{index\}/g, () => `.${positions[index++] ?? 0}`).replace('{value}', value);
      const message = words(limit.message);
      index = 0;
      return limit.field ? AppError.validation(message, { fields: [{ field: words(limit.field.field), message: limit.field.message.replace('{value}', value) }] }) : AppError.validation(message);
    }
  }
  return null;
}

/** A field of an operation (or of a fragment it spreads) that is given arguments, in the order they are checked. */
interface ArgumentSite {
  readonly field: GraphQLField<unknown, unknown>;
  readonly node: FieldNode;
  /** `Mutation.createAccount`: the key of its REST twin's null refusals and string limits. */
  readonly key: string | null;
}

/**
 * The fields with arguments of `operation`, in the order a walk with type information meets them
 * (the operation, then each fragment it spreads, the latest queued first). They depend on the
 * document alone: documents come from the endpoint's checked-document cache, so a repeated text
 * finds its sites here instead of walking the document again per request.
 */
const sitesByOperation = new WeakMap<OperationDefinitionNode, WeakMap<GraphQLSchema, readonly ArgumentSite[]>>();

function argumentSites(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): readonly ArgumentSite[] {
  let bySchema = sitesByOperation.get(operation);
  const known = bySchema?.get(schema);
  if (known) return known;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const sites: ArgumentSite[] = [];
  const pending: ASTNode[] = [operation];
  const queued = new Set<string>();
  const typeInfo = new TypeInfo(schema);
  const visitor = visitWithTypeInfo(typeInfo, {
    Field(node) {
      const field = typeInfo.getFieldDef();
      if (!field || !node.arguments?.length) return;
      const parent = typeInfo.getParentType();
      sites.push({ field, node, key: parent ? `${parent.name}.${field.name}` : null });
    },
    FragmentSpread(node) {
      const fragment = fragments.get(node.name.value);
      if (fragment && !queued.has(node.name.value)) {
        queued.add(node.name.value);
        pending.push(fragment);
      }
    },
  });
  while (pending.length > 0) visit(pending.pop()!, visitor);
  if (!bySchema) sitesByOperation.set(operation, (bySchema = new WeakMap()));
  bySchema.set(schema, sites);
  return sites;
}

/**
 * The refusal for the first argument of `operation` (or of a fragment it spreads) holding a string
 * PostgreSQL cannot store (or JSON nested too deep), or null. `variables` are the operation's
 * variables as graphql-js coerced them (the endpoint refused the request already if they did not
 * coerce).
 */
export function invalidArgumentError(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>>,
): AppError | null {
  const sites = argumentSites(schema, document, operation);
  if (sites.length === 0) return null;
  for (const { field, node, key } of sites) {
    let values: Record<string, unknown>;
    try {
      values = getArgumentValues(field, node, variables);
    } catch {
      continue; // left to execution, which reports it
    }
    const problem = inputProblem(values);
    if (problem) return inputProblemError(problem, node.name.value);
    const found = key ? overLong(graphqlStringLimits[key], nullsAsAbsent(schema, key, values)) : null;
    if (found) return found;
  }
  return null;
}
