/**
 * REST bindings of the audit log, in domain form: the router maps names and pages with the
 * declared bounds (src/http/rest.ts). The body is Part 2's bare `{ items, total, page, limit,
 * total_pages }`: the one name that differs from `Page<T>` is `total_pages`.
 */
import { bindRest } from '../../http/rest';
import type { AuditPage, AuditService } from './service';

const body = (p: AuditPage) => ({ ...p, totalPages: p.pages });

export function createAuditRest(service: AuditService) {
  return bindRest({
    myAuditLog: async ({ query, paging }, context) => body(await service.myAuditLog(context.auth, query, paging)),
    accountAuditLog: async ({ query, paging }, context) => body(await service.accountAuditLog(context.auth, query, paging)),
    adminAuditLog: async ({ query, paging }, context) => body(await service.adminAuditLog(context.auth, query, paging)),
    ingestAuditEvent: ({ body: input }, context) => service.ingest(context.auth, input),
  });
}
