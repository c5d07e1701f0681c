/**
 * The connections module: the active account's platform connection statuses, the OAuth credential
 * modes, and the operator paths that record connections, and the users' login connections and their
 * assignments per account. Owns `account_connections`, `platform_switches`, `login_connections` and
 * `login_assignments`.
 */
import { defineModule } from '../contract';
import { createConnectionsResolvers } from './graphql';
import { connectionMigrations } from './migrations';
import { createConnectionsRepo } from './repo';
import { createConnectionsRest } from './rest';
import { createConnectionsService, type ConnectionsService } from './service';

export type { GrantOf, LoginConnection } from './service';

declare module '../contract' {
  interface ModuleApis {
    connections: ConnectionsService;
  }
}

export const connectionsModule = defineModule({
  name: 'connections',
  migrations: connectionMigrations,
  build: ({ db, use, config, secrets, bus }) => {
    const service = createConnectionsService({ repo: createConnectionsRepo(db.knex), knex: db.knex, audit: use('audit'), systemApps: config.connections.system_apps, secrets, providers: config.auth.providers, quotas: use('plans').quotas, publish: (channel, message) => bus.publish(channel, message) });
    use('accounts').provideLoginConnections(service.loginConnectionsOf);
    return { api: service, rest: createConnectionsRest(service), resolvers: createConnectionsResolvers(service) };
  },
});
