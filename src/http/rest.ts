/**
 * The REST router, built from the generated route table. `bindRest` turns a module's bindings,
 * written in domain form (camelCase input and output, `RestOperations`), into wire handlers: it
 * maps names through the operation's schemas (src/http/mapping.ts), pages with the declared
 * bounds, and applies the declared `x-envelope` and self link. The router enforces each
 * operation's declared gate, calls the bound handler with the validated input, and writes the
 * declared content type. Handlers never check gates, build envelopes or compute pages.
 *
 * Streaming: every handler's context carries the unparsed request (`context.raw`), so an operation
 * whose body is `multipart/form-data` (left unread by the JSON parser and the validator, app.ts)
 * streams it after the gate passed; a raw operation may answer a `Readable`, which is piped, with
 * the handler's own `Content-Type` when it sets one.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ServerResponse } from 'node:http';
import mime from 'mime-types';
import { routes, type OperationId, type PagedOperationId, type RestHandlers, type RestOperations, type RestRequest, type RouteSpec } from '../../generated/rest';
import type { GateEnforcer } from '../auth/gates';
import { JsonText } from '../infra/json-bytes';
import { isKept, keptRendering } from '../infra/kept';
import type { Page } from '../paging';
import { requestContext, type RequestContext } from './context';
import { Reply, collection, fillSelf, single, wholeCollection } from './envelope';
import { camelKeys, documentOperation, documentSchema, jsonSchemaOf, routeOf, shapeOf, toDomain, toWire, type Shape } from './mapping';
import type { ResolvedOperation } from './operations';
import { pageFor } from './paging';
import { header, prepareJson, prepareJsonText, preparedBytes, preparedText, sendBody, sendJson, sendPreparedJson, withCharset, type ApiRequest, type PreparedJson } from './request';

/**
 * What a wire handler answers. `kept` stands for `body` when the JSON answer is rendered from a
 * kept value alone (src/infra/kept.ts) and `key` (the operation, status, request URL and page
 * numbers): the dispatcher renders it once per value and key.
 */
type WireResult = {
  status: string | number;
  body: unknown;
  headers?: Record<string, string>;
  kept?: { value: object; key: string; wire(): unknown; prepare?(): PreparedJson };
  /** A declared JSON-text answer (`jsonText`) that is not kept: its bytes (response validation parses them). */
  spliced?: { prepare(): PreparedJson };
};
type AnyHandler = (request: RestRequest<never>, context: RequestContext) => Promise<WireResult>;
type AnyOperation = (request: unknown, context: RequestContext) => Promise<unknown>;

/** Wire handlers made by bindRest; the router refuses any other, so no envelope is hand-built. */
const bound = new WeakSet<object>();
/** Shapes of the request body and of each status's domain value (the part the envelope wraps). */
function shapesOf(route: RouteSpec): { body: Shape | null; results: Map<number, Shape | null> } {
  const op = documentOperation(route.operationId);
  const requestSchema = jsonSchemaOf(op.requestBody);
  const results = new Map<number, Shape | null>();
  for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, unknown>)) {
    const schema = jsonSchemaOf(response);
    if (schema === undefined || route.envelope.kind === 'raw') {
      results.set(Number(status), null);
      continue;
    }
    const data = (documentSchema(schema)?.properties as Record<string, unknown> | undefined)?.data;
    switch (route.envelope.kind) {
      case 'bare':
        results.set(Number(status), shapeOf(schema));
        break;
      case 'single':
      case 'data':
        results.set(Number(status), shapeOf(data));
        break;
      case 'collection':
        results.set(Number(status), shapeOf(documentSchema(data)?.items));
        break;
    }
  }
  return { body: requestSchema === undefined ? null : shapeOf(requestSchema), results };
}

/** The wire body of a domain value under the route's envelope. */
function wrap(route: RouteSpec, shape: Shape | null, value: unknown, context: RequestContext): unknown {
  const wire = (v: unknown) => (shape ? toWire(v, shape) : v);
  switch (route.envelope.kind) {
    case 'raw':
      return value;
    case 'bare':
      return value === undefined ? undefined : wire(value);
    case 'data':
      return { data: wire(value) };
    case 'single': {
      const data = wire(value);
      return single(data, route.envelope.self ? fillSelf(route.envelope.self, data) : context.selfUrl);
    }
    case 'collection': {
      if (route.paging) {
        const page = value as Page<unknown>;
        return collection({ ...page, items: page.items.map(wire) }, context.selfUrl);
      }
      return wholeCollection((value as unknown[]).map(wire), context.selfUrl);
    }
  }
}

/** A page whose items are already JSON text in their wire form (src/infra/json-bytes.ts `JsonText`). */
export type JsonTextPage = Omit<Page<never>, 'items'> & { items: JsonText };

/**
 * What a module declares of its bindings beyond the spec. `jsonText`: paged collection operations
 * whose binding answers a `JsonTextPage`, its items rendered in their wire form already (names,
 * formats and member order as the name mapping and JSON.stringify would write them; the module
 * proves the bytes equal in its tests). For these the router maps no names and serialises no
 * items: it writes the declared envelope around the text (`spliceCollection`). Everything else of
 * the pipeline is as for any operation (gates, validation, rate limit, ETag and 304, the kept
 * rendering, response validation in tests).
 */
export interface RestDeclarations<J extends OperationId> {
  jsonText?: readonly J[];
}

/** A module's bindings: the spec's domain signatures, a declared `jsonText` operation answering a `JsonTextPage`. */
export type RestBindings<K extends OperationId, J extends K> = {
  [O in K]: O extends J ? (request: Parameters<RestOperations<RequestContext>[O]>[0], context: RequestContext) => Promise<JsonTextPage> : RestOperations<RequestContext>[O];
};

/**
 * The collection envelope (envelope.ts `collection`, the same links and meta) around a page's
 * items given as wire JSON text: `{"data":<items>,"_links":...,"_meta":...}`, the bytes
 * JSON.stringify writes for the envelope of the parsed items (`data` is its first member).
 */
export function spliceCollection(page: JsonTextPage, self: string): PreparedJson {
  const envelope = collection({ ...page, items: [] }, self);
  const around = JSON.stringify({ ...envelope, data: undefined });
  return prepareJsonText(['{"data":', page.items.text, around.length > 2 ? `,${around.slice(1)}` : '}']);
}

/**
 * Wire handlers for a module's domain bindings: request names camelCased (opaque JSON as sent),
 * a `paging` request for paged operations, the result mapped back and wrapped as the spec
 * declares. A binding returns its domain value, or `reply(status, value, headers)`; a declared
 * `jsonText` operation its page of JSON text (`RestDeclarations`).
 */
export function bindRest<K extends OperationId, J extends K = never>(operations: RestBindings<K, J>, declarations: RestDeclarations<J> = {}): Pick<RestHandlers<RequestContext>, K> {
  const handlers: Record<string, AnyHandler> = {};
  const jsonText = new Set<OperationId>(declarations.jsonText ?? []);
  for (const [operationId, operation] of Object.entries(operations) as [OperationId, AnyOperation][]) {
    const route = routeOf(operationId);
    if (!route) throw new Error(`no route for REST binding ${operationId}`);
    const spliced = jsonText.has(operationId);
    if (spliced && (route.envelope.kind !== 'collection' || !route.paging || route.responses[String(route.defaultStatus)] !== 'application/json')) {
      throw new Error(`REST binding ${operationId}: jsonText is declared for paged JSON collections only`);
    }
    const shapes = shapesOf(route);
    const handler: AnyHandler = async (request, context) => {
      const query = (request.query ?? {}) as Record<string, unknown>;
      const domainRequest = {
        params: camelKeys(request.params as Record<string, unknown>),
        query: camelKeys(query),
        body: shapes.body ? toDomain(request.body, shapes.body) : request.body,
        ...(route.paging ? { paging: pageFor(route.operationId as PagedOperationId, query) } : {}),
      };
      const result = await operation.call(operations, domainRequest, context);
      if (spliced) {
        const page = result as JsonTextPage;
        if (!(page?.items instanceof JsonText)) throw new Error(`REST binding ${operationId} is declared jsonText but did not answer a JSON text page`);
        const prepare = () => spliceCollection(page, context.selfUrl);
        // Response validation (tests) checks the value the bytes stand for.
        const wire = () => JSON.parse(preparedText(prepare())) as unknown;
        const status = route.defaultStatus;
        const kept = keptPart(route, page);
        if (kept) return { status, body: undefined, kept: { value: kept.value, key: `${route.operationId} ${status} ${context.selfUrl}${kept.key}`, wire, prepare: () => preparedBytes(prepare()) } };
        return { status, body: undefined, spliced: { prepare } };
      }
      const { status, value, headers } =
        result instanceof Reply ? { status: Number(result.status), value: result.body, headers: result.headers } : { status: route.defaultStatus, value: result, headers: undefined };
      const wire = () => wrap(route, shapes.results.get(status) ?? null, value, context);
      const kept = headers || route.responses[String(status)] !== 'application/json' ? null : keptPart(route, value);
      if (kept) return { status, body: undefined, kept: { value: kept.value, key: `${route.operationId} ${status} ${context.selfUrl}${kept.key}`, wire } };
      return { status, body: wire(), ...(headers ? { headers } : {}) };
    };
    bound.add(handler);
    handlers[operationId] = handler;
  }
  return handlers as unknown as Pick<RestHandlers<RequestContext>, K>;
}

/**
 * The kept value an answer is rendered from, with what else goes into the rendering besides the
 * request URL: the value itself, or a page's kept items with the page's numbers.
 */
function keptPart(route: RouteSpec, value: unknown): { value: object; key: string } | null {
  if (isKept(value)) return { value, key: '' };
  if (route.envelope.kind !== 'collection' || !route.paging) return null;
  const page = value as Page<unknown> | JsonTextPage;
  return isKept(page.items) ? { value: page.items, key: ` ${page.total} ${page.page} ${page.limit} ${page.pages} ${page.truncated} ${page.nextOffset}` } : null;
}

/**
 * A JSON writer the response validation installed (app.ts, tests); absent in production. Given
 * `prepared`, it checks `body` and writes those bytes (a kept rendering, a spliced answer).
 */
export type JsonHook = (body: unknown, prepared?: PreparedJson) => void;

/**
 * One operation's two steps, which the pipeline (app.ts) runs apart so that a request is checked in
 * the order Part 1's errors imply: `authorize` enforces the declared gate (401, then 403) before the
 * body is read or validated, so an anonymous caller learns nothing of an operation's input from a
 * 400; `dispatch` calls the bound handler with the validated input and writes the result with the
 * declared content type.
 */
export interface RestDispatcher {
  authorize(req: ApiRequest, found: ResolvedOperation): Promise<void>;
  dispatch(req: ApiRequest, res: ServerResponse & { json?: JsonHook }, found: ResolvedOperation): Promise<void>;
}

/**
 * Answers a request for one operation: its declared gate is enforced, its bound handler called with
 * the validated input, and the result written with the declared content type. The operation comes
 * from the route index (operations.ts).
 */
export function createRestDispatcher(deps: { handlers: RestHandlers<RequestContext>; gates: GateEnforcer }): RestDispatcher {
  const handlers = deps.handlers as unknown as Record<string, AnyHandler>;
  for (const route of routes) {
    const handler = handlers[route.operationId];
    if (!handler) throw new Error(`no REST handler for ${route.operationId}`);
    if (!bound.has(handler)) throw new Error(`REST handler ${route.operationId} is not made by bindRest (envelopes and mapping belong to the router)`);
  }
  // A declared resource grant is checked on the resource the `id` path parameter names.
  const authorize = (req: ApiRequest, found: ResolvedOperation) =>
    deps.gates.enforce(found.route.gate, requestContext(req).auth, found.route.gate.resourceGrant ? { id: found.params.id } : undefined);
  const dispatch = async (req: ApiRequest, res: ServerResponse & { json?: JsonHook }, found: ResolvedOperation): Promise<void> => {
    const route = found.route;
    const handler = handlers[route.operationId]!;
    const context = requestContext(req);
    context.raw = { body: req, header: (name: string) => header(req, name) };
    // The path parameters as the validator left them (coerced to their schemas, in place).
    const input = { params: found.params, query: req.query, body: req.body } as unknown as RestRequest<never>;
    const result = await handler(input, context);
    const status = Number(result.status);
    // An answer that shows a token or key (declared with x-credential) is never kept by a cache.
    if (route.noStore) res.setHeader('Cache-Control', 'no-store');
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    res.statusCode = status;
    const contentType = route.responses[String(result.status)] ?? null;
    if (result.kept) {
      const kept = result.kept;
      const render = kept.prepare ?? (() => prepareJson(kept.wire()));
      // Response validation, when on, checks each rendering instead.
      if (res.json) res.json(kept.wire(), kept.prepare ? render() : undefined);
      else sendPreparedJson(req, res, status, keptRendering(kept.value, kept.key, render));
    } else if (result.spliced) {
      const prepared = result.spliced.prepare();
      if (res.json) res.json(JSON.parse(preparedText(prepared)), prepared);
      else sendPreparedJson(req, res, status, prepared);
    } else if (contentType === null || result.body === undefined) {
      res.end();
    } else if (contentType === 'application/json') {
      if (res.json) res.json(result.body);
      else sendJson(req, res, status, result.body);
    } else if (result.body instanceof Readable) {
      // A raw body whose type depends on the content (audio) brings its own Content-Type.
      if (!res.hasHeader('content-type')) res.setHeader('Content-Type', mime.contentType(contentType) || contentType);
      // Streamed bodies (ranged downloads): a client that goes away mid-stream is not a server error.
      await pipeline(result.body, res).catch((error: unknown) => {
        if (!res.writableFinished) context.log.debug({ err: error }, 'streamed response ended early');
        res.destroy();
      });
    } else {
      const body = result.body as string | Buffer;
      const type = res.hasHeader('content-type') ? String(res.getHeader('content-type')) : mime.contentType(contentType) || contentType;
      sendBody(req, res, status, body, typeof body === 'string' ? withCharset(type) : type);
    }
  };
  return { authorize, dispatch };
}
