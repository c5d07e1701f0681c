/**
 * The SDK's one error type and its GraphQL documents, against a local HTTP server that answers
 * what the service answers (the service's own answers are covered by its tests; this pins the
 * client): a network failure, an abort and a timeout are ApiErrors (NETWORK_ERROR, ABORTED,
 * TIMEOUT), an answer carries its X-Request-Id, a GraphQL error the REST status of its code;
 * parsed documents, TypedDocumentStrings and plain strings are sent as their query text;
 * realtime connect() settles without a credential, against a refused upgrade and when nothing
 * answers; page-numbered lists are walked to their total.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { parse, print } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import WebSocket from 'ws';
import { errorStatus as serviceErrorStatus } from '../../src/errors';
import { ApiError, createSdk, errorStatus, statusOfCode, unwrap, type WebSocketConstructor } from '../../sdk/src/index';

/** The ApiError a call fails with (fails the test when it succeeds or fails otherwise). */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw new Error(`not an ApiError: ${String(error)}`);
  }
  throw new Error('the call succeeded');
}

/** A client preset's TypedDocumentString: a String subclass whose `__apiType` carries the types. */
class TypedDocumentString<TResult, TVariables> extends String {
  declare __apiType?: (variables: TVariables) => TResult;
  constructor(private readonly value: string) {
    super(value);
  }
  override toString(): string {
    return this.value;
  }
}

describe('SDK errors and documents', () => {
  let server: Server;
  let baseUrl = '';
  let handler: (req: IncomingMessage, body: string, res: ServerResponse) => void = (_req, _body, res) => res.end();
  const queries: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.url === '/v1/gql') queries.push((JSON.parse(body) as { query: string }).query);
        handler(req, body, res);
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  });
  beforeEach(() => {
    queries.length = 0;
  });

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req-123', ...headers }).end(JSON.stringify(body));

  it('the SDK status table agrees with the service for every code of the spec', () => {
    for (const [code, status] of Object.entries(errorStatus)) expect([code, status]).toEqual([code, serviceErrorStatus[code as keyof typeof serviceErrorStatus]]);
  });

  it("every code the service can answer is in the spec's ErrorCode, and so in the SDK's", () => {
    // The published document is what the SDK's ErrorCode is generated from.
    const published = JSON.parse(readFileSync(path.join(__dirname, '../../spec/published/openapi.json'), 'utf8')) as {
      components: { schemas: { ErrorCode: { enum: string[] }; Error: { properties: { error: { enum: string[] } } } } };
    };
    const specCodes = [...published.components.schemas.ErrorCode.enum].sort();
    const answered = Object.keys(serviceErrorStatus).sort();
    expect(answered.filter((code) => !specCodes.includes(code))).toEqual([]);
    expect(specCodes).toEqual(answered);
    expect(Object.keys(errorStatus).sort()).toEqual(answered);
    expect(published.components.schemas.Error.properties.error.enum.filter((code) => !specCodes.includes(code))).toEqual([]);
    expect(statusOfCode('REFRESH_COOLDOWN')).toBe(429);
  });

  it('a REST error carries code, message, details, status and the X-Request-Id', async () => {
    handler = (_req, _body, res) => json(res, 409, { error: 'CONFLICT', message: 'Overlay was changed by someone else', details: { current_version: 3 } });
    const sdk = createSdk({ baseUrl, credential: { kind: 'key', key: 'lm_key' } });
    const error = await failure(unwrap(sdk.rest.GET('/events')));
    expect(error).toMatchObject({ code: 'CONFLICT', status: 409, message: 'Overlay was changed by someone else', requestId: 'req-123', details: { current_version: 3 } });
  });

  it('an answer that is not the service error shape is UNEXPECTED_RESPONSE with its status', async () => {
    handler = (_req, _body, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>');
    const sdk = createSdk({ baseUrl, retry: { retries: 0 } });
    const error = await failure(unwrap(sdk.rest.GET('/events')));
    expect(error).toMatchObject({ code: 'UNEXPECTED_RESPONSE', status: 502, details: { body: '<h1>Bad gateway</h1>' } });
  });

  it('a network failure, an abort and a timeout are ApiErrors, on REST and GraphQL alike', async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((done) => closed.close(done));

    const offline = createSdk({ baseUrl: deadUrl, retry: { retries: 0 } });
    const network = await failure(offline.rest.GET('/events'));
    expect(network).toMatchObject({ code: 'NETWORK_ERROR', status: 0, requestId: null });
    expect(network.details).toEqual({ cause: 'ECONNREFUSED' });
    expect(await failure(unwrap(offline.rest.GET('/events')))).toMatchObject({ code: 'NETWORK_ERROR' });
    expect(await failure(offline.graphql('{ me { id } }'))).toMatchObject({ code: 'NETWORK_ERROR' });

    // The server never answers: the caller's abort, then the SDK's own bound.
    handler = () => undefined;
    const sdk = createSdk({ baseUrl });
    const controller = new AbortController();
    const aborted = sdk.rest.GET('/events', { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect(await failure(aborted)).toMatchObject({ code: 'ABORTED', status: 0 });
    const bounded = createSdk({ baseUrl, timeoutMs: 100 });
    expect(await failure(bounded.rest.GET('/events'))).toMatchObject({ code: 'TIMEOUT' });
    expect(await failure(bounded.graphql('{ me { id } }'))).toMatchObject({ code: 'TIMEOUT' });
    expect(await failure(sdk.rest.GET('/events', { signal: AbortSignal.timeout(50) }))).toMatchObject({ code: 'TIMEOUT' });
  });

  it('a GraphQL error carries the REST status of its code and the request id', async () => {
    handler = (_req, _body, res) => json(res, 200, { data: null, errors: [{ message: 'Authentication required', extensions: { code: 'UNAUTHORIZED' } }] });
    const sdk = createSdk({ baseUrl });
    const error = await failure(sdk.graphql('{ me { id } }'));
    expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401, message: 'Authentication required', requestId: 'req-123' });
  });

  it('sends a parsed document, a TypedDocumentString and a plain string as their query text', async () => {
    handler = (_req, _body, res) => json(res, 200, { data: { me: { id: 'u1' } } });
    const sdk = createSdk({ baseUrl });
    const source = 'query Me { me { id } }';

    const parsed = parse(source) as TypedDocumentNode<{ me: { id: string } }, Record<string, never>>;
    const viaNode = await sdk.graphql(parsed);
    expect(viaNode.me.id).toBe('u1');
    const typedString = new TypedDocumentString<{ me: { id: string } }, Record<string, never>>(source);
    expect((await sdk.graphql(typedString)).me.id).toBe('u1');
    const untyped: unknown = await sdk.graphql('{ me { id } }');
    expect(untyped).toEqual({ me: { id: 'u1' } });
    expect(queries).toEqual([source, source, '{ me { id } }']);

    // A document without locations (the client preset strips them) needs graphql's print.
    const bare = parse(source, { noLocation: true });
    expect(await failure(sdk.graphql(bare))).toMatchObject({ code: 'GRAPHQL_ERROR' });
    const printing = createSdk({ baseUrl, print: print as never });
    await printing.graphql(bare);
    expect(queries.at(-1)).toBe(print(bare));
  });

  it('walks a page-numbered list to its total', async () => {
    const rows = Array.from({ length: 23 }, (_, i) => ({ id: `row-${i}` }));
    const asked: string[] = [];
    handler = (req, _body, res) => {
      const url = new URL(req.url!, baseUrl);
      asked.push(url.search);
      const page = Number(url.searchParams.get('page') ?? 1);
      const limit = Number(url.searchParams.get('limit') ?? 10);
      const items = rows.slice((page - 1) * limit, page * limit);
      json(res, 200, { items, total: rows.length, page, limit, total_pages: Math.ceil(rows.length / limit) });
    };
    const sdk = createSdk({ baseUrl });
    const seen: string[] = [];
    for await (const row of sdk.paginate('myAuditLog', { limit: 10 })) seen.push((row as unknown as { id: string }).id);
    expect(seen).toEqual(rows.map((r) => r.id));
    expect(asked).toEqual(['?limit=10', '?limit=10&page=2', '?limit=10&page=3']);
  });

  describe('realtime connect()', () => {
    it('rejects at once with the 401 when there is no credential', async () => {
      const sdk = createSdk({ baseUrl, WebSocket: WebSocket as unknown as WebSocketConstructor });
      const live = sdk.realtime();
      const started = Date.now();
      const error = await failure(live.connect());
      expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
      expect(Date.now() - started).toBeLessThan(1000);
      expect(live.state).toBe('idle');
      live.close();
    });

    it('rejects with the status of an upgrade refused even with a fresh token', async () => {
      const refusing = createServer();
      refusing.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n'));
      await new Promise<void>((done) => refusing.listen(0, '127.0.0.1', done));
      const url = `ws://127.0.0.1:${(refusing.address() as AddressInfo).port}/v1/ws`;
      try {
        const sdk = createSdk({ baseUrl, WebSocket: WebSocket as unknown as WebSocketConstructor });
        const reasons: string[] = [];
        const live = sdk.realtime({ url, getToken: async (reason) => (reasons.push(reason), 'lm_refused'), reconnect: { initialDelayMs: 60_000 } });
        const error = await failure(live.connect());
        expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
        expect(reasons).toEqual(['connect', 'refused']);
        live.close();
      } finally {
        await new Promise((done) => refusing.close(done));
      }
    });

    it('rejects with TIMEOUT when nothing answers within connectTimeoutMs, and close() ends a pending connect', async () => {
      // A server that accepts the TCP connection and never answers the upgrade.
      const silent = createServer();
      const held: Duplex[] = [];
      silent.on('upgrade', (_req, socket: Duplex) => void held.push(socket));
      await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
      const url = `ws://127.0.0.1:${(silent.address() as AddressInfo).port}/v1/ws`;
      try {
        const sdk = createSdk({ baseUrl, WebSocket: WebSocket as unknown as WebSocketConstructor });
        const live = sdk.realtime({ url, getToken: async () => 'lm_token', connectTimeoutMs: 200 });
        const started = Date.now();
        expect(await failure(live.connect())).toMatchObject({ code: 'TIMEOUT', details: { timeout_ms: 200 } });
        expect(Date.now() - started).toBeLessThan(2000);
        const pending = live.connect();
        live.close();
        expect(await failure(pending)).toMatchObject({ code: 'ABORTED' });
      } finally {
        for (const socket of held) socket.destroy();
        await new Promise((done) => silent.close(done));
      }
    });
  });
});
