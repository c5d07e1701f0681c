/**
 * OpenAPI (spec/openapi/, bundled into one document by openapi-parts.ts): the checks on the
 * document and on each operation (gate, envelope, paging, links), the served document with codegen's shared parameters and responses, and the
 * generated files generated/openapi.ts, generated/openapi-document.ts and generated/rest.ts.
 */
import openapiTS, { astToString } from 'openapi-typescript';
import { BANNER, METHODS, fail } from './common';
import { bundleOpenapi } from './openapi-parts';
import { normaliseGate, type Gate } from './gates';

export type OpenApiDoc = {
  paths: Record<string, Record<string, Record<string, unknown>>>;
  [key: string]: unknown;
};

export interface Route {
  operationId: string;
  method: string;
  path: string;
  expressPath: string;
  gate: Gate;
  graphql: string | null;
  internal: boolean;
  responses: Record<string, string | null>;
  envelope: Envelope;
  paging: Paging | null;
  /** Statuses a handler returns (every declared one whose body is not the Error schema), lowest first. */
  statuses: string[];
  /** `x-graphql-shape: own`: the twin answers a shape of its own, not the REST binding's domain value. */
  ownGraphqlShape: boolean;
  /** A success answer carries a credential (a property marked `x-credential: true`): never stored by a cache. */
  noStore: boolean;
  /** The operation takes `Idempotency-Key` (withIdempotencyKeys added it). */
  idempotent: boolean;
}
const ENVELOPE_KINDS = ['single', 'data', 'collection', 'bare', 'raw'] as const;
type EnvelopeKind = (typeof ENVELOPE_KINDS)[number];
/** `x-envelope`: how the REST router wraps a handler's domain result. */
interface Envelope {
  kind: EnvelopeKind;
  /** Template filled from the response's data (`/v1/account/roles/{id}`); null: the request URL. */
  self: string | null;
}
/** Paging bounds read from an operation's `page` and `limit` query parameters. */
interface Paging {
  defaultLimit: number;
  minLimit: number;
  maxLimit: number;
  clampLimit: boolean;
  maxPage: number;
}
const INT32 = { min: -2147483648, max: 2147483647 };

function readRoutes(doc: OpenApiDoc): Route[] {
  const routes: Route[] = [];
  const seen = new Set<string>();
  const base = ((doc.servers as { url: string }[] | undefined)?.[0]?.url ?? '').replace(/\/$/, '');
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method] as Record<string, unknown> | undefined;
      if (!op) continue;
      const where = `${method.toUpperCase()} ${base}${p}`;
      const operationId = op.operationId as string | undefined;
      if (!operationId || !/^[a-z][A-Za-z0-9]*$/.test(operationId)) {
        fail(`${where}: operationId missing or not camelCase`);
        continue;
      }
      if (seen.has(operationId)) fail(`${where}: duplicate operationId ${operationId}`);
      seen.add(operationId);
      const gate = normaliseGate(`${where} (${operationId})`, op['x-auth'], op['x-permission'], op['x-feature'], op['x-permission-scope'], {
        mutating: method !== 'get',
        reason: op['x-gate-reason'],
        resourceGrant: op['x-resource-grant'],
        namesId: p.includes('{id}'),
      });
      if (!gate) continue;
      const graphql = (op['x-graphql'] as string | undefined) ?? null;
      if (graphql !== null && !/^(Query|Mutation)\.[a-z][A-Za-z0-9]*$/.test(graphql)) {
        fail(`${where}: x-graphql "${graphql}" must be Query.<field> or Mutation.<field>`);
      }
      if (graphql !== null && graphql.split('.')[1] !== operationId) {
        fail(`${where}: operationId ${operationId} must equal its GraphQL twin's field name (${graphql})`);
      }
      const responses: Record<string, string | null> = {};
      const bodies: Record<string, unknown> = {};
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, unknown>)) {
        const resolved = resolveRef(doc, response) as { content?: Record<string, { schema?: unknown }> };
        responses[status] = resolved.content ? Object.keys(resolved.content)[0] ?? null : null;
        bodies[status] = resolved.content ? Object.values(resolved.content)[0]?.schema : undefined;
      }
      const statuses = Object.keys(bodies)
        .filter((s) => /^\d{3}$/.test(s) && (bodies[s] as { $ref?: string } | undefined)?.$ref !== '#/components/schemas/Error')
        .sort();
      if (statuses.length === 0) fail(`${where} (${operationId}): declares no response a handler can return`);
      const envelope = readEnvelope(`${where} (${operationId})`, doc, op['x-envelope'], statuses, responses, bodies);
      if (!envelope) continue;
      routes.push({
        operationId,
        method,
        path: `${base}${p}`,
        expressPath: `${base}${p}`.replace(/\{([^}]+)\}/g, ':$1'),
        gate,
        graphql,
        internal: op['x-internal'] === true,
        responses,
        envelope,
        paging: readPaging(`${where} (${operationId})`, doc, (op.parameters ?? []) as unknown[]),
        statuses,
        ownGraphqlShape: op['x-graphql-shape'] === 'own',
        noStore: statuses.some((status) => status.startsWith('2') && carriesCredential(doc, bodies[status], new Set())),
        idempotent: ((op.parameters ?? []) as { $ref?: string }[]).some((p) => p.$ref === IDEMPOTENCY_PARAMETER),
      });
      if (op['x-graphql-shape'] !== undefined && (op['x-graphql-shape'] !== 'own' || graphql === null)) {
        fail(`${where} (${operationId}): x-graphql-shape must be "own", on an operation with a GraphQL twin`);
      }
    }
  }
  return routes.sort((a, b) => a.operationId.localeCompare(b.operationId));
}

/**
 * Whether a schema holds, at any depth, a property marked `x-credential: true` (a token or key the
 * answer shows once): such answers get `Cache-Control: no-store`, derived here so that a new
 * operation returning a credential cannot forget it.
 */
function carriesCredential(doc: unknown, node: unknown, seen: Set<unknown>): boolean {
  const schema = resolveRef(doc, node) as Record<string, unknown> | undefined;
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return false;
  seen.add(schema);
  if (schema['x-credential'] === true) return true;
  const children = [
    ...Object.values((schema.properties ?? {}) as Record<string, unknown>),
    schema.items,
    schema.additionalProperties,
    ...(['allOf', 'oneOf', 'anyOf'] as const).flatMap((k) => (Array.isArray(schema[k]) ? (schema[k] as unknown[]) : [])),
  ];
  return children.some((child) => child !== undefined && typeof child === 'object' && carriesCredential(doc, child, seen));
}

function resolveRef(doc: unknown, node: unknown): unknown {
  const ref = (node as { $ref?: string } | null)?.$ref;
  if (!ref) return node;
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((acc, key) => (acc as Record<string, unknown>)[key], doc);
}

/** The members an envelope kind needs in every JSON body a handler returns. */
const ENVELOPE_MEMBERS: Record<EnvelopeKind, { has: string[]; lacks: string[] }> = {
  single: { has: ['data', '_links'], lacks: ['_meta'] },
  data: { has: ['data'], lacks: ['_links', '_meta'] },
  collection: { has: ['data', '_links', '_meta'], lacks: [] },
  bare: { has: [], lacks: [] },
  raw: { has: [], lacks: [] },
};

/**
 * Reads `x-envelope` and refuses an operation without one, an unknown kind, a body that does not
 * fit the kind, or a `self` template whose placeholders are not members of the response's data.
 */
function readEnvelope(
  where: string,
  doc: OpenApiDoc,
  value: unknown,
  statuses: string[],
  responses: Record<string, string | null>,
  bodies: Record<string, unknown>,
): Envelope | null {
  if (value === undefined || value === null) {
    fail(`${where}: no x-envelope (declare { kind: ${ENVELOPE_KINDS.join(' | ')} })`);
    return null;
  }
  const declared = value as { kind?: unknown; self?: unknown };
  const kind = declared.kind as EnvelopeKind;
  if (!ENVELOPE_KINDS.includes(kind)) {
    fail(`${where}: x-envelope kind must be one of ${ENVELOPE_KINDS.join(', ')}`);
    return null;
  }
  const extra = Object.keys(declared).filter((k) => k !== 'kind' && k !== 'self');
  if (extra.length) fail(`${where}: x-envelope has unknown member(s) ${extra.join(', ')}`);
  const self = declared.self ?? null;
  if (self !== null && (typeof self !== 'string' || !self.startsWith('/'))) fail(`${where}: x-envelope self must be a path template`);
  if (self !== null && kind !== 'single') fail(`${where}: x-envelope self applies to kind single only`);
  for (const status of statuses) {
    if (kind === 'raw') continue;
    if (responses[status] === null) continue;
    if (responses[status] !== 'application/json') {
      fail(`${where}: x-envelope ${kind} needs application/json (status ${status} is ${responses[status]}; use raw)`);
      continue;
    }
    const schema = resolveRef(doc, bodies[status]) as { properties?: Record<string, unknown> } | undefined;
    const members = Object.keys(schema?.properties ?? {});
    const { has, lacks } = ENVELOPE_MEMBERS[kind];
    const missing = has.filter((m) => !members.includes(m));
    const present = lacks.filter((m) => members.includes(m));
    if (missing.length) fail(`${where}: x-envelope ${kind} but the ${status} body lacks ${missing.join(', ')}`);
    if (present.length) fail(`${where}: x-envelope ${kind} but the ${status} body has ${present.join(', ')}`);
    if (kind === 'collection' && (resolveRef(doc, schema?.properties?.data) as { type?: string } | undefined)?.type !== 'array') {
      fail(`${where}: x-envelope collection but the ${status} body's data is not an array`);
    }
    if (typeof self === 'string') {
      const data = resolveRef(doc, schema?.properties?.data) as { properties?: Record<string, unknown> } | undefined;
      for (const [, name] of self.matchAll(/\{([^}]+)\}/g)) {
        if (!(name! in (data?.properties ?? {}))) fail(`${where}: x-envelope self placeholder {${name}} is not a member of the ${status} body's data`);
      }
    }
  }
  return { kind, self: typeof self === 'string' ? self : null };
}

/**
 * Paging bounds from the `page`, `limit` and `offset` query parameters. Each must declare an
 * integer schema with a minimum and a maximum within 32 bits (GraphQL's `Int`), so the validator
 * refuses what SQL cannot page with; `limit` needs a default, and `page` needs a `limit`.
 * `x-clamp: { minimum, maximum }` on `limit` makes values outside that range clamp instead.
 */
function readPaging(where: string, doc: OpenApiDoc, parameters: unknown[]): Paging | null {
  const query = new Map<string, Record<string, unknown>>();
  for (const parameter of parameters) {
    const p = resolveRef(doc, parameter) as Record<string, unknown>;
    if (p.in === 'query') query.set(String(p.name), p);
  }
  const bounds = (name: string) => {
    const p = query.get(name);
    if (!p) return null;
    const schema = resolveRef(doc, p.schema) as { type?: string; minimum?: unknown; maximum?: unknown; default?: unknown };
    const { minimum, maximum } = schema;
    if (schema.type !== 'integer' || typeof minimum !== 'number' || typeof maximum !== 'number' || minimum < INT32.min || maximum > INT32.max || minimum > maximum) {
      fail(`${where}: query parameter ${name} needs an integer schema with minimum and maximum within 32 bits`);
      return null;
    }
    return { minimum, maximum, default: schema.default, clamp: p['x-clamp'] };
  };
  const page = bounds('page');
  const limit = bounds('limit');
  bounds('offset');
  if (query.has('page') && !query.has('limit')) fail(`${where}: a page parameter needs a limit parameter`);
  if (!page || !limit) return null;
  if (typeof limit.default !== 'number' || limit.default < limit.minimum || limit.default > limit.maximum) {
    fail(`${where}: query parameter limit needs a default within its bounds`);
    return null;
  }
  let minLimit = limit.minimum;
  let maxLimit = limit.maximum;
  const clamp = limit.clamp as { minimum?: unknown; maximum?: unknown } | undefined;
  if (clamp !== undefined) {
    if (typeof clamp.minimum !== 'number' || typeof clamp.maximum !== 'number' || clamp.minimum < 1 || clamp.minimum > clamp.maximum || clamp.maximum > limit.maximum) {
      fail(`${where}: x-clamp of limit needs 1 <= minimum <= maximum <= the schema's maximum`);
      return null;
    }
    minLimit = clamp.minimum;
    maxLimit = clamp.maximum;
  } else if (minLimit < 1) {
    fail(`${where}: query parameter limit needs minimum >= 1 (or x-clamp)`);
  }
  if (limit.default < minLimit || limit.default > maxLimit) fail(`${where}: the default limit lies outside the served range`);
  return { defaultLimit: limit.default, minLimit, maxLimit, clampLimit: clamp !== undefined, maxPage: page.maximum };
}

export function restModule(routes: Route[]): string {
  const table = routes.map((r) => ({
    operationId: r.operationId,
    method: r.method,
    path: r.path,
    expressPath: r.expressPath,
    gate: r.gate,
    graphql: r.graphql,
    internal: r.internal,
    responses: r.responses,
    envelope: r.envelope,
    paging: r.paging,
    defaultStatus: Number(r.statuses[0] ?? 200),
    noStore: r.noStore,
    idempotent: r.idempotent,
  }));
  const ids = routes.map((r) => `  | '${r.operationId}'`).join('\n');
  const handlers = routes
    .map(
      (r) =>
        `  /** ${r.method.toUpperCase()} ${r.path} */\n  ${r.operationId}(request: RestRequest<'${r.operationId}'>, context: Context): Promise<RestResponse<'${r.operationId}'>>;`,
    )
    .join('\n');
  const domainOf = (r: Route, status: string) => {
    const wire = `Wire<'${r.operationId}', ${status}>`;
    switch (r.envelope.kind) {
      case 'raw':
        return wire;
      case 'bare':
        return `Camelize<${wire}>`;
      case 'single':
      case 'data':
        return `Camelize<DataOf<${wire}>>`;
      case 'collection':
        return r.paging ? `Page<Camelize<ItemOf<${wire}>>>` : `Camelize<ItemOf<${wire}>>[]`;
    }
  };
  const results = routes
    .map((r) => `  ${r.operationId}: { ${r.statuses.map((s) => `${s}: ${domainOf(r, s)}`).join('; ')} };`)
    .join('\n');
  const defaults = routes.map((r) => `  ${r.operationId}: ${r.statuses[0] ?? 200};`).join('\n');
  const paged = routes.filter((r) => r.paging);
  const operations = routes
    .map(
      (r) =>
        `  /** ${r.method.toUpperCase()} ${r.path} (${r.envelope.kind}) */\n  ${r.operationId}(request: DomainRequest<'${r.operationId}'>${r.paging ? ' & { paging: PageRequest }' : ''}, context: Context): Promise<DomainResult<'${r.operationId}'>>;`,
    )
    .join('\n');
  const pagingTable = Object.fromEntries(paged.map((r) => [r.operationId, r.paging]));
  return `${BANNER}import type { operations } from './openapi';
import type { Gate } from './gates';
import type { Reply } from '../src/http/envelope';
import type { Camelize } from '../src/http/mapping';
import type { Page, PageRequest, PagingBounds } from '../src/paging';

export type OperationId =
${ids};

type Or<T, D> = [T] extends [never] ? D : [T] extends [undefined] ? D : T;
type Op<K extends OperationId> = operations[K];
type ContentOf<R> = R extends { content: infer C }
  ? C extends Record<string, infer B>
    ? B
    : undefined
  : undefined;

export type PathParams<K extends OperationId> = Or<NonNullable<Op<K>['parameters']['path']>, Record<string, never>>;
export type QueryParams<K extends OperationId> = Or<NonNullable<Op<K>['parameters']['query']>, Record<string, never>>;
export type RequestBody<K extends OperationId> = Op<K> extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : Op<K> extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;

/** What a handler receives: validated at the edge, so it can trust the types. */
export interface RestRequest<K extends OperationId> {
  params: PathParams<K>;
  query: QueryParams<K>;
  body: RequestBody<K>;
}

/** What a handler returns: one of the statuses the spec declares, with its body. */
export type RestResponse<K extends OperationId> = {
  [S in keyof Op<K>['responses']]: {
    status: S;
    body: ContentOf<Op<K>['responses'][S]>;
    headers?: Record<string, string>;
  };
}[keyof Op<K>['responses']];

/** One typed method per operationId, on the wire: a missing handler is a compile error. */
export interface RestHandlers<Context> {
${handlers}
}

// ---- the domain side of each operation (what a module's binding writes; see bindRest)

type Wire<K extends OperationId, S extends keyof Op<K>['responses']> = ContentOf<Op<K>['responses'][S]>;
type DataOf<B> = B extends { data: infer D } ? D : never;
type ItemOf<B> = B extends { data: (infer I)[] } ? I : never;

/** The request in domain form: path, query and body member names camelCased, opaque JSON as sent. */
export interface DomainRequest<K extends OperationId> {
  params: Camelize<PathParams<K>>;
  query: Camelize<QueryParams<K>>;
  body: Camelize<RequestBody<K>>;
}

/** Per operation and status, the domain value the router maps and wraps (x-envelope). */
export interface DomainResults {
${results}
}

/** The status a binding's plain return value is sent with (the lowest declared non-error status). */
export interface DefaultStatus {
${defaults}
}

/** A domain value (sent with the default status) or \`reply(status, value, headers)\`. */
export type DomainResult<K extends OperationId> =
  | DomainResults[K][DefaultStatus[K] & keyof DomainResults[K]]
  | { [S in keyof DomainResults[K]]: Reply<S, DomainResults[K][S]> }[keyof DomainResults[K]];

/**
 * One typed method per operationId in domain form: the router maps names and applies the
 * declared envelope and self link; paged operations get their \`paging\` request.
 */
export interface RestOperations<Context> {
${operations}
}

export type EnvelopeKind = ${ENVELOPE_KINDS.map((k) => `'${k}'`).join(' | ')};

export interface RouteSpec {
  operationId: OperationId;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  expressPath: string;
  gate: Gate;
  graphql: string | null;
  internal: boolean;
  /** Declared status → content type (null when the response has no body). */
  responses: Record<string, string | null>;
  /** x-envelope: the kind, and the self template filled from the response data (null: the request URL). */
  envelope: { kind: EnvelopeKind; self: string | null };
  /** Bounds of the page and limit parameters; null when the operation does not page. */
  paging: PagingBounds | null;
  /** The status of a plain (not \`reply\`) return value. */
  defaultStatus: number;
  /** A success answer carries a credential (\`x-credential\` in its schema): sent with \`Cache-Control: no-store\`. */
  noStore: boolean;
  /** The operation takes \`Idempotency-Key\`: a repeat answers the first result (src/http/idempotency.ts). */
  idempotent: boolean;
}

export const routes: readonly RouteSpec[] = ${JSON.stringify(table, null, 2)};

export type PagedOperationId = ${paged.length ? paged.map((r) => `'${r.operationId}'`).join(' | ') : 'never'};

/** Paging bounds of every paged operation, by operationId (a GraphQL twin pages with the same numbers). */
export const paging: Readonly<Record<PagedOperationId, PagingBounds>> = ${JSON.stringify(pagingTable, null, 2)};
`;
}

/**
 * Appends every component parameter marked `x-every-operation: true` to each operation, and every
 * component response marked `x-every-operation: '<status>'` under that status where an operation
 * declares none (a 400 any operation can answer).
 */
function withSharedParameters(doc: OpenApiDoc): OpenApiDoc {
  const components = (doc.components ?? {}) as { parameters?: Record<string, Record<string, unknown>>; responses?: Record<string, Record<string, unknown>> };
  const shared = Object.entries(components.parameters ?? {})
    .filter(([, p]) => p['x-every-operation'] === true)
    .map(([name]) => ({ $ref: `#/components/parameters/${name}` }));
  const sharedResponses = Object.entries(components.responses ?? {})
    .filter(([, r]) => typeof r['x-every-operation'] === 'string')
    .map(([name, r]) => [String(r['x-every-operation']), { $ref: `#/components/responses/${name}` }] as const);
  if (shared.length === 0 && sharedResponses.length === 0) return doc;
  const copy = structuredClone(doc);
  for (const item of Object.values(copy.paths)) {
    for (const method of METHODS) {
      const op = item[method] as { parameters?: unknown[]; responses?: Record<string, unknown> } | undefined;
      if (!op) continue;
      op.parameters = [...(op.parameters ?? []), ...shared];
      for (const [status, ref] of sharedResponses) if (op.responses && !(status in op.responses)) op.responses[status] = ref;
    }
  }
  return copy;
}

const IDEMPOTENCY_PARAMETER = '#/components/parameters/IdempotencyKey';

/**
 * Adds the component parameter marked `x-every-change` (`Idempotency-Key`) to every change a
 * signed-in caller makes (POST, PUT, PATCH, DELETE; not a public operation), whose request body is
 * JSON or absent (a repeat is recognised by its body) and whose success answer carries no credential
 * (an answer replayed from storage must not be a token kept in the database), with the 409 its
 * misuse answers.
 */
function withIdempotencyKeys(doc: OpenApiDoc): OpenApiDoc {
  const components = (doc.components ?? {}) as { parameters?: Record<string, Record<string, unknown>> };
  const marked = Object.entries(components.parameters ?? {}).filter(([, p]) => p['x-every-change'] === true);
  if (marked.length === 0) return doc;
  if (marked.length > 1 || `#/components/parameters/${marked[0]![0]}` !== IDEMPOTENCY_PARAMETER) fail('components.parameters: x-every-change is for IdempotencyKey alone');
  const copy = structuredClone(doc);
  for (const item of Object.values(copy.paths)) {
    for (const method of METHODS) {
      if (method === 'get') continue;
      const op = item[method] as { 'x-auth'?: string; parameters?: unknown[]; requestBody?: unknown; responses?: Record<string, unknown> } | undefined;
      if (!op || op['x-auth'] === 'public') continue;
      const content = (resolveRef(copy, op.requestBody) as { content?: Record<string, unknown> } | undefined)?.content;
      if (content && Object.keys(content).some((type) => type !== 'application/json')) continue;
      const successes = Object.entries(op.responses ?? {}).filter(([status]) => status.startsWith('2'));
      const bodyOf = (response: unknown) => Object.values((resolveRef(copy, response) as { content?: Record<string, { schema?: unknown }> }).content ?? {})[0]?.schema;
      if (successes.some(([, response]) => carriesCredential(copy, bodyOf(response), new Set()))) continue;
      op.parameters = [...(op.parameters ?? []), { $ref: IDEMPOTENCY_PARAMETER }];
      if (op.responses && !('409' in op.responses)) op.responses['409'] = { $ref: '#/components/responses/Conflict' };
    }
  }
  return copy;
}

/**
 * OpenAPI links (create → get/update/delete): each names an existing operation and gives exactly
 * the path parameters of its target, from `$response.body#/...` or `$request.path.<name>`.
 */
function checkLinks(doc: OpenApiDoc): void {
  const targets = new Map<string, string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method] as { operationId?: string } | undefined;
      if (op?.operationId) targets.set(op.operationId, path);
    }
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method] as { operationId?: string; responses?: Record<string, { links?: Record<string, { operationId?: string; parameters?: Record<string, string> }> }> } | undefined;
      for (const [status, response] of Object.entries(op?.responses ?? {})) {
        for (const [name, link] of Object.entries(response.links ?? {})) {
          const where = `${method.toUpperCase()} ${path} ${status} link ${name}`;
          const target = link.operationId ? targets.get(link.operationId) : undefined;
          if (!target) {
            fail(`${where}: operationId ${String(link.operationId)} names no operation`);
            continue;
          }
          const needed = [...target.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).sort();
          const given = Object.keys(link.parameters ?? {}).sort();
          if (needed.join() !== given.join()) fail(`${where}: parameters ${given.join(', ') || '(none)'} must be the path parameters of ${target} (${needed.join(', ')})`);
          for (const [param, expression] of Object.entries(link.parameters ?? {})) {
            if (!/^\$response\.body#\/\S+$|^\$request\.path\.\w+$/.test(expression)) fail(`${where}: parameter ${param} must be $response.body#/<pointer> or $request.path.<name>`);
          }
        }
      }
    }
  }
}

/**
 * One rule for every query value: reserved characters may travel unencoded (`allowReserved`), as
 * browsers' `URLSearchParams` (`+` for a space) and curl write them; the query parser decodes them.
 * Set here on every query parameter of the served document, never per parameter in spec/.
 */
function withReservedQueryValues(doc: OpenApiDoc): OpenApiDoc {
  const copy = structuredClone(doc);
  const components = (copy.components ?? {}) as { parameters?: Record<string, Record<string, unknown>> };
  const mark = (where: string, parameter: Record<string, unknown>) => {
    if (parameter.$ref || parameter.in !== 'query') return;
    if ('allowReserved' in parameter) fail(`${where}: allowReserved is set for every query parameter by codegen; remove it from spec/openapi/`);
    parameter.allowReserved = true;
  };
  for (const [name, parameter] of Object.entries(components.parameters ?? {})) mark(`components.parameters.${name}`, parameter);
  for (const [path, item] of Object.entries(copy.paths)) {
    const operations = [item, ...METHODS.map((m) => item[m])] as ({ parameters?: Record<string, unknown>[] } | undefined)[];
    for (const op of operations) for (const parameter of op?.parameters ?? []) mark(`${path} ${String(parameter.name)}`, parameter);
  }
  return copy;
}

/**
 * Bundles spec/openapi/ (openapi-parts.ts), checks the document, and returns the document as served (shared parameters and
 * responses added, reserved query values allowed) with its routes.
 */
export function readOpenapi(): { openapi: OpenApiDoc; routes: Route[] } {
  const openapiSource = bundleOpenapi() as OpenApiDoc;
  checkLinks(openapiSource);
  const openapi = withIdempotencyKeys(withSharedParameters(withReservedQueryValues(openapiSource)));
  return { openapi, routes: readRoutes(openapi) };
}

/** generated/openapi.ts: the document's types (openapi-typescript). */
export async function openapiTypes(openapi: OpenApiDoc): Promise<string> {
  const types = astToString(await openapiTS(structuredClone(openapi) as never, { alphabetize: true }));
  return `${BANNER}${types}`;
}

/** generated/openapi-document.ts: the served document, and the published one read from spec/published/. */
export function openapiDocumentModule(openapi: OpenApiDoc): string {
  return `${BANNER}import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The whole document: what the request and response validators read. */
export const openapiDocument = ${JSON.stringify(openapi, null, 2)};

/**
 * The published document (internal operations left out, security from the gates): the file
 * spec/published/openapi.json that codegen writes and the service serves as it is.
 */
export const publicOpenapiDocument = JSON.parse(readFileSync(path.join(__dirname, '../spec/published/openapi.json'), 'utf8')) as typeof openapiDocument;
`;
}
