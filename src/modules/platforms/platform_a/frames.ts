/**
 * platform_a's socket frames (spec/platforms/platform_a.json) into normalised input: each frame is
 * recognised by its `type` (and a notification's `event`) and validated against its declared
 * payload first (contracts.ts: an unknown or malformed frame is counted, logged once and dropped),
 * then read. A notification becomes its declared event type with the whole frame as `raw` and
 * `platform_a:<id>` as external id; `chat.message`, `moderation` and `user.treatment` go to the chat
 * pipeline, a `ban` or `unban` moderation also to the events channel (never stored).
 */
import { createHash } from 'node:crypto';
import type { Contracts } from '../contracts';
import type { PlatformInput } from '../inputs';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const date = (value: unknown): Date | undefined => {
  const parsed = typeof value === 'string' ? new Date(value) : undefined;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed : undefined;
};

/** The event's external id (at most 255 characters, the events table's bound). */
export const externalIdOf = (platform: string, id: string) => (id.length <= 240 ? `${platform}:${id}` : `${platform}:sha256:${createHash('sha256').update(id).digest('hex')}`);

/** One frame (already JSON) of a channel's socket; null when it is rejected (counted and logged by contracts). */
export function platformAInput(contracts: Contracts, frame: unknown, platformChannelId: string | null): PlatformInput | null {
  if (!isObject(frame)) {
    contracts.reject('platform_a', 'malformed', 'not-an-object');
    return null;
  }
  const found = contracts.recognise('platform_a', { type: frame.type, event: frame.event }, frame);
  if (!found.ok) return null;
  const ingest = found.ingest;
  switch (ingest.kind) {
    case 'event':
      return { kind: 'event', platform: 'platform_a', type: ingest.type, raw: frame, externalId: externalIdOf('platform_a', String(frame.id)), ...(ingest.stream ? { stream: ingest.stream, platformChannelId } : {}) };
    case 'chat': {
      const reply = isObject(frame.reply) ? { messageId: String(frame.reply.message_id), username: str(frame.reply.login), message: str(frame.reply.message) } : null;
      const shared = isObject(frame.shared_chat) ? frame.shared_chat : null;
      return {
        kind: 'chat',
        message: {
          platform: 'platform_a',
          platformMessageId: String(frame.id),
          platformUserId: String(frame.user_id),
          username: String(frame.login),
          displayName: str(frame.display_name),
          avatarUrl: str(frame.avatar_url),
          message: String(frame.message),
          emotes: frame.emotes ?? null,
          badges: frame.badges ?? null,
          isSharedChat: Boolean(shared),
          sourceChannel: shared ? { platformChannelId: String(shared.channel_id), login: str(shared.login) ?? String(shared.channel_id), displayName: str(shared.display_name), avatarUrl: str(shared.avatar_url) } : null,
          raw: frame,
          sentAt: date(frame.sent_at),
          reply,
        },
      };
    }
    case 'moderation': {
      const action = frame.action as 'ban' | 'unban' | 'timeout' | 'delete' | 'clear';
      const target = str(frame.target_login) ?? str(frame.target_user_id);
      const transientType = ingest.transient?.[action];
      return {
        kind: 'moderation',
        moderation: {
          platform: 'platform_a',
          action,
          platformActionId: str(frame.id),
          targetUserId: str(frame.target_user_id),
          targetUsername: str(frame.target_login),
          moderatorUserId: str(frame.moderator_id),
          moderatorName: str(frame.moderator_login),
          durationSecs: typeof frame.duration_secs === 'number' ? frame.duration_secs : null,
          reason: str(frame.reason),
          raw: frame,
        },
        transient: transientType && target ? { type: transientType, username: target } : null,
      };
    }
    case 'treatment':
      return { kind: 'treatment', treatment: { platform: 'platform_a', platformUserId: String(frame.user_id), username: str(frame.login), treatment: frame.treatment as 'active_monitoring' | 'restricted' | 'none' } };
  }
}
