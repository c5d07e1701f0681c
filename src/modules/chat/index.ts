/**
 * The chat module (Part 2, "Chat"): chat messages with soft delete, the moderation log and
 * per-platform user profiles; the ingest pipeline (`ChatPipeline`, api.ts) that the platforms
 * module's adapters feed (platform_a's socket, platform_b's poller, platform_c's receiver), through
 * the sink registered here; the history, chatter search, send, moderate and profile refresh
 * operations over the platforms module's outbound adapters; the broadcast on `chat:{account_id}`;
 * and the retention sweep registered with the events module. Owns the `chat_messages`,
 * `chat_moderation_log` and `chat_platform_users` tables; reads (never writes) the connections
 * module's channel connections and login grants.
 */
import { defineModule } from '../contract';
import type { ChatPipeline } from './api';
import { createChatResolvers } from './graphql';
import { chatMigrations } from './migrations';
import { createChatRepo, type ChatRepo } from './repo';
import { createChatRest } from './rest';
import { createChatService, type ChatService } from './service';

export type { ChatPipeline } from './api';

export type ChatApi = ChatPipeline &
  Pick<ChatService, 'updateUserTreatment' | 'sweepRetention'> & {
    /** Privacy erasure of one platform user in every account, in the caller's transaction (repo.ts `eraseSubject`). */
    eraseSubject: ChatRepo['eraseSubject'];
  };

declare module '../contract' {
  interface ModuleApis {
    chat: ChatApi;
  }
}

export function createChatModule() {
  return defineModule({
    name: 'chat',
    migrations: chatMigrations,
    build: ({ db, bus, cache, config, log, use }) => {
      const events = use('events');
      const accounts = use('accounts');
      const platforms = use('platforms');
      const repo = createChatRepo(db.knex);
      const service = createChatService({
        repo,
        knex: db.knex,
        bus,
        cache,
        redisPrefix: config.redis_prefix,
        log,
        adapters: platforms.adapters,
        retentionWindowsSql: events.retention.windowsSql,
        grantToken: use('signin').grantToken,
        accountGrantToken: use('signin').accountGrantToken,
        async userNames(userIds) {
          const names = await accounts.names({ users: userIds, accounts: [], roles: [] });
          return new Map(names.map((n) => [n.id, n.display_name]));
        },
      });
      events.retention.register(() => service.sweepRetention());

      const api: ChatApi = {
        ingestMessage: (input) => service.ingestMessage(input),
        recordModeration: (input) => service.recordModeration(input),
        updateUserTreatment: (input) => service.updateUserTreatment(input),
        sweepRetention: () => service.sweepRetention(),
        eraseSubject: (db, platform, platformUserId, extraLogins) => repo.eraseSubject(db, platform, platformUserId, extraLogins),
      };
      // The platforms' adapters deliver chat, moderation and treatment input here; the methods
      // are read at call time (a test may wrap them).
      platforms.registerChat({
        ingestMessage: (input) => api.ingestMessage(input),
        recordModeration: (input) => api.recordModeration(input),
        updateUserTreatment: (input) => api.updateUserTreatment(input),
      });
      return {
        api,
        rest: createChatRest(service),
        resolvers: createChatResolvers(service),
      };
    },
  });
}

export const chatModule = createChatModule();
