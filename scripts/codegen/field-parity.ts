/**
 * Field parity of REST/GraphQL twins (an operation with `x-graphql: Query.<field>` or
 * `Mutation.<field>`), checked both ways at codegen so that a field added to one spec and
 * forgotten in the other fails `npm run codegen` instead of a test answering 500:
 *
 *   - answers: every property of the REST resource (the response's `data`, a collection's item,
 *     a bare body) has a field of the GraphQL result (a paged result's `items`), and every field
 *     of the GraphQL type a REST property, nested objects and lists included;
 *   - requests: every path and query parameter and every JSON body property has a GraphQL
 *     argument or input field, and every argument and input field a REST parameter or property
 *     (an input-object argument stands for the body property of its name, or else for the body
 *     itself or, for a body-less operation, the query parameters, as argument-rules.ts maps them);
 *   - each matched pair agrees in type (string ↔ String / UUID / ID / enum, integer ↔ Int, number ↔
 *     Float, boolean ↔ Boolean, array ↔ list, object ↔ object type or JSON), in nullability (a
 *     required, non-nullable REST property ↔ a non-null GraphQL type) and, where both are enums,
 *     in their members. Limits, patterns and bounds are not compared: the GraphQL binding takes
 *     them from REST (generated/graphql-argument-rules.ts).
 *
 * Names map snake_case (REST) ↔ camelCase (GraphQL). Shared parameters codegen adds to every
 * operation (`x-every-operation`, `x-every-change`: Idempotency-Key) and headers are not compared.
 * Answers are not compared when REST answers raw (`x-envelope: raw`) or the GraphQL result is a
 * scalar; when the operation declares `x-graphql-shape: own` (its twin answers a shape of its own),
 * only a collection whose item is a component named like the GraphQL type of the listed items
 * (`Event` in `PaginatedEventResult.items`). Requests are always compared.
 *
 * Where the twins differ on purpose, the OpenAPI side declares it, with a reason (at least 12
 * characters), on the schema the property belongs to (a component such as `Overlay`, or an
 * inline request body) or, for path and query parameters and for GraphQL arguments, on the
 * operation:
 *
 *   x-graphql-omit:    { <rest_name>: <reason> }     REST has it, GraphQL does not
 *   x-graphql-only:    { <graphqlName>: <reason> }   GraphQL has it, REST does not
 *   x-graphql-differs: { <rest_name>: <reason> }     both have it; type or nullability differ
 *   x-graphql-name:    { <rest_name>: <graphqlName> } both have it under other names (a path's
 *                                                    `id` that GraphQL calls `roleId`)
 *
 * An exception that no longer matches a difference is reported too, so the list stays true.
 */
import {
  getNullableType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLInputObjectType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type GraphQLType,
} from 'graphql';
import { fail } from './common';
import type { OpenApiDoc, Route } from './openapi';
import type { SpecSources } from './spec-sources';

export interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
  content?: Record<string, { schema?: Schema }>;
  [extension: `x-${string}`]: unknown;
}
interface Parameter {
  $ref?: string;
  name?: string;
  in?: string;
  required?: boolean;
  schema?: Schema;
  [extension: `x-${string}`]: unknown;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: Schema;
  responses?: Record<string, Schema>;
  [extension: `x-${string}`]: unknown;
}

export const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
export const camel = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const MIN_REASON = 12;
const EXCEPTIONS = ['x-graphql-omit', 'x-graphql-only', 'x-graphql-differs'] as const;
type ExceptionKind = (typeof EXCEPTIONS)[number];

/** Resolves `$ref`s, remembering the component name a schema was reached by. */
export function resolver(doc: OpenApiDoc) {
  const names = new WeakMap<object, string>();
  const deref = <T extends { $ref?: string }>(node: T | undefined): T | undefined => {
    let current = node;
    while (current?.$ref) {
      const ref = current.$ref;
      current = ref
        .replace(/^#\//, '')
        .split('/')
        .reduce<unknown>((acc, key) => (acc as Record<string, unknown> | undefined)?.[key], doc) as T | undefined;
      if (current && typeof current === 'object' && ref.startsWith('#/components/schemas/')) names.set(current, ref.split('/').pop()!);
    }
    return current;
  };
  return { deref, componentName: (schema: object) => names.get(schema) ?? null };
}

/** An object schema's properties and required names, `allOf` parts merged. */
export function objectMembers(schema: Schema, deref: (s: Schema | undefined) => Schema | undefined): { properties: Record<string, Schema>; required: Set<string> } {
  const properties: Record<string, Schema> = { ...(schema.properties ?? {}) };
  const required = new Set(schema.required ?? []);
  for (const part of schema.allOf ?? []) {
    const inner = deref(part);
    if (!inner) continue;
    const merged = objectMembers(inner, deref);
    Object.assign(properties, merged.properties);
    for (const name of merged.required) required.add(name);
  }
  return { properties, required };
}

/**
 * The declared exceptions of one holder (a schema or an operation), by kind; a malformed one is
 * reported. `used` collects the names that excused a difference, for the stale-exception check.
 */
class Exceptions {
  private readonly declared = new Map<ExceptionKind, Map<string, string>>();
  private readonly used = new Set<string>();
  /** `x-graphql-name`: REST name → GraphQL name, where the twin names it otherwise. */
  private readonly renames = new Map<string, string>();
  constructor(
    holder: Record<string, unknown>,
    private readonly where: string,
  ) {
    const renames = holder['x-graphql-name'];
    if (renames !== undefined) {
      if (renames === null || typeof renames !== 'object' || Array.isArray(renames) || Object.values(renames).some((v) => typeof v !== 'string')) {
        fail(`${where}: x-graphql-name must map each REST name to its GraphQL name ({ id: roleId })`);
      } else for (const [rest, gql] of Object.entries(renames as Record<string, string>)) this.renames.set(rest, gql);
    }
    for (const kind of EXCEPTIONS) {
      const value = holder[kind];
      if (value === undefined) continue;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        fail(`${where}: ${kind} must map each name to its reason ({ name: 'why they differ' })`);
        continue;
      }
      const entries = new Map<string, string>();
      for (const [name, reason] of Object.entries(value as Record<string, unknown>)) {
        if (typeof reason !== 'string' || reason.trim().length < MIN_REASON) fail(`${where}: ${kind} ${name} needs a reason of at least ${MIN_REASON} characters`);
        entries.set(name, String(reason));
      }
      this.declared.set(kind, entries);
    }
  }
  /** The GraphQL name of a REST name: its declared rename, else its camelCase. */
  graphqlName(restName: string): string {
    const renamed = this.renames.get(restName);
    if (renamed !== undefined) this.used.add(`x-graphql-name:${restName}`);
    return renamed ?? camel(restName);
  }
  /** The REST name a GraphQL name stands for by a declared rename, or null. */
  renamedFrom(graphqlName: string): string | null {
    for (const [rest, gql] of this.renames) if (gql === graphqlName) return rest;
    return null;
  }
  has(kind: ExceptionKind, name: string): boolean {
    const found = this.declared.get(kind)?.has(name) ?? false;
    if (found) this.used.add(`${kind}:${name}`);
    return found;
  }
  /** Reports every declared exception that excused nothing. */
  reportStale(): void {
    for (const rest of this.renames.keys()) {
      if (!this.used.has(`x-graphql-name:${rest}`)) fail(`${this.where}: x-graphql-name ${rest} names no member of the twins; remove it`);
    }
    for (const [kind, entries] of this.declared) {
      for (const name of entries.keys()) {
        if (!this.used.has(`${kind}:${name}`)) fail(`${this.where}: ${kind} ${name} excuses no difference between the twins; remove it`);
      }
    }
  }
}

/** A GraphQL type as written (`[Overlay!]!`). */
const typeText = (type: GraphQLType): string => String(type);

export function checkFieldParity(doc: OpenApiDoc, routes: readonly Route[], schema: GraphQLSchema, sources: SpecSources): void {
  const { deref, componentName } = resolver(doc);
  const base = ((doc.servers as { url: string }[] | undefined)?.[0]?.url ?? '').replace(/\/$/, '');
  const components = (doc.components ?? {}) as { parameters?: Record<string, Parameter> };
  const shared = new Set(
    Object.entries(components.parameters ?? {})
      .filter(([, p]) => p['x-every-operation'] === true || p['x-every-change'] === true)
      .map(([name]) => `#/components/parameters/${name}`),
  );

  /** Exceptions by holder, made once so that every comparison marks the same ones used. */
  const holders = new Map<object, Exceptions>();
  const exceptionsOf = (holder: object, where: string) => {
    let found = holders.get(holder);
    if (!found) {
      found = new Exceptions(holder as Record<string, unknown>, where);
      holders.set(holder, found);
    }
    return found;
  };
  /** Pairs already compared (a component reached from several twins is reported once). */
  const compared = new WeakMap<object, Set<string>>();

  interface Side {
    /** How the REST schema is named in messages (`Overlay`, `createOverlay request body`). */
    restLabel: string;
    restFile: string;
    /** Where a REST-side exception is declared, in words (`on Overlay`, `on operation createOverlay`). */
    declareOn: string;
  }

  const describeRest = (value: Schema, fallback: string, fallbackFile: string): Side => {
    const name = componentName(value);
    return name
      ? { restLabel: name, restFile: sources.schemaFile(name), declareOn: `on ${name}` }
      : { restLabel: fallback, restFile: fallbackFile, declareOn: `on the ${fallback} schema` };
  };

  /** One matched pair: type and nullability (answers and requests alike). */
  const compareValue = (
    restRaw: Schema,
    restRequired: boolean,
    gqlType: GraphQLType,
    restWhere: string,
    gqlWhere: string,
    differs: () => boolean,
    side: Side,
    gqlFile: string,
    input: boolean,
  ): void => {
    const rest = deref(restRaw);
    if (!rest) return;
    const kind = restKind(rest);
    // An untyped schema (any JSON) admits null as well.
    const restNullable = !restRequired || rest.nullable === true || kind === 'any';
    const gqlNonNull = isNonNullType(gqlType);
    const problemsHere: string[] = [];
    if (restNullable && gqlNonNull) problemsHere.push(`is non-null in GraphQL (${typeText(gqlType)}) but ${rest.nullable ? 'nullable' : input ? 'optional' : 'not required'} in REST`);
    if (!restNullable && !gqlNonNull) problemsHere.push(`is nullable in GraphQL (${typeText(gqlType)}) but ${input ? 'required' : 'always present'} in REST`);
    // An answer's GraphQL field is always there (null when empty); REST's member must be too, or
    // the domain's result (the REST type) is no GraphQL result: list it as required, nullable.
    if (!input && !restRequired && !gqlNonNull) {
      problemsHere.push(`is always present in GraphQL (${typeText(gqlType)}, null when empty) but may be left out in REST; list it in the REST schema's required${rest.nullable ? '' : ' with nullable: true'}`);
    }
    const inner = getNullableType(gqlType);
    const mismatch = (what: string) => problemsHere.push(`has type ${typeText(gqlType)} in GraphQL but ${what} in REST`);
    if (kind === 'any') {
      // oneOf / anyOf / untyped: no single GraphQL type to compare with
    } else if (kind === 'array') {
      if (!isListType(inner)) mismatch('an array');
      else compareValue(rest.items ?? {}, rest.items ? deref(rest.items)?.nullable !== true : false, inner.ofType as GraphQLType, `${restWhere}[]`, `${gqlWhere}[]`, differs, side, gqlFile, input);
    } else if (isListType(inner)) {
      mismatch(`a ${kind}`);
    } else if (kind === 'object') {
      if (isObjectType(inner) || isInputObjectType(inner)) compareObject(rest, inner, describeRest(rest, restWhere, side.restFile), sources.graphqlFile(inner.astNode), input);
      else if (!(isScalarType(inner) && inner.name === 'JSON')) mismatch('an object');
    } else if (kind === 'opaque') {
      if (!(isScalarType(inner) && inner.name === 'JSON')) mismatch('an opaque JSON object');
    } else if (isEnumType(inner)) {
      if (kind !== 'string' || !rest.enum) mismatch(rest.enum ? `an enum of ${kind}` : `a free ${kind}`);
      else {
        // GraphQL writes enum members in capitals (the binding maps them); null is REST's way to say nullable.
        const restMembers = rest.enum.filter((m) => m !== null).map((m) => String(m).toUpperCase()).sort();
        const gqlMembers = inner.getValues().map((v) => v.name.toUpperCase()).sort();
        if (restMembers.join() !== gqlMembers.join()) problemsHere.push(`has enum ${inner.name} {${gqlMembers.join(', ')}} in GraphQL but {${restMembers.join(', ')}} in REST`);
      }
    } else if (isScalarType(inner)) {
      const fits: Record<string, string[]> = {
        string: ['String', 'ID', 'UUID'],
        integer: ['Int', 'Float'],
        number: ['Float'],
        boolean: ['Boolean'],
      };
      if (!(fits[kind] ?? []).includes(inner.name)) mismatch(`a${kind === 'integer' ? 'n' : ''} ${kind}${rest.format ? ` (${rest.format})` : ''}`);
    } else {
      mismatch(`a ${kind}`);
    }
    if (problemsHere.length && !differs()) {
      for (const problem of problemsHere) {
        fail(`${gqlFile}: ${gqlWhere} ${problem} (${restWhere} in ${side.restFile}); make them agree or declare x-graphql-differs ${side.declareOn}`);
      }
    }
  };

  /** Both ways over the members of a REST object schema and a GraphQL object or input type. */
  const compareObject = (rest: Schema, gql: GraphQLObjectType | GraphQLInputObjectType, side: Side, gqlFile: string, input: boolean): void => {
    const seen = compared.get(rest) ?? new Set<string>();
    if (seen.has(gql.name)) return;
    seen.add(gql.name);
    compared.set(rest, seen);
    const exceptions = exceptionsOf(rest, `${side.restFile}: ${side.restLabel}`);
    const { properties, required } = objectMembers(rest, deref);
    const gqlFields = gql.getFields() as Record<string, GraphQLField<unknown, unknown> | GraphQLInputField>;
    const kindWord = input ? 'input' : 'type';
    for (const [name, property] of Object.entries(properties)) {
      const gqlName = exceptions.graphqlName(name);
      const field = gqlFields[gqlName] ?? gqlFields[name];
      if (!field) {
        if (!exceptions.has('x-graphql-omit', name)) {
          fail(`${gqlFile}: ${kindWord} ${gql.name} lacks field ${gqlName} (REST ${side.restLabel}.${name} in ${side.restFile}); add it or declare x-graphql-omit ${side.declareOn}`);
        }
        continue;
      }
      compareValue(property, required.has(name), field.type, `REST ${side.restLabel}.${name}`, `${gql.name}.${field.name}`, () => exceptions.has('x-graphql-differs', name), side, gqlFile, input);
    }
    for (const field of Object.values(gqlFields)) {
      const renamed = exceptions.renamedFrom(field.name);
      if ((renamed && properties[renamed]) || properties[snake(field.name)] || properties[field.name]) continue;
      if (!exceptions.has('x-graphql-only', field.name)) {
        fail(`${side.restFile}: ${side.restLabel} lacks property ${snake(field.name)} (GraphQL ${gql.name}.${field.name} in ${gqlFile}); add it or declare x-graphql-only ${side.declareOn}`);
      }
    }
  };

  for (const route of routes) {
    if (!route.graphql) continue;
    const apiPath = route.path.slice(base.length);
    const operation = (doc.paths[apiPath] as Record<string, Operation> | undefined)?.[route.method];
    const [rootName, fieldName] = route.graphql.split('.') as ['Query' | 'Mutation', string];
    const rootType = rootName === 'Query' ? schema.getQueryType() : schema.getMutationType();
    const field = rootType?.getFields()[fieldName];
    if (!operation || !field) continue; // parity.ts reports a twin without a field
    const restFile = sources.pathFile(apiPath);
    const gqlFile = sources.graphqlFile(field.astNode);
    checkAnswer(route, operation, field, restFile, gqlFile);
    checkRequest(route, operation, field, restFile, gqlFile);
  }
  for (const exceptions of holders.values()) exceptions.reportStale();
  // A declaration on a schema or operation no twin's comparison reaches excuses nothing either.
  const declares = (holder: object) => [...EXCEPTIONS, 'x-graphql-name'].some((key) => key in holder);
  for (const [name, component] of Object.entries(((doc.components as { schemas?: Record<string, Schema> } | undefined)?.schemas ?? {}) as Record<string, Schema>)) {
    if (declares(component) && !holders.has(component)) fail(`${sources.schemaFile(name)}: ${name} declares x-graphql-* but no REST/GraphQL twin compares it with a GraphQL type; remove the declaration`);
  }
  for (const [apiPath, item] of Object.entries(doc.paths)) {
    for (const operation of Object.values(item as Record<string, Operation>)) {
      if (operation && typeof operation === 'object' && declares(operation) && !holders.has(operation)) {
        fail(`${sources.pathFile(apiPath)}: operation ${String((operation as { operationId?: string }).operationId)} declares x-graphql-* but has no GraphQL twin; remove the declaration`);
      }
    }
  }

  function checkAnswer(route: Route, operation: Operation, field: GraphQLField<unknown, unknown>, restFile: string, gqlFile: string): void {
    if (route.envelope.kind === 'raw') return; // bytes, not fields
    const status = route.statuses[0];
    const response = status ? deref(operation.responses?.[status]) : undefined;
    const body = deref(response?.content?.['application/json']?.schema);
    if (!body) return;
    const data = route.envelope.kind === 'bare' ? body : deref(objectMembers(body, deref).properties.data);
    const resource = route.envelope.kind === 'collection' ? deref(data?.items) : data;
    if (!resource || restKind(resource) !== 'object') return;
    let result = getNullableType(field.type);
    if (isLeafType(result)) return; // a scalar answer (`Boolean!` for a delete) has no fields to compare
    if (route.envelope.kind === 'collection') {
      if (isObjectType(result) && result.getFields().items) result = getNullableType(result.getFields().items!.type);
      if (isListType(result)) result = getNullableType(result.ofType);
      else {
        if (!route.ownGraphqlShape) fail(`${gqlFile}: ${route.graphql} answers ${typeText(field.type)}, neither a list nor a page with items, for the REST collection of ${route.operationId} (${restFile}); answer a list or declare x-graphql-shape: own`);
        return;
      }
    }
    if (!isObjectType(result)) return;
    // A twin that answers a shape of its own (x-graphql-shape: own) is compared only where it lists
    // the REST collection's items as the component of the same name (Event in a page of events).
    if (route.ownGraphqlShape && (route.envelope.kind !== 'collection' || componentName(resource) !== result.name)) return;
    compareObject(resource, result, describeRest(resource, `${route.operationId} response data`, restFile), sources.graphqlFile(result.astNode), false);
  }

  function checkRequest(route: Route, operation: Operation, field: GraphQLField<unknown, unknown>, restFile: string, gqlFile: string): void {
    const where = `${route.graphql}`;
    const opExceptions = exceptionsOf(operation, `${restFile}: operation ${route.operationId}`);
    const opSide: Side = { restLabel: route.operationId, restFile, declareOn: `on operation ${route.operationId}` };
    const parameters = (operation.parameters ?? [])
      .filter((p) => !(p.$ref && shared.has(p.$ref)))
      .map((p) => deref(p))
      .filter((p): p is Parameter => Boolean(p?.name) && (p!.in === 'path' || p!.in === 'query'));
    const requestBody = deref(operation.requestBody);
    const content = requestBody?.content;
    // A body that is not JSON (an upload) has no GraphQL input to compare with.
    const body = content && content['application/json'] ? deref(content['application/json'].schema) : undefined;
    const bodyMembers = body && restKind(body) === 'object' ? objectMembers(body, deref) : null;
    const bodySide: Side | null = body ? describeRest(body, `${route.operationId} request body`, restFile) : null;
    const bodyExceptions = body && bodySide ? exceptionsOf(body, `${bodySide.restFile}: ${bodySide.restLabel}`) : null;

    const restNames = new Set<string>([...parameters.map((p) => p.name!), ...Object.keys(bodyMembers?.properties ?? {})]);
    const matched = new Set<string>();
    const findRest = (gqlName: string): string | null => {
      const renamed = opExceptions.renamedFrom(gqlName) ?? bodyExceptions?.renamedFrom(gqlName) ?? null;
      if (renamed && restNames.has(renamed)) {
        if (parameters.some((p) => p.name === renamed)) opExceptions.graphqlName(renamed);
        else bodyExceptions?.graphqlName(renamed);
        return renamed;
      }
      return restNames.has(snake(gqlName)) ? snake(gqlName) : restNames.has(gqlName) ? gqlName : null;
    };
    const compareEntry = (restName: string, gqlName: string, gqlType: GraphQLType, gqlOwner: string) => {
      matched.add(restName);
      const parameter = parameters.find((p) => p.name === restName);
      if (parameter) {
        const required = parameter.required === true && parameter.schema?.default === undefined;
        compareValue(parameter.schema ?? {}, required, gqlType, `REST ${route.operationId} ${parameter.in} parameter ${restName}`, `${gqlOwner}.${gqlName}`, () => opExceptions.has('x-graphql-differs', restName), opSide, gqlFile, true);
      } else {
        const property = bodyMembers!.properties[restName]!;
        const required = bodyMembers!.required.has(restName) && deref(property)?.default === undefined;
        compareValue(property, required, gqlType, `REST ${bodySide!.restLabel}.${restName}`, `${gqlOwner}.${gqlName}`, () => bodyExceptions!.has('x-graphql-differs', restName), bodySide!, gqlFile, true);
      }
    };

    for (const arg of field.args as readonly GraphQLArgument[]) {
      const named = getNullableType(arg.type);
      const restName = findRest(arg.name);
      const asObject = restName !== null && !parameters.some((p) => p.name === restName);
      if (restName && (!isInputObjectType(named) || asObject)) {
        compareEntry(restName, arg.name, arg.type, where);
      } else if (isInputObjectType(named)) {
        // The input stands for the body (or, without one, the query parameters), field by field;
        // the fields of an optional input (a filter) are optional whatever their own type says.
        for (const inner of Object.values(named.getFields())) {
          const innerRest = findRest(inner.name);
          if (innerRest) compareEntry(innerRest, inner.name, isNonNullType(arg.type) ? inner.type : getNullableType(inner.type), named.name);
          else if (!(bodyExceptions?.has('x-graphql-only', inner.name) || opExceptions.has('x-graphql-only', inner.name))) {
            const inFile = sources.graphqlFile(named.astNode);
            fail(`${restFile}: ${route.operationId} lacks ${body ? 'body property' : 'query parameter'} ${snake(inner.name)} (GraphQL ${named.name}.${inner.name} in ${inFile}); add it or declare x-graphql-only ${body ? bodySide!.declareOn : opSide.declareOn}`);
          }
        }
      } else if (!opExceptions.has('x-graphql-only', arg.name)) {
        fail(`${restFile}: ${route.operationId} lacks parameter or body property ${snake(arg.name)} (GraphQL argument ${where}(${arg.name}) in ${gqlFile}); add it or declare x-graphql-only on operation ${route.operationId}`);
      }
    }
    for (const name of restNames) {
      if (matched.has(name)) continue;
      const parameter = parameters.find((p) => p.name === name);
      if (parameter) {
        if (!opExceptions.has('x-graphql-omit', name)) fail(`${gqlFile}: ${where} lacks argument ${camel(name)} (REST ${route.operationId} ${parameter.in} parameter ${name} in ${restFile}); add it or declare x-graphql-omit on operation ${route.operationId}`);
      } else if (!bodyExceptions!.has('x-graphql-omit', name)) {
        fail(`${gqlFile}: ${where} lacks argument or input field ${camel(name)} (REST ${bodySide!.restLabel}.${name} in ${bodySide!.restFile}); add it or declare x-graphql-omit ${bodySide!.declareOn}`);
      }
    }
  }
}

/** What a REST schema is, for comparison: an object with members, an opaque object, or a leaf. */
function restKind(schema: Schema): 'object' | 'opaque' | 'array' | 'string' | 'integer' | 'number' | 'boolean' | 'any' {
  if (schema.oneOf || schema.anyOf) return 'any';
  if (schema.type === 'array' || schema.items) return 'array';
  if (schema.type === 'string' || schema.type === 'integer' || schema.type === 'number' || schema.type === 'boolean') return schema.type;
  if (schema.properties || schema.allOf) return 'object';
  if (schema.type === 'object') return 'opaque';
  return 'any';
}
