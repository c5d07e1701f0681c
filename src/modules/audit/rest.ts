/** REST bindings of the audit log: name mapping only. The body is `{ items, total, page, limit, total_pages }`. */
import type { RestHandlers } from '../../../generated/rest';
import type { RequestContext } from '../../http/context';
import type { AuditItem, AuditPage, AuditService } from './service';

const item = (i: AuditItem) => ({
  id: i.id,
  scope: i.scope,
  type: i.type,
  user_id: i.userId,
  account_id: i.accountId,
  actor_id: i.actorId,
  ip_address: i.ipAddress,
  user_agent: i.userAgent,
  metadata: i.metadata,
  created_at: i.createdAt,
  resolved_names: i.resolvedNames.map((n) => ({ id: n.id, kind: n.kind, display_name: n.displayName })),
});

const body = (p: AuditPage) => ({ items: p.items.map(item), total: p.total, page: p.page, limit: p.limit, total_pages: p.totalPages });

type Handlers = Pick<RestHandlers<RequestContext>, 'myAuditLog' | 'accountAuditLog' | 'adminAuditLog' | 'ingestAuditEvent'>;

export function createAuditRest(service: AuditService): Handlers {
  return {
    async myAuditLog({ query }, context) {
      return { status: 200, body: body(await service.myAuditLog(context.auth, query ?? {})) };
    },
    async accountAuditLog({ query }, context) {
      return { status: 200, body: body(await service.accountAuditLog(context.auth, query ?? {})) };
    },
    async adminAuditLog({ query }, context) {
      const q = query ?? {};
      return { status: 200, body: body(await service.adminAuditLog(context.auth, { ...q, userId: q.user_id, accountId: q.account_id })) };
    },
    async ingestAuditEvent({ body: input }, context) {
      const result = await service.ingest(context.auth, {
        userId: input.user_id,
        type: input.type,
        ipAddress: input.ip_address,
        userAgent: input.user_agent,
        metadata: input.metadata,
      });
      return { status: 201, body: result };
    },
  };
}
