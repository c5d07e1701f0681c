/**
 * The privacy module: the admin erasure of one platform user's data across the
 * chat, events and stats modules, through the `erase...` functions of their APIs, in one
 * transaction with its audit row; and the traces of a deleted user outside their own rows (mail
 * outbox, audit client addresses), for the operators module's user deletion. Owns no table and must not touch another module's tables
 * directly; listed after every module it erases from.
 */
import { defineModule } from '../contract';
import { createPrivacyResolvers } from './graphql';
import { createPrivacyRest } from './rest';
import { createPrivacyService, type PrivacyService } from './service';

declare module '../contract' {
  interface ModuleApis {
    privacy: PrivacyService;
  }
}

export const privacyModule = defineModule({
  name: 'privacy',
  build: ({ db, use }) => {
    const service = createPrivacyService({ knex: db.knex, chat: use('chat'), events: use('events'), stats: use('stats'), audit: use('audit'), mail: use('mail') });
    return { api: service, rest: createPrivacyRest(service), resolvers: createPrivacyResolvers(service) };
  },
});
