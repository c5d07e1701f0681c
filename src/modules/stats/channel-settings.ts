/**
 * A creator's own channels in public statistics: whether each connected channel is left out
 * (`opted_out`) and whether its stream summaries show top chatters. The channels are the ones the
 * active account connected (the connections module names them); the choice is stored apart from
 * the directory row so that it wins over what crawler batches say, now and later (repo
 * `upsertChannel`). Gates (`public-stats:read|edit`) are enforced by the bindings' shared code.
 */
import type { Knex } from 'knex';
import { requireAccountId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { ModuleApis } from '../contract';
import { statsMessages } from './errors';
import type { ChannelStatsSettings, StatsRepo } from './repo';
import { checkPlatform } from './service';

export type { ChannelStatsSettings } from './repo';

export function createChannelSettingsService(deps: {
  repo: StatsRepo;
  knex: Knex;
  connections: Pick<ModuleApis['connections'], 'accountChannels'>;
  audit: Pick<ModuleApis['audit'], 'record'>;
}) {
  const { repo, knex, connections, audit } = deps;

  return {
    async list(ctx: AuthContext): Promise<ChannelStatsSettings[]> {
      return repo.channelSettings(await connections.accountChannels(requireAccountId(ctx)));
    },

    async update(ctx: AuthContext, platform: string, input: { optedOut?: boolean | null; showTopChatters?: boolean | null }): Promise<ChannelStatsSettings> {
      const accountId = requireAccountId(ctx);
      checkPlatform(platform);
      const channel = (await connections.accountChannels(accountId)).find((c) => c.platform === platform);
      if (!channel) throw AppError.notFound(statsMessages.noChannelConnected(platform));
      const patch = {
        ...(typeof input.optedOut === 'boolean' ? { opted_out: input.optedOut } : {}),
        ...(typeof input.showTopChatters === 'boolean' ? { show_top_chatters: input.showTopChatters } : {}),
      };
      await knex.transaction(async (trx) => {
        await repo.setChannelPreference(trx, accountId, platform, channel.platformChannelId, patch);
        await audit.record(
          { scope: 'account', type: 'account:public_stats_updated', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { platform, platform_channel_id: channel.platformChannelId, ...patch } },
          trx,
        );
      });
      return (await repo.channelSettings([channel]))[0]!;
    },
  };
}

export type ChannelSettingsService = ReturnType<typeof createChannelSettingsService>;
