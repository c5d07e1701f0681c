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

/**
 * Where a field's size argument may be read, in the order it is looked for: an inline integer, a
 * variable, or a member of a variable holding an input object. Anything else gives no size.
 */
type SizeSource = { readonly value: number | undefined } | { readonly variable: string; readonly member?: string };

/** A field's size arguments as the document gives them; `declared` when the field takes one at all. */
interface SizeRecipe {
  readonly sources: readonly SizeSource[];
  readonly declared: boolean;
}

function sourceOf(node: ValueNode | undefined): SizeSource {
  if (node?.kind === Kind.INT) return { value: Number(node.value) };
  if (node?.kind === Kind.VARIABLE) return { variable: node.name.value };
  return { value: undefined };
}

/** The size sources of one field, by its declared arguments in their order (what a request's variables cannot change). */
function sizeRecipe(field: GraphQLField<unknown, unknown>, args: readonly ArgumentNode[]): SizeRecipe | undefined {
  const sources: SizeSource[] = [];
  let declared = false;
  for (const arg of field.args) {
    const given = args.find((a) => a.name.value === arg.name)?.value;
    if (SIZE_ARGUMENTS.has(arg.name)) {
      declared = true;
      sources.push(sourceOf(given));
      continue;
    }
    const inputType = getNamedType(arg.type);
    if (!isInputObjectType(inputType)) continue;
    for (const name of Object.keys(inputType.getFields())) {
      if (!SIZE_ARGUMENTS.has(name)) continue;
      declared = true;
      if (given?.kind === Kind.OBJECT) sources.push(sourceOf(given.fields.find((f) => f.name.value === name)?.value));
      else if (given?.kind === Kind.VARIABLE) sources.push({ variable: given.name.value, member: name });
      else sources.push({ value: undefined });
    }
  }
  return declared ? { sources, declared } : undefined;
}

/** The size argument's value; 'absent' when one is declared but not given; undefined when none is declared. */
function sizeArgument(recipe: SizeRecipe | undefined, variables: Variables): number | 'absent' | undefined {
  if (!recipe) return undefined;
  for (const source of recipe.sources) {
    let value: unknown;
    if ('value' in source) value = source.value;
    else if (source.member === undefined) value = variables?.[source.variable];
    else value = (variables?.[source.variable] as Record<string, unknown> | null | undefined)?.[source.member];
    const size = sizeFrom(value);
    if (size !== undefined) return size;
  }
  return 'absent';
}

/**
 * The size a field's arguments ask for, within its twin's paging bounds when it has some;
 * `DEFAULT_PAGE_SIZE` (or the twin's default) when it declares a size argument the request leaves
 * out; undefined when it declares none.
 */
function requestedSize(recipe: SizeRecipe | undefined, variables: Variables, bounds: PagingBounds | undefined): number | undefined {
  const requested = sizeArgument(recipe, variables);
  if (requested === undefined) return undefined;
  if (!bounds) return requested === 'absent' ? DEFAULT_PAGE_SIZE : requested;
  const size = requested === 'absent' ? bounds.defaultLimit : requested;
  return Math.min(Math.max(size, bounds.minLimit, 1), bounds.maxLimit);
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
 * What of a selection set counts, with everything the variables cannot change worked out: the
 * field definitions, list depths, paging bounds and where sizes are read. Selections that cost
 * nothing whatever the variables (`__typename`, scalars below the root, unknown fields) are left out.
 */
type Planned =
  | { readonly kind: 'introspection' }
  | {
      readonly kind: 'field';
      readonly size: SizeRecipe | undefined;
      readonly bounds: PagingBounds | undefined;
      readonly lists: number;
      readonly composite: boolean;
      /** The selection set below, on the field's named type (composite fields only). */
      readonly below: readonly Planned[] | null;
    }
  | { readonly kind: 'inline'; readonly selections: readonly Planned[] }
  | { readonly kind: 'spread'; readonly name: string };

function plan(schema: GraphQLSchema, selectionSet: SelectionSetNode, parentType: GraphQLCompositeType, isRoot: boolean): Planned[] {
  const planned: Planned[] = [];
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      const name = selection.name.value;
      if (name === '__typename') continue;
      if (name === '__schema' || name === '__type') {
        planned.push({ kind: 'introspection' });
        continue;
      }
      if (!isObjectType(parentType) && !isInterfaceType(parentType)) continue;
      const field = parentType.getFields()[name];
      if (!field) continue;
      const named = getNamedType(field.type);
      const composite = isCompositeType(named);
      if (!composite && !isRoot) continue;
      planned.push({
        kind: 'field',
        size: sizeRecipe(field, selection.arguments ?? []),
        bounds: twinPaging.get(`${parentType.name}.${name}`),
        lists: listDepth(field.type),
        composite,
        below: composite && selection.selectionSet ? plan(schema, selection.selectionSet, named, false) : null,
      });
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const typeName = selection.typeCondition?.name.value;
      const type = typeName ? schema.getType(typeName) : parentType;
      // A root's inline fragment is planned as a root selection; below, as not one.
      if (type && isCompositeType(type)) planned.push({ kind: 'inline', selections: plan(schema, selection.selectionSet, type, isRoot) });
    } else {
      planned.push({ kind: 'spread', name: selection.name.value });
    }
  }
  return planned;
}

/**
 * The plans of one document: its operations' and its fragments' (per root-ness, which decides
 * whether a scalar field counts). Documents come from the endpoint's checked-document cache, so a
 * repeated text is planned once; only the sizes are read per request.
 */
interface DocumentPlans {
  readonly fragments: Map<string, FragmentDefinitionNode>;
  readonly operations: Map<OperationDefinitionNode, readonly Planned[]>;
  readonly fragmentPlans: Map<string, readonly Planned[] | null>;
}

const plansBySchema = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, DocumentPlans>>();

function plansOf(schema: GraphQLSchema, document: DocumentNode): DocumentPlans {
  let byDocument = plansBySchema.get(schema);
  if (!byDocument) plansBySchema.set(schema, (byDocument = new WeakMap()));
  let plans = byDocument.get(document);
  if (!plans) {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    byDocument.set(document, (plans = { fragments, operations: new Map(), fragmentPlans: new Map() }));
  }
  return plans;
}

/**
 * The cost of `operation` in `document` with these variables. Linear in the document: a fragment's
 * cost is computed once per (fragment, pending list size, root) and scaled, so fragments that
 * spread each other many times cannot make the estimate itself expensive.
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Variables): number {
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;
  const plans = plansOf(schema, document);
  let top = plans.operations.get(operation);
  if (!top) plans.operations.set(operation, (top = plan(schema, operation.selectionSet, root, true)));
  const fragmentCost = new Map<string, number>();
  const visiting = new Set<string>();

  /** The plan of a fragment's selection set on its type condition, or null when that names no composite type. */
  function fragmentPlan(name: string, fragment: FragmentDefinitionNode, isRoot: boolean): readonly Planned[] | null {
    const key = `${name}\u0000${isRoot}`;
    let planned = plans.fragmentPlans.get(key);
    if (planned === undefined) {
      const type = schema.getType(fragment.typeCondition.name.value);
      planned = type && isCompositeType(type) ? plan(schema, fragment.selectionSet, type, isRoot) : null;
      plans.fragmentPlans.set(key, planned);
    }
    return planned;
  }

  /** Cost of a planned selection set resolved on ONE object of its type. */
  function selectionCost(selections: readonly Planned[], pending: number | undefined, isRoot: boolean): number {
    let cost = 0;
    for (const selection of selections) {
      if (selection.kind === 'field') {
        const size = requestedSize(selection.size, variables, selection.bounds);
        let below = size ?? pending;
        let instances = 1;
        if (selection.lists > 0) {
          instances = (below ?? DEFAULT_LIST_SIZE) * DEFAULT_LIST_SIZE ** (selection.lists - 1);
          below = undefined;
        }
        cost += instances;
        if (selection.below) cost += instances * selectionCost(selection.below, below, false);
      } else if (selection.kind === 'introspection') {
        cost += INTROSPECTION_COST;
      } else if (selection.kind === 'inline') {
        cost += selectionCost(selection.selections, pending, isRoot);
      } else {
        const name = selection.name;
        const fragment = plans.fragments.get(name);
        if (!fragment || visiting.has(name)) continue;
        const key = `${name}\u0000${pending ?? ''}\u0000${isRoot}`;
        let unit = fragmentCost.get(key);
        if (unit === undefined) {
          const planned = fragmentPlan(name, fragment, isRoot);
          visiting.add(name);
          unit = planned ? selectionCost(planned, pending, isRoot) : 0;
          visiting.delete(name);
          fragmentCost.set(key, unit);
        }
        cost += unit;
      }
    }
    return cost;
  }

  return selectionCost(top, undefined, true);
}
