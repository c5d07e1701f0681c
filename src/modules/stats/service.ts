/**
 * Public statistics (Part 2, "Public statistics"): channel trends, ad panel history, stream
 * summaries, metadata history, browse, games and the emote directory, every figure computed from
 * the stored samples and observations the crawler sends through `ingest` (ingest.ts). Opted-out
 * channels are invisible here (404, left out of lists); top chatters only for channels that opted
 * in. The kill-switch `system:public_stats` and the public/system-key gates are enforced by the
 * bindings' shared code; this service checks only input values and data.
 */
import { AppError, messages } from '../../errors';
import { pageOf, type PageRequest } from '../../paging';
import { statsMessages } from './errors';
import type { Channel, StatsRepo } from './repo';
import type { SeriesRepo } from './series';

export const PLATFORMS = ['platform_a', 'platform_b', 'platform_c'] as const;
export const PROVIDERS = [...PLATFORMS, '7tv', 'bttv', 'ffz'] as const;
const RANGES: Record<string, number> = { DAYS_30: 30, DAYS_90: 90, DAYS_180: 180, DAYS_365: 365 };
const METRICS: Record<string, string> = {
  watchtime: 'watch_seconds desc',
  viewers: 'avg_viewers desc',
  peak: 'peak_viewers desc',
  follower_gain: 'follower_gain desc',
  messages: 'total_messages desc',
  recent: 'last_started_at desc nulls last',
};
/** Top-GIF content is erased after this (Part 2, "Limits"). */
export const GIF_RETENTION_DAYS = 90;
const DAY_MS = 86_400_000;
/** How long an applied crawler batch's key is kept (ingest.ts; a crawler resends within minutes). */
const BATCH_KEY_DAYS = 30;

/** `Cache-Control` of the public lists: the emote directory's is the spec's, browse and games are edge-cacheable for less. */
export const cacheControl = {
  emotes: 'public, max-age=60, s-maxage=300, stale-while-revalidate=600',
  lists: 'public, max-age=30, s-maxage=60, stale-while-revalidate=300',
} as const;

const blank = (value: string | null | undefined): string | undefined => (value === null || value === undefined || value.trim() === '' ? undefined : value.trim());

export function checkPlatform(platform: string): string {
  if (!(PLATFORMS as readonly string[]).includes(platform)) throw AppError.validation(statsMessages.unsupportedPlatform(platform), { fields: [{ field: 'platform', message: statsMessages.unsupportedPlatform(platform) }] });
  return platform;
}

export function checkProvider(provider: string): string {
  if (!(PROVIDERS as readonly string[]).includes(provider)) throw AppError.validation(statsMessages.unsupportedProvider(provider), { fields: [{ field: 'provider', message: statsMessages.unsupportedProvider(provider) }] });
  return provider;
}

const optionalPlatform = (value: string | null | undefined) => {
  const v = blank(value);
  return v === undefined ? undefined : checkPlatform(v);
};

function optionalBool(value: boolean | string | null | undefined, message: string, field: string): boolean | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'boolean') return value;
  const v = value.trim().toLowerCase();
  if (v === '') return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw AppError.validation(message, { fields: [{ field, message }] });
}

const pagination = (total: number, request: PageRequest) => {
  const page = pageOf([], total, request);
  return { page: page.page, limit: page.limit, total: page.total, totalPages: page.pages };
};

export interface BrowseFilter {
  platform?: string | null;
  category?: string | null;
  metric?: string | null;
  live?: boolean | null;
  search?: string | null;
}

export interface EmoteFilter {
  platform?: string | null;
  provider?: string | null;
  channelId?: string | null;
  animated?: boolean | string | null;
  search?: string | null;
}

export function createPublicStatsService(deps: { repo: StatsRepo; series: SeriesRepo; now?: () => Date }) {
  const { repo, series } = deps;
  const now = deps.now ?? (() => new Date());

  /** A visible channel with tracked streams (trends, panels), else 404. */
  async function visibleChannel(platform: string, channel: string): Promise<Channel> {
    checkPlatform(platform);
    const row = await repo.channelByHandle(platform, channel);
    if (!row || row.optedOut || row.streamCount === 0) throw AppError.notFound(statsMessages.channelNotFound);
    return row;
  }

  async function summary(platform: string, broadcastId: string) {
    checkPlatform(platform);
    const stream = await repo.stream(platform, broadcastId);
    const channel = stream ? await repo.channel(platform, stream.platformChannelId) : undefined;
    if (!stream || !channel || channel.optedOut) return null;
    const gifSince = new Date(now().getTime() - GIF_RETENTION_DAYS * DAY_MS);
    const [emotes, gifs, chatters, shared, curve] = await Promise.all([
      repo.topEmotes(platform, broadcastId),
      repo.topGifs(platform, broadcastId, gifSince),
      channel.showTopChatters ? repo.topChatters(platform, broadcastId) : Promise.resolve(null),
      repo.sharedChat(platform, broadcastId),
      series.viewerCurve(platform, broadcastId),
    ]);
    const startedAt = new Date(stream.startedAt);
    const endAt = stream.endedAt ? new Date(stream.endedAt) : stream.lastSampleAt ? new Date(stream.lastSampleAt) : startedAt;
    return {
      platform,
      broadcastId,
      platformChannelId: stream.platformChannelId,
      channelLogin: channel.channelLogin,
      channelDisplayName: channel.channelDisplayName,
      title: stream.title,
      category: stream.category,
      tags: (stream.tags ?? []) as string[],
      isLive: stream.endedAt === null,
      startedAt: stream.startedAt,
      endedAt: stream.endedAt,
      durationSeconds: Math.max(0, Math.round((endAt.getTime() - startedAt.getTime()) / 1000)),
      peakViewers: stream.peakViewers,
      avgViewers: Math.round(stream.avgViewers * 100) / 100,
      watchSeconds: stream.watchSeconds,
      totalMessages: stream.totalMessages,
      emoteCount: stream.emoteCount,
      topEmotes: emotes,
      gifCount: stream.gifCount,
      topGifs: gifs,
      newPaidSubs: stream.newPaidSubs,
      giftedSubs: stream.giftedSubs,
      newFollowers: stream.newFollowers,
      viewerCurve: curve,
      topChatters: chatters,
      sharedChatSources: shared,
    };
  }

  return {
    async trends(input: { platform: string; channel: string; range: string }) {
      const days = RANGES[input.range];
      checkPlatform(input.platform);
      if (days === undefined) throw AppError.validation(statsMessages.invalidRange, { fields: [{ field: 'range', message: statsMessages.invalidRange }] });
      const channel = await visibleChannel(input.platform, input.channel);
      const today = now();
      const from = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate()) - (days - 1) * DAY_MS);
      const [followers, viewers] = await Promise.all([series.followerDaily(channel.platform, channel.platformChannelId, from), series.viewerDaily(channel.platform, channel.platformChannelId, from)]);
      return {
        platform: channel.platform,
        platformChannelId: channel.platformChannelId,
        channelLogin: channel.channelLogin,
        range: input.range,
        followerSeries: followers,
        avgViewerSeries: viewers,
      };
    },

    async panelHistory(input: { platform: string; channel: string }) {
      const channel = await visibleChannel(input.platform, input.channel);
      const { panels, images } = await repo.panelHistory(channel.platform, channel.platformChannelId);
      return panels.map((panel) => ({ ...panel, images: images.filter((i) => i.panelId === panel.panelId).map(({ panelId: _panel, ...image }) => image) }));
    },

    async streamSummary(input: { platform: string; broadcastId: string }) {
      const result = await summary(input.platform, input.broadcastId);
      if (!result) throw AppError.notFound(statsMessages.streamNotFound);
      return result;
    },

    /** The `bootstrap` of `public-stats:{platform}:{broadcast_id}`: the summary, or null when there is none to show. */
    async bootstrap(params: Record<string, string>) {
      const platform = params.platform ?? '';
      if (!(PLATFORMS as readonly string[]).includes(platform)) return null;
      return summary(platform, params.broadcast_id ?? '');
    },

    async metadataHistory(input: { platform: string; broadcastId: string; limit?: number | null; offset?: number | null }) {
      checkPlatform(input.platform);
      const limit = input.limit ?? 50;
      const offset = input.offset ?? 0;
      if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw AppError.validation(messages.limitOutOfRange(1, 200), { fields: [{ field: 'limit', message: 'must be >= 1 and <= 200' }] });
      if (!Number.isInteger(offset) || offset < 0) throw AppError.validation(statsMessages.invalidOffset, { fields: [{ field: 'offset', message: 'must be >= 0' }] });
      const stream = await repo.stream(input.platform, input.broadcastId);
      const channel = stream ? await repo.channel(input.platform, stream.platformChannelId) : undefined;
      if (!stream || !channel || channel.optedOut) throw AppError.notFound(statsMessages.streamNotFound);
      const { rows, total } = await repo.metadataHistory(input.platform, input.broadcastId, limit, offset);
      return {
        entries: rows,
        total,
        limit,
        offset,
      };
    },

    async browse(filter: BrowseFilter, request: PageRequest) {
      const metric = blank(filter.metric) ?? 'watchtime';
      const order = METRICS[metric];
      if (!order) throw AppError.validation(statsMessages.invalidMetric, { fields: [{ field: 'metric', message: statsMessages.invalidMetric }] });
      const { rows, total } = await repo.browse(
        { platform: optionalPlatform(filter.platform), category: blank(filter.category), live: filter.live ?? undefined, search: blank(filter.search), order },
        request.limit,
        request.offset,
      );
      return {
        channels: rows.map((c) => ({ ...c, avgViewers: Math.round(c.avgViewers * 100) / 100 })),
        pagination: pagination(total, request),
      };
    },

    async games(filter: { platform?: string | null; search?: string | null }, request: PageRequest) {
      const { rows, total } = await repo.games({ platform: optionalPlatform(filter.platform), search: blank(filter.search) }, request.limit, request.offset);
      return {
        games: rows,
        pagination: pagination(total, request),
      };
    },

    async emotes(filter: EmoteFilter, request: PageRequest) {
      const provider = blank(filter.provider);
      const query = {
        platform: optionalPlatform(filter.platform),
        provider: provider === undefined ? undefined : checkProvider(provider),
        channelId: blank(filter.channelId),
        animated: optionalBool(filter.animated, statsMessages.invalidAnimated, 'animated'),
        search: blank(filter.search),
      };
      const { rows, total } = await repo.emotes(query, request.limit, request.offset);
      return { emotes: rows, pagination: pagination(total, request) };
    },

    /** The daily sweep: GIF content past its retention, sample partitions past theirs, partitions ahead. */
    async sweep(): Promise<{ gifs: number; partitions: number }> {
      const at = now();
      const gifs = await repo.eraseGifs(new Date(at.getTime() - GIF_RETENTION_DAYS * DAY_MS));
      const partitions = await series.dropBefore(series.monthStart(at, -14));
      await repo.forgetBatches(new Date(at.getTime() - BATCH_KEY_DAYS * DAY_MS));
      await series.ensurePartitions([at, series.monthStart(at, 1)]);
      return { gifs, partitions };
    },
  };
}

export type PublicStatsService = ReturnType<typeof createPublicStatsService>;
