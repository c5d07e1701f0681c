/**
 * The unit of platform ingest work: one connected channel of an account (`${account_id}:${platform_channel_id}`),
 * owned by the node holding its lease (src/modules/workers/leases.ts). The adapters that run
 * per channel (platform_a's socket, platform_b's poller) are `Worker`s over these units.
 */
import type { OwnedWork } from '../workers';

export interface Connected {
  accountId: string;
  platformChannelId: string;
}

export const unitOf = (c: Connected): string => `${c.accountId}:${c.platformChannelId}`;
export function connectedOf(unit: string): Connected {
  const split = unit.indexOf(':');
  return { accountId: unit.slice(0, split), platformChannelId: unit.slice(split + 1) };
}

export interface Worker extends OwnedWork {
  /** Stops every unit this node runs (the module closing). */
  stopAll(): Promise<void>;
}

/**
 * The channel grant's access token for a platform call or socket (signin's `accountGrantToken`,
 * refreshed when near expiry); `reconnect`: the grant is flagged, so nothing is opened or polled
 * until it is connected again; `token: null` without a stored grant (an operator-recorded
 * connection; a deployment's credential proxy supplies it).
 */
export type ChannelToken = (accountId: string) => Promise<{ token: string | null; reconnect: boolean }>;
