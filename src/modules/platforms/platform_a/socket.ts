/**
 * platform_a's adapter transport (Part 2: "Platform_a events arrive through a persistent outbound
 * socket worker"): one socket per connected channel this node holds the lease of
 * (`{socket_url}?channel_id=<id>`), opened with the channel grant's access token as
 * `Authorization: Bearer` (fetched, and refreshed when near expiry, before every open), and
 * reopened `reconnectMs` after a drop while the lease lasts. A channel whose grant is flagged for
 * reconnection is not opened (tried again after `reconnectMs`). Frames of one socket are handled
 * in order: parsed (frames.ts, against spec/platforms/platform_a.json) and delivered (ingest.ts),
 * which is idempotent on the platform's ids, so a replay after a reconnect or a handover between
 * nodes stores nothing twice. A frame that is not JSON is counted and logged once, never thrown.
 */
import WebSocket, { type RawData } from 'ws';
import { guardFor } from '../../../infra/listeners';
import type { Logger } from '../../../infra/logger';
import type { Contracts } from '../contracts';
import type { Deliver } from '../ingest';
import { connectedOf, unitOf, type ChannelToken, type Connected, type Worker } from '../units';
import { platformAInput } from './frames';

export function createPlatformASocketWorker(deps: { socketUrl: string; reconnectMs: number; connected: () => Promise<Connected[]>; deliver: Deliver; contracts: Contracts; channelToken?: ChannelToken; log: Logger }): Worker {
  const units = new Map<string, { socket: WebSocket | null; chain: Promise<void>; retry?: NodeJS.Timeout }>();
  const guard = guardFor((error) => deps.log.warn({ err: error }, 'platform_a socket handler failed'));

  function later(unit: string): void {
    const entry = units.get(unit);
    if (!entry) return;
    entry.retry = setTimeout(() => void open(unit), deps.reconnectMs);
    entry.retry.unref();
  }

  async function open(unit: string): Promise<void> {
    const c = connectedOf(unit);
    let grant: { token: string | null; reconnect: boolean };
    try {
      grant = deps.channelToken ? await deps.channelToken(c.accountId) : { token: null, reconnect: false };
    } catch (error) {
      deps.log.warn({ err: error, account_id: c.accountId }, 'platform_a channel token failed');
      return later(unit);
    }
    const entry = units.get(unit);
    if (!entry || entry.socket) return;
    if (grant.reconnect) return later(unit);
    const url = new URL(deps.socketUrl);
    url.searchParams.set('channel_id', c.platformChannelId);
    // The token is only ever in the upgrade's header, never in the URL or a log.
    const socket = new WebSocket(url, grant.token ? { headers: { authorization: `Bearer ${grant.token}` } } : {});
    entry.socket = socket;
    socket.on(
      'message',
      guard((data: RawData) => {
        if (units.get(unit)?.socket !== socket) return;
        let frame: unknown;
        try {
          frame = JSON.parse(data.toString());
        } catch {
          deps.contracts.reject('platform_a', 'malformed', 'not-json');
          return;
        }
        const input = platformAInput(deps.contracts, frame, c.platformChannelId);
        if (!input) return;
        entry.chain = entry.chain.then(() => deps.deliver(c.accountId, input)).catch(guard((error: unknown) => deps.log.warn({ err: error }, 'platform_a frame failed')));
      }),
    );
    socket.on('error', guard((error: Error) => deps.log.debug({ err: error }, 'platform_a socket error')));
    socket.on(
      'close',
      guard(() => {
        const current = units.get(unit);
        if (current?.socket !== socket) return;
        current.socket = null;
        later(unit);
      }),
    );
  }

  async function stop(unit: string): Promise<void> {
    const entry = units.get(unit);
    if (!entry) return;
    units.delete(unit);
    clearTimeout(entry.retry);
    entry.socket?.terminate();
    await entry.chain;
  }

  return {
    kind: 'platform_a',
    periodMs: deps.reconnectMs,
    list: async () => (await deps.connected()).map(unitOf),
    start(unit) {
      if (units.has(unit)) return;
      units.set(unit, { socket: null, chain: Promise.resolve() });
      void open(unit);
    },
    stop,
    async stopAll() {
      await Promise.all([...units.keys()].map(stop));
    },
  };
}
