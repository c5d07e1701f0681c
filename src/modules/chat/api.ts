/**
 * What the chat module offers the modules built after it (the platform_c webhook receiver, the
 * platform adapters): the one entry of the chat pipeline and of the moderation-log pipeline.
 * Both are idempotent on the platform's id, so a redelivered webhook stores nothing twice.
 */
import type { ChatSourceChannelView } from './types';

export type ChatPlatform = 'platform_a' | 'platform_b' | 'platform_c';

/** The other channel's room of a shared-chat message (spec `ChatMessage.source_channel`, camelCase). */
export type ChatSourceChannel = ChatSourceChannelView;

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

export interface ChatPipeline {
  /** Stores the message, updates the sender's platform profile and broadcasts `chat:message`. */
  ingestMessage(input: ChatIngest): Promise<void>;
  /** Appends to the moderation log and broadcasts the documented sub-type; false for a redelivery (nothing done). */
  recordModeration(input: ModerationIngest): Promise<boolean>;
}
