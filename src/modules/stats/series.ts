/**
 * The time-series store of public statistics: viewer samples per broadcast (with the deltas the
 * crawler counted since the previous sample) and follower samples per channel, in tables
 * partitioned by month on the sample time. Partitions are created ahead of the samples that need
 * them (`ensurePartitions`, and the current and next month at start), old ones dropped past the
 * retention. Each query carries a short name comment for slow-query logs.
 */
import type { Knex } from 'knex';
import { schemaRows, type RowValue, type StoredRow, type TableColumns } from '../../infra/db/rows';

/** A point of the viewer curve (the sample time stored as `sampled_at`), and the trends' daily points. */
const viewerPointOf = schemaRows('PublicViewerPoint', { from: { at: 'sampled_at' } });
const followerPointOf = schemaRows('PublicFollowerPoint');
const avgViewerPointOf = schemaRows('PublicAvgViewerPoint', { adjust: { avg_viewers: (v) => Math.round(v * 100) / 100 } });
export type ViewerPoint = RowValue<typeof viewerPointOf>;
export type FollowerPoint = RowValue<typeof followerPointOf>;
export type AvgViewerPoint = RowValue<typeof avgViewerPointOf>;

/** A viewer sample as it is written, with the deltas since the previous one (the migration's columns). */
export type ViewerSample = StoredRow<TableColumns<'ps_viewer_samples'>>;
/** A follower sample as it is written (the migration's columns). */
export type FollowerSample = StoredRow<TableColumns<'ps_follower_samples'>>;

/**
 * What a broadcast's samples add up to: a query's aggregate, not a table's row (it feeds part of
 * `ps_streams`, converted by hand: watch time rounded, sums of integers as numbers, never text).
 */
export interface StreamAggregate {
  platform: string;
  broadcast_id: string;
  sample_count: number;
  peak_viewers: number;
  avg_viewers: number;
  watch_seconds: number;
  total_messages: number;
  new_followers: number;
  new_paid_subs: number;
  gifted_subs: number;
  last_sample_at: Date | null;
}

const TABLES = ['ps_viewer_samples', 'ps_follower_samples'] as const;

/** First instant of the UTC month `offset` months from `at`. */
function monthStart(at: Date, offset = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1));
}

const partitionName = (table: string, month: Date) => `${table}_y${month.getUTCFullYear()}m${String(month.getUTCMonth() + 1).padStart(2, '0')}`;

const num = (value: unknown): number => (value === null || value === undefined ? 0 : Number(value));

export function createSeriesRepo(knex: Knex) {
  /** Months (epoch ms of their first instant) whose partitions exist, per node. */
  const known = new Set<number>();

  async function ensureMonth(month: Date): Promise<void> {
    const key = month.getTime();
    if (known.has(key)) return;
    const next = monthStart(month, 1);
    for (const table of TABLES) {
      try {
        // series.createPartition
        await knex.raw(`create table if not exists ${partitionName(table, month)} partition of ${table} for values from ('${month.toISOString()}') to ('${next.toISOString()}')`);
      } catch (error) {
        // Another node created it between the check and the create.
        const exists = await knex.raw('select 1 from pg_class where relname = ?', [partitionName(table, month)]);
        if ((exists.rows ?? exists).length === 0) throw error;
      }
    }
    known.add(key);
  }

  return {
    /** Creates the monthly partitions that samples at these times need. */
    async ensurePartitions(times: readonly Date[]): Promise<void> {
      const months = new Map<number, Date>();
      for (const at of times) {
        const month = monthStart(at);
        months.set(month.getTime(), month);
      }
      for (const month of months.values()) await ensureMonth(month);
    },

    /** Drops whole monthly partitions that end before `before` (sample retention). */
    async dropBefore(before: Date): Promise<number> {
      // series.listPartitions
      const result = await knex.raw(
        `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent where p.relname in ('ps_viewer_samples', 'ps_follower_samples')`,
      );
      let dropped = 0;
      for (const { name } of (result.rows ?? result) as { name: string }[]) {
        const match = /_y(\d{4})m(\d{2})$/.exec(name);
        if (!match) continue;
        const end = new Date(Date.UTC(Number(match[1]), Number(match[2]), 1));
        if (end.getTime() > before.getTime()) continue;
        await knex.raw(`drop table if exists ${name}`);
        known.delete(new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1)).getTime());
        dropped++;
      }
      return dropped;
    },

    /** series.insertViewerSamples: a sample repeated at the same time for a broadcast is ignored. */
    async insertViewerSamples(trx: Knex.Transaction, rows: readonly ViewerSample[]): Promise<number> {
      let inserted = 0;
      for (let i = 0; i < rows.length; i += 500) {
        const out = await trx('ps_viewer_samples').insert(rows.slice(i, i + 500)).onConflict(['platform', 'broadcast_id', 'sampled_at']).ignore().returning('sampled_at');
        inserted += out.length;
      }
      return inserted;
    },

    /** series.insertFollowerSamples */
    async insertFollowerSamples(trx: Knex.Transaction, rows: readonly FollowerSample[]): Promise<number> {
      if (!rows.length) return 0;
      const out = await trx('ps_follower_samples').insert([...rows]).onConflict(['platform', 'platform_channel_id', 'sampled_at']).ignore().returning('sampled_at');
      return out.length;
    },

    /**
     * series.streamAggregates: per broadcast, from its samples. Watch time counts each sample's
     * viewers for the time to the next sample (the last sample counts nothing).
     */
    async streamAggregates(keys: readonly { platform: string; broadcast_id: string }[]): Promise<StreamAggregate[]> {
      if (!keys.length) return [];
      const rows = await knex
        .with('s', (q) =>
          q
            .from('ps_viewer_samples')
            .select('platform', 'broadcast_id', 'sampled_at', 'viewers', 'messages', 'new_followers', 'new_paid_subs', 'gifted_subs')
            .select(knex.raw('extract(epoch from (lead(sampled_at) over (partition by platform, broadcast_id order by sampled_at) - sampled_at)) as gap'))
            .whereIn(['platform', 'broadcast_id'], keys.map((k) => [k.platform, k.broadcast_id])),
        )
        .from('s')
        .select('platform', 'broadcast_id')
        .select(
          knex.raw('count(*) as sample_count'),
          knex.raw('max(viewers) as peak_viewers'),
          knex.raw('avg(viewers)::float8 as avg_viewers'),
          knex.raw('coalesce(sum(viewers * coalesce(gap, 0)), 0)::float8 as watch_seconds'),
          knex.raw('sum(messages) as total_messages'),
          knex.raw('sum(new_followers) as new_followers'),
          knex.raw('sum(new_paid_subs) as new_paid_subs'),
          knex.raw('sum(gifted_subs) as gifted_subs'),
          knex.raw('max(sampled_at) as last_sample_at'),
        )
        .groupBy('platform', 'broadcast_id');
      return (rows as Record<string, unknown>[]).map((r) => ({
        platform: String(r.platform),
        broadcast_id: String(r.broadcast_id),
        sample_count: num(r.sample_count),
        peak_viewers: num(r.peak_viewers),
        avg_viewers: num(r.avg_viewers),
        watch_seconds: Math.round(num(r.watch_seconds)),
        total_messages: num(r.total_messages),
        new_followers: num(r.new_followers),
        new_paid_subs: num(r.new_paid_subs),
        gifted_subs: num(r.gifted_subs),
        last_sample_at: r.last_sample_at ? new Date(r.last_sample_at as string) : null,
      }));
    },

    /** series.viewerCurve: a broadcast's samples, oldest first. */
    async viewerCurve(platform: string, broadcastId: string): Promise<ViewerPoint[]> {
      return (await knex('ps_viewer_samples').where({ platform, broadcast_id: broadcastId }).orderBy('sampled_at').select(knex.raw(viewerPointOf.select))).map(viewerPointOf.map);
    },

    /** series.followerDaily: the last follower sample of each UTC day since `from`, oldest first. */
    async followerDaily(platform: string, channelId: string, from: Date): Promise<FollowerPoint[]> {
      const result = await knex.raw(
        `select to_char(day, 'YYYY-MM-DD') as date, follower_count from (
           select distinct on (day) (sampled_at at time zone 'UTC')::date as day, follower_count
           from ps_follower_samples where platform = ? and platform_channel_id = ? and sampled_at >= ?
           order by day, sampled_at desc) d order by day`,
        [platform, channelId, from],
      );
      return ((result.rows ?? result) as object[]).map(followerPointOf.map);
    },

    /** series.viewerDaily: the mean viewer sample of each UTC day since `from`, oldest first. */
    async viewerDaily(platform: string, channelId: string, from: Date): Promise<AvgViewerPoint[]> {
      const result = await knex.raw(
        `select to_char((sampled_at at time zone 'UTC')::date, 'YYYY-MM-DD') as date, avg(viewers)::float8 as avg_viewers
         from ps_viewer_samples where platform = ? and platform_channel_id = ? and sampled_at >= ?
         group by 1 order by 1`,
        [platform, channelId, from],
      );
      return ((result.rows ?? result) as object[]).map(avgViewerPointOf.map);
    },

    monthStart,
  };
}

export type SeriesRepo = ReturnType<typeof createSeriesRepo>;
