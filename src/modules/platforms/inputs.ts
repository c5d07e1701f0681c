/**
 * The normalised input the platforms module hands the rest of the service: what every adapter
 * (platform_a's socket, platform_b's poller and WebSub entries, platform_c's signed receiver)
 * turns a platform's frame or payload into. Chat consumes the chat, moderation and treatment
 * inputs (its pipeline, `ChatSink`); events stores the event inputs (`emitFor`); the stream inputs
 * also drive `channel:online` / `channel:offline` and the stream sessions (ingest.ts).
 */

export type ChatPlatform = 'platform_a' | 'platform_b' | 'platform_c';
export type UserTreatment = 'active_monitoring' | 'restricted' | 'none';

/** The other channel's room of a shared-chat message (spec `ChatMessage.source_channel`, camelCase). */
export interface ChatSourceChannel {
  platformChannelId: string;
  login: string;
  displayName: string | null;
  avatarUrl: string | null;
}

/** A reply a platform reports with a message (platform_a). */
export interface ChatReply {
  messageId: string;
  username?: string | null;
  message?: string | null;
}

export interface ChatIngest {
  accountId: string;
  platform: ChatPlatform;
  /** The platform's message id; (account, platform, platformMessageId) is unique. */
  platformMessageId: string;
  platformUserId: string;
  username: string;
  displayName?: string | null;
  avatarUrl?: string | null;
  message: string;
  liveChatId?: string | null;
  /** A shared-chat message from another channel's room; `sourceChannel` then names that room. */
  isSharedChat?: boolean;
  sourceChannel?: ChatSourceChannel | null;
  emotes?: unknown;
  badges?: unknown;
  /** The platform's payload, kept as received. */
  raw?: Record<string, unknown>;
  /** When the platform says it was sent; now when absent. */
  sentAt?: Date;
  reply?: ChatReply | null;
}

export interface ModerationIngest {
  accountId: string;
  platform: ChatPlatform;
  action: 'ban' | 'unban' | 'timeout' | 'delete' | 'clear';
  /** The platform's id of this moderation action when it has one (idempotency key). */
  platformActionId?: string | null;
  targetUserId?: string | null;
  targetUsername?: string | null;
  moderatorUserId?: string | null;
  moderatorName?: string | null;
  durationSecs?: number | null;
  reason?: string | null;
  raw?: Record<string, unknown>;
}

export interface TreatmentIngest {
  accountId: string;
  platform: ChatPlatform;
  platformUserId: string;
  username?: string | null;
  treatment: UserTreatment;
}

/** The chat module's pipeline, registered with the platforms module (its methods are read at call time). */
export interface ChatSink {
  ingestMessage(input: ChatIngest): Promise<void>;
  /** False for a redelivery (nothing done). */
  recordModeration(input: ModerationIngest): Promise<boolean>;
  updateUserTreatment(input: TreatmentIngest): Promise<void>;
}

type Json = Record<string, unknown>;
type WithoutAccount<T> = Omit<T, 'accountId'>;

/** One normalised input, not yet bound to an account (a webhook may name several accounts). */
export type PlatformInput =
  | {
      kind: 'event';
      platform: string;
      /** The stored event type (spec/platforms/, `x-ingest.type`). */
      type: string;
      raw: Json;
      /** The idempotency key: a platform's redelivery is stored (and broadcast) once. */
      externalId: string;
      /** A stream start, end or change: also channel:online / channel:offline and the stream session. */
      stream?: 'online' | 'offline' | 'update';
      /** The platform channel the stream is on (the adapter's unit), when known. */
      platformChannelId?: string | null;
      /** Also published live: `now-playing` on `music_platform:{account_id}` (music playback). */
      publish?: 'now-playing';
    }
  | { kind: 'chat'; message: WithoutAccount<ChatIngest> }
  | {
      kind: 'moderation';
      moderation: WithoutAccount<ModerationIngest>;
      /** Broadcast-only event type (platform_a:ban / platform_a:unban) once the log recorded it. */
      transient?: { type: string; username: string } | null;
    }
  | { kind: 'treatment'; treatment: WithoutAccount<TreatmentIngest> };
