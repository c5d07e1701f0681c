/**
 * The overlays module: overlays and widget instances, the tokens bound to them and widget access
 * entries. Supplies the channel-account resolvers of `overlay:{key}` and `widget:{widget_instance_id}`
 * (presence on those resources); the token gates themselves compare the token's binding in
 * src/auth/gates.ts. Overlays and widgets themselves have GraphQL twins; tokens and
 * access entries are REST only.
 */
import { defineModule } from '../contract';
import { createOverlaysResolvers } from './graphql';
import { overlayMigrations } from './migrations';
import { createOverlaysRepo } from './repo';
import { createOverlaysRest } from './rest';
import { createOverlaysService, type OverlaysService } from './service';

declare module '../contract' {
  interface ModuleApis {
    overlays: OverlaysService;
  }
}

export const overlaysModule = defineModule({
  name: 'overlays',
  migrations: overlayMigrations,
  build: ({ db, bus, credentials, revocations, use }) => {
    const service = createOverlaysService({ repo: createOverlaysRepo(db.knex), knex: db.knex, credentials, revocations, audit: use('audit'), accounts: use('accounts'), quotas: use('plans').quotas, bus });
    return { api: service, rest: createOverlaysRest(service), resolvers: createOverlaysResolvers(service), channelAccounts: service.channelAccounts };
  },
});
