/**
 * @creator-backend/sdk, browser entry (also what Node code imports when it brings its own
 * WebSocket; `@creator-backend/sdk/node` passes `ws`). One object per service: REST (openapi-fetch
 * over the published OpenAPI document), GraphQL (typed documents) and WebSocket, all sharing one
 * credential. Nothing here imports a Node module.
 */
import { createGraphqlRequest, type GraphqlPrinter, type GraphqlRequest } from './graphql.js';
import { createPaginate, type Paginate } from './paginate.js';
import { createRealtimeClient, type RealtimeClient, type RealtimeOptions, type WebSocketConstructor } from './realtime.js';
import { createRestClient, type RestClient } from './rest.js';
import { createTransport, type Credential, type SessionTokens, type TransportOptions } from './transport.js';
import { ApiError, errorFromResponse, unwrap } from './errors.js';

export * from './errors.js';
export * from './transport.js';
export * from './rest.js';
export * from './graphql.js';
export * from './document-type.js';
export * from './paginate.js';
export * from './realtime.js';
export * as documents from './generated/graphql.js';
export type * as gql from './generated/graphql.js';

export interface SdkOptions extends TransportOptions {
  /** The WebSocket implementation for realtime() (default: globalThis.WebSocket). */
  WebSocket?: WebSocketConstructor;
  /**
   * graphql's `print`, for DocumentNodes that carry no source text (GraphQL Code Generator's client
   * preset strips `loc`). Parsed documents and strings need none; the SDK never loads `graphql` itself.
   */
  print?: GraphqlPrinter;
}

export interface Sdk {
  rest: RestClient;
  /** POST /v1/gql with a typed document, a DocumentNode or a query string. */
  graphql: GraphqlRequest;
  /** Every row of a paged REST list, page after page: `for await (const e of sdk.paginate('events', { limit: 100 }))`. */
  paginate: Paginate;
  /** The current credential (a session's tokens change with each refresh). */
  credential(): Credential;
  setCredential(credential: Credential): void;
  /** Signs in with `POST /v1/auth/dev/login` (development services only) and uses the session from then on. */
  devLogin(input: { email: string; display_name: string }, onTokens?: (tokens: SessionTokens) => void): Promise<{ userId: string; accountId: string | null }>;
  /** A WebSocket-only token for the current credential (what realtime() connects with). */
  wsToken(): Promise<string>;
  /** A realtime client on /v1/ws that mints its tokens through this SDK's credential. */
  realtime(options?: Partial<RealtimeOptions>): RealtimeClient;
}

export function createSdk(options: SdkOptions): Sdk {
  const transport = createTransport(options);
  const rest = createRestClient(transport);
  const graphql = createGraphqlRequest(transport, options.print);
  const paginate = createPaginate(transport, rest);

  async function mint(path: '/auth/ws-token' | '/auth/popout/ws-token'): Promise<string> {
    const response = await transport.fetch(new Request(`${transport.apiUrl}${path}`, { method: 'POST', headers: { accept: 'application/json' } }));
    if (!response.ok) throw await errorFromResponse(response);
    return ((await response.json()) as { data: { ws_token: string } }).data.ws_token;
  }

  async function wsToken(): Promise<string> {
    const credential = transport.credential();
    switch (credential.kind) {
      case 'token':
        return credential.token;
      case 'popout-cookie':
        return mint('/auth/popout/ws-token');
      case 'none':
        throw new ApiError(401, { error: 'UNAUTHORIZED', message: 'Authentication required: no credential to mint a WebSocket token with' });
      default:
        return mint('/auth/ws-token');
    }
  }

  return {
    rest,
    graphql,
    paginate,
    credential: transport.credential,
    setCredential: transport.setCredential,
    async devLogin(input, onTokens) {
      const session = (await unwrap(rest.POST('/auth/dev/login', { body: input }))).data;
      transport.setCredential({ kind: 'session', accessToken: session.access_token, refreshToken: session.refresh_token, ...(onTokens ? { onTokens } : {}) });
      onTokens?.({ accessToken: session.access_token, refreshToken: session.refresh_token });
      return { userId: session.user_id, accountId: session.account_id ?? null };
    },
    wsToken,
    realtime(overrides = {}) {
      const url = new URL(`${transport.apiUrl}/ws`);
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      return createRealtimeClient({
        url: url.toString(),
        getToken: () => wsToken(),
        ...(options.WebSocket ? { WebSocket: options.WebSocket } : {}),
        ...overrides,
      });
    },
  };
}
