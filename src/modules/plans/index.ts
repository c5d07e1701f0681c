/**
 * The plans module: plan CRUD and feature mapping, the admin feature levers (global switches,
 * account plans and overrides, the per-user account-creation override), the public plans list and
 * `accountFeatures`. Evaluation and its cache stay in the features module.
 */
import { defineModule } from '../contract';
import { createPlansResolvers } from './graphql';
import { createPlansRepo } from './repo';
import { createPlansRest } from './rest';
import { createPlansService, type PlansService } from './service';

declare module '../contract' {
  interface ModuleApis {
    plans: PlansService;
  }
}

export const plansModule = defineModule({
  name: 'plans',
  build: ({ db, use }) => {
    const service = createPlansService({ repo: createPlansRepo(db.knex), knex: db.knex, audit: use('audit'), features: use('features') });
    return { api: service, rest: createPlansRest(service), resolvers: createPlansResolvers(service) };
  },
});
