/**
 * The admin module: admin roles, their assignments and the admin permission catalogue (Part 1
 * "Admin roles"). It changes the admin role tables the accounts module's migration created and
 * seeded; it must not touch account roles or user roles.
 */
import { defineModule } from '../contract';
import { createAdminResolvers } from './graphql';
import { createAdminRepo } from './repo';
import { createAdminRest } from './rest';
import { createAdminRolesService, type AdminRolesService } from './service';

declare module '../contract' {
  interface ModuleApis {
    admin: AdminRolesService;
  }
}

export const adminModule = defineModule({
  name: 'admin',
  build: ({ db, use }) => {
    const service = createAdminRolesService({ repo: createAdminRepo(db.knex), knex: db.knex, audit: use('audit') });
    return { api: service, rest: createAdminRest(service), resolvers: createAdminResolvers(service) };
  },
});
