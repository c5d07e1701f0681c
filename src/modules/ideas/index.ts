/**
 * The ideas module (Part 2, "Ideas board"): ideas, categories, tags, votes, the status timeline and
 * nested comments, with live updates on the socket channels `ideas:list` and `ideas:{idea_id}`
 * (bus channels `ideas:list` and `idea:{idea_id}`). Owns the `idea*` tables only; reads `users`
 * for names and avatars, and the features module for `system:ideas_hub_public`. REST only.
 */
import { defineModule } from '../contract';
import { ideasMigrations } from './migrations';
import { createIdeasRepo } from './repo';
import { createIdeasRest } from './rest';
import { createIdeasService, type IdeasService } from './service';

export type IdeasApi = IdeasService;

declare module '../contract' {
  interface ModuleApis {
    ideas: IdeasApi;
  }
}

export const ideasModule = defineModule({
  name: 'ideas',
  migrations: ideasMigrations,
  build: ({ db, bus, log, use }) => {
    const service = createIdeasService({ repo: createIdeasRepo(db.knex), knex: db.knex, bus, log, features: use('features') });
    return { api: service, rest: createIdeasRest(service) };
  },
});
