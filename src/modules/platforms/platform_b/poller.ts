/**
 * platform_b's live chat poller: polls the live chat of every connected channel this node holds
 * the lease of, with the channel grant's access token (`channelToken`, refreshed) on the live chat
 * look-up and every poll. The live chat id is resolved once per broadcast (again after the
 * platform stops answering for it); the page token carries on between polls so each item is read
 * once (a node taking a channel over starts from the first page, which the idempotent pipeline
 * stores nothing of twice). Every item is read against spec/platforms/platform_b.json (items.ts):
 * chat messages go to the chat pipeline, members, super chats and stickers, gifted memberships and
 * polls are stored as events.
 */
import type { Logger } from '../../../infra/logger';
import type { Contracts } from '../contracts';
import type { Deliver } from '../ingest';
import type { ChatPlatformAdapter } from '../outbound';
import { connectedOf, unitOf, type ChannelToken, type Connected, type Worker } from '../units';
import { platformBItemInput } from './items';

export function createPlatformBPoller(deps: { adapter: ChatPlatformAdapter; intervalMs: number; connected: () => Promise<Connected[]>; deliver: Deliver; contracts: Contracts; log: Logger; channelToken?: ChannelToken }): Worker {
  const state = new Map<string, { liveChatId: string; pageToken: string | null } | null>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;

  async function pollOne(unit: string): Promise<void> {
    const c = connectedOf(unit);
    let current = state.get(unit);
    if (current === undefined) return;
    const grant = deps.channelToken ? await deps.channelToken(c.accountId) : { token: null, reconnect: false };
    if (grant.reconnect) return;
    if (!current) {
      const resolved = await deps.adapter.resolveLiveChatId(c.platformChannelId, grant.token);
      if (!resolved.ok || !resolved.value || !state.has(unit)) return;
      current = { liveChatId: resolved.value, pageToken: null };
      state.set(unit, current);
    }
    const page = await deps.adapter.pollLiveChat(current.liveChatId, current.pageToken, grant.token);
    if (!page.ok) {
      if (page.kind === 'refused' && state.has(unit)) state.set(unit, null); // the broadcast ended: resolve again next time
      return;
    }
    for (const item of page.value.items) {
      if (!state.has(unit)) return; // the lease went while the page was read
      const input = platformBItemInput(deps.contracts, item, current.liveChatId, c.platformChannelId);
      if (input) await deps.deliver(c.accountId, input);
    }
    if (page.value.nextPageToken) current.pageToken = page.value.nextPageToken;
  }

  async function pass(): Promise<void> {
    for (const unit of [...state.keys()]) {
      await pollOne(unit).catch((error: unknown) => deps.log.warn({ err: error }, 'platform_b live chat poll failed'));
    }
  }

  const tick = (): Promise<void> => {
    running ??= pass()
      .catch((error: unknown) => deps.log.warn({ err: error }, 'platform_b poller failed'))
      .finally(() => {
        running = null;
      });
    return running;
  };

  return {
    kind: 'platform_b',
    periodMs: deps.intervalMs,
    list: async () => (await deps.connected()).map(unitOf),
    start(unit) {
      if (!state.has(unit)) state.set(unit, null);
      if (!timer) {
        timer = setInterval(() => void tick(), deps.intervalMs);
        timer.unref();
      }
    },
    async stop(unit) {
      state.delete(unit);
      await running;
    },
    async stopAll() {
      state.clear();
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
