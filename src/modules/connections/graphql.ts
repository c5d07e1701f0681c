/** GraphQL bindings of connections: the credential modes' enums are upper case here. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { ConnectionsService } from './service';

export function createConnectionsResolvers(service: ConnectionsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'connectionStatuses' | 'platformCredentialModes' | 'enabledPlatforms' | 'enabledProviders' | 'accountLoginAssignments' | 'flaggedConnections'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'assignLoginConnection' | 'removeLoginAssignment' | 'disconnectLoginConnection' | 'setPrimaryLoginConnection'>;
} {
  return {
    Query: {
      connectionStatuses: (_p, _a, context) => service.statuses(context.auth),
      enabledPlatforms: () => service.enabledPlatforms(),
      enabledProviders: (_p, { connectionType }) => service.enabledProviders(connectionType),
      accountLoginAssignments: (_p, { userId }, context) => service.assignments(context.auth, userId),
      flaggedConnections: (_p, _a, context) => service.flagged(context.auth),
      platformCredentialModes: () =>
        service.credentialModes().map((m) => ({
          ...m,
          kind: m.kind === 'channel' ? ('CHANNEL' as const) : ('BOT' as const),
          mode: m.mode === 'system' ? ('SYSTEM' as const) : ('ACCOUNT' as const),
        })),
    },
    Mutation: {
      assignLoginConnection: (_p, args, context) => service.assign(context.auth, args),
      removeLoginAssignment: async (_p, { provider, userId }, context) => {
        await service.unassign(context.auth, provider, userId);
        return true;
      },
      disconnectLoginConnection: async (_p, { loginConnectionId }, context) => {
        await service.disconnect(context.auth, loginConnectionId);
        return { success: true };
      },
      setPrimaryLoginConnection: (_p, { loginConnectionId }, context) => service.setPrimary(context.auth, loginConnectionId),
    },
  };
}
