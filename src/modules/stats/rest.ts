/**
 * REST bindings of public statistics, the crawler ingestion and the watchlist, in domain form:
 * the router maps names, pages with the declared bounds and applies the envelopes. The public
 * lists answer with their `Cache-Control` header.
 */
import { reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { ChannelSettingsService } from './channel-settings';
import type { Ingest, IngestBatch } from './ingest';
import { cacheControl, type PublicStatsService } from './service';
import type { WatchlistService } from './watchlist';

export function createStatsRest(deps: { stats: PublicStatsService; watchlist: WatchlistService; ingest: Ingest; channelSettings: ChannelSettingsService }) {
  const { stats, watchlist, ingest, channelSettings } = deps;
  return bindRest({
    publicChannelTrends: ({ params, query }) => stats.trends({ platform: params.platform, channel: params.channel, range: query.range }),
    publicChannelPanelHistory: ({ params }) => stats.panelHistory(params),
    publicStreamSummary: ({ params }) => stats.streamSummary(params),
    publicStreamMetadataHistory: ({ params, query }) => stats.metadataHistory({ ...params, limit: query.limit, offset: query.offset }),
    publicChannelBrowse: async ({ query, paging }) => reply(200, await stats.browse(query, paging), { 'Cache-Control': cacheControl.lists }),
    publicGames: async ({ query, paging }) => reply(200, await stats.games(query, paging), { 'Cache-Control': cacheControl.lists }),
    publicEmotes: async ({ query, paging }) => reply(200, await stats.emotes(query, paging), { 'Cache-Control': cacheControl.emotes }),
    ingestPublicStats: ({ body }) => ingest(body as IngestBatch),
    myWatchlist: async (_request, context) => ({ items: await watchlist.list(context.auth) }),
    addToWatchlist: ({ body }, context) => watchlist.add(context.auth, body),
    removeFromWatchlist: ({ body }, context) => watchlist.remove(context.auth, body),
    accountPublicStatsSettings: (_r, context) => channelSettings.list(context.auth),
    updateAccountPublicStatsSettings: ({ params, body }, context) => channelSettings.update(context.auth, params.platform, body),
  });
}
