/**
 * platform_c's signed webhook bodies (spec/platforms/platform_c.json) into normalised input. The
 * webhooks module verifies the signature and parses the JSON; this reads the body: the event type
 * header (`event_type`) and, for the livestream status, `is_live` pick the message, the body is
 * validated against it (an unknown type or a body failing its schema is counted and logged once,
 * and the delivery acknowledged), and the channel id names the accounts. Subscriptions, gifts,
 * follows and the stream start and end become events (raw = the body, external id
 * `platform_c:<message id>`); chat messages go to the chat pipeline, bans and timeouts to the
 * moderation log.
 */
import { platformMessages } from '../../../../generated/platforms';
import type { Contracts } from '../contracts';
import type { PlatformInput } from '../inputs';
import { externalIdOf } from '../platform_a/frames';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const objectAt = (value: unknown, key: string): Json => (isObject(value) && isObject(value[key]) ? value[key] : {});
/** A non-empty string, or a finite number as a string (platform ids arrive as either). */
const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : null);

const handledTypes = new Set((platformMessages.platform_c ?? []).map((m) => m.match.event_type));

/** Whether a platform_c event type is declared (others are acknowledged without reading the body). */
export function platformCHandles(contracts: Contracts, eventType: string): boolean {
  if (handledTypes.has(eventType)) return true;
  contracts.reject('platform_c', 'unknown', eventType || '(none)');
  return false;
}

/** The channel the body is about, and its input; null when the body is rejected or names no channel. */
export function platformCInput(contracts: Contracts, eventType: string, payload: Json, messageKey: string): { channelId: string; input: PlatformInput } | null {
  const found = contracts.recognise('platform_c', { event_type: eventType, is_live: eventType === 'livestream.status.updated' ? payload.is_live : undefined }, payload);
  if (!found.ok) return null;
  const broadcaster = objectAt(payload, 'broadcaster');
  const channelId = text(broadcaster.user_id) ?? text(broadcaster.channel_id) ?? text(payload.channel_id);
  if (!channelId) return null;
  const externalId = externalIdOf('platform_c', messageKey);
  const ingest = found.ingest;
  switch (ingest.kind) {
    case 'event':
      return { channelId, input: { kind: 'event', platform: 'platform_c', type: ingest.type, raw: payload, externalId, ...(ingest.stream ? { stream: ingest.stream, platformChannelId: channelId } : {}) } };
    case 'chat': {
      const sender = objectAt(payload, 'sender');
      const userId = text(sender.user_id)!;
      const sent = text(payload.created_at) ? new Date(String(payload.created_at)) : null;
      return {
        channelId,
        input: {
          kind: 'chat',
          message: {
            platform: 'platform_c',
            platformMessageId: text(payload.message_id) ?? messageKey,
            platformUserId: userId,
            username: text(sender.username) ?? userId,
            displayName: text(sender.username),
            avatarUrl: text(sender.profile_picture),
            message: typeof payload.content === 'string' ? payload.content : '',
            emotes: payload.emotes ?? null,
            badges: objectAt(sender, 'identity').badges ?? null,
            raw: payload,
            ...(sent && !Number.isNaN(sent.getTime()) ? { sentAt: sent } : {}),
          },
        },
      };
    }
    case 'moderation': {
      const target = objectAt(payload, 'banned_user');
      const moderator = objectAt(payload, 'moderator');
      const meta = objectAt(payload, 'metadata');
      const expires = text(meta.expires_at) ? Date.parse(String(meta.expires_at)) : NaN;
      const created = text(meta.created_at) ? Date.parse(String(meta.created_at)) : NaN;
      const timed = !Number.isNaN(expires);
      const duration = timed && !Number.isNaN(created) ? Math.max(0, Math.round((expires - created) / 1000)) : null;
      return {
        channelId,
        input: {
          kind: 'moderation',
          moderation: {
            platform: 'platform_c',
            action: timed ? 'timeout' : 'ban',
            platformActionId: externalId,
            targetUserId: text(target.user_id),
            targetUsername: text(target.username),
            moderatorUserId: text(moderator.user_id),
            moderatorName: text(moderator.username),
            durationSecs: duration,
            reason: text(meta.reason),
            raw: payload,
          },
        },
      };
    }
    default:
      return null;
  }
}
