/**
 * The watchlist (Part 2, "Watchlist"): a signed-in user's followed public channels, at most 500.
 * A handle is resolved to the stable channel id through the channel directory the crawler feeds;
 * a handle it does not know yet is kept pending and follows the channel once a batch brings it.
 * Adding and removing are idempotent. The `user` gate (a user session or the user's own key) is
 * enforced by the bindings' shared code.
 */
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { isoTime } from '../../infra/db/database';
import { statsMessages } from './errors';
import { PENDING_PREFIX, type StatsRepo, type WatchlistItem } from './repo';
import { checkPlatform } from './service';

/** Part 2, "Limits": 500 channels per user. */
export const WATCHLIST_CAP = 500;

export type { WatchlistItem } from './repo';

export function createWatchlistService(deps: { repo: StatsRepo; cap?: number }) {
  const { repo } = deps;
  const cap = deps.cap ?? WATCHLIST_CAP;

  /** A handle the crawler does not know yet: kept by handle until a batch brings the channel (repo `upsertChannel`). */
  async function addPending(userId: string, platform: string, handle: string): Promise<WatchlistItem> {
    const entry = await repo.knex.transaction(async (trx) => {
      await repo.lockWatchlist(trx, userId);
      const existing = await repo.pendingEntry(trx, userId, platform, handle);
      if (existing) return existing;
      if ((await repo.watchlistCount(trx, userId)) >= cap) throw AppError.validation(statsMessages.watchlistFull(cap));
      return { added_at: await repo.addPending(trx, userId, platform, handle), login: handle };
    });
    return { platform, platformChannelId: `${PENDING_PREFIX}${handle.toLowerCase()}`, channelLogin: entry.login, channelDisplayName: null, addedAt: isoTime(entry.added_at), pending: true };
  }

  return {
    async list(ctx: AuthContext): Promise<WatchlistItem[]> {
      return repo.watchlist(requireUserId(ctx));
    },

    async add(ctx: AuthContext, input: { platform: string; channel: string }): Promise<WatchlistItem> {
      const userId = requireUserId(ctx);
      checkPlatform(input.platform);
      const handle = input.channel.trim();
      if (!handle) throw AppError.validation(statsMessages.channelNotFound);
      const channel = await repo.channelByLogin(input.platform, handle);
      if (!channel) return addPending(userId, input.platform, handle);
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
        pending: false,
      };
    },

    async remove(ctx: AuthContext, input: { platform: string; platformChannelId: string }): Promise<{ success: true }> {
      const userId = requireUserId(ctx);
      if (input.platformChannelId.startsWith(PENDING_PREFIX)) await repo.removePending(userId, input.platform, input.platformChannelId.slice(PENDING_PREFIX.length));
      else await repo.removeWatchlist(userId, input.platform, input.platformChannelId);
      return { success: true };
    },
  };
}

export type WatchlistService = ReturnType<typeof createWatchlistService>;
