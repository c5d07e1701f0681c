/**
 * A small GraphQL request function: POST /v1/gql through the SDK's transport, typed by the
 * document (the TypedDocumentStrings of generated/graphql.ts, or any DocumentTypeDecoration).
 * A failed operation throws the same ApiError a REST call does: the service puts the REST code
 * in `extensions.code` with the same message.
 */
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
import { ApiError, errorFromResponse } from './errors.js';
import type { Transport } from './transport.js';

export interface GraphqlErrorEntry {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; details?: unknown };
}

/** A typed document, or a plain query string (then the caller names the result type). */
export type GraphqlDocument<TResult, TVariables> = DocumentTypeDecoration<TResult, TVariables> | string;

export type GraphqlRequest = <TResult, TVariables>(
  document: GraphqlDocument<TResult, TVariables>,
  ...variables: TVariables extends Record<string, never> ? [variables?: TVariables] : [variables: TVariables]
) => Promise<TResult>;

export function createGraphqlRequest(transport: Transport): GraphqlRequest {
  return async (document, ...rest) => {
    const response = await transport.fetch(
      new Request(`${transport.apiUrl}/gql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: String(document), variables: rest[0] ?? {} }),
      }),
    );
    if (!response.ok && !(response.headers.get('content-type') ?? '').includes('json')) throw await errorFromResponse(response);
    const body = (await response.json()) as { data?: unknown; errors?: GraphqlErrorEntry[]; error?: string; message?: string; details?: unknown };
    const first = body.errors?.[0];
    if (first) throw new ApiError(response.status, { error: first.extensions?.code ?? 'GRAPHQL_ERROR', message: first.message, details: first.extensions?.details });
    if (typeof body.error === 'string' && typeof body.message === 'string') throw new ApiError(response.status, { error: body.error, message: body.message, details: body.details });
    if (!response.ok || body.data === undefined || body.data === null) throw new ApiError(response.status, { error: `HTTP_${response.status}`, message: 'The GraphQL response carries no data' });
    return body.data as never;
  };
}
