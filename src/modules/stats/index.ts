/**
 * The stats module (Part 2, "Public statistics", "Watchlist", "Emote (directory)"): the public
 * channel and stream statistics computed from time-series samples, the crawler's ingestion path,
 * the emote directory, the watchlist, and the `public-stats:{platform}:{broadcast_id}` socket
 * channel (its `bootstrap` snapshot, and a `public-stats:update` after each crawler batch, live.ts),
 * and a creator's own channel settings (opt-out, top chatters). Owns its `ps_*` relational tables,
 * `stats_watchlist(_pending)`, and the partitioned sample tables on the time-series store; touches no other
 * module's tables.
 */
import { shapeOf, toWire } from '../../http/mapping';
import { periodSeconds as seconds } from '../../infra/jobs';
import { defineModule } from '../contract';
import { createStatsResolvers } from './graphql';
import { createIngestion, type Ingest } from './ingest';
import { createLiveStats, type LiveStats } from './live';
import { statsMigrations, statsTimeseriesMigrations } from './migrations';
import { createStatsRepo, type StatsRepo } from './repo';
import { createStatsRest } from './rest';
import { createSeriesRepo } from './series';
import { createPublicStatsService, type PublicStatsService } from './service';
import { createChannelSettingsService } from './channel-settings';
import { createWatchlistService, type WatchlistService } from './watchlist';

export interface StatsApi {
  readonly stats: PublicStatsService;
  readonly watchlist: WatchlistService;
  readonly ingest: Ingest;
  /** The live `public-stats:update` publisher (its `idle` resolves once every queued summary went out). */
  readonly live: LiveStats;
  /** Privacy erasure: a chatter's top-chatter rows, in the caller's transaction (repo.ts `eraseChatters`). */
  readonly eraseChatters: StatsRepo['eraseChatters'];
}

declare module '../contract' {
  interface ModuleApis {
    stats: StatsApi;
  }
}

const summaryShape = shapeOf({ $ref: '#/components/schemas/PublicStreamSummary' });

/** The sweep (GIF erasure, sample partitions) runs daily as a job; tests call `stats.sweep()` directly. */
export function createStatsModule(options: { sweepMs?: number; now?: () => Date } = {}) {
  return defineModule({
    name: 'stats',
    migrations: statsMigrations,
    timeseriesMigrations: statsTimeseriesMigrations,
    build: ({ db, timeseries, jobs, bus, log, use }) => {
      const repo = createStatsRepo(db.knex);
      const series = createSeriesRepo(timeseries.knex);
      const stats = createPublicStatsService({ repo, series, now: options.now });
      const watchlist = createWatchlistService({ repo });
      const channelSettings = createChannelSettingsService({ repo, knex: db.knex, connections: use('connections'), audit: use('audit') });
      const apply = createIngestion({ repo, series, timeseries: timeseries.knex, now: options.now });
      const live = createLiveStats({
        bus,
        log,
        async summary(platform, broadcastId) {
          const summary = await stats.bootstrap({ platform, broadcast_id: broadcastId });
          return summary ? toWire(summary, summaryShape) : null;
        },
      });
      // A batch applied (not a resend) publishes its broadcasts' summaries after the answer.
      const ingest: Ingest = async (batch) => {
        const result = await apply(batch);
        if (!result.duplicate) live.changed((batch.streams ?? []).map((s) => ({ platform: s.platform, broadcastId: s.broadcastId })));
        return result;
      };
      jobs.every('stats.sweep', seconds(options.sweepMs ?? 86_400_000), async () => void (await stats.sweep()), { retryLimit: 1 });
      return {
        api: { stats, watchlist, ingest, live, eraseChatters: (db, platform, logins) => repo.eraseChatters(db, platform, logins) },
        rest: createStatsRest({ stats, watchlist, ingest, channelSettings }),
        resolvers: createStatsResolvers({ stats, watchlist, channelSettings }),
        close: () => live.idle(),
        // The socket snapshot is the REST summary's wire form (snake_case).
        channelBootstraps: {
          'public-stats:{platform}:{broadcast_id}': async (params: Record<string, string>) => {
            const summary = await stats.bootstrap(params);
            return summary ? toWire(summary, summaryShape) : null;
          },
        },
      };
    },
  });
}

export const statsModule = createStatsModule();
