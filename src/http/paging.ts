/**
 * The page request of a paged operation, from the bounds its REST operation declares
 * (generated/rest.ts `paging`). The one helper both bindings page through: `bindRest` for a REST
 * request's query, and the GraphQL twin's resolver (same name as the operationId) for its
 * arguments, so both protocols refuse or clamp the same page and limit alike.
 */
import { paging, type PagedOperationId } from '../../generated/rest';
import { pageRequest, type PageRequest } from '../paging';

/** `input` holds `page` and `limit` (a REST query, a GraphQL filter or arguments); absent: the defaults. */
export function pageFor(operationId: PagedOperationId, input: { page?: unknown; limit?: unknown } | null | undefined): PageRequest {
  return pageRequest(paging[operationId], input ?? {});
}
