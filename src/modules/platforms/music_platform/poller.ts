/**
 * music_platform's adapter: a leased poller of each connected music account's activity feed
 * (spec/platforms/music_platform.json). The node holding the account's lease (kind
 * `music_platform`, unit `<account_id>:<music user id>`) reads
 * `GET {api_url}/me/activity?cursor=` every `intervalMs` with the channel grant's access token as
 * `Authorization: Bearer` (refreshed when near expiry; a flagged grant is not polled), carrying the
 * cursor between polls so each item is read once (a node taking an account over starts from the
 * feed's start, which the idempotent store keeps once). Every item is read against the contract
 * and delivered: stored as `music_platform:<type>`, the playback ones also published as
 * `music_platform:now-playing`. An unknown or malformed item is counted and logged once.
 */
import type { Logger } from '../../../infra/logger';
import type { Contracts } from '../contracts';
import type { Deliver } from '../ingest';
import type { PlatformInput } from '../inputs';
import { externalIdOf } from '../platform_a/frames';
import { connectedOf, unitOf, type ChannelToken, type Connected, type Worker } from '../units';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One activity item into its input; null when rejected. */
export function musicItemInput(contracts: Contracts, item: unknown): PlatformInput | null {
  if (!isObject(item)) {
    contracts.reject('music_platform', 'malformed', 'not-an-object');
    return null;
  }
  const found = contracts.recognise('music_platform', { type: item.type }, item);
  if (!found.ok || found.ingest.kind !== 'event') return null;
  return { kind: 'event', platform: 'music_platform', type: found.ingest.type, raw: item, externalId: externalIdOf('music_platform', String(item.id)), ...(found.ingest.publish ? { publish: found.ingest.publish } : {}) };
}

/** One page of the feed: the items as sent and the cursor to carry on from; null when the platform did not answer. */
async function readFeed(apiUrl: string, cursor: string | null, token: string | null, timeoutMs: number): Promise<{ items: unknown[]; nextCursor: string | null } | null> {
  const url = new URL(`${apiUrl.replace(/\/+$/, '')}/me/activity`);
  if (cursor) url.searchParams.set('cursor', cursor);
  try {
    const res = await fetch(url, { headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return null;
    const body = (await res.json()) as unknown;
    if (!isObject(body)) return null;
    return { items: Array.isArray(body.items) ? (body.items as unknown[]) : [], nextCursor: typeof body.next_cursor === 'string' && body.next_cursor.length > 0 ? body.next_cursor : null };
  } catch {
    return null;
  }
}

export function createMusicPoller(deps: { apiUrl: string; intervalMs: number; timeoutMs: number; connected: () => Promise<Connected[]>; deliver: Deliver; contracts: Contracts; log: Logger; channelToken?: ChannelToken }): Worker {
  const cursors = new Map<string, string | null>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;

  async function pollOne(unit: string): Promise<void> {
    if (!cursors.has(unit)) return;
    const c = connectedOf(unit);
    const grant = deps.channelToken ? await deps.channelToken(c.accountId) : { token: null, reconnect: false };
    if (grant.reconnect) return;
    const page = await readFeed(deps.apiUrl, cursors.get(unit) ?? null, grant.token, deps.timeoutMs);
    if (!page) return;
    for (const item of page.items) {
      if (!cursors.has(unit)) return; // the lease went while the page was read
      const input = musicItemInput(deps.contracts, item);
      if (input) await deps.deliver(c.accountId, input);
    }
    if (page.nextCursor && cursors.has(unit)) cursors.set(unit, page.nextCursor);
  }

  const tick = (): Promise<void> => {
    running ??= (async () => {
      for (const unit of [...cursors.keys()]) await pollOne(unit).catch((error: unknown) => deps.log.warn({ err: error }, 'music_platform activity poll failed'));
    })().finally(() => {
      running = null;
    });
    return running;
  };

  return {
    kind: 'music_platform',
    periodMs: deps.intervalMs,
    list: async () => (await deps.connected()).map(unitOf),
    start(unit) {
      if (!cursors.has(unit)) cursors.set(unit, null);
      if (!timer) {
        timer = setInterval(() => void tick(), deps.intervalMs);
        timer.unref();
      }
    },
    async stop(unit) {
      cursors.delete(unit);
      await running;
    },
    async stopAll() {
      cursors.clear();
      clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
