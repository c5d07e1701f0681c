/**
 * A small GraphQL request function: POST /v1/gql through the SDK's transport, typed by the
 * document. It takes what GraphQL tooling hands a consumer:
 * - a TypedDocumentString (generated/graphql.ts, or GraphQL Code Generator's client preset with
 *   `documentMode: 'string'`): a String subclass whose `__apiType` carries the result and variables;
 * - a DocumentNode / TypedDocumentNode (`parse(...)`, the client preset's default, `gql` tags):
 *   sent as its source text (`loc.source.body`); a document without locations (the client
 *   preset strips them) needs the `print` of the `graphql` package, passed to createSdk;
 * - a plain string: the result is `unknown` unless the caller names it, the variables optional.
 * A failed operation throws the same ApiError a REST call does: the service puts the REST code in
 * `extensions.code` with the same message; `status` is the code's REST status.
 *
 * Owns: the GraphQL request. Must not import `graphql` at run time (3 MB a browser bundle would
 * carry for a printer); its types are for the caller's documents only.
 */
import type { DocumentTypeDecoration } from './document-type.js';
import { ApiError, errorFromResponse, statusOfCode, type ErrorCode } from './errors.js';
import type { Transport } from './transport.js';

export interface GraphqlErrorEntry {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; details?: unknown };
}

/**
 * The part of graphql's `DocumentNode` the SDK reads: the definitions, and the source the parser
 * kept (`loc`), sliced to the document's own range.
 */
export interface DocumentNodeLike {
  readonly kind: 'Document' | string;
  readonly definitions: readonly unknown[];
  readonly loc?: { readonly start: number; readonly end: number; readonly source: { readonly body: string } } | undefined;
}

/** graphql's `print` (or any printer of a DocumentNode), for documents that carry no source text. */
export type GraphqlPrinter = (document: never) => string;

/**
 * A typed document (TypedDocumentString, TypedDocumentNode, or anything with `__apiType`), a
 * DocumentNode, or a plain query string (then the caller names the result type, else `unknown`).
 */
export type GraphqlDocument<TResult = unknown, TVariables = Record<string, unknown>> = DocumentTypeDecoration<TResult, TVariables> | DocumentNodeLike | string;

/** The variables argument: optional when the operation declares none or only optional ones. */
export type GraphqlVariablesArgument<TVariables> = Record<string, never> extends TVariables ? [variables?: TVariables] : [variables: TVariables];

export type GraphqlRequest = <TResult = unknown, TVariables = Record<string, unknown>>(
  document: DocumentTypeDecoration<TResult, TVariables> | DocumentNodeLike | string,
  ...variables: GraphqlVariablesArgument<TVariables>
) => Promise<TResult>;

const isDocumentNode = (value: unknown): value is DocumentNodeLike =>
  typeof value === 'object' && value !== null && !(value instanceof String) && Array.isArray((value as { definitions?: unknown }).definitions);

/** The query text of a document (see the module comment for what is accepted). */
export function documentText(document: unknown, print?: GraphqlPrinter): string {
  if (typeof document === 'string') return document;
  if (isDocumentNode(document)) {
    const loc = document.loc;
    if (loc && typeof loc.source?.body === 'string') return loc.source.body.slice(loc.start, loc.end);
    if (print) return print(document as never);
    throw new ApiError(0, {
      error: 'GRAPHQL_ERROR',
      message: 'This GraphQL document carries no source text (no loc): pass `print` from the graphql package to createSdk({ print })',
    });
  }
  // A String subclass (TypedDocumentString) or any object whose toString is the query.
  return String(document);
}

export function createGraphqlRequest(transport: Transport, print?: GraphqlPrinter): GraphqlRequest {
  return async (document: unknown, ...rest: unknown[]) => {
    const query = documentText(document, print);
    const response = await transport.fetch(
      new Request(`${transport.apiUrl}/gql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query, variables: rest[0] ?? {} }),
      }),
    );
    if (!(response.headers.get('content-type') ?? '').includes('json')) throw await errorFromResponse(response);
    const requestId = response.headers.get('x-request-id');
    let body: { data?: unknown; errors?: GraphqlErrorEntry[]; error?: string; message?: string; details?: unknown };
    try {
      body = (await response.json()) as typeof body;
    } catch (error) {
      throw new ApiError(response.status, { error: 'UNEXPECTED_RESPONSE', message: 'The GraphQL answer is not JSON' }, { requestId, cause: error });
    }
    const first = body.errors?.[0];
    if (first) {
      const code = (first.extensions?.code ?? 'GRAPHQL_ERROR') as ErrorCode;
      // A GraphQL error arrives in a 200: report the status REST gives the same code.
      const status = statusOfCode(code) || (response.ok ? 400 : response.status);
      throw new ApiError(status, { error: code, message: first.message, details: first.extensions?.details }, { requestId });
    }
    if (typeof body.error === 'string' && typeof body.message === 'string') {
      throw new ApiError(response.status, { error: body.error as ErrorCode, message: body.message, details: body.details }, { requestId });
    }
    if (!response.ok || body.data === undefined || body.data === null) {
      throw new ApiError(response.status, { error: 'UNEXPECTED_RESPONSE', message: 'The GraphQL answer carries no data' }, { requestId });
    }
    return body.data as never;
  };
}
