/**
 * The overlays module: overlays and widget instances, the tokens bound to them and widget access
 * entries. Supplies the channel-account resolvers of `overlay:{key}` and `widget:{widget_instance_id}`
 * (presence on those resources); the token gates themselves compare the token's binding in
 * src/auth/gates.ts. REST only: the specification shows no GraphQL for these resources.
 */
import { defineModule } from '../contract';
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
  build: ({ db, credentials, revocations, use }) => {
    const service = createOverlaysService({ repo: createOverlaysRepo(db.knex), knex: db.knex, credentials, revocations, audit: use('audit'), accounts: use('accounts') });
    return { api: service, rest: createOverlaysRest(service), channelAccounts: service.channelAccounts };
  },
});
