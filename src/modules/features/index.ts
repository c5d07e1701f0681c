/** The features module: flag storage and evaluation (global kill-switches, plans, overrides). */
import { defineModule } from '../contract';
import { featureMigrations } from './migrations';
import { createFeatureRepo } from './repo';
import { createFeatureService, type FeatureService } from './service';

declare module '../contract' {
  interface ModuleApis {
    features: FeatureService;
  }
}

export const featuresModule = defineModule({
  name: 'features',
  migrations: featureMigrations,
  build: ({ db, cache }) => ({ api: createFeatureService({ repo: createFeatureRepo(db.knex), cache }) }),
});
