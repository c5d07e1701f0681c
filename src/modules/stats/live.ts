/**
 * Live updates of `public-stats:{platform}:{broadcast_id}`: after a crawler batch is applied (not
 * a resent one), the summary of each broadcast it carried is published on the internal bus channel
 * of the same name as `{ event_type: public-stats:update, data: <summary, wire form> }`, which the
 * relay delivers to the channel's subscribers (spec/ws-protocol/modules/stats.json). Opted-out
 * channels have no summary and send nothing. The work runs after the batch's answer, one pass at a
 * time: broadcasts named again while a pass runs are published once by the next pass, so a busy
 * crawler never queues more than one summary per broadcast.
 */
import type { Bus } from '../../infra/bus';
import type { Logger } from '../../infra/logger';

export interface LiveStats {
  /** Queues the broadcasts of an applied batch for publishing. */
  changed(streams: readonly { platform: string; broadcastId: string }[]): void;
  /** Resolves once nothing is queued or running (tests, shutdown). */
  idle(): Promise<void>;
}

export function createLiveStats(deps: { bus: Bus; log: Logger; summary: (platform: string, broadcastId: string) => Promise<unknown> }): LiveStats {
  const pending = new Map<string, { platform: string; broadcastId: string }>();
  let running: Promise<void> | null = null;

  async function pass(): Promise<void> {
    while (pending.size > 0) {
      const batch = [...pending.values()];
      pending.clear();
      for (const { platform, broadcastId } of batch) {
        try {
          const data = await deps.summary(platform, broadcastId);
          if (data) await deps.bus.publish(`public-stats:${platform}:${broadcastId}`, JSON.stringify({ event_type: 'public-stats:update', data }));
        } catch (error) {
          deps.log.warn({ err: error, platform, broadcast_id: broadcastId }, 'public stats live update failed');
        }
      }
    }
  }

  return {
    changed(streams) {
      for (const s of streams) pending.set(`${s.platform}:${s.broadcastId}`, s);
      running ??= pass().finally(() => {
        running = null;
      });
    },
    async idle() {
      while (running) await running;
    },
  };
}
