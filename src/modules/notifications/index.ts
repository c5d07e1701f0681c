/** The notifications module; other modules deliver through `notify` (which reads preferences and queues mail) and register actions with `onAction`. */
import { defineModule } from '../contract';
import { createNotificationsResolvers } from './graphql';
import { notificationMigrations } from './migrations';
import { createNotificationsRepo } from './repo';
import { createNotificationsRest } from './rest';
import { createNotificationsService, type NotificationsService } from './service';

declare module '../contract' {
  interface ModuleApis {
    notifications: NotificationsService;
  }
}

export const notificationsModule = defineModule({
  name: 'notifications',
  migrations: notificationMigrations,
  build: ({ db, bus, log, use }) => {
    const service = createNotificationsService({ repo: createNotificationsRepo(db.knex), knex: db.knex, mail: use('mail'), bus, log });
    return { api: service, rest: createNotificationsRest(service), resolvers: createNotificationsResolvers(service) };
  },
});
