/**
 * The plans module: plan CRUD and feature mapping, the admin feature levers (global switches,
 * account plans and overrides, the per-user account-creation override), the public plans list and
 * `accountFeatures`. Evaluation and its cache stay in the features module.
 */
import { defineModule } from '../contract';
import { createPlansResolvers } from './graphql';
import { createPlansRepo } from './repo';
import { createPlansRest } from './rest';
import { createQuotas, type Quotas } from './quotas';
import { createPlansService, type PlansService } from './service';

declare module '../contract' {
  interface ModuleApis {
    /** The plans service, and the quotas other modules enforce where they create resources. */
    plans: PlansService & { quotas: Quotas };
  }
}

export const plansModule = defineModule({
  name: 'plans',
  build: ({ db, use }) => {
    const service = createPlansService({ repo: createPlansRepo(db.knex), knex: db.knex, audit: use('audit'), features: use('features') });
    return { api: { ...service, quotas: createQuotas(db.knex) }, rest: createPlansRest(service), resolvers: createPlansResolvers(service) };
  },
});
