/**
 * The REST client: openapi-fetch over the types openapi-typescript generates from the published
 * OpenAPI document, sending through the SDK's transport (credentials, refresh, retries).
 */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';
import type { Transport } from './transport.js';

export type { paths, components, operations } from './generated/openapi.js';
export type RestClient = Client<paths>;

export function createRestClient(transport: Transport): RestClient {
  return createClient<paths>({ baseUrl: transport.apiUrl, fetch: (request) => transport.fetch(request) });
}
