/**
 * The setting presets module: a user's saved settings with the plan quota, and the operator's
 * payload-free list and delete. It owns the `setting_presets` table and nothing else.
 */
import { defineModule } from '../contract';
import { createPresetsResolvers } from './graphql';
import { presetMigrations } from './migrations';
import { createPresetsRepo } from './repo';
import { createPresetsRest } from './rest';
import { createPresetsService, type PresetsService } from './service';

declare module '../contract' {
  interface ModuleApis {
    presets: PresetsService;
  }
}

export const presetsModule = defineModule({
  name: 'presets',
  migrations: presetMigrations,
  build: ({ db, use }) => {
    const service = createPresetsService({ repo: createPresetsRepo(db.knex), knex: db.knex, audit: use('audit') });
    return { api: service, rest: createPresetsRest(service), resolvers: createPresetsResolvers(service) };
  },
});
