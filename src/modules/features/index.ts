/**
 * The features module: flag storage and evaluation (global kill-switches, plans, account and user
 * overrides), with memoised layers invalidated through the bus. The admin levers and the plans
 * surface live in the plans module, which calls `invalidate` after each change.
 */
import { defineModule } from '../contract';
import { featureMigrations } from './migrations';
import { createFeatureRepo } from './repo';
import { INVALIDATE_CHANNEL, createFeatureService, type FeatureService } from './service';

export { GLOBAL_FAMILY, type FeatureStatus } from './service';

declare module '../contract' {
  interface ModuleApis {
    features: FeatureService;
  }
}

export const featuresModule = defineModule({
  name: 'features',
  migrations: featureMigrations,
  build: ({ db, cache, bus }) => {
    const service = createFeatureService({ repo: createFeatureRepo(db.knex), cache, bus });
    return { api: service, consumers: [{ pattern: INVALIDATE_CHANNEL, handle: (_channel: string, message: string) => service.onInvalidation(message) }] };
  },
});
