/**
 * platform_b's inbound payloads (spec/platforms/platform_b.json) into normalised input: a polled
 * live chat item is recognised by its `type` (absent: `text`, a chat message) and validated
 * against its declared payload (contracts.ts: an unknown or malformed item is counted, logged once
 * and dropped); a `text` item goes to the chat pipeline, every other one is stored as its event
 * type with the item as `raw` and `platform_b:<id>` as external id. A WebSub Atom entry
 * (websub.ts) is read as `websub_entry`, the raw of `platform_b:subscribe`.
 */
import type { Contracts } from '../contracts';
import type { PlatformInput } from '../inputs';
import { externalIdOf } from '../platform_a/frames';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const date = (value: unknown): Date | undefined => {
  const parsed = typeof value === 'string' ? new Date(value) : undefined;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed : undefined;
};

/** One polled item of a channel's live chat `liveChatId`; null when rejected. */
export function platformBItemInput(contracts: Contracts, item: unknown, liveChatId: string, platformChannelId: string | null): PlatformInput | null {
  if (!isObject(item)) {
    contracts.reject('platform_b', 'malformed', 'not-an-object');
    return null;
  }
  const found = contracts.recognise('platform_b', { type: item.type ?? 'text' }, item);
  if (!found.ok) return null;
  const ingest = found.ingest;
  const author = item.author as Json;
  if (ingest.kind === 'event') {
    return { kind: 'event', platform: 'platform_b', type: ingest.type, raw: item, externalId: externalIdOf('platform_b', String(item.id)), ...(ingest.stream ? { stream: ingest.stream, platformChannelId } : {}) };
  }
  if (ingest.kind !== 'chat') return null;
  const authorId = String(author.channel_id);
  return {
    kind: 'chat',
    message: {
      platform: 'platform_b',
      platformMessageId: String(item.id),
      platformUserId: authorId,
      username: str(author.name) ?? str(author.display_name) ?? authorId,
      displayName: str(author.display_name),
      avatarUrl: str(author.avatar_url),
      message: String(item.message),
      liveChatId,
      raw: item,
      sentAt: date(item.published_at),
    },
  };
}

/** A WebSub entry as read from the Atom body; null when it fails its schema (counted, logged once). */
export function platformBWebSubInput(contracts: Contracts, entry: { channel_id: string | null; video_id: string | null; title: string | null; published: string | null; updated: string | null }): PlatformInput | null {
  const found = contracts.recognise('platform_b', { type: 'websub' }, entry);
  if (!found.ok || found.ingest.kind !== 'event') return null;
  return { kind: 'event', platform: 'platform_b', type: found.ingest.type, raw: entry, externalId: externalIdOf('platform_b:video', entry.video_id!) };
}
