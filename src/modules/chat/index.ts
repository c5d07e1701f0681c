/**
 * The chat module (Part 2, "Chat"; issue 13): chat messages with soft delete, the moderation log
 * and per-platform user profiles; the ingest pipeline (`ChatPipeline`, api.ts) that the
 * platform_c webhook receiver, the platform_a socket worker and the platform_b poller feed; the
 * history, chatter search, send, moderate and profile refresh operations; the broadcast on
 * `chat:{account_id}`; and the retention sweep registered with the events module. The ingest
 * workers run each connected channel on the node holding its lease (the workers module). Owns the
 * `chat_messages`, `chat_moderation_log` and `chat_platform_users` tables; reads (never writes)
 * the connections module's channel connections and login grants.
 */
import { defineModule } from '../contract';
import { createHttpAdapter, type ChatAdapters } from './adapters';
import type { ChatPipeline } from './api';
import { createChatResolvers } from './graphql';
import { chatMigrations } from './migrations';
import { createChatRepo, type ChatRepo } from './repo';
import { createChatRest } from './rest';
import { createChatService, type ChatService } from './service';
import { createPlatformASocketWorker, createPlatformBPoller, type Worker } from './workers';

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

export interface ChatModuleOptions {
  /** Replaces the HTTP adapters (a test's own fakes). */
  adapters?: Partial<ChatAdapters>;
}

export function createChatModule(options: ChatModuleOptions = {}) {
  return defineModule({
    name: 'chat',
    migrations: chatMigrations,
    build: ({ db, bus, cache, config, log, use }) => {
      const events = use('events');
      const accounts = use('accounts');
      const { leases } = use('workers');
      const platforms = config.chat.platforms;
      const timeoutMs = config.chat.request_timeout_ms;
      const adapters: ChatAdapters = {
        platform_a: options.adapters?.platform_a ?? createHttpAdapter('platform_a', { apiUrl: platforms.platform_a.api_url, timeoutMs }),
        platform_b: options.adapters?.platform_b ?? createHttpAdapter('platform_b', { apiUrl: platforms.platform_b.api_url, timeoutMs }),
        platform_c: options.adapters?.platform_c ?? createHttpAdapter('platform_c', { apiUrl: platforms.platform_c.api_url, timeoutMs }),
      };
      const repo = createChatRepo(db.knex);
      const service = createChatService({
        repo,
        knex: db.knex,
        bus,
        cache,
        redisPrefix: config.redis_prefix,
        log,
        adapters,
        retentionWindowsSql: events.retention.windowsSql,
        grantToken: use('signin').grantToken,
        accountGrantToken: use('signin').accountGrantToken,
        async userNames(userIds) {
          const names = await accounts.names({ users: userIds, accounts: [], roles: [] });
          return new Map(names.map((n) => [n.id, n.display_name]));
        },
      });
      events.retention.register(() => service.sweepRetention());

      const workers: Worker[] = [];
      if (platforms.platform_a.socket_url) {
        workers.push(
          createPlatformASocketWorker({
            socketUrl: platforms.platform_a.socket_url,
            reconnectMs: platforms.platform_a.reconnect_ms,
            connected: () => repo.accountsConnectedTo('platform_a'),
            pipeline: service,
            events,
            log,
          }),
        );
      }
      if (platforms.platform_b.api_url && platforms.platform_b.poll_interval_ms > 0) {
        workers.push(
          createPlatformBPoller({
            adapter: adapters.platform_b,
            intervalMs: platforms.platform_b.poll_interval_ms,
            connected: () => repo.accountsConnectedTo('platform_b'),
            pipeline: service,
            log,
            channelToken: (accountId) => use('signin').accountGrantToken(accountId, 'platform_b', 'channel'),
          }),
        );
      }
      // Each connected channel's ingest runs on the one node holding its lease.
      for (const worker of workers) leases.own(worker);
      const api: ChatApi = {
        ingestMessage: (input) => service.ingestMessage(input),
        recordModeration: (input) => service.recordModeration(input),
        updateUserTreatment: (input) => service.updateUserTreatment(input),
        sweepRetention: () => service.sweepRetention(),
        eraseSubject: (db, platform, platformUserId, extraLogins) => repo.eraseSubject(db, platform, platformUserId, extraLogins),
      };
      return {
        api,
        rest: createChatRest(service),
        resolvers: createChatResolvers(service),
        async close() {
          await Promise.all(workers.map((w) => w.stopAll()));
        },
      };
    },
  });
}

export const chatModule = createChatModule();
