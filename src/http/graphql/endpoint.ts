/**
 * GraphQL at POST /v1/gql (graphql-http over @graphql-tools/schema; queries and mutations only).
 * Every Query and Mutation resolver is wrapped with its generated gate, and every error leaves
 * with `extensions.code` equal to the REST code and the same message.
 *
 * Before anything executes, this endpoint parses within the document limits (limits.ts), validates
 * (both once per distinct query text: a repeated query is served from a document cache),
 * refuses an operation over `graphql.max_cost` (cost.ts), enforces the gates of the operation's
 * root fields, then refuses an argument the REST twin's validator or PostgreSQL would refuse
 * (arguments.ts), and charges the operation's cost to the caller's rate limit beyond the one point
 * the middleware took. Gates come before arguments, as on REST: an anonymous or unauthorised caller
 * gets 401 or 403 whatever the arguments, never a 400 that describes the operation's input.
 *
 * One status policy, whatever the Accept header: a request that cannot run (a syntax or validation
 * error, no operation to run, a variable that does not fit its type, a limit, an argument refused
 * before execution) is HTTP 400 with `errors` and no `data`; a rate limit is 429 and an
 * idempotency-key conflict 409; everything else is 200, with `errors[]` naming the fields that
 * failed (their `extensions.code` is the REST code).
 *
 * Uploads (`Upload` arguments) come as multipart requests (multipart.ts): they must carry a
 * preflight header (CSRF), their shape is refused with 400 before anything runs, they may run
 * upload mutations only, and a body that fails once its upload is streaming is answered 400 too.
 */
import {
  execute,
  getNamedType,
  getOperationAST,
  getVariableValues,
  Kind,
  GraphQLError,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLFieldResolver,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { createHandler } from 'graphql-http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import typeIs from 'type-is';
import type { LRUCache } from 'lru-cache';
import { keptCache } from '../../infra/kept';
import { fieldGates, typeDefs } from '../../../generated/graphql-schema';
import { routes } from '../../../generated/rest';
import type { IdempotencyStore } from '../../infra/idempotency';
import { IDEMPOTENCY_HEADER, REPLAYED_HEADER, idempotencyScope, requestHash } from '../idempotency';
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import { refusalError, type GateEnforcer } from '../../auth/gates';
import type { Config } from '../../config/config';
import { AppError, errorBody, isSealedValueError, messages, toAppError } from '../../errors';
import type { Logger } from '../../infra/logger';
import { requestContext } from '../context';
import { applyRateDecision, type RateLimiter } from '../rate-limit';
import { header, type ApiRequest } from '../request';
import { invalidArgumentError, nullsAsAbsent } from './arguments';
import { MAX_JSON_DEPTH, inputProblemError, nestedDeeperThan } from '../input-guard';
import type { GraphQLContext } from './context';
import { UUIDScalar } from './scalars';
import { PREFLIGHT_HEADERS, readMultipartRequest, type MultipartRequest } from './multipart';
import { UploadScalar } from './upload';
import { operationCost, ratePoints } from './cost';
import { graphqlLimits, GraphQLLimitError, limitRules, parseWithinLimits, withoutSuggestions, type GraphQLLimits } from './limits';

/** The root resolvers every module contributes to; a missing field is a compile error. */
export interface RootResolvers {
  Query: QueryResolvers<GraphQLContext>;
  Mutation: MutationResolvers<GraphQLContext>;
}

type AnyResolver = GraphQLFieldResolver<unknown, GraphQLContext>;

function gated(resolvers: RootResolvers, gates: GateEnforcer): Record<string, Record<string, AnyResolver>> {
  const out: Record<string, Record<string, AnyResolver>> = {};
  for (const [typeName, fields] of Object.entries(resolvers) as [string, Record<string, AnyResolver>][]) {
    out[typeName] = {};
    for (const [fieldName, resolve] of Object.entries(fields)) {
      const gate = fieldGates[`${typeName}.${fieldName}`];
      if (!gate) throw new Error(`no generated gate for ${typeName}.${fieldName}`);
      out[typeName]![fieldName] = async (parent, args, context, info) => {
        await gates.enforce(gate, context.auth, gate.resourceGrant ? { id: (args as { id?: unknown }).id } : undefined);
        return resolve(parent, nullsAsAbsent(info.schema, `${typeName}.${fieldName}`, args as Record<string, unknown>), context, info);
      };
    }
  }
  return out;
}

const VALUE_REFUSED = /^(Variable "\$|[A-Za-z_]\w* cannot represent|Expected value of type|Enum "[^"]*" cannot represent)/;

/**
 * Same code and message as REST for the same failure; 5xx scrubbed, cause logged. With
 * `suggestions: false` (introspection off) request errors lose graphql-js's "Did you mean" hints,
 * which would otherwise spell out the schema field by field.
 */
export function formatGraphQLError(error: GraphQLError, log: Logger, options: { suggestions?: boolean } = {}): GraphQLFormattedError {
  const original = error.originalError;
  const located = { ...(error.locations ? { locations: error.locations } : {}), ...(error.path ? { path: error.path } : {}) };
  if (original && !(original instanceof GraphQLError)) {
    const appError = toAppError(original);
    if (isSealedValueError(original)) log.error({ err: original, key_id: (original as { keyId?: unknown }).keyId, code: appError.code }, 'graphql resolver failed: a stored secret cannot be opened with this node\'s keys');
    else if (appError.status === 503) log.debug({ err: original, code: appError.code }, 'graphql resolver failed: dependency unavailable');
    else if (appError.status >= 500) log.error({ err: original, code: appError.code }, 'graphql resolver failed');
    const body = errorBody(appError);
    return { message: body.message, ...located, extensions: { code: body.error, ...(body.details ? { details: body.details } : {}) } };
  }
  // Parse, validation, limit and coercion errors: the request, not the server, is at fault. A value
  // the argument's type refuses, as a variable or written inline, is a VALIDATION_ERROR as on REST.
  const code = VALUE_REFUSED.test(error.message) ? 'VALIDATION_ERROR' : 'BAD_REQUEST';
  const message = options.suggestions === false ? withoutSuggestions(error.message) : error.message;
  return { message, ...located, extensions: { code } };
}

export function createGraphQLSchema(resolvers: RootResolvers, gates: GateEnforcer) {
  return makeExecutableSchema({ typeDefs, resolvers: { ...gated(resolvers, gates), UUID: UUIDScalar, Upload: UploadScalar } });
}

export interface GraphQLHandlerDeps {
  resolvers: RootResolvers;
  gates: GateEnforcer;
  log: Logger;
  /** `graphql.*`: the document limits, the cost limit, introspection and suggestions. */
  config: Readonly<Config>;
  /** The middleware's limiter; the endpoint draws a costly operation's remaining points from it. */
  limiter?: RateLimiter;
  /** The client address rate budgets key on (request.ts). */
  clientAddress: (req: IncomingMessage) => string;
  /** Where `Idempotency-Key`s of mutations are kept; without it the header is ignored. */
  idempotency?: IdempotencyStore;
}

/**
 * Mutations that may be recorded under an `Idempotency-Key`: those whose REST twin takes the key
 * (its answer carries no credential), and the mutations without a twin, none of which answers one.
 */
const idempotentMutations = new Set(
  Object.keys(fieldGates).filter((field) => {
    if (!field.startsWith('Mutation.')) return false;
    const twin = routes.find((r) => r.graphql === field);
    return twin === undefined || twin.idempotent;
  }),
);
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** A mutation running under an `Idempotency-Key`, on its request until its answer is written. */
interface KeyedRequest {
  idempotent?: { scope: string; key: string };
  /** A multipart request (multipart.ts), on its request while it runs. */
  multipart?: MultipartRequest;
}

/**
 * Root field selections of the chosen operation, aliases and repeats counted, through fragments:
 * a multipart request may run one upload per file (a file streams once).
 */
function rootSelections(document: DocumentNode, operationName: string | null | undefined): number {
  const operation = getOperationAST(document, operationName ?? undefined);
  if (!operation) return 0;
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d.selectionSet] as const] : [])));
  const count = (selections: SelectionSetNode, seen: ReadonlySet<string>): number =>
    selections.selections.reduce((sum, selection) => {
      if (selection.kind === Kind.FIELD) return sum + (selection.name.value === '__typename' ? 0 : 1);
      if (selection.kind === Kind.INLINE_FRAGMENT) return sum + count(selection.selectionSet, seen);
      const fragment = fragments.get(selection.name.value);
      return fragment && !seen.has(selection.name.value) ? sum + count(fragment, new Set([...seen, selection.name.value])) : sum;
    }, 0);
  return count(operation.selectionSet, new Set());
}

/** The Mutation fields that take an `Upload`: the only ones a multipart request may run. */
function uploadFields(schema: GraphQLSchema): ReadonlySet<string> {
  const fields = schema.getMutationType()?.getFields() ?? {};
  return new Set(Object.values(fields).filter((field) => field.args.some((arg) => getNamedType(arg.type).name === 'Upload')).map((field) => `Mutation.${field.name}`));
}

/** A root field of the chosen operation: its gate's key (`Mutation.dissolveAccount`) and its response key. */
interface RootField {
  readonly gate: string;
  readonly key: string;
  /** The `id` argument as written (literal or variable), for a gate's resource grant. */
  readonly id?: ValueNode;
  /** The default of the variable `id` names, when its definition gives one. */
  readonly idDefault?: ValueNode;
}

/** The `id` a root field names, from its literal or the request's variables; unchecked, as before the arguments. */
function rootId(root: RootField, variables: Readonly<Record<string, unknown>> | null | undefined): unknown {
  const node = root.id;
  if (node?.kind === Kind.STRING) return node.value;
  if (node?.kind === Kind.VARIABLE) {
    const name = node.name.value;
    if (variables && Object.hasOwn(variables, name)) return variables[name];
    return root.idDefault?.kind === Kind.STRING ? root.idDefault.value : undefined;
  }
  return undefined;
}

type Prepared =
  /**
   * Ready to execute once the root fields' gates pass; `cost` is 0 when no operation could be
   * chosen (execution then says why). `badInput`: an argument refusal, answered only to a caller
   * the gates let through.
   */
  | { readonly kind: 'ready'; readonly document: DocumentNode; readonly cost: number; readonly roots: readonly RootField[]; readonly badInput: GraphQLError | null }
  /** Refused before execution with HTTP 400: a limit, or an input PostgreSQL cannot store. */
  | { readonly kind: 'refused'; readonly errors: readonly GraphQLError[] }
  /** A request that cannot run (syntax, validation, operation, variables): HTTP 400 too, with graphql-js's words. */
  | { readonly kind: 'invalid'; readonly errors: readonly GraphQLError[] };

/** What parsing and validating a query text gave: it depends on the text alone (the schema is fixed). */
type Checked = { readonly kind: 'parsed'; readonly document: DocumentNode } | { readonly kind: 'refused' | 'invalid'; readonly errors: readonly GraphQLError[] };

/** Query texts whose parse and validation are kept, so that a repeated query skips both. */
const DOCUMENT_CACHE_SIZE = 1000;
/** Longer texts are checked every time rather than held in memory. */
const DOCUMENT_CACHE_MAX_CHARS = 20_000;

/** Parse within the limits, then the limit rules, then graphql-js's validation rules. */
function checkDocument(schema: GraphQLSchema, limits: GraphQLLimits, query: string): Checked {
  let document: DocumentNode;
  try {
    document = parseWithinLimits(query, limits);
  } catch (error) {
    if (error instanceof GraphQLLimitError) return { kind: 'refused', errors: [error] };
    if (error instanceof GraphQLError) return { kind: 'invalid', errors: [error] };
    // The nesting scan keeps the parser's recursion shallow; should it still run out of stack, the
    // document is too deep all the same.
    if (error instanceof RangeError) return { kind: 'refused', errors: [new GraphQLLimitError(messages.graphqlDepthLimit(limits.maxDepth))] };
    throw error;
  }
  const overLimits = validate(schema, document, limitRules(limits));
  if (overLimits.length > 0) return { kind: 'refused', errors: overLimits };
  const invalid = validate(schema, document, specifiedRules);
  if (invalid.length > 0) return { kind: 'invalid', errors: invalid };
  return { kind: 'parsed', document };
}

/**
 * Parse, limits, validation, cost and the input guard, cheapest refusals first. Parse and
 * validation depend only on the query text and are served from `documents` when it was seen
 * before; the operation's cost and the argument guard depend on the variables, so they run on
 * every request.
 */
function prepareOperation(
  schema: GraphQLSchema,
  limits: GraphQLLimits,
  documents: LRUCache<string, Checked>,
  params: { query: string; operationName?: string | null; variables?: Record<string, unknown> | null },
  operations: LRUCache<string, Prepared>,
  cacheable = true,
): Prepared {
  // Variables nested past the input guard's depth are refused before anything recursive (the key's
  // JSON.stringify below, graphql-js's coercion) walks them and runs out of stack: 400
  // VALIDATION_ERROR naming the variable, as REST refuses such a body.
  const tooDeep = params.variables ? nestedDeeperThan(params.variables, MAX_JSON_DEPTH) : null;
  if (tooDeep) {
    const error = inputProblemError({ kind: 'depth', path: tooDeep }, 'variables');
    return { kind: 'refused', errors: [new GraphQLError(error.message, { originalError: error })] };
  }
  // The cost and the argument guard depend on the query text, the operation and the variables
  // alone: a request repeating all three (a dashboard polling its page) reuses the verdict.
  // A multipart request's verdict is not kept: its variables hold files, which no text can stand for.
  const variables = params.variables && cacheable ? JSON.stringify(params.variables) : '';
  const key = cacheable && params.query.length + variables.length <= DOCUMENT_CACHE_MAX_CHARS ? `${params.operationName ?? ''}\u0000${variables}\u0000${params.query}` : null;
  const known = key === null ? undefined : operations.get(key);
  if (known) return known;
  const prepared = checkOperation(schema, limits, documents, params);
  if (key !== null) operations.set(key, prepared);
  return prepared;
}

function checkOperation(
  schema: GraphQLSchema,
  limits: GraphQLLimits,
  documents: LRUCache<string, Checked>,
  params: { query: string; operationName?: string | null; variables?: Record<string, unknown> | null },
): Prepared {
  let checked = documents.get(params.query);
  if (!checked) {
    checked = checkDocument(schema, limits, params.query);
    if (params.query.length <= DOCUMENT_CACHE_MAX_CHARS) documents.set(params.query, checked);
  }
  if (checked.kind !== 'parsed') return checked;
  const document = checked.document;

  const operation = getOperationAST(document, params.operationName ?? undefined);
  if (!operation) return { kind: 'invalid', errors: [new GraphQLError(params.operationName ? `Unknown operation named "${params.operationName}".` : 'Must provide operation name if query contains multiple operations.')] };
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], params.variables ?? {}, { maxErrors: 50 });
  if (coerced.errors) return { kind: 'invalid', errors: coerced.errors };
  const cost = operationCost(schema, document, operation, params.variables);
  if (cost > limits.maxCost) {
    const shown = Math.min(cost, Number.MAX_SAFE_INTEGER);
    return { kind: 'refused', errors: [new GraphQLLimitError(messages.graphqlCostLimit(shown, limits.maxCost))] };
  }
  const invalid = invalidArgumentError(schema, document, operation, coerced.coerced);
  const badInput = invalid ? new GraphQLError(invalid.message, { originalError: invalid }) : null;
  return { kind: 'ready', document, cost, roots: rootFields(document, operation), badInput };
}

/** The gated root fields an operation selects, through inline fragments and fragment spreads. */
function rootFields(document: DocumentNode, operation: OperationDefinitionNode): RootField[] {
  // Subscriptions have no root type here: graphql-http refuses them itself.
  if (operation.operation === 'subscription') return [];
  const typeName = operation.operation === 'mutation' ? 'Mutation' : 'Query';
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d.selectionSet] as const] : [])));
  const out: RootField[] = [];
  const seen = new Set<string>();
  const walk = (selections: SelectionSetNode) => {
    for (const selection of selections.selections) {
      if (selection.kind === Kind.FIELD) {
        const gate = `${typeName}.${selection.name.value}`;
        const key = selection.alias?.value ?? selection.name.value;
        // A gate with a resource grant is checked per selection: each may name another resource.
        const granted = fieldGates[gate]?.resourceGrant !== undefined;
        const once = granted ? `${gate} ${key}` : gate;
        if (fieldGates[gate] && !seen.has(once)) {
          seen.add(once);
          const id = granted ? selection.arguments?.find((a) => a.name.value === 'id')?.value : undefined;
          const idDefault = id?.kind === Kind.VARIABLE ? operation.variableDefinitions?.find((d) => d.variable.name.value === id.name.value)?.defaultValue : undefined;
          out.push({ gate, key, ...(id ? { id } : {}), ...(idDefault ? { idDefault } : {}) });
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet);
      } else {
        const fragment = fragments.get(selection.name.value);
        if (fragment && !seen.has(`...${selection.name.value}`)) {
          seen.add(`...${selection.name.value}`);
          walk(fragment);
        }
      }
    }
  };
  walk(operation.selectionSet);
  return out;
}

/**
 * The media type graphql-http's handler answers with, by its own rule: the first entry of Accept
 * that is `application/graphql-response+json` or JSON-compatible, in UTF-8 (an Accept with neither
 * was already answered 406). Our own answers (limit refusals, written results) use it too.
 */
function acceptedResponseType(accept: string | undefined): string {
  for (const entry of (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',')) {
    const [type, ...params] = entry.split(';');
    const charset = params.find((param) => param.includes('charset=')) ?? 'charset=utf-8';
    if (type === 'application/graphql-response+json' && charset === 'charset=utf-8') return 'application/graphql-response+json; charset=utf-8';
    if ((type === 'application/json' || type === 'application/*' || type === '*/*') && (charset === 'charset=utf-8' || charset === 'charset=utf8')) return 'application/json; charset=utf-8';
  }
  return 'application/json; charset=utf-8';
}

/**
 * An answer this endpoint writes itself, with its length: graphql-http writes the head before the
 * body, so without one Node would send the body chunked (three more pieces to write per answer).
 */
function written(body: string, status: number, statusText: string, type: string) {
  return [body, { status, statusText, headers: { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) } }] as const;
}

/**
 * graphql-js's execute, or the document's compiled executor (graphql-jit) once a document has run
 * before: a repeated operation (a dashboard polling its page) skips graphql-js's generic walk of
 * the selection set. Documents come from the checked-document cache, so a document object seen
 * twice is a cached one; a one-off text never pays for a compilation. A document the compiler
 * refuses keeps graphql-js's execution.
 */
function compilingExecutor(schema: GraphQLSchema): (args: ExecutionArgs) => ReturnType<typeof execute> {
  /** Per document seen: its compiled executor per operation name (null: the compiler refused it). */
  const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery | null>>();
  return (args) => {
    const byOperation = compiled.get(args.document);
    if (!byOperation) {
      compiled.set(args.document, new Map());
      return execute(args);
    }
    const name = args.operationName ?? '';
    let query = byOperation.get(name);
    if (query === undefined) {
      const result = compileQuery(schema, args.document, args.operationName ?? undefined);
      query = isCompiledQuery(result) ? result : null;
      byOperation.set(name, query);
    }
    if (!query) return execute(args);
    return query.query(args.rootValue, args.contextValue, args.variableValues ?? {}) as ExecutionResult | Promise<ExecutionResult>;
  };
}

/** A multipart request (multipart.ts), which the app passes on unread; JSON is the only other body. */
const isMultipart = (req: ApiRequest) => typeIs(req, ['multipart/form-data']) === 'multipart/form-data';

export function createGraphQLHandler(deps: GraphQLHandlerDeps): (req: ApiRequest, res: ServerResponse) => Promise<void> {
  const schema = createGraphQLSchema(deps.resolvers, deps.gates);
  const limits = graphqlLimits(deps.config);
  const format = (error: GraphQLError) => formatGraphQLError(error, deps.log, { suggestions: limits.introspection });
  // Under the kept-bytes budget too (src/infra/kept.ts); a parsed document is estimated at 40 bytes per character of its text.
  const documents = keptCache<string, Checked>({ max: DOCUMENT_CACHE_SIZE, sizeOf: (_value, query) => 256 + 40 * query.length });
  const operations = keptCache<string, Prepared>({ max: DOCUMENT_CACHE_SIZE, sizeOf: (_value, key) => 512 + 2 * key.length });
  const uploading = uploadFields(schema);
  const handle = createHandler<ApiRequest, { res: ServerResponse }, GraphQLContext>({
    schema,
    execute: compilingExecutor(schema),
    onSubscribe: async (req, params) => {
      const raw = req.raw as ApiRequest;
      const res = req.context.res;
      const context = requestContext(raw) as GraphQLContext;
      const files = (raw as ApiRequest & KeyedRequest).multipart?.files;
      const multipart = files !== undefined;
      const prepared = prepareOperation(schema, limits, documents, params, operations, !multipart);
      if (prepared.kind === 'invalid' || prepared.kind === 'refused') {
        const body = JSON.stringify({ errors: prepared.errors.map(format) });
        return written(body, 400, 'Bad Request', acceptedResponseType(header(raw, 'accept')));
      }
      // A multipart request runs uploads only: nothing else may have written when its body turns out
      // malformed after the operation started (the upload itself records nothing until the body is read).
      if (multipart && (prepared.roots.length === 0 || prepared.roots.some((root) => !uploading.has(root.gate)) || rootSelections(prepared.document, params.operationName) > Math.max(files, 1))) {
        const refusal = new AppError('BAD_REQUEST', prepared.roots.every((root) => uploading.has(root.gate)) && prepared.roots.length > 0 ? messages.multipartOneUploadPerFile : messages.multipartUploadsOnly);
        return written(JSON.stringify({ errors: [format(new GraphQLError(refusal.message, { originalError: refusal }))] }), 400, 'Bad Request', acceptedResponseType(header(raw, 'accept')));
      }
      const points = ratePoints(prepared.cost);
      if (deps.limiter && points > 1) {
        const decision = await deps.limiter.consume(context.auth, deps.clientAddress(raw), points - 1);
        const refusal: AppError | null = applyRateDecision(decision, res, context);
        if (refusal) {
          return written(JSON.stringify(errorBody(refusal)), refusal.status, 'Too Many Requests', 'application/json; charset=utf-8');
        }
      }
      // The gates of every root field, after the rate limit (as on REST) and before the arguments:
      // the first refusal answers the whole operation, as that field's resolver would answer it
      // (the resolvers keep their own check).
      for (const root of prepared.roots) {
        const gate = fieldGates[root.gate]!;
        const refusal = await deps.gates.evaluate(gate, context.auth, gate.resourceGrant ? { id: rootId(root, params.variables) } : undefined);
        if (refusal) return { data: null, errors: [new GraphQLError(refusal.message, { path: [root.key], originalError: refusalError(refusal) })] };
      }
      if (prepared.badInput) {
        const body = JSON.stringify({ errors: [format(prepared.badInput)] });
        return written(body, 400, 'Bad Request', acceptedResponseType(header(raw, 'accept')));
      }
      const key = header(raw, IDEMPOTENCY_HEADER);
      const scope = key === undefined || !deps.idempotency ? null : idempotencyScope(context.auth);
      const mutation = prepared.roots.length > 0 && prepared.roots.every((root) => idempotentMutations.has(root.gate));
      if (key !== undefined && scope !== null && mutation) {
        const refuse = (error: AppError) =>
          written(JSON.stringify({ errors: [format(new GraphQLError(error.message, { originalError: error }))] }), error.status, error.status === 409 ? 'Conflict' : 'Bad Request', acceptedResponseType(header(raw, 'accept')));
        if (!IDEMPOTENCY_KEY.test(key)) return refuse(AppError.validation(`${IDEMPOTENCY_HEADER} must match pattern "^[\\x21-\\x7e]+$" and be at most 255 characters`));
        const claim = await deps.idempotency!.claim(scope, key, requestHash('gql', params.operationName ?? '', params.query, JSON.stringify(params.variables ?? null)));
        if (claim.kind === 'mismatch') return refuse(new AppError('CONFLICT', messages.idempotencyKeyReused));
        if (claim.kind === 'in-progress') return refuse(new AppError('CONFLICT', messages.idempotencyKeyInProgress));
        if (claim.kind === 'replay') {
          const [body, init] = written(claim.answer.body, claim.answer.status, 'OK', claim.answer.contentType ?? acceptedResponseType(header(raw, 'accept')));
          return [body, { ...init, headers: { ...init.headers, [REPLAYED_HEADER.toLowerCase()]: 'true' } }] as const;
        }
        (raw as ApiRequest & KeyedRequest).idempotent = { scope, key };
      }
      return {
        schema,
        document: prepared.document,
        operationName: params.operationName,
        variableValues: params.variables,
        contextValue: context,
      };
    },
    // A result without errors holds no Error object, so it is written as graphql-http would write
    // it, without its serialiser's replacer (a function call per member: a sixth of the CPU of an
    // events page). Results with errors go through graphql-http's own formatting.
    onOperation: (req, _args, result) => {
      if (!('data' in result) || result.errors) return undefined;
      return written(JSON.stringify(result), 200, 'OK', acceptedResponseType(header(req.raw as ApiRequest, 'accept')));
    },
    formatError: (error) => format(error as GraphQLError) as never,
  });
  // graphql-http's core handler on Node's response (not its Express adapter, which answers any
  // throw with an empty 500): whatever throws here (onSubscribe, execution, onOperation) reaches
  // the app's error answer, a scrubbed JSON 500, since nothing has been written before writeHead.
  /** A request refused before anything ran (a multipart shape, the preflight header): 400 with `errors`. */
  const refuse = (req: ApiRequest, res: ServerResponse, error: Error) => {
    const [body, init] = written(JSON.stringify({ errors: [format(new GraphQLError(error.message, { originalError: error }))] }), 400, 'Bad Request', acceptedResponseType(header(req, 'accept')));
    res.setHeader('Cache-Control', 'no-store');
    res.writeHead(init.status, init.statusText, init.headers).end(body);
  };
  return async (req, res) => {
    let multipart: MultipartRequest | undefined;
    if (isMultipart(req)) {
      // A multipart POST is a "simple" request a page of any site can send with the caller's
      // cookies; a header no form can set makes the browser ask first (CORS), as for JSON.
      if (!PREFLIGHT_HEADERS.some((name) => (header(req, name) ?? '').trim() !== '')) return refuse(req, res, new AppError('BAD_REQUEST', messages.multipartPreflightRequired));
      try {
        multipart = await readMultipartRequest({ body: req, header: (name) => header(req, name) });
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error;
        return refuse(req, res, error);
      }
      (req as ApiRequest & KeyedRequest).multipart = multipart;
    }
    const [body, init] = await handle({
      url: req.url ?? '',
      method: req.method ?? 'POST',
      // graphql-http takes the operation as the JSON it would have parsed.
      headers: multipart ? { ...req.headers, 'content-type': 'application/json' } : req.headers,
      body: () => (multipart ? multipart.body : ((req.body ?? null) as Record<string, unknown> | string | null)),
      raw: req,
      context: { res },
    }).finally(() => multipart?.release());
    // The body of a multipart request failed after its operation started: it could not run after
    // all (its upload, which waits for the whole body, recorded nothing).
    const broken = multipart?.failure();
    if (broken instanceof AppError && broken.status < 500) return refuse(req, res, broken);
    // A keyed mutation's answer is kept when it succeeded; a failed one keeps nothing, so its retry runs again.
    const keyed = (req as ApiRequest & KeyedRequest).idempotent;
    if (keyed && deps.idempotency) {
      const failed = init.status >= 400 || typeof body !== 'string' || body.includes('"errors"');
      if (failed) await deps.idempotency.release(keyed.scope, keyed.key);
      else await deps.idempotency.complete(keyed.scope, keyed.key, { status: init.status, contentType: (init.headers as Record<string, string> | undefined)?.['content-type'] ?? null, body });
    }
    // Answers are per caller and may carry a credential (login, refresh, socket tokens): never kept by a cache.
    res.setHeader('Cache-Control', 'no-store');
    res.writeHead(init.status, init.statusText, init.headers as Record<string, string> | undefined).end(body);
  };
}
