/**
 * platform_b's WebSub notifications (POST /v1/webhooks/platform_b, verified by the webhooks
 * module): the Atom XML body read into entries (`channel_id`, `video_id`, `title`, `published`,
 * `updated`, spec/platforms/platform_b.json `websub_entry`), each one `platform_b:subscribe` input
 * for the accounts connected to its channel. A body with a DTD or entity definition, or that is
 * not well-formed XML, is `malformed`; one whose entries name no channel is `no_channel` (both
 * answered 400 by the receiver). An entry without a video id (a deletion notice) is skipped.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Contracts } from '../contracts';
import type { PlatformInput } from '../inputs';
import { platformBWebSubInput } from './items';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : null);

const xml = new XMLParser({ removeNSPrefix: true, ignoreAttributes: true, parseTagValue: false, processEntities: true, htmlEntities: false });

export interface WebSubEntry {
  raw: { channel_id: string | null; video_id: string | null; title: string | null; published: string | null; updated: string | null };
  /** The normalised input; null when the entry is skipped (no video id) or fails its schema. */
  input: PlatformInput | null;
}

export type WebSubRead = { ok: true; entries: WebSubEntry[] } | { ok: false; reason: 'malformed' | 'no_channel' };

export function readWebSub(contracts: Contracts, body: string): WebSubRead {
  // No DTDs: entity definitions are refused outright rather than expanded.
  if (/<!DOCTYPE|<!ENTITY/i.test(body) || XMLValidator.validate(body) !== true) return { ok: false, reason: 'malformed' };
  const doc = xml.parse(body) as Json;
  const feed = isObject(doc.feed) ? doc.feed : doc;
  const found = (Array.isArray(feed.entry) ? feed.entry : [feed.entry]).filter(isObject).filter((e) => text(e.channelId));
  if (found.length === 0) return { ok: false, reason: 'no_channel' };
  return {
    ok: true,
    entries: found.map((entry) => {
      const raw = {
        channel_id: text(entry.channelId),
        video_id: text(entry.videoId),
        title: typeof entry.title === 'string' ? entry.title : null,
        published: text(entry.published),
        updated: text(entry.updated),
      };
      return { raw, input: raw.video_id ? platformBWebSubInput(contracts, raw) : null };
    }),
  };
}
