/**
 * The watchlist (Part 2, "Watchlist"): a signed-in user's followed public channels, at most 500.
 * A handle is resolved to the stable channel id through the channel directory the crawler feeds;
 * adding and removing are idempotent. The `user` gate (a user session or the user's own key) is
 * enforced by the bindings' shared code.
 */
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { isoTime } from '../../infra/db/database';
import { statsMessages } from './errors';
import type { StatsRepo, WatchlistItem } from './repo';
import { checkPlatform } from './service';

/** Part 2, "Limits": 500 channels per user. */
export const WATCHLIST_CAP = 500;

export type { WatchlistItem } from './repo';

export function createWatchlistService(deps: { repo: StatsRepo; cap?: number }) {
  const { repo } = deps;
  const cap = deps.cap ?? WATCHLIST_CAP;

  return {
    async list(ctx: AuthContext): Promise<WatchlistItem[]> {
      return repo.watchlist(requireUserId(ctx));
    },

    async add(ctx: AuthContext, input: { platform: string; channel: string }): Promise<WatchlistItem> {
      const userId = requireUserId(ctx);
      checkPlatform(input.platform);
      const channel = await repo.channelByLogin(input.platform, input.channel.trim());
      if (!channel) throw AppError.notFound(statsMessages.channelNotFound);
      const addedAt = await repo.knex.transaction(async (trx) => {
        await repo.lockWatchlist(trx, userId);
        const existing = await repo.watchlistEntry(trx, userId, channel.platform, channel.platformChannelId);
        if (existing) return existing.added_at;
        if ((await repo.watchlistCount(trx, userId)) >= cap) throw AppError.validation(statsMessages.watchlistFull(cap));
        return repo.addWatchlist(trx, userId, channel.platform, channel.platformChannelId);
      });
      return {
        platform: channel.platform,
        platformChannelId: channel.platformChannelId,
        channelLogin: channel.channelLogin,
        channelDisplayName: channel.channelDisplayName,
        addedAt: isoTime(addedAt),
      };
    },

    async remove(ctx: AuthContext, input: { platform: string; platformChannelId: string }): Promise<{ success: true }> {
      await repo.removeWatchlist(requireUserId(ctx), input.platform, input.platformChannelId);
      return { success: true };
    },
  };
}

export type WatchlistService = ReturnType<typeof createWatchlistService>;
