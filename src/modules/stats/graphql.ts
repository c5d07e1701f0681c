/** GraphQL bindings of public statistics and the watchlist: the domain shape is already camelCase; paging uses the REST twins' declared bounds. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageFor } from '../../http/paging';
import type { ChannelSettingsService } from './channel-settings';
import type { PublicStatsService } from './service';
import type { WatchlistService } from './watchlist';

export function createStatsResolvers(deps: { stats: PublicStatsService; watchlist: WatchlistService; channelSettings: ChannelSettingsService }): {
  Query: Pick<
    QueryResolvers<GraphQLContext>,
    'publicChannelTrends' | 'publicChannelPanelHistory' | 'publicStreamSummary' | 'publicStreamMetadataHistory' | 'publicChannelBrowse' | 'publicGames' | 'publicEmotes' | 'myWatchlist' | 'accountPublicStatsSettings'
  >;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'addToWatchlist' | 'removeFromWatchlist' | 'updateAccountPublicStatsSettings'>;
} {
  const { stats, watchlist, channelSettings } = deps;
  return {
    Query: {
      publicChannelTrends: (_p, args) => stats.trends(args),
      publicChannelPanelHistory: (_p, args) => stats.panelHistory(args),
      publicStreamSummary: (_p, args) => stats.streamSummary(args),
      publicStreamMetadataHistory: (_p, args) => stats.metadataHistory(args),
      publicChannelBrowse: (_p, { filter }) => stats.browse(filter ?? {}, pageFor('publicChannelBrowse', filter)),
      publicGames: (_p, { filter }) => stats.games(filter ?? {}, pageFor('publicGames', filter)),
      publicEmotes: (_p, { filter }) => stats.emotes(filter ?? {}, pageFor('publicEmotes', filter)),
      myWatchlist: async (_p, _args, context) => ({ items: await watchlist.list(context.auth) }),
      accountPublicStatsSettings: (_p, _a, context) => channelSettings.list(context.auth),
    },
    Mutation: {
      addToWatchlist: (_p, args, context) => watchlist.add(context.auth, args),
      removeFromWatchlist: async (_p, args, context) => (await watchlist.remove(context.auth, args)).success,
      updateAccountPublicStatsSettings: (_p, { platform, input }, context) => channelSettings.update(context.auth, platform, input),
    },
  };
}
