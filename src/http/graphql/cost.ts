/**
 * The estimated cost of a GraphQL operation: about how many objects it can make the server
 * resolve. It is refused above `graphql.max_cost` and charged against the caller's rate limit
 * (`ratePoints`). Runs on a validated document. Owns the cost model only; the limits and their
 * messages are limits.ts's.
 *
 * The model: an object-typed field costs 1 for each parent object it is resolved on; a field of a
 * root type costs at least 1 (it is a resolver call, whatever it returns); scalars and
 * `__typename` are free. A list multiplies its subtree by its size: the nearest `limit`, `first` or
 * `last` argument above it (given directly or inside an input object such as `filter`, as a literal
 * or a variable), `DEFAULT_PAGE_SIZE` when such an argument is declared but not given, and
 * `DEFAULT_LIST_SIZE` for lists that take none. A field whose REST twin pages uses the twin's
 * declared bounds instead (spec/openapi/, through the generated route table): its default when
 * no size is given, and the clamp the service applies (`limit: 1000` on the audit log is 200).
 * `__schema` and `__type` cost `INTROSPECTION_COST`.
 */
import {
  getNamedType,
  getNullableType,
  isCompositeType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type ArgumentNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type GraphQLType,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { routes } from '../../../generated/rest';
import type { PagingBounds } from '../../paging';

/** Argument names that bound the size of the list below them. */
const SIZE_ARGUMENTS = new Set(['limit', 'first', 'last']);
/** A paged field called without a size: the largest default page of the spec (the audit log's 50). */
export const DEFAULT_PAGE_SIZE = 50;
/** A list that takes no size argument (members, roles, resolved names). */
export const DEFAULT_LIST_SIZE = 10;
/**
 * Introspection's size is the schema's, not the caller's choice: a flat cost, so one full
 * introspection (GraphiQL's) is one rate-limit point. graphql-js's MaxIntrospectionDepthRule stops
 * the self-nesting kind, and the alias and token limits bound how many one document holds.
 */
export const INTROSPECTION_COST = 100;
/** Cost units per rate-limit point: a query that returns up to 100 objects counts as one request. */
export const COST_PER_POINT = 100;

/** The points a request of this cost draws from its rate limit: at least 1, like any request. */
export function ratePoints(cost: number): number {
  return Math.max(1, Math.ceil(cost / COST_PER_POINT));
}

type Variables = Readonly<Record<string, unknown>> | null | undefined;

/** `Query.myAuditLog` → the paging bounds its REST twin declares. */
const twinPaging: ReadonlyMap<string, PagingBounds> = new Map(routes.flatMap((r) => (r.graphql && r.paging ? [[r.graphql, r.paging] as const] : [])));

/** A list size read from the request: a positive integer (the services clamp below to 1). */
function sizeFrom(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  return Math.max(1, Math.floor(value));
}

function valueOf(node: ValueNode | undefined, variables: Variables): unknown {
  if (!node) return undefined;
  if (node.kind === Kind.INT) return Number(node.value);
  if (node.kind === Kind.VARIABLE) return variables?.[node.name.value];
  return undefined;
}

/**
 * The size a field's arguments ask for, within its twin's paging bounds when it has some;
 * `DEFAULT_PAGE_SIZE` (or the twin's default) when it declares a size argument the request leaves
 * out; undefined when it declares none.
 */
function requestedSize(field: GraphQLField<unknown, unknown>, args: readonly ArgumentNode[], variables: Variables, bounds: PagingBounds | undefined): number | undefined {
  const requested = sizeArgument(field, args, variables);
  if (requested === undefined) return undefined;
  if (!bounds) return requested === 'absent' ? DEFAULT_PAGE_SIZE : requested;
  const size = requested === 'absent' ? bounds.defaultLimit : requested;
  return Math.min(Math.max(size, bounds.minLimit, 1), bounds.maxLimit);
}

/** The size argument's value; 'absent' when one is declared but not given; undefined when none is declared. */
function sizeArgument(field: GraphQLField<unknown, unknown>, args: readonly ArgumentNode[], variables: Variables): number | 'absent' | undefined {
  let declared = false;
  for (const arg of field.args) {
    const given = args.find((a) => a.name.value === arg.name)?.value;
    if (SIZE_ARGUMENTS.has(arg.name)) {
      declared = true;
      const size = sizeFrom(valueOf(given, variables));
      if (size !== undefined) return size;
      continue;
    }
    const inputType = getNamedType(arg.type);
    if (!isInputObjectType(inputType)) continue;
    for (const name of Object.keys(inputType.getFields())) {
      if (!SIZE_ARGUMENTS.has(name)) continue;
      declared = true;
      let value: unknown;
      if (given?.kind === Kind.OBJECT) value = valueOf(given.fields.find((f) => f.name.value === name)?.value, variables);
      else if (given?.kind === Kind.VARIABLE) value = (variables?.[given.name.value] as Record<string, unknown> | null | undefined)?.[name];
      const size = sizeFrom(value);
      if (size !== undefined) return size;
    }
  }
  return declared ? 'absent' : undefined;
}

/** How many list wrappers a field type has (`[[X]]` is 2). */
function listDepth(type: GraphQLType): number {
  let depth = 0;
  let current: GraphQLType = getNullableType(type);
  while (isListType(current)) {
    depth++;
    current = getNullableType(current.ofType);
  }
  return depth;
}

/**
 * The cost of `operation` in `document` with these variables. Linear in the document: a fragment's
 * cost is computed once per (fragment, pending list size, root) and scaled, so fragments that
 * spread each other many times cannot make the estimate itself expensive.
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Variables): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const fragmentCost = new Map<string, number>();
  const visiting = new Set<string>();

  /** Cost of a selection set resolved on ONE object of `parentType`. */
  function selectionCost(selectionSet: SelectionSetNode, parentType: GraphQLCompositeType, pending: number | undefined, isRoot: boolean): number {
    let cost = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name === '__typename') continue;
        if (name === '__schema' || name === '__type') {
          cost += INTROSPECTION_COST;
          continue;
        }
        if (!isObjectType(parentType) && !isInterfaceType(parentType)) continue;
        const field = parentType.getFields()[name];
        if (!field) continue;
        const size = requestedSize(field, selection.arguments ?? [], variables, twinPaging.get(`${parentType.name}.${name}`));
        let below = size ?? pending;
        let instances = 1;
        const lists = listDepth(field.type);
        if (lists > 0) {
          instances = (below ?? DEFAULT_LIST_SIZE) * DEFAULT_LIST_SIZE ** (lists - 1);
          below = undefined;
        }
        const named = getNamedType(field.type);
        if (isCompositeType(named)) {
          cost += instances;
          if (selection.selectionSet) cost += instances * selectionCost(selection.selectionSet, named, below, false);
        } else if (isRoot) {
          cost += instances;
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const typeName = selection.typeCondition?.name.value;
        const type = typeName ? schema.getType(typeName) : parentType;
        if (type && isCompositeType(type)) cost += selectionCost(selection.selectionSet, type, pending, isRoot);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        if (!fragment || visiting.has(name)) continue;
        const key = `${name}\u0000${pending ?? ''}\u0000${isRoot}`;
        let unit = fragmentCost.get(key);
        if (unit === undefined) {
          const type = schema.getType(fragment.typeCondition.name.value);
          visiting.add(name);
          unit = type && isCompositeType(type) ? selectionCost(fragment.selectionSet, type, pending, isRoot) : 0;
          visiting.delete(name);
          fragmentCost.set(key, unit);
        }
        cost += unit;
      }
    }
    return cost;
  }

  const root = schema.getRootType(operation.operation);
  return root ? selectionCost(operation.selectionSet, root, undefined, true) : 0;
}
