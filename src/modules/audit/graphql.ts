/**
 * GraphQL bindings of the audit log: the domain shape is already camelCase; paging uses the REST
 * twins' declared bounds, and `AuditLogPage` names the page count `totalPages`.
 */
import type { QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageFor } from '../../http/paging';
import type { AuditPage, AuditService } from './service';

const auditLogPage = (p: AuditPage) => ({ ...p, totalPages: p.pages });

export function createAuditResolvers(service: AuditService): { Query: Pick<QueryResolvers<GraphQLContext>, 'myAuditLog' | 'accountAuditLog' | 'adminAuditLog'> } {
  return {
    Query: {
      myAuditLog: async (_p, { filter }, context) => auditLogPage(await service.myAuditLog(context.auth, filter ?? {}, pageFor('myAuditLog', filter))),
      accountAuditLog: async (_p, { filter }, context) =>
        auditLogPage(await service.accountAuditLog(context.auth, filter ?? {}, pageFor('accountAuditLog', filter))),
      adminAuditLog: async (_p, { filter }, context) => auditLogPage(await service.adminAuditLog(context.auth, filter ?? {}, pageFor('adminAuditLog', filter))),
    },
  };
}
