/**
 * Boundary cases of GraphQL inputs, read from the REST twin's schema: for every Query and Mutation
 * field with arguments and a REST twin (generated/parity.ts), each argument and input field that
 * stands for a REST parameter or body property (scripts/codegen/argument-rules.ts maps them, as
 * the GraphQL argument checks do) gets the REST boundary variants of that field
 * (test/contract/boundaries.ts: lengths, patterns, formats, enum members, number bounds, list
 * sizes), sent as variables, plus an explicit `null` wherever the SDL makes the field nullable
 * (accepted: it means "not given", or clears the value where REST's null does) and a value of the
 * wrong GraphQL type. A refusal that REST's validator makes is matched with the REST twin's own
 * case of the same value (same `what`), so the test can hold both protocols to one message.
 */
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isInterfaceType,
  isUnionType,
  isScalarType,
  type GraphQLInputType,
} from 'graphql';
import { openapiDocument } from '../../generated/openapi-document';
import { typeDefs } from '../../generated/graphql-schema';
import { twins, type Twin } from '../../generated/parity';
import { twinArguments, type Json, type TwinArgument } from '../../scripts/codegen/argument-rules';
import { bodyRules, boundaryCases, operationOf, sample, variantsOf, type BoundaryCase } from './boundaries';
import { deref, graphqlOperationFor } from './harness';

const schema = buildSchema(typeDefs);

export interface GraphqlCase {
  expect: 'accept' | 'refuse';
  /** What changed, e.g. `input.name: length 101 (maxLength 100)`. */
  what: string;
  variables: Record<string, unknown>;
  /**
   * For a refusal: `graphql` when GraphQL's type system refuses the value itself (a non-member of
   * a GraphQL enum, a wrong type, null for a non-null type: 400 VALIDATION_ERROR in graphql-js's
   * words); otherwise the REST twin's case of the same value, whose message GraphQL must give.
   */
  refusedBy?: 'graphql' | BoundaryCase;
}

export interface FieldCases {
  twin: Twin;
  /** The operation: every argument declared as a variable. */
  query: string;
  cases: GraphqlCase[];
}

/** A REST value as GraphQL takes it: snake_case keys camelCased where the input names them so, enum values as member names. */
function toGraphql(value: unknown, type: GraphQLInputType): unknown {
  if (value === null || value === undefined) return value;
  const inner = getNullableType(type);
  if (isListType(inner)) return Array.isArray(value) ? value.map((v) => toGraphql(v, inner.ofType as GraphQLInputType)) : value;
  if (isEnumType(inner)) return inner.getValues().find((m) => m.name.toUpperCase() === String(value).toUpperCase())?.name ?? value;
  if (isInputObjectType(inner) && typeof value === 'object' && !Array.isArray(value)) {
    const out: Record<string, unknown> = {};
    const given = value as Record<string, unknown>;
    for (const [name, field] of Object.entries(inner.getFields())) {
      const key = [name, snakeOf(name)].find((k) => k in given);
      if (key !== undefined) out[name] = toGraphql(given[key], field.type);
    }
    return out;
  }
  return value;
}

const snakeOf = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A copy of `base` with `value` at `path`; a missing parent is made from `parentOf(prefix)`. */
function withValue(base: unknown, path: readonly string[], value: unknown, parentOf: (prefix: string[]) => unknown, prefix: string[] = []): unknown {
  if (path.length === 0) return value;
  const copy = { ...((base ?? parentOf(prefix) ?? {}) as Record<string, unknown>) };
  const [head, ...tail] = path as [string, ...string[]];
  copy[head] = withValue(copy[head], tail, value, parentOf, [...prefix, head]);
  return copy;
}

/** A value of the wrong GraphQL type, for the scalars and inputs graphql-js coerces strictly (ID takes numbers, lists take one item, JSON anything). */
function wrongType(type: GraphQLInputType): { what: string; value: unknown } | null {
  const inner = getNullableType(type);
  if (isListType(inner)) return null;
  if (isEnumType(inner) || isInputObjectType(inner)) return { what: `wrong type (number for ${inner.name})`, value: 12345 };
  if (!isScalarType(inner)) return null;
  const wrong: Record<string, unknown> = { String: 12345, UUID: 12345, Int: 'one', Float: 'one', Boolean: 'true' };
  return inner.name in wrong ? { what: `wrong type (${typeof wrong[inner.name]} for ${inner.name})`, value: wrong[inner.name] } : null;
}

/** Whether an argument and its REST field are of one kind, so that REST's boundary values are GraphQL values too. */
function sameKind(a: TwinArgument): boolean {
  const rest = deref(a.rest);
  const inner = getNullableType(a.type);
  if (isListType(inner)) return rest?.type === 'array';
  if (rest?.type === 'array') return false;
  if (isEnumType(inner)) return Array.isArray(rest?.enum);
  if (!isScalarType(inner)) return true;
  const kinds: Record<string, readonly unknown[]> = { String: ['string', undefined], ID: ['string', undefined], UUID: ['string'], Int: ['integer'], Float: ['integer', 'number'], Boolean: ['boolean'], JSON: [rest?.type] };
  return (kinds[inner.name] ?? []).includes(rest?.type);
}

/** Where a REST field's cases are labelled in boundaries.ts (`body.name`, `query.limit`, `path.id`). */
const restLabel = (a: TwinArgument) => `${a.where === 'params' ? 'path' : a.where}.${a.restPath.join('.')}`;

function selectionOf(field: string): string {
  const [typeName, fieldName] = field.split('.') as [string, string];
  const root = typeName === 'Query' ? schema.getQueryType()! : schema.getMutationType()!;
  const type = getNamedType(root.getFields()[fieldName]!.type);
  return isObjectType(type) || isInterfaceType(type) || isUnionType(type) ? ' { __typename }' : '';
}

/** Every GraphQL field with arguments and a REST twin, with its boundary cases. */
export function graphqlBoundaryCases(): FieldCases[] {
  const restCases = new Map(boundaryCases().map((o) => [o.route.operationId, o.cases]));
  const out: FieldCases[] = [];
  for (const twin of twins) {
    const [typeName, fieldName] = twin.graphql.split('.') as [string, string];
    const root = typeName === 'Query' ? schema.getQueryType()! : schema.getMutationType()!;
    const field = root.getFields()[fieldName]!;
    if (field.args.length === 0) continue;
    const mapped = twinArguments(openapiDocument as unknown as Json, twin, schema);
    if (mapped.length === 0) continue;
    const byPath = new Map(mapped.map((a) => [a.path.join('.'), a]));
    const op = operationOf({ path: twin.path, method: twin.method } as never);
    const bodySchema = (deref(op.requestBody)?.content as Record<string, { schema?: unknown }> | undefined)?.['application/json']?.schema;
    const restBody = bodySchema ? sample(bodySchema) : undefined;
    const holds = bodySchema ? bodyRules(bodySchema) : null;

    // The base: REST's sampled request, in GraphQL's terms; arguments standing for no REST field as the harness samples them.
    const sampled = graphqlOperationFor(twin.graphql).variables;
    const base: Record<string, unknown> = {};
    for (const arg of field.args) {
      const own = byPath.get(arg.name);
      const fields = mapped.filter((f) => f.path.length === 2 && f.path[0] === arg.name);
      const inBody = (key: string) => restBody !== null && typeof restBody === 'object' && key in restBody;
      if (own && own.where === 'body' && inBody(own.restPath[0]!)) base[arg.name] = toGraphql((restBody as Record<string, unknown>)[own.restPath[0]!], arg.type);
      else if (own && isNonNullType(arg.type)) base[arg.name] = toGraphql(sample(own.rest), arg.type);
      else if (!own && fields[0]?.where === 'body') base[arg.name] = toGraphql(restBody, arg.type);
      else if (!own && fields.some((f) => isNonNullType(f.type))) {
        base[arg.name] = Object.fromEntries(fields.filter((f) => isNonNullType(f.type)).map((f) => [f.path[1]!, toGraphql(sample(f.rest), f.type)]));
      } else if (isNonNullType(arg.type) && arg.name in sampled) base[arg.name] = sampled[arg.name];
    }
    const parentOf = (prefix: string[]) => {
      const entry = byPath.get(prefix.join('.'));
      return entry ? toGraphql(sample(entry.rest), entry.type) : {};
    };

    const declarations = field.args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
    const call = field.args.map((a) => `${a.name}: $${a.name}`).join(', ');
    const keyword = typeName === 'Query' ? 'query' : 'mutation';
    const query = `${keyword} Boundary(${declarations}) { ${fieldName}(${call})${selectionOf(twin.graphql)} }`;
    const rest = restCases.get(twin.operationId) ?? [];
    const cases: GraphqlCase[] = [{ expect: 'accept', what: 'the base request', variables: base }];

    // Nullable arguments and input fields that stand for no REST field: the SDL's null holds for them too.
    for (const arg of field.args) {
      const inner = getNullableType(arg.type);
      if (!isNonNullType(arg.type) && !byPath.has(arg.name)) cases.push({ expect: 'accept', what: `${arg.name}: null (nullable in the SDL)`, variables: { ...base, [arg.name]: null } });
      if (!isInputObjectType(inner) || base[arg.name] === undefined || base[arg.name] === null) continue;
      for (const [name, f] of Object.entries(inner.getFields())) {
        if (isNonNullType(f.type) || byPath.has(`${arg.name}.${name}`)) continue;
        cases.push({ expect: 'accept', what: `${arg.name}.${name}: null (nullable in the SDL)`, variables: { ...base, [arg.name]: { ...(base[arg.name] as object), [name]: null } } });
      }
    }
    for (const a of mapped) {
      if (a.path.includes('*')) continue; // a list's items are covered by the list's own one-item variants
      const label = a.path.join('.');
      /** Whether REST's sampled body with this field set to `value` (undefined: left out) keeps the body's rules. */
      const bodyHolds = (value: unknown) => {
        if (a.where !== 'body' || !holds || !restBody || typeof restBody !== 'object' || a.restPath.includes('*')) return true;
        const changed = withValue(restBody, a.restPath, value, () => ({})) as Record<string, unknown>;
        return holds(JSON.parse(JSON.stringify(changed)));
      };
      const at = (value: unknown) => withValue(base, a.path, value, parentOf) as Record<string, unknown>;
      // The SDL's nullability decides null, not REST's: a nullable input means "may be null", which
      // is the field left out where REST refuses null (or clears a value where REST takes it).
      const restNullable = deref(a.rest)?.nullable === true;
      if (isNonNullType(a.type)) cases.push({ expect: 'refuse', what: `${label}: null (non-null in the SDL)`, variables: at(null), refusedBy: 'graphql' });
      else if (bodyHolds(restNullable ? null : undefined)) cases.push({ expect: 'accept', what: `${label}: null (nullable in the SDL)`, variables: at(null) });
      else cases.push({ expect: 'refuse', what: `${label}: null (nullable in the SDL), as left out against the body's rules`, variables: at(null) });
      const wrong = wrongType(a.type);
      if (wrong) cases.push({ expect: 'refuse', what: `${label}: ${wrong.what}`, variables: at(wrong.value), refusedBy: 'graphql' });
      const inner = getNullableType(a.type);
      if (isInputObjectType(inner)) continue; // its fields have cases of their own
      const named = getNamedType(a.type);
      if (!sameKind(a)) continue; // a pair of other kinds (x-graphql-differs): REST's values say nothing of GraphQL's
      for (const v of variantsOf(a.rest, true)) {
        if (v.value === null || v.what.startsWith('wrong type') || v.what.startsWith('item: wrong type') || v.what.startsWith('item: null')) continue;
        if (isScalarType(named) && named.name === 'JSON') continue; // opaque JSON: the input guard's keys and depth, not a schema
        const what = `${label}: ${v.what}`;
        const restWhat = `${restLabel(a)}: ${v.what}`;
        const twinCase = rest.find((c) => c.what === restWhat || c.what === `${restWhat}, against the body's rules`);
        // A value GraphQL's own types refuse (a non-member of a GraphQL enum, a non-UUID for UUID, past 32 bits or not whole for Int).
        const outOfInt = named.name === 'Int' && typeof v.value === 'number' && (!Number.isInteger(v.value) || v.value < -(2 ** 31) || v.value > 2 ** 31 - 1);
        const ownRefusal = v.expect === 'refuse' && (outOfInt || (isEnumType(named) && /not an enum member/.test(v.what)) || (named.name === 'UUID' && /not format uuid/.test(v.what)));
        // A value that also breaks a rule of the whole body (which fields go together) is refused by
        // whichever rule is checked first: the field's own words are not certain then.
        const breaksBody = !bodyHolds(v.value);
        const expect = breaksBody ? 'refuse' : v.expect;
        const value = toGraphql(v.value, a.type);
        if (expect === 'refuse') cases.push({ expect, what: breaksBody ? `${what}, against the body's rules` : what, variables: at(value), refusedBy: ownRefusal ? 'graphql' : breaksBody && v.expect === 'refuse' ? undefined : twinCase });
        else cases.push({ expect, what, variables: at(value) });
      }
      // Every member of a GraphQL enum (REST's variants stop at six).
      const members = (deref(a.rest)?.enum as unknown[] | undefined) ?? [];
      if (isEnumType(inner)) {
        for (const member of members.filter((m) => m !== null).slice(6)) {
          if (bodyHolds(member)) cases.push({ expect: 'accept', what: `${label}: enum member ${JSON.stringify(member)}`, variables: at(toGraphql(member, a.type)) });
        }
      }
    }
    out.push({ twin, query, cases });
  }
  return out;
}
