/**
 * The crawler's ingestion path (`POST /v1/internal/public-stats/samples`, system key): one batch
 * of channel directory entries, broadcasts with their samples and observations, and emote sets
 * fetched from provider APIs. Samples go to the time-series store first (idempotent per
 * broadcast and time, in one transaction); then one relational transaction writes the directory,
 * the broadcasts with aggregates recomputed from all their stored samples, the observations and
 * the channel rollups. A failed relational write leaves only samples, which a retry of the batch
 * ignores, so retrying is safe. Input shapes were validated against the spec at the edge; this
 * checks values (platforms, providers, sample times, known channels).
 *
 * A resent batch counts once: chatter, shared-chat, emote and GIF counts add up across
 * batches, so the relational transaction first records the batch's key (its `batch_id`, else the
 * SHA-256 of the batch) and, when the key is already there, writes nothing and answers the first
 * delivery's result with `duplicate: true`. Keys are kept 30 days (the daily sweep).
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { AppError } from '../../errors';
import { statsMessages } from './errors';
import type { StatsRepo } from './repo';
import type { FollowerSample, SeriesRepo, ViewerSample } from './series';
import { checkPlatform, checkProvider } from './service';

const DAY_MS = 86_400_000;
/** Oldest sample accepted: the longest trend range plus margin (samples live in monthly partitions). */
const OLDEST_SAMPLE_DAYS = 400;

export interface IngestBatch {
  /** The crawler's id of this batch: a resend with the same id is applied once. */
  batchId?: string;
  channels?: readonly {
    platform: string;
    platformChannelId: string;
    login: string;
    displayName?: string | null;
    avatarUrl?: string | null;
    broadcasterType?: 'partner' | 'affiliate' | null;
    source?: string;
    optedOut?: boolean;
    showTopChatters?: boolean;
    followerCount?: number;
    sampledAt?: string;
    panels?: readonly { panelId: string; ad?: boolean; title?: string | null; description?: string | null; imageUrl?: string | null; linkUrl?: string | null }[];
  }[];
  streams?: readonly {
    platform: string;
    broadcastId: string;
    platformChannelId: string;
    startedAt: string;
    endedAt?: string | null;
    title?: string | null;
    category?: string | null;
    tags?: readonly string[] | null;
    samples?: readonly { at: string; viewers: number; messages?: number; newFollowers?: number; newPaidSubs?: number; giftedSubs?: number }[];
    chatters?: readonly { login: string; displayName?: string | null; messages: number }[];
    sharedChat?: readonly { platformChannelId: string; messages: number; displayName?: string | null; avatarUrl?: string | null }[];
    emotes?: readonly { id: string; name: string; provider: string; url?: string | null; animated?: boolean; ownerId?: string | null; channelId?: string | null; count: number }[];
    gifs?: readonly { id: string; url: string; count: number }[];
  }[];
  emoteSets?: readonly {
    platform: string;
    provider: string;
    channelId?: string | null;
    emotes: readonly { id: string; name: string; url?: string | null; animated?: boolean; ownerId?: string | null }[];
  }[];
}

export interface IngestResult {
  channels: number;
  streams: number;
  samples: number;
  emotes: number;
  /** True when the batch was applied before (nothing written now; the counts are the first delivery's). */
  duplicate?: boolean;
}

/** The batch's idempotency key: its batch_id, else the SHA-256 of the batch as sent. */
const batchKey = (batch: IngestBatch) =>
  createHash('sha256')
    .update(batch.batchId !== undefined ? `id:${batch.batchId}` : `body:${JSON.stringify(batch)}`)
    .digest('hex');

const key = (platform: string, id: string) => `${platform}\u0000${id}`;

/** Tags as stored: an empty list is an emptied value (null). */
const normTags = (tags: readonly string[] | null | undefined) => (tags === undefined ? undefined : tags === null || tags.length === 0 ? null : [...tags]);
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function createIngestion(deps: { repo: StatsRepo; series: SeriesRepo; timeseries: Knex; now?: () => Date }) {
  const { repo, series, timeseries } = deps;
  const now = deps.now ?? (() => new Date());

  function sampleTime(value: string, at: Date): Date {
    const parsed = new Date(value);
    if (Number.isNaN(parsed.getTime()) || parsed.getTime() < at.getTime() - OLDEST_SAMPLE_DAYS * DAY_MS || parsed.getTime() > at.getTime() + DAY_MS) {
      throw AppError.validation(statsMessages.sampleOutOfRange(value));
    }
    return parsed;
  }

  return async function ingest(batch: IngestBatch): Promise<IngestResult> {
    const at = now();
    const channels = batch.channels ?? [];
    const streams = batch.streams ?? [];
    const sets = batch.emoteSets ?? [];

    // Values first: nothing is written when any of them is refused.
    for (const c of channels) checkPlatform(c.platform);
    for (const s of streams) {
      checkPlatform(s.platform);
      for (const e of s.emotes ?? []) checkProvider(e.provider);
    }
    for (const set of sets) {
      checkPlatform(set.platform);
      checkProvider(set.provider);
    }
    const viewerSamples: ViewerSample[] = streams.flatMap((s) =>
      (s.samples ?? []).map((p) => ({
        platform: s.platform,
        broadcast_id: s.broadcastId,
        platform_channel_id: s.platformChannelId,
        sampled_at: sampleTime(p.at, at),
        viewers: p.viewers,
        messages: p.messages ?? 0,
        new_followers: p.newFollowers ?? 0,
        new_paid_subs: p.newPaidSubs ?? 0,
        gifted_subs: p.giftedSubs ?? 0,
      })),
    );
    const followerSamples: FollowerSample[] = channels
      .filter((c) => c.followerCount !== undefined)
      .map((c) => ({ platform: c.platform, platform_channel_id: c.platformChannelId, sampled_at: c.sampledAt ? sampleTime(c.sampledAt, at) : at, follower_count: c.followerCount! }));
    const batchChannels = new Set(channels.map((c) => key(c.platform, c.platformChannelId)));
    const needed = streams.filter((s) => !batchChannels.has(key(s.platform, s.platformChannelId))).map((s) => [s.platform, s.platformChannelId] as [string, string]);
    const known = await repo.existingChannels(needed);
    const unknown = needed.find(([p, id]) => !known.has(key(p, id)));
    if (unknown) throw AppError.validation(statsMessages.unknownChannel(unknown[0], unknown[1]));

    // The time-series store: partitions ahead of the samples, then the samples in one transaction.
    let samples = 0;
    if (viewerSamples.length || followerSamples.length) {
      await series.ensurePartitions([...viewerSamples, ...followerSamples].map((s) => s.sampled_at));
      samples = await timeseries.transaction(async (trx) => (await series.insertViewerSamples(trx, viewerSamples)) + (await series.insertFollowerSamples(trx, followerSamples)));
    }
    const aggregates = new Map((await series.streamAggregates(streams.map((s) => ({ platform: s.platform, broadcast_id: s.broadcastId })))).map((a) => [key(a.platform, a.broadcast_id), a]));

    let emotes = 0;
    const batch_key = batchKey(batch);
    const first = await repo.knex.transaction(async (trx): Promise<IngestResult | null> => {
      // Taken first: a concurrent delivery of the same batch waits here and then finds the key.
      if (!(await repo.claimBatch(trx, batch_key))) return { ...((await repo.batchResult(trx, batch_key)) as unknown as IngestResult), duplicate: true };
      for (const c of channels) {
        await repo.upsertChannel(trx, {
          platform: c.platform,
          platform_channel_id: c.platformChannelId,
          login: c.login,
          display_name: c.displayName,
          avatar_url: c.avatarUrl,
          broadcaster_type: c.broadcasterType,
          source: c.source,
          opted_out: c.optedOut,
          show_top_chatters: c.showTopChatters,
        });
        if (c.panels) {
          const ads = c.panels.filter((p) => p.ad);
          for (const p of ads) {
            await repo.upsertPanel(
              trx,
              { platform: c.platform, platform_channel_id: c.platformChannelId, panel_id: p.panelId, title: p.title ?? null, description: p.description ?? null, image_url: p.imageUrl ?? null, link_url: p.linkUrl ?? null },
              at,
            );
          }
          await repo.removePanelsExcept(trx, c.platform, c.platformChannelId, ads.map((p) => p.panelId), at);
        }
      }

      const touched = new Map<string, [string, string]>();
      for (const s of streams) {
        touched.set(key(s.platform, s.platformChannelId), [s.platform, s.platformChannelId]);
        const existing = await repo.stream(s.platform, s.broadcastId, trx);
        const tags = normTags(s.tags);
        const changes: { change_type: string; old_value: unknown; new_value: unknown }[] = [];
        const fields: [string, unknown, unknown][] = [
          ['title', existing?.title ?? null, s.title === undefined ? undefined : s.title || null],
          ['category', existing?.category ?? null, s.category === undefined ? undefined : s.category || null],
          ['tags', existing?.tags ?? null, tags],
        ];
        const patch: Record<string, unknown> = {};
        for (const [field, old, next] of fields) {
          if (next === undefined || same(old, next)) continue;
          changes.push({ change_type: field, old_value: old, new_value: next });
          patch[field] = next;
        }
        if (!existing) {
          await repo.insertStream(trx, {
            platform: s.platform,
            broadcast_id: s.broadcastId,
            platform_channel_id: s.platformChannelId,
            title: s.title || null,
            category: s.category || null,
            tags: tags ?? null,
            started_at: new Date(s.startedAt),
            ended_at: s.endedAt ? new Date(s.endedAt) : null,
          });
        } else if (s.endedAt !== undefined) {
          patch.ended_at = s.endedAt ? new Date(s.endedAt) : null;
        }
        const aggregate = aggregates.get(key(s.platform, s.broadcastId));
        if (aggregate) {
          Object.assign(patch, {
            sample_count: aggregate.sample_count,
            peak_viewers: aggregate.peak_viewers,
            avg_viewers: aggregate.avg_viewers,
            watch_seconds: aggregate.watch_seconds,
            total_messages: aggregate.total_messages,
            new_followers: aggregate.new_followers,
            new_paid_subs: aggregate.new_paid_subs,
            gifted_subs: aggregate.gifted_subs,
            last_sample_at: aggregate.last_sample_at,
          });
        }
        await repo.updateStream(trx, s.platform, s.broadcastId, patch);
        const changedAt = aggregate?.last_sample_at && aggregate.last_sample_at.getTime() > at.getTime() ? aggregate.last_sample_at : at;
        await repo.insertMetadataChanges(
          trx,
          changes.map((c) => ({ platform: s.platform, broadcast_id: s.broadcastId, ...c, changed_at: changedAt })),
        );
        await repo.addChatters(trx, s.platform, s.broadcastId, (s.chatters ?? []).map((c) => ({ login: c.login, display_name: c.displayName, messages: c.messages })));
        await repo.addSharedChat(
          trx,
          s.platform,
          s.broadcastId,
          (s.sharedChat ?? []).map((x) => ({ platform_channel_id: x.platformChannelId, messages: x.messages, display_name: x.displayName, avatar_url: x.avatarUrl })),
        );
        await repo.addStreamEmotes(trx, s.platform, s.broadcastId, s.emotes ?? []);
        await repo.addStreamGifs(trx, s.platform, s.broadcastId, s.gifs ?? []);
        await repo.addStreamCounts(
          trx,
          s.platform,
          s.broadcastId,
          (s.emotes ?? []).reduce((sum, e) => sum + e.count, 0),
          (s.gifs ?? []).reduce((sum, g) => sum + g.count, 0),
        );
        emotes += await repo.upsertObservedEmotes(
          trx,
          (s.emotes ?? []).map((e) => ({
            provider: e.provider,
            emote_id: e.id,
            set_key: e.channelId ?? '',
            platform: s.platform,
            channel_id: e.channelId ?? null,
            name: e.name,
            url: e.url ?? null,
            animated: e.animated ?? false,
            owner_id: e.ownerId ?? null,
          })),
        );
      }
      for (const set of sets) {
        emotes += await repo.upsertApiEmotes(
          trx,
          set.emotes.map((e) => ({
            provider: set.provider,
            emote_id: e.id,
            set_key: set.channelId ?? '',
            platform: set.platform,
            channel_id: set.channelId ?? null,
            name: e.name,
            url: e.url ?? null,
            animated: e.animated ?? false,
            owner_id: e.ownerId ?? null,
          })),
        );
      }
      await repo.rollupChannels(trx, [...touched.values()]);
      await repo.settleBatch(trx, batch_key, { channels: channels.length, streams: streams.length, samples, emotes });
      return null;
    });
    if (first) return first;
    return { channels: channels.length, streams: streams.length, samples, emotes };
  };
}

export type Ingest = ReturnType<typeof createIngestion>;
