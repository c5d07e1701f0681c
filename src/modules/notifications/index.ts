/** Builds the notifications module; other modules deliver through `service.notify` and register actions. */
import type { Knex } from 'knex';
import { createNotificationsResolvers } from './graphql';
import { createNotificationsRepo } from './repo';
import { createNotificationsRest } from './rest';
import { createNotificationsService } from './service';

export { notificationMigrations } from './migrations';

export function createNotificationsModule(deps: { knex: Knex }) {
  const service = createNotificationsService({ repo: createNotificationsRepo(deps.knex), knex: deps.knex });
  return { service, rest: createNotificationsRest(service), resolvers: createNotificationsResolvers(service) };
}
