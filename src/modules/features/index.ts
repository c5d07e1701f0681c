/** Builds the features module (flag storage and evaluation) from its dependencies. */
import type { Knex } from 'knex';
import type { Cache } from '../../infra/cache';
import { createFeatureRepo } from './repo';
import { createFeatureService } from './service';

export { featureMigrations } from './migrations';

export function createFeaturesModule(deps: { knex: Knex; cache: Cache }) {
  const service = createFeatureService({ repo: createFeatureRepo(deps.knex), cache: deps.cache });
  return { service };
}
