/**
 * The platforms module: each platform's adapter, one folder per platform. It owns how a
 * platform's events arrive (platform_a's outbound socket worker, platform_b's live chat poller and
 * WebSub entries, platform_c's signed webhook bodies, music_platform's activity poller, the
 * tips_platform and discord signed bodies), the credentials the transports use (the
 * channel grant's token, refreshed, on every socket open and every poll), the inbound contracts
 * they are read against (spec/platforms/, compiled by codegen; contracts.ts), and the outbound
 * calls (outbound.ts). What arrives is normalised (inputs.ts) and delivered (ingest.ts): events to
 * the events module, chat, moderation and treatment to the chat pipeline the chat module
 * registers (`registerChat`), stream starts and ends to the channel notices and the stream
 * sessions (streams.ts). The webhooks module keeps the signature checks and hands the bodies here.
 * Owns `platform_stream_sessions`; reads (never writes) the connections module's channel
 * connections.
 */
import { rowMapping, tableColumns } from '../../infra/db/rows';
import { defineModule } from '../contract';
import { createContracts, type Contracts } from './contracts';
import { createDeliver, type Deliver } from './ingest';
import type { ChatSink, PlatformInput } from './inputs';
import { platformMigrations } from './migrations';
import { createMusicPoller } from './music_platform/poller';
import { createHttpAdapter, type ChatAdapters } from './outbound';
import { createPlatformASocketWorker } from './platform_a/socket';
import { createPlatformBPoller } from './platform_b/poller';
import { readWebSub, type WebSubRead } from './platform_b/websub';
import { platformCHandles, platformCInput } from './platform_c/receiver';
import { signedInput, type SignedPlatform } from './signed/receiver';
import { createStreams } from './streams';
import type { Connected, Worker } from './units';

export type { ChatAdapters, ChatPlatformAdapter, ModerateRequest, PlatformOutcome, PlatformUser, SendRequest } from './outbound';
export type { ChatIngest, ChatPlatform, ChatReply, ChatSink, ChatSourceChannel, ModerationIngest, PlatformInput, TreatmentIngest, UserTreatment } from './inputs';
export type { WebSubEntry, WebSubRead } from './platform_b/websub';
export type { SignedPlatform } from './signed/receiver';

export interface PlatformsApi {
  /** The outbound calls per chat platform (send, moderate, profiles, live chat look-ups). */
  readonly adapters: ChatAdapters;
  /** The chat module's pipeline: chat, moderation and treatment inputs go there (read at call time). */
  registerChat(sink: ChatSink): void;
  /** Delivers one normalised input to an account (events, chat pipeline, stream notices). */
  deliver: Deliver;
  /** platform_b's WebSub body read into entries (the webhooks receiver verified it). */
  readWebSub(body: string): WebSubRead;
  /** platform_c: whether a type is declared, and a body into its channel and input. */
  platformC: {
    handles(eventType: string): boolean;
    read(eventType: string, payload: Record<string, unknown>, messageKey: string): { channelId: string; input: PlatformInput } | null;
  };
  /** tips_platform and discord: a signed body into the connection it names and its input. */
  signed(platform: SignedPlatform, payload: Record<string, unknown>): { connectionId: string; input: PlatformInput } | null;
  /** Rejected inbound frames by `platform:reason` since start (the metric `svc_platform_frames_rejected_total`). */
  rejected(): Record<string, number>;
}

declare module '../contract' {
  interface ModuleApis {
    platforms: PlatformsApi;
  }
}

/** The connections module's channel connections (read-only): the units of the ingest workers. */
const connectedOf = rowMapping(tableColumns('account_connections', ['account_id', 'platform_channel_id']));

export interface PlatformsModuleOptions {
  /** Replaces the HTTP adapters (a test's own fakes). */
  adapters?: Partial<ChatAdapters>;
}

export function createPlatformsModule(options: PlatformsModuleOptions = {}) {
  return defineModule({
    name: 'platforms',
    migrations: platformMigrations,
    build: ({ db, bus, config, log, use }) => {
      const events = use('events');
      const features = use('features');
      const { leases } = use('workers');
      const signin = use('signin');
      const platforms = config.chat.platforms;
      const timeoutMs = config.chat.request_timeout_ms;
      const adapters: ChatAdapters = {
        platform_a: options.adapters?.platform_a ?? createHttpAdapter('platform_a', { apiUrl: platforms.platform_a.api_url, timeoutMs }),
        platform_b: options.adapters?.platform_b ?? createHttpAdapter('platform_b', { apiUrl: platforms.platform_b.api_url, timeoutMs }),
        platform_c: options.adapters?.platform_c ?? createHttpAdapter('platform_c', { apiUrl: platforms.platform_c.api_url, timeoutMs }),
      };
      const contracts: Contracts = createContracts(log);
      let chat: ChatSink | null = null;
      const streams = createStreams({ knex: db.knex, bus, log, features });
      const deliver = createDeliver({ events, chat: () => chat, streams });

      /** Accounts with a usable channel connection on a platform (the units of the ingest workers). */
      async function connected(platform: string): Promise<Connected[]> {
        const found = (await db.knex('account_connections').where({ platform, reconnect_required: false }).select(db.knex.raw(connectedOf.select))) as Record<string, unknown>[];
        return found.map(connectedOf.map);
      }

      const workers: Worker[] = [];
      if (platforms.platform_a.socket_url) {
        workers.push(
          createPlatformASocketWorker({
            socketUrl: platforms.platform_a.socket_url,
            reconnectMs: platforms.platform_a.reconnect_ms,
            connected: () => connected('platform_a'),
            deliver,
            contracts,
            log,
            channelToken: (accountId) => signin.accountGrantToken(accountId, 'platform_a', 'channel'),
          }),
        );
      }
      if (platforms.platform_b.api_url && platforms.platform_b.poll_interval_ms > 0) {
        workers.push(
          createPlatformBPoller({
            adapter: adapters.platform_b,
            intervalMs: platforms.platform_b.poll_interval_ms,
            connected: () => connected('platform_b'),
            deliver,
            contracts,
            log,
            channelToken: (accountId) => signin.accountGrantToken(accountId, 'platform_b', 'channel'),
          }),
        );
      }
      const music = config.platforms.music_platform;
      if (music.api_url && music.poll_interval_ms > 0) {
        workers.push(
          createMusicPoller({
            apiUrl: music.api_url,
            intervalMs: music.poll_interval_ms,
            timeoutMs,
            connected: () => connected('music_platform'),
            deliver,
            contracts,
            log,
            channelToken: (accountId) => signin.accountGrantToken(accountId, 'music_platform', 'channel'),
          }),
        );
      }
      // Each connected channel's ingest runs on the one node holding its lease.
      for (const worker of workers) leases.own(worker);

      const api: PlatformsApi = {
        adapters,
        registerChat(sink) {
          chat = sink;
        },
        deliver,
        readWebSub: (body) => readWebSub(contracts, body),
        platformC: {
          handles: (eventType) => platformCHandles(contracts, eventType),
          read: (eventType, payload, messageKey) => platformCInput(contracts, eventType, payload, messageKey),
        },
        signed: (platform, payload) => signedInput(contracts, platform, payload),
        rejected: () => contracts.rejected(),
      };
      return {
        api,
        async close() {
          await Promise.all(workers.map((w) => w.stopAll()));
        },
      };
    },
  });
}

export const platformsModule = createPlatformsModule();
