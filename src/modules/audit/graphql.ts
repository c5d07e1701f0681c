/** GraphQL bindings of the audit log: the domain shape is already camelCase. */
import type { QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { AuditService } from './service';

export function createAuditResolvers(service: AuditService): { Query: Pick<QueryResolvers<GraphQLContext>, 'myAuditLog' | 'accountAuditLog' | 'adminAuditLog'> } {
  return {
    Query: {
      myAuditLog: (_p, { filter }, context) => service.myAuditLog(context.auth, filter ?? {}),
      accountAuditLog: (_p, { filter }, context) => service.accountAuditLog(context.auth, filter ?? {}),
      adminAuditLog: (_p, { filter }, context) => service.adminAuditLog(context.auth, filter ?? {}),
    },
  };
}
