/**
 * The GraphQL side of the input guard (src/http/input-guard.ts): every argument value of the
 * operation, inline literals and variables alike, after graphql-js's own coercion, so the field is
 * named by its argument path (`input.name`, `filter.type`) whichever way it was sent. Opaque JSON
 * arguments are checked whole, keys and nesting depth included. An explicit null where the REST
 * twin's body schema refuses null means what the SDL says of a nullable input field: the same as
 * leaving it out (`nullsAsAbsent`, applied before the resolver runs); where REST takes null (it
 * clears a value), GraphQL's null does the same. A value that breaks a rule of the REST twin's
 * field (length, pattern, string format, enum, number bounds, list size) or of its body as a whole
 * (generated/graphql-argument-rules.ts) is refused before the resolver runs, with the REST
 * validator's refusal word for word, rather than reaching the service or the database.
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
import Ajv04 from 'ajv-draft-04';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { graphqlArgumentRules, graphqlBodyRules, type ArgumentRule, type BodyRules } from '../../../generated/graphql-argument-rules';
import { twins } from '../../../generated/parity';
import { AppError } from '../../errors';
import { inputProblem, inputProblemError } from '../input-guard';
import { documentOperation, documentSchema, jsonSchemaOf } from '../mapping';

type Schema = { $ref?: string; type?: string; nullable?: boolean; properties?: Record<string, Schema> };

/** A node of the OpenAPI document with its `$ref`s followed (mapping.ts `documentSchema`). */
const deref = (node: Schema | undefined): Schema | undefined => documentSchema(node) as Schema | undefined;

const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Per `Mutation.field`: the argument paths (`input.extensionDevMode`) whose REST body property refuses null. */
type NullRefusals = Map<string, Set<string>>;
const nullRefusalsBySchema = new WeakMap<GraphQLSchema, NullRefusals>();

function nullRefusals(schema: GraphQLSchema): NullRefusals {
  let known = nullRefusalsBySchema.get(schema);
  if (known) return known;
  known = new Map();
  for (const twin of twins) {
    const body = deref(jsonSchemaOf(documentOperation(twin.operationId).requestBody) as Schema | undefined);
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

/**
 * Checks in the REST validator's dialect (draft-04, ajv-formats' fast string formats), compiled
 * once per rule: the same library reads the same rules, so GraphQL refuses what REST refuses.
 */
const ruleAjv = new Ajv04({ strict: false, validateSchema: false });
addFormats(ruleAjv, { mode: 'fast' });
const compiledRules = new WeakMap<ArgumentRule, ValidateFunction>();

function checkOf(rule: ArgumentRule): ValidateFunction {
  let check = compiledRules.get(rule);
  if (!check) {
    check = ruleAjv.compile(rule.checks);
    compiledRules.set(rule, check);
  }
  return check;
}

/**
 * The first value of `values` that breaks its REST twin's rules, refused as the REST validator
 * refuses it: the validator's words naming the field (an enum's members spelled out), or the
 * schema's declared words (src/http/spec-messages.ts), with the same details.
 */
function brokenRule(rules: readonly ArgumentRule[] | undefined, values: Record<string, unknown>): AppError | null {
  for (const rule of rules ?? []) {
    for (const { value, positions } of valuesAt(values, rule.path)) {
      const check = checkOf(rule);
      if (check(value)) continue;
      const error = check.errors![0]!;
      const params = error.params as { allowedValues?: unknown[]; pattern?: string };
      const words = error.keyword === 'enum' && params.allowedValues ? `${error.message}: ${params.allowedValues.join(', ')}` : (error.message ?? 'is invalid');
      // Declared words cover every rule but the type, unless a map names the keyword (as spec-messages.ts reads them).
      const template = typeof rule.words === 'string' ? (error.keyword === 'type' ? undefined : rule.words) : (rule.words?.[`${error.keyword} ${params.pattern}`] ?? rule.words?.[error.keyword]);
      if (template === undefined) {
        let index = 0;
        const field = rule.field.replace(/\{index\}/g, () => `.${positions[index++] ?? 0}`);
        return AppError.validation(`${field} ${words}`, { fields: [{ field, message: words }] });
      }
      const message = template.replace('{value}', typeof value === 'string' ? value : JSON.stringify(value));
      return rule.declaredField === null ? AppError.validation(message) : AppError.validation(message, { fields: [{ field: rule.declaredField, message }] });
    }
  }
  return null;
}

const compiledBodyRules = new WeakMap<object, ValidateFunction>();

/**
 * The first rule of the REST twin's body as a whole (which fields go together) that the argument
 * values break, refused as the REST validator refuses it (spec-messages.ts): the rule's words,
 * naming its `x-error-field`. The body is made of the values as REST would receive them: REST
 * keys, REST enum values, explicit nulls already dropped where REST refuses null.
 */
function brokenBodyRule(body: BodyRules | undefined, values: Record<string, unknown>): AppError | null {
  if (!body) return null;
  const rest: Record<string, unknown> = {};
  for (const member of body.members) {
    // A null still here is one REST takes (it clears a value): a member of the body too.
    const value = member.path.reduce<unknown>((acc, key) => (acc !== null && typeof acc === 'object' ? (acc as Record<string, unknown>)[key] : undefined), values);
    if (value !== undefined) rest[member.key] = typeof value === 'string' ? (member.values?.[value] ?? value) : value;
  }
  for (const rule of body.rules) {
    let check = compiledBodyRules.get(rule);
    if (!check) {
      check = ruleAjv.compile(rule);
      compiledBodyRules.set(rule, check);
    }
    if (check(rest)) continue;
    const message = String(rule['x-error-message']).replace('{value}', JSON.stringify(rest));
    return rule['x-error-details'] === false ? AppError.validation(message) : AppError.validation(message, { fields: [{ field: String(rule['x-error-field'] ?? ''), message }] });
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
    if (!key) continue;
    const given = nullsAsAbsent(schema, key, values);
    const found = brokenRule(graphqlArgumentRules[key], given) ?? brokenBodyRule(graphqlBodyRules[key], given);
    if (found) return found;
  }
  return null;
}
