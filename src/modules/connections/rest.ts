/** REST bindings of connections, in domain form (the REST credential modes are lowercase). */
import { SUCCESS } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { ConnectionsService } from './service';

export function createConnectionsRest(service: ConnectionsService) {
  return bindRest({
    connectionStatuses: (_r, context) => service.statuses(context.auth),
    platformCredentialModes: async () => service.credentialModes(),
    adminRecordConnection: ({ params, body }, context) => service.recordConnection(context.auth, params.id, params.platform, body),
    adminSetPlatformSwitches: ({ params, body }, context) => service.setSwitches(context.auth, params.platform, body),
    adminRecordLoginConnection: ({ params, body }, context) => service.recordLoginConnection(context.auth, params.id, body),
    async adminRemoveConnection({ params }, context) {
      await service.removeConnection(context.auth, params.id, params.platform);
      return SUCCESS;
    },
  });
}
