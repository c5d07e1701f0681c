/**
 * Relational storage of public statistics (knex): the channel directory with rollups, broadcasts
 * and their observations, metadata changes, ad panels, the emote directory and the watchlist.
 * Each query carries a short name comment for slow-query logs. Counters add up in SQL
 * (`count = count + excluded.count`), so concurrent batches never lose an increment.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { schemaRows, tableColumns, type RowOf, type RowValue, type TableColumns } from '../../infra/db/rows';

type Db = Knex | Knex.Transaction;

/** A directory channel as browse lists it (its handle is stored as `login`). */
const channelFrom = { channel_login: 'login', channel_display_name: 'display_name' } as const;
const browseChannelOf = schemaRows('PublicBrowseChannel', { from: channelFrom });
export type BrowseChannel = RowValue<typeof browseChannelOf>;
/** A directory channel with its public-statistics preferences (not on the wire), which every read checks. */
const channelOf = schemaRows('PublicBrowseChannel', { from: channelFrom, extra: tableColumns('ps_channels', ['opted_out', 'show_top_chatters']) });
export type Channel = RowValue<typeof channelOf>;

/**
 * A broadcast's stored figures: the summary's members the row carries, with its tags as stored
 * (null when none, which the metadata history tells from an empty change) and its last sample.
 */
const streamOf = schemaRows('PublicStreamSummary', {
  omit: ['channel_login', 'channel_display_name', 'tags', 'is_live', 'duration_seconds', 'top_emotes', 'top_gifs', 'viewer_curve', 'top_chatters', 'shared_chat_sources'],
  extra: tableColumns('ps_streams', ['tags', 'last_sample_at']),
});
export type Stream = RowValue<typeof streamOf>;
/** The columns of a broadcast the crawler first reports (the aggregates start at zero). */
type StreamInsert = RowOf<Pick<TableColumns<'ps_streams'>, 'platform' | 'broadcast_id' | 'platform_channel_id' | 'title' | 'category' | 'tags' | 'started_at' | 'ended_at'>>;

/** The columns of an emote the crawler writes: the spec's Emote members it knows, its id stored as `emote_id`, and its set (the store sets `source` and the times). */
export type EmoteWrite = Pick<components['schemas']['Emote'], 'provider' | 'platform' | 'channel_id' | 'name' | 'url' | 'animated' | 'owner_id'> & { emote_id: string; set_key: string };

/** An entry of the emote directory as the API shows it (its id is stored as `emote_id`). */
const emoteOf = schemaRows('Emote', { from: { id: 'emote_id' } });
export type Emote = RowValue<typeof emoteOf>;

/** The lists of a stream summary, each the spec's item schema (ids stored as `emote_id`, `gif_id`, `source_channel_id`). */
const topEmoteOf = schemaRows('PublicTopEmote', { from: { id: 'emote_id' } });
/** A GIF's provider and alt text are not recorded: the wire carries them as null. */
const topGifOf = schemaRows('PublicTopGif', { from: { id: 'gif_id', provider: 'null::text', alt: 'null::text' } });
const topChatterOf = schemaRows('PublicTopChatter');
const sharedSourceOf = schemaRows('PublicSharedChatSource', { from: { platform_channel_id: 'source_channel_id' } });
export type TopEmote = RowValue<typeof topEmoteOf>;
export type TopGif = RowValue<typeof topGifOf>;
export type TopChatter = RowValue<typeof topChatterOf>;
export type SharedChatSource = RowValue<typeof sharedSourceOf>;

/** An ad panel without its images (read apart, oldest first); removed once it has a removal time. */
const panelOf = schemaRows('PublicPanel', { omit: ['images'], from: { status: "case when removed_at is null then 'active' else 'removed' end" } });
/** A panel image, with the panel it belongs to (not on the wire: the images are nested under it). */
const panelImageOf = schemaRows('PublicPanelImage', { extra: tableColumns('ps_panel_images', ['panel_id']) });
export type Panel = RowValue<typeof panelOf>;
export type PanelImage = RowValue<typeof panelImageOf>;

/** A game of the directory: its figures are aggregates over the category's visible broadcasts. */
const gameOf = schemaRows('PublicGame', {
  from: {
    category: 's.category',
    channel_count: "count(distinct s.platform || ':' || s.platform_channel_id)",
    stream_count: 'count(*)',
    live_stream_count: 'count(*) filter (where s.ended_at is null)',
    peak_viewers: 'max(s.peak_viewers)',
    watch_seconds: 'coalesce(sum(s.watch_seconds), 0)',
    last_started_at: 'max(s.started_at)',
  },
});
export type Game = RowValue<typeof gameOf>;

/**
 * A metadata change. Its values are jsonb holding a JSON string, an array or null; they are
 * selected as their JSON text (`::text`) so the json conversion parses each exactly once (a jsonb
 * string scalar would otherwise arrive already parsed, as a plain string the conversion would parse again).
 */
const metadataChangeOf = schemaRows('PublicMetadataChange', { from: { old_value: 'old_value::text', new_value: 'new_value::text' } });
export type MetadataChange = RowValue<typeof metadataChangeOf>;

export type WatchlistItem = Camelize<components['schemas']['WatchlistItem']>;
/** A watched channel the directory no longer knows shows its stable id as its handle. */
const watchlistItemOf = schemaRows('WatchlistItem', {
  from: { platform: 'w.platform', platform_channel_id: 'w.platform_channel_id', channel_login: 'coalesce(c.login, w.platform_channel_id)', channel_display_name: 'c.display_name', added_at: 'w.added_at', pending: 'false' },
});
/** A pending item: a handle the crawler does not know yet. */
export const PENDING_PREFIX = 'pending:';
const pendingItemOf = schemaRows('WatchlistItem', {
  from: { platform: 'p.platform', platform_channel_id: `'${PENDING_PREFIX}' || p.login_lower`, channel_login: 'p.login', channel_display_name: 'null::text', added_at: 'p.added_at', pending: 'true' },
});
export type ChannelStatsSettings = Camelize<components['schemas']['ChannelStatsSettings']>;

export interface BrowseQuery {
  platform?: string;
  category?: string;
  live?: boolean;
  search?: string;
  order: string;
}

const n = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
/** `%`, `_` and the escape character match literally inside a LIKE pattern. */
export const likeLiteral = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export function createStatsRepo(knex: Knex) {
  return {
    /** ps_ingest_batches.claim: true when the batch key is new (taken in `trx`, so a concurrent resend waits) */
    async claimBatch(trx: Knex.Transaction, batchKey: string): Promise<boolean> {
      const claimed = await trx('ps_ingest_batches').insert({ batch_key: batchKey, result: JSON.stringify({}) }).onConflict('batch_key').ignore().returning('batch_key');
      return claimed.length > 0;
    },
    /** ps_ingest_batches.result: what the first delivery of a batch answered */
    async batchResult(trx: Knex.Transaction, batchKey: string): Promise<Record<string, unknown>> {
      const row = (await trx('ps_ingest_batches').where({ batch_key: batchKey }).first('result')) as { result: unknown } | undefined;
      return (typeof row?.result === 'string' ? JSON.parse(row.result) : (row?.result ?? {})) as Record<string, unknown>;
    },
    /** ps_ingest_batches.settle */
    async settleBatch(trx: Knex.Transaction, batchKey: string, result: Record<string, unknown>): Promise<void> {
      await trx('ps_ingest_batches').where({ batch_key: batchKey }).update({ result: JSON.stringify(result) });
    },
    /** ps_ingest_batches.forget: keys older than `before` (the daily sweep) */
    async forgetBatches(before: Date): Promise<number> {
      return knex('ps_ingest_batches').where('created_at', '<', before).delete();
    },
    knex,

    // ------------------------------------------------------------------ channel directory
    /** stats.channelByHandle: by URL handle (case-insensitive) or stable id. */
    async channelByHandle(platform: string, handle: string, db: Db = knex): Promise<Channel | undefined> {
      const row = await db('ps_channels')
        .where({ platform })
        .andWhere((q) => q.where('login_lower', handle.toLowerCase()).orWhere('platform_channel_id', handle))
        .orderByRaw('(login_lower = ?) desc', [handle.toLowerCase()])
        .first(db.raw(channelOf.select));
      return row ? channelOf.map(row) : undefined;
    },
    /** stats.channelByLogin: by URL handle only (watchlist). */
    async channelByLogin(platform: string, login: string, db: Db = knex): Promise<Channel | undefined> {
      const row = await db('ps_channels').where({ platform, login_lower: login.toLowerCase() }).first(db.raw(channelOf.select));
      return row ? channelOf.map(row) : undefined;
    },
    /** stats.channel */
    async channel(platform: string, channelId: string, db: Db = knex): Promise<Channel | undefined> {
      const row = await db('ps_channels').where({ platform, platform_channel_id: channelId }).first(db.raw(channelOf.select));
      return row ? channelOf.map(row) : undefined;
    },
    /** stats.existingChannels: which of these keys are in the directory. */
    async existingChannels(keys: readonly [string, string][], db: Db = knex): Promise<Set<string>> {
      if (!keys.length) return new Set();
      const rows = (await db('ps_channels').whereIn(['platform', 'platform_channel_id'], keys.map((k) => [...k])).select('platform', 'platform_channel_id')) as { platform: string; platform_channel_id: string }[];
      return new Set(rows.map((r) => `${r.platform}\u0000${r.platform_channel_id}`));
    },
    /** stats.upsertChannel: preferences are kept unless given. */
    async upsertChannel(
      db: Db,
      row: { platform: string; platform_channel_id: string; login: string; display_name?: string | null; avatar_url?: string | null; broadcaster_type?: string | null; source?: string; opted_out?: boolean; show_top_chatters?: boolean },
    ): Promise<void> {
      const insert = {
        platform: row.platform,
        platform_channel_id: row.platform_channel_id,
        login: row.login,
        login_lower: row.login.toLowerCase(),
        display_name: row.display_name ?? null,
        avatar_url: row.avatar_url ?? null,
        broadcaster_type: row.broadcaster_type ?? null,
        source: row.source ?? 'crawler',
        opted_out: row.opted_out ?? false,
        show_top_chatters: row.show_top_chatters ?? false,
      };
      const merge: string[] = ['login', 'login_lower'];
      if (row.display_name !== undefined) merge.push('display_name');
      if (row.avatar_url !== undefined) merge.push('avatar_url');
      if (row.broadcaster_type !== undefined) merge.push('broadcaster_type');
      if (row.source !== undefined) merge.push('source');
      if (row.opted_out !== undefined) merge.push('opted_out');
      if (row.show_top_chatters !== undefined) merge.push('show_top_chatters');
      await db('ps_channels')
        .insert(insert)
        .onConflict(['platform', 'platform_channel_id'])
        .merge([...merge, 'updated_at'].reduce<Record<string, unknown>>((acc, c) => ({ ...acc, [c]: c === 'updated_at' ? knex.fn.now() : db.raw('excluded.??', [c]) }), {}));
      // In one statement: watchers who added the handle before the crawler knew it now follow the
      // channel, and the creator's own choices win over what the batch said.
      await db.raw(
        `with moved as (delete from stats_watchlist_pending where platform = ? and login_lower = ? returning user_id, added_at),
           adopted as (insert into stats_watchlist (user_id, platform, platform_channel_id, added_at) select user_id, ?, ?, added_at from moved on conflict do nothing)
         update ps_channels c set opted_out = coalesce(p.opted_out, c.opted_out), show_top_chatters = coalesce(p.show_top_chatters, c.show_top_chatters)
           from ps_channel_preferences p
          where p.platform = c.platform and p.platform_channel_id = c.platform_channel_id and c.platform = ? and c.platform_channel_id = ?`,
        [row.platform, insert.login_lower, row.platform, row.platform_channel_id, row.platform, row.platform_channel_id],
      );
    },
    /** stats.channelSettings: opt-out and top chatters of these channels (the creator's choice, else the directory's, else false) */
    async channelSettings(keys: readonly { platform: string; platformChannelId: string }[]): Promise<ChannelStatsSettings[]> {
      const out: ChannelStatsSettings[] = [];
      for (const key of keys) {
        const row = (await knex.raw(
          `select coalesce(p.opted_out, c.opted_out, false) as opted_out, coalesce(p.show_top_chatters, c.show_top_chatters, false) as show_top_chatters
             from (select 1) one
             left join ps_channels c on c.platform = ? and c.platform_channel_id = ?
             left join ps_channel_preferences p on p.platform = ? and p.platform_channel_id = ?`,
          [key.platform, key.platformChannelId, key.platform, key.platformChannelId],
        )) as { rows: { opted_out: boolean; show_top_chatters: boolean }[] };
        const r = row.rows[0];
        out.push({ platform: key.platform, platformChannelId: key.platformChannelId, optedOut: Boolean(r?.opted_out), showTopChatters: Boolean(r?.show_top_chatters) });
      }
      return out;
    },
    /** stats.setChannelPreference: the creator's choice, stored and applied to the directory row (when the crawler knows the channel) */
    async setChannelPreference(db: Knex.Transaction, accountId: string, platform: string, channelId: string, patch: { opted_out?: boolean; show_top_chatters?: boolean }): Promise<void> {
      await db('ps_channel_preferences')
        .insert({ platform, platform_channel_id: channelId, account_id: accountId, ...patch })
        .onConflict(['platform', 'platform_channel_id'])
        .merge({ account_id: accountId, ...patch, updated_at: db.fn.now() });
      if (Object.keys(patch).length) await db('ps_channels').where({ platform, platform_channel_id: channelId }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** stats.rollupChannels: the channel figures recomputed from its broadcasts. */
    async rollupChannels(db: Db, keys: readonly [string, string][]): Promise<void> {
      for (const [platform, channelId] of keys) {
        await db.raw(
          `update ps_channels c set
             stream_count = coalesce(s.stream_count, 0), watch_seconds = coalesce(s.watch_seconds, 0),
             avg_viewers = coalesce(s.avg_viewers, 0), peak_viewers = coalesce(s.peak_viewers, 0),
             total_messages = coalesce(s.total_messages, 0), follower_gain = coalesce(s.follower_gain, 0),
             last_started_at = s.last_started_at, is_live = coalesce(s.is_live, false),
             last_category = (select category from ps_streams l where l.platform = c.platform and l.platform_channel_id = c.platform_channel_id order by started_at desc limit 1),
             updated_at = now()
           from (select count(*)::int as stream_count, sum(watch_seconds) as watch_seconds,
                   coalesce(avg(avg_viewers) filter (where sample_count > 0), 0) as avg_viewers, max(peak_viewers) as peak_viewers,
                   sum(total_messages) as total_messages, sum(new_followers) as follower_gain,
                   max(started_at) as last_started_at, bool_or(ended_at is null) as is_live
                 from ps_streams where platform = ? and platform_channel_id = ?) s
           where c.platform = ? and c.platform_channel_id = ?`,
          [platform, channelId, platform, channelId],
        );
      }
    },

    // ------------------------------------------------------------------ panels
    /** stats.panelsOf */
    async panelsOf(db: Db, platform: string, channelId: string): Promise<Record<string, unknown>[]> {
      return db('ps_panels').where({ platform, platform_channel_id: channelId });
    },
    /** stats.upsertPanel */
    async upsertPanel(db: Db, row: { platform: string; platform_channel_id: string; panel_id: string; title: string | null; description: string | null; image_url: string | null; link_url: string | null }, at: Date): Promise<void> {
      await db('ps_panels')
        .insert({ ...row, first_seen_at: at, last_seen_at: at, removed_at: null })
        .onConflict(['platform', 'platform_channel_id', 'panel_id'])
        .merge({ title: row.title, description: row.description, image_url: row.image_url, link_url: row.link_url, last_seen_at: at, removed_at: null });
      if (row.image_url) {
        await db('ps_panel_images')
          .insert({ platform: row.platform, platform_channel_id: row.platform_channel_id, panel_id: row.panel_id, image_url: row.image_url, first_seen_at: at, last_seen_at: at })
          .onConflict(['platform', 'platform_channel_id', 'panel_id', 'image_url'])
          .merge({ last_seen_at: at });
      }
    },
    /** stats.removePanelsExcept: panels the crawl no longer saw are marked removed. */
    async removePanelsExcept(db: Db, platform: string, channelId: string, keep: readonly string[], at: Date): Promise<void> {
      const q = db('ps_panels').where({ platform, platform_channel_id: channelId }).whereNull('removed_at');
      if (keep.length) q.whereNotIn('panel_id', [...keep]);
      await q.update({ removed_at: at });
    },
    /** stats.panelHistory: most recently active first, images oldest first. */
    async panelHistory(platform: string, channelId: string): Promise<{ panels: Panel[]; images: PanelImage[] }> {
      const [panels, images] = await Promise.all([
        knex('ps_panels').where({ platform, platform_channel_id: channelId }).select(knex.raw(panelOf.select)).orderBy([{ column: 'last_seen_at', order: 'desc' }, { column: 'panel_id' }]),
        knex('ps_panel_images').where({ platform, platform_channel_id: channelId }).select(knex.raw(panelImageOf.select)).orderBy([{ column: 'first_seen_at' }, { column: 'image_url' }]),
      ]);
      return { panels: (panels as Record<string, unknown>[]).map(panelOf.map), images: (images as Record<string, unknown>[]).map(panelImageOf.map) };
    },

    // ------------------------------------------------------------------ streams
    /** stats.stream */
    async stream(platform: string, broadcastId: string, db: Db = knex): Promise<Stream | undefined> {
      const row = await db('ps_streams').where({ platform, broadcast_id: broadcastId }).first(db.raw(streamOf.select));
      return row ? streamOf.map(row) : undefined;
    },
    /** stats.insertStream */
    async insertStream(db: Db, row: StreamInsert): Promise<void> {
      await db('ps_streams').insert({ ...row, tags: row.tags === null ? null : JSON.stringify(row.tags) });
    },
    /** stats.updateStream */
    async updateStream(db: Db, platform: string, broadcastId: string, patch: Record<string, unknown>): Promise<void> {
      if (!Object.keys(patch).length) return;
      if ('tags' in patch && patch.tags !== null) patch = { ...patch, tags: JSON.stringify(patch.tags) };
      await db('ps_streams').where({ platform, broadcast_id: broadcastId }).update(patch);
    },
    /** stats.insertMetadataChanges */
    async insertMetadataChanges(db: Db, rows: { platform: string; broadcast_id: string; change_type: string; old_value: unknown; new_value: unknown; changed_at: Date }[]): Promise<void> {
      if (!rows.length) return;
      await db('ps_metadata_changes').insert(
        rows.map((r) => ({ ...r, old_value: r.old_value === null ? null : JSON.stringify(r.old_value), new_value: r.new_value === null ? null : JSON.stringify(r.new_value) })),
      );
    },
    /** stats.metadataHistory: most recent first. */
    async metadataHistory(platform: string, broadcastId: string, limit: number, offset: number) {
      const base = () => knex('ps_metadata_changes').where({ platform, broadcast_id: broadcastId });
      const [rows, count] = await Promise.all([
        base().orderBy([{ column: 'changed_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit).offset(offset).select(knex.raw(metadataChangeOf.select)),
        base().count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return {
        rows: (rows as object[]).map(metadataChangeOf.map),
        total: n(count?.count),
      };
    },

    /** stats.addChatters */
    async addChatters(db: Db, platform: string, broadcastId: string, rows: readonly { login: string; display_name?: string | null; messages: number }[]): Promise<void> {
      if (!rows.length) return;
      await db.raw(
        `insert into ps_stream_chatters (platform, broadcast_id, login, display_name, message_count)
         select ?, ?, x.login, x.display_name, x.messages from jsonb_to_recordset(?::jsonb) as x(login text, display_name text, messages int)
         on conflict (platform, broadcast_id, login) do update set message_count = ps_stream_chatters.message_count + excluded.message_count,
           display_name = coalesce(excluded.display_name, ps_stream_chatters.display_name)`,
        [platform, broadcastId, JSON.stringify(mergeBy(rows.map((r) => ({ login: r.login.toLowerCase(), display_name: r.display_name ?? null, messages: r.messages })), (r) => r.login, (a, b) => ({ ...a, display_name: b.display_name ?? a.display_name, messages: a.messages + b.messages })))],
      );
    },
    /**
     * stats.eraseChatters (privacy erasure): a chatter's rows among every stream's chatters (the
     * top chatters), by login (stored in lower case); answers the rows deleted.
     */
    async eraseChatters(db: Db, platform: string, logins: readonly string[]): Promise<number> {
      if (!logins.length) return 0;
      const deleted: unknown[] = await db('ps_stream_chatters').where({ platform }).whereIn('login', logins.map((l) => l.toLowerCase())).delete().returning('login');
      return deleted.length;
    },
    /** stats.addSharedChat */
    async addSharedChat(db: Db, platform: string, broadcastId: string, rows: readonly { platform_channel_id: string; messages: number; display_name?: string | null; avatar_url?: string | null }[]): Promise<void> {
      if (!rows.length) return;
      await db.raw(
        `insert into ps_stream_shared_chat (platform, broadcast_id, source_channel_id, message_count, display_name, avatar_url)
         select ?, ?, x.id, x.messages, x.display_name, x.avatar_url from jsonb_to_recordset(?::jsonb) as x(id text, messages int, display_name text, avatar_url text)
         on conflict (platform, broadcast_id, source_channel_id) do update set message_count = ps_stream_shared_chat.message_count + excluded.message_count,
           display_name = coalesce(excluded.display_name, ps_stream_shared_chat.display_name), avatar_url = coalesce(excluded.avatar_url, ps_stream_shared_chat.avatar_url)`,
        [
          platform,
          broadcastId,
          JSON.stringify(
            mergeBy(
              rows.map((r) => ({ id: r.platform_channel_id, messages: r.messages, display_name: r.display_name ?? null, avatar_url: r.avatar_url ?? null })),
              (r) => r.id,
              (a, b) => ({ ...a, messages: a.messages + b.messages, display_name: b.display_name ?? a.display_name, avatar_url: b.avatar_url ?? a.avatar_url }),
            ),
          ),
        ],
      );
    },
    /** stats.addStreamEmotes: answers the uses added. */
    async addStreamEmotes(db: Db, platform: string, broadcastId: string, rows: readonly { id: string; name: string; provider: string; url?: string | null; count: number }[]): Promise<void> {
      if (!rows.length) return;
      await db.raw(
        `insert into ps_stream_emotes (platform, broadcast_id, provider, emote_id, name, url, count)
         select ?, ?, x.provider, x.id, x.name, x.url, x.count from jsonb_to_recordset(?::jsonb) as x(provider text, id text, name text, url text, count int)
         on conflict (platform, broadcast_id, provider, emote_id) do update set count = ps_stream_emotes.count + excluded.count,
           name = excluded.name, url = coalesce(excluded.url, ps_stream_emotes.url)`,
        [
          platform,
          broadcastId,
          JSON.stringify(
            mergeBy(
              rows.map((r) => ({ provider: r.provider, id: r.id, name: r.name, url: r.url ?? null, count: r.count })),
              (r) => `${r.provider}\u0000${r.id}`,
              (a, b) => ({ ...b, url: b.url ?? a.url, count: a.count + b.count }),
            ),
          ),
        ],
      );
    },
    /** stats.addStreamGifs */
    async addStreamGifs(db: Db, platform: string, broadcastId: string, rows: readonly { id: string; url: string; count: number }[]): Promise<void> {
      if (!rows.length) return;
      await db.raw(
        `insert into ps_stream_gifs (platform, broadcast_id, gif_id, url, count)
         select ?, ?, x.id, x.url, x.count from jsonb_to_recordset(?::jsonb) as x(id text, url text, count int)
         on conflict (platform, broadcast_id, gif_id) do update set count = ps_stream_gifs.count + excluded.count, url = excluded.url`,
        [platform, broadcastId, JSON.stringify(mergeBy([...rows], (r) => r.id, (a, b) => ({ ...b, count: a.count + b.count })))],
      );
    },
    /** stats.addStreamCounts: emote and GIF uses. */
    async addStreamCounts(db: Db, platform: string, broadcastId: string, emotes: number, gifs: number): Promise<void> {
      if (!emotes && !gifs) return;
      await db('ps_streams')
        .where({ platform, broadcast_id: broadcastId })
        .update({ emote_count: db.raw('emote_count + ?', [emotes]), gif_count: db.raw('gif_count + ?', [gifs]) });
    },
    /** stats.topEmotes */
    async topEmotes(platform: string, broadcastId: string, limit = 10): Promise<TopEmote[]> {
      const rows = await knex('ps_stream_emotes').where({ platform, broadcast_id: broadcastId }).select(knex.raw(topEmoteOf.select)).orderBy([{ column: 'count', order: 'desc' }, { column: 'name' }]).limit(limit);
      return (rows as Record<string, unknown>[]).map(topEmoteOf.map);
    },
    /** stats.topGifs: content first seen within the retention only (erased after it). */
    async topGifs(platform: string, broadcastId: string, since: Date, limit = 10): Promise<TopGif[]> {
      const rows = await knex('ps_stream_gifs')
        .where({ platform, broadcast_id: broadcastId })
        .where('first_seen_at', '>=', since)
        .select(knex.raw(topGifOf.select))
        .orderBy([{ column: 'count', order: 'desc' }, { column: 'gif_id' }])
        .limit(limit);
      return (rows as Record<string, unknown>[]).map(topGifOf.map);
    },
    /** stats.eraseGifs: the 90-day erasure of GIF content. */
    async eraseGifs(before: Date): Promise<number> {
      const deleted = (await knex('ps_stream_gifs').where('first_seen_at', '<', before).del()) as number | { rowCount?: number };
      return typeof deleted === 'number' ? deleted : Number(deleted.rowCount ?? 0);
    },
    /** stats.topChatters */
    async topChatters(platform: string, broadcastId: string, limit = 10): Promise<TopChatter[]> {
      const rows = await knex('ps_stream_chatters').where({ platform, broadcast_id: broadcastId }).select(knex.raw(topChatterOf.select)).orderBy([{ column: 'message_count', order: 'desc' }, { column: 'login' }]).limit(limit);
      return (rows as Record<string, unknown>[]).map(topChatterOf.map);
    },
    /** stats.sharedChat */
    async sharedChat(platform: string, broadcastId: string): Promise<SharedChatSource[]> {
      const rows = await knex('ps_stream_shared_chat').where({ platform, broadcast_id: broadcastId }).select(knex.raw(sharedSourceOf.select)).orderBy([{ column: 'message_count', order: 'desc' }, { column: 'source_channel_id' }]);
      return (rows as Record<string, unknown>[]).map(sharedSourceOf.map);
    },

    // ------------------------------------------------------------------ browse and games
    /** stats.browse */
    async browse(q: BrowseQuery, limit: number, offset: number): Promise<{ rows: BrowseChannel[]; total: number }> {
      const filtered = () => {
        const query = knex('ps_channels').where('opted_out', false).where('stream_count', '>', 0);
        if (q.platform) query.where('platform', q.platform);
        if (q.category) query.whereRaw('lower(last_category) = ?', [q.category.toLowerCase()]);
        if (q.live !== undefined) query.where('is_live', q.live);
        if (q.search) query.whereRaw("(login_lower || ' ' || lower(coalesce(display_name, ''))) like ? escape '\\'", [likeLiteral(q.search)]);
        return query;
      };
      const [rows, count] = await Promise.all([
        filtered().select(knex.raw(browseChannelOf.select)).orderByRaw(`${q.order}, platform, platform_channel_id`).limit(limit).offset(offset),
        filtered().count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: (rows as Record<string, unknown>[]).map(browseChannelOf.map), total: n(count?.count) };
    },
    /** stats.games */
    async games(q: { platform?: string; search?: string }, limit: number, offset: number): Promise<{ rows: Game[]; total: number }> {
      const grouped = () => {
        const query = knex('ps_streams as s')
          .join('ps_channels as c', (j) => j.on('c.platform', 's.platform').andOn('c.platform_channel_id', 's.platform_channel_id'))
          .where('c.opted_out', false)
          .whereNotNull('s.category');
        if (q.platform) query.where('s.platform', q.platform);
        if (q.search) query.whereRaw("lower(s.category) like ? escape '\\'", [likeLiteral(q.search)]);
        return query.groupBy('s.category');
      };
      const [rows, count] = await Promise.all([
        grouped()
          .select(knex.raw(gameOf.select))
          .orderByRaw('sum(s.watch_seconds) desc, s.category')
          .limit(limit)
          .offset(offset),
        knex.from(grouped().select('s.category').as('g')).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: (rows as Record<string, unknown>[]).map(gameOf.map), total: n(count?.count) };
    },

    // ------------------------------------------------------------------ emote directory
    /** stats.upsertApiEmotes: an API fetch makes (or keeps) the entry `api_fetch`. */
    async upsertApiEmotes(db: Db, rows: readonly EmoteWrite[]): Promise<number> {
      let written = 0;
      const unique = mergeBy([...rows], (r) => `${r.provider}\u0000${r.emote_id}\u0000${r.set_key}`, (_a, b) => b);
      for (let i = 0; i < unique.length; i += 500) {
        const chunk = unique.slice(i, i + 500).map((r) => ({ ...r, source: 'api_fetch' }));
        await db('ps_emotes')
          .insert(chunk)
          .onConflict(['provider', 'emote_id', 'set_key'])
          .merge({ name: db.raw('excluded.name'), url: db.raw('excluded.url'), animated: db.raw('excluded.animated'), owner_id: db.raw('excluded.owner_id'), source: 'api_fetch', last_seen_at: knex.fn.now() });
        written += chunk.length;
      }
      return written;
    },
    /** stats.upsertObservedEmotes: seen in chat; an `api_fetch` entry keeps its source and fields. */
    async upsertObservedEmotes(db: Db, rows: readonly EmoteWrite[]): Promise<number> {
      if (!rows.length) return 0;
      const unique = mergeBy([...rows], (r) => `${r.provider}\u0000${r.emote_id}\u0000${r.set_key}`, (_a, b) => b);
      await db('ps_emotes')
        .insert(unique.map((r) => ({ ...r, source: 'observed' })))
        .onConflict(['provider', 'emote_id', 'set_key'])
        .merge({
          last_seen_at: knex.fn.now(),
          url: db.raw("case when ps_emotes.source = 'api_fetch' then ps_emotes.url else coalesce(excluded.url, ps_emotes.url) end"),
          name: db.raw("case when ps_emotes.source = 'api_fetch' then ps_emotes.name else excluded.name end"),
        });
      return unique.length;
    },
    /** stats.emotes */
    async emotes(q: { platform?: string; provider?: string; channelId?: string; animated?: boolean; search?: string }, limit: number, offset: number): Promise<{ rows: Emote[]; total: number }> {
      const filtered = () => {
        const query = knex('ps_emotes');
        if (q.platform) query.where('platform', q.platform);
        if (q.provider) query.where('provider', q.provider);
        if (q.channelId) query.where('channel_id', q.channelId);
        if (q.animated !== undefined) query.where('animated', q.animated);
        if (q.search) query.whereRaw("lower(name) like ? escape '\\'", [likeLiteral(q.search)]);
        return query;
      };
      const [rows, count] = await Promise.all([
        filtered().select(knex.raw(emoteOf.select)).orderByRaw('lower(name), name, provider, emote_id, set_key').limit(limit).offset(offset),
        filtered().count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: (rows as Record<string, unknown>[]).map(emoteOf.map), total: n(count?.count) };
    },

    // ------------------------------------------------------------------ watchlist
    /** stats.watchlist: newest first. */
    async watchlist(userId: string, db: Db = knex): Promise<WatchlistItem[]> {
      const [rows, pending] = await Promise.all([
        db('stats_watchlist as w')
          .leftJoin('ps_channels as c', (j) => j.on('c.platform', 'w.platform').andOn('c.platform_channel_id', 'w.platform_channel_id'))
          .where('w.user_id', userId)
          .select(db.raw(watchlistItemOf.select)),
        db('stats_watchlist_pending as p').where('p.user_id', userId).select(db.raw(pendingItemOf.select)),
      ]);
      const items = [...(rows as Record<string, unknown>[]).map(watchlistItemOf.map), ...(pending as Record<string, unknown>[]).map(pendingItemOf.map)];
      // Newest first, then by platform and id (one order across both kinds).
      const key = (i: WatchlistItem) => `${i.platform}\u0000${i.platformChannelId}`;
      return items.sort((a, b) => (a.addedAt !== b.addedAt ? (a.addedAt < b.addedAt ? 1 : -1) : key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    },
    /** stats.pendingEntry */
    async pendingEntry(db: Db, userId: string, platform: string, login: string): Promise<{ added_at: Date; login: string } | undefined> {
      return db('stats_watchlist_pending').where({ user_id: userId, platform, login_lower: login.toLowerCase() }).first('added_at', 'login');
    },
    /** stats.addPending: a handle the crawler does not know yet */
    async addPending(db: Db, userId: string, platform: string, login: string): Promise<Date> {
      const [row] = (await db('stats_watchlist_pending').insert({ user_id: userId, platform, login, login_lower: login.toLowerCase() }).returning('added_at')) as { added_at: Date }[];
      return row!.added_at;
    },
    /** stats.removePending */
    async removePending(userId: string, platform: string, loginLower: string): Promise<void> {
      await knex('stats_watchlist_pending').where({ user_id: userId, platform, login_lower: loginLower.toLowerCase() }).del();
    },
    /** stats.watchlistEntry */
    async watchlistEntry(db: Db, userId: string, platform: string, channelId: string): Promise<{ added_at: Date } | undefined> {
      return db('stats_watchlist').where({ user_id: userId, platform, platform_channel_id: channelId }).first('added_at');
    },
    /** stats.watchlistCount */
    async watchlistCount(db: Db, userId: string): Promise<number> {
      const [row, pending] = await Promise.all([
        db('stats_watchlist').where({ user_id: userId }).count<{ count: string }[]>({ count: '*' }).first(),
        db('stats_watchlist_pending').where({ user_id: userId }).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return n(row?.count) + n(pending?.count);
    },
    /** stats.lockWatchlist: serialises one user's adds, so the cap holds under concurrency. */
    async lockWatchlist(db: Knex.Transaction, userId: string): Promise<void> {
      await db.raw('select pg_advisory_xact_lock(hashtext(?))', [`stats_watchlist:${userId}`]);
    },
    /** stats.addWatchlist */
    async addWatchlist(db: Db, userId: string, platform: string, channelId: string): Promise<Date> {
      const [row] = (await db('stats_watchlist').insert({ user_id: userId, platform, platform_channel_id: channelId }).returning('added_at')) as { added_at: Date }[];
      return row!.added_at;
    },
    /** stats.removeWatchlist */
    async removeWatchlist(userId: string, platform: string, channelId: string): Promise<void> {
      await knex('stats_watchlist').where({ user_id: userId, platform, platform_channel_id: channelId }).del();
    },
  };
}

/** Merges rows with the same key (a batch may repeat one), in order. */
function mergeBy<T>(rows: T[] | readonly T[], key: (row: T) => string, merge: (a: T, b: T) => T): T[] {
  const out = new Map<string, T>();
  for (const row of rows) {
    const k = key(row);
    const prev = out.get(k);
    out.set(k, prev ? merge(prev, row) : row);
  }
  return [...out.values()];
}

export type StatsRepo = ReturnType<typeof createStatsRepo>;
