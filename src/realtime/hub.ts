/**
 * This node's channel registry: which local sessions listen on which channel, with one bus
 * subscription per relayed channel while at least one local session listens. Messages reach
 * sockets only through the bus, so every node serves every client.
 *
 * Bus outages (Redis unreachable: the bus is not `live`). A message published meanwhile on another
 * node never reaches this one, so:
 * - a `stored` channel (events:{account_id}) is caught up from the stored events, its source: from
 *   the moment the bus stops being live (or this node's publish reached only itself) until a read
 *   that began while it was live again, `settleMs` after the last such sign, its bus messages are held and the events stored after the last one delivered (less `slackMs`, for
 *   commits that land out of order) are read every `pollMs` and delivered in their stored order;
 *   then the held messages that are never stored (test and bot events) follow. Every stored event
 *   is delivered once: a channel remembers the ids it delivered lately. A catch-up the stored source
 *   cannot serve (too far behind) is told with RESUME_GAP before the next frame.
 * - a `buffered` channel's log lives in Redis, which could not record what was published during
 *   the outage: its subscribers get RESUME_GAP when the bus is live again, before its next frame.
 */
import { createHash } from 'node:crypto';
import type { Bus } from '../infra/bus';
import type { Logger } from '../infra/logger';
import type { WsServerMessage } from '../../generated/ws';
import { busChannelFor, relayEnvelope } from './channels';
import { isBuffered, isStored, parseStored, storedCursor, unframe, type ChannelLog, type StoredReplay } from './resume';

/** Bus messages a catching-up channel holds at most (stored events past it still come from the read). */
const HELD_MAX = 1000;

export interface Subscriber {
  readonly id: string;
  /**
   * `channel` is the socket channel the message was relayed to; `frame` is the message already
   * serialised (UTF-8), once for every subscriber of one fan-out: shared, never to be written to.
   */
  deliver(message: WsServerMessage, channel: string, frame?: Buffer): void;
}

/** A replay after a subscribe's `since`: the frames in order, a gap, or null when the channel has no cursors. */
export type HubReplay = { frames: WsServerMessage[] } | { gap: true } | null;

/** The ids of stored events a channel delivered lately (catch-ups read back `slackMs` and skip them). */
const SEEN_IDS = 4096;

/** What a channel of this node delivered, for catching up after a bus outage. */
interface Tail {
  readonly busChannel: string;
  readonly stored: boolean;
  /** When the channel started on this node (ms): a catch-up delivers nothing older. */
  readonly since: number;
  /** The newest stored position delivered (ms). */
  lastMs: number;
  /** Ids of stored events delivered lately, with a digest of the message each was delivered in. */
  readonly seen: Map<string, string>;
  /** Bus messages held while the channel catches up. */
  held: string[] | null;
  pump: Promise<void> | null;
  /** Ends the pump's pause between two reads (a message was held: read again now). */
  wake: (() => void) | null;
}

export interface HubOptions {
  /** How often a stored channel reads the stored events while the bus is down (default 1 s). */
  pollMs?: number;
  /**
   * How long a stored channel goes on reading the stored events after the bus is live again (or
   * after this node's last publish that reached only itself): other nodes' publishers reconnect a
   * little later, and what they publish meanwhile reaches no one else (default 10 s).
   */
  settleMs?: number;
  /** How far before the last delivered event a catch-up reads (default 5 s). */
  slackMs?: number;
}

export const busGapMessage = (channel: string) => `Frames of ${channel} may have been missed while the bus was unreachable; reload its state`;

export function createHub(deps: { bus: Bus; log: Logger; channelLog?: ChannelLog; storedReplay?: StoredReplay; options?: HubOptions }) {
  const listeners = new Map<string, Set<Subscriber>>();
  const unsubscribers = new Map<string, Promise<() => Promise<void>>>();
  const tails = new Map<string, Tail>();
  const pollMs = deps.options?.pollMs ?? 1000;
  const slackMs = deps.options?.slackMs ?? 5000;
  const settleMs = deps.options?.settleMs ?? 10_000;
  /** The last sign of trouble on the bus (a change of `live`, a publish that reached only this node). */
  let troubleAt = 0;
  let closed = false;

  /** The cursor of a bus message: logged ones carry theirs; a stored family's comes from the event itself (with its id). */
  function cursorOf(busChannel: string, text: string): { cursor: string | null; message: string; id?: string } {
    const framed = unframe(text);
    if (framed.cursor !== null || !isStored(busChannel)) return framed;
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      return framed;
    }
    const id = (payload as { id?: unknown } | null)?.id;
    return { cursor: storedCursor(payload), message: text, ...(typeof id === 'string' ? { id: id.toLowerCase() } : {}) };
  }

  function send(socketChannel: string, envelope: WsServerMessage): void {
    const frame = Buffer.from(JSON.stringify(envelope));
    for (const subscriber of listeners.get(socketChannel) ?? []) subscriber.deliver(envelope, socketChannel, frame);
  }

  function deliver(socketChannel: string, busChannel: string, text: string, known?: { cursor: string; id: string }): void {
    const tail = tails.get(socketChannel);
    const { cursor, message, id } = known ? { cursor: known.cursor, message: text, id: known.id } : cursorOf(busChannel, text);
    if (tail?.stored && cursor) {
      // A stored event is delivered once, whichever way it came (the bus or a catch-up): a catch-up
      // skips every id delivered, the bus only the same message again (a community gift header is
      // re-broadcast, patched, under its id).
      const position = parseStored(cursor);
      if (id) {
        const digest = createHash('sha1').update(message).digest('base64');
        const before = tail.seen.get(id);
        if (before !== undefined && (known || before === digest)) return;
        tail.seen.delete(id);
        tail.seen.set(id, digest);
        if (tail.seen.size > SEEN_IDS) tail.seen.delete(tail.seen.keys().next().value!);
      }
      if (position && position.ms > tail.lastMs && id && position.id === id) tail.lastMs = position.ms;
    }
    const envelope = relayEnvelope(busChannel, socketChannel, message, cursor);
    if (!envelope) {
      deps.log.warn({ channel: busChannel }, 'dropped a bus message that is not JSON');
      return;
    }
    send(socketChannel, envelope);
  }

  function fanOut(socketChannel: string, busChannel: string, text: string): void {
    const tail = tails.get(socketChannel);
    if (tail?.held) {
      if (tail.held.length < HELD_MAX) tail.held.push(text);
      tail.wake?.();
      return;
    }
    deliver(socketChannel, busChannel, text);
  }

  function tellGap(socketChannel: string): void {
    send(socketChannel, { type: 'error', code: 'RESUME_GAP', message: busGapMessage(socketChannel), channel: socketChannel } as WsServerMessage);
  }

  /**
   * Catches a stored channel up from the stored events until a read that began while the bus was
   * live ends with nothing held; reads again every `pollMs` while the bus is down.
   */
  async function catchUp(socketChannel: string, tail: Tail): Promise<void> {
    while (!closed && listeners.has(socketChannel)) {
      const liveAtStart = deps.bus.live;
      const held = tail.held ?? [];
      tail.held = [];
      const from = Math.max(tail.since, tail.lastMs - slackMs);
      let found: Awaited<ReturnType<StoredReplay>> | null = null;
      try {
        found = await deps.storedReplay!(tail.busChannel, `e:${from}:00000000-0000-0000-0000-000000000000`);
      } catch (error) {
        deps.log.warn({ err: error, channel: tail.busChannel }, 'catching up a channel from the stored events failed; retrying');
      }
      if (found && 'gap' in found) {
        tellGap(socketChannel);
        tail.lastMs = Date.now();
      } else if (found) {
        for (const frame of found.frames) {
          const position = parseStored(frame.cursor);
          if (position && position.ms >= tail.since) deliver(socketChannel, tail.busChannel, frame.message, { cursor: frame.cursor, id: position.id });
        }
      }
      if (!found) {
        // Not read: what was held waits for the next round.
        tail.held = [...held, ...tail.held];
      } else {
        // What was held and is stored came with the read (it was committed before it was published); the rest follows.
        for (const text of held) deliver(socketChannel, tail.busChannel, text);
        if (liveAtStart && deps.bus.live && tail.held.length === 0 && Date.now() - troubleAt > settleMs) {
          tail.held = null;
          return;
        }
      }
      if (found && tail.held.length > 0) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => done(), pollMs);
        timer.unref?.();
        const done = () => {
          clearTimeout(timer);
          tail.wake = null;
          resolve();
        };
        tail.wake = done;
      });
    }
    tail.held = null;
  }

  function startCatchUp(socketChannel: string, tail: Tail): void {
    tail.held ??= [];
    tail.pump ??= catchUp(socketChannel, tail)
      .catch((error: unknown) => deps.log.warn({ err: error, channel: tail.busChannel }, 'channel catch-up stopped'))
      .finally(() => {
        tail.pump = null;
        // The bus went down again after the last read: go on.
        if (tail.held && listeners.has(socketChannel)) startCatchUp(socketChannel, tail);
      });
  }

  /** Channels whose buffered frames may have been lost while the bus was down. */
  const gapped = new Set<string>();
  const stopLocalOnly = deps.bus.onLocalOnly?.((busChannel) => {
    troubleAt = Date.now();
    for (const [socketChannel, tail] of tails) if (tail.stored && tail.busChannel === busChannel && deps.storedReplay) startCatchUp(socketChannel, tail);
  });
  const stopWatching = deps.bus.onLiveChange((live) => {
    troubleAt = Date.now();
    for (const [socketChannel, tail] of tails) {
      if (tail.stored) {
        if (deps.storedReplay) startCatchUp(socketChannel, tail);
      } else if (!live) gapped.add(socketChannel);
      else if (gapped.delete(socketChannel) && listeners.has(socketChannel)) tellGap(socketChannel);
    }
  });

  return {
    /**
     * Adds a subscriber; idempotent. Resolves once the bus subscription is live, or at once while
     * Redis is down: the bus keeps it locally and makes it live when Redis returns, so a cache
     * outage never fails a subscribe.
     */
    async add(channel: string, subscriber: Subscriber): Promise<void> {
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        const busChannel = busChannelFor(channel);
        if (busChannel && (isStored(busChannel) || isBuffered(busChannel))) {
          const tail: Tail = { busChannel, stored: isStored(busChannel), since: Date.now(), lastMs: 0, seen: new Map(), held: null, pump: null, wake: null };
          tails.set(channel, tail);
          // Subscribed while the bus is down: what other nodes publish meanwhile comes from the stored events.
          if (tail.stored && deps.storedReplay && !deps.bus.live) startCatchUp(channel, tail);
        }
        if (busChannel) {
          const pending = deps.bus.subscribe(busChannel, (_c, message) => fanOut(channel, busChannel, message));
          unsubscribers.set(channel, pending);
          try {
            await pending;
          } catch (error) {
            listeners.delete(channel);
            unsubscribers.delete(channel);
            tails.delete(channel);
            throw error;
          }
        }
      }
      set.add(subscriber);
      await unsubscribers.get(channel);
    },
    async remove(channel: string, subscriber: Subscriber): Promise<void> {
      const set = listeners.get(channel);
      if (!set?.delete(subscriber) || set.size > 0) return;
      listeners.delete(channel);
      tails.delete(channel);
      gapped.delete(channel);
      const pending = unsubscribers.get(channel);
      unsubscribers.delete(channel);
      if (pending) await (await pending)().catch((error: unknown) => deps.log.warn({ err: error, channel }, 'bus unsubscribe failed'));
    },
    /**
     * Publishes a client broadcast on the channel's internal bus channel. Does not wait on a dead
     * Redis: the bus logs the failure and still delivers to this node's subscribers.
     */
    async publish(channel: string, payloadJson: string): Promise<boolean> {
      const busChannel = busChannelFor(channel);
      if (!busChannel) return false;
      await deps.bus.publish(busChannel, payloadJson);
      return true;
    },
    /**
     * The frames of `channel` after the client's `since`, in the envelopes live frames have: from
     * the events table for a stored family, from the channel log for a buffered one.
     */
    async replay(channel: string, since: string): Promise<HubReplay> {
      const busChannel = busChannelFor(channel);
      if (!busChannel) return null;
      const source = isStored(busChannel) ? deps.storedReplay : isBuffered(busChannel) ? deps.channelLog?.after.bind(deps.channelLog) : undefined;
      if (!source) return null;
      const found = await source(busChannel, since);
      if ('gap' in found) return found;
      return { frames: found.frames.map((f) => relayEnvelope(busChannel, channel, f.message, f.cursor)).filter((m): m is WsServerMessage => m !== null) };
    },
    channelCount: () => listeners.size,
    close(): void {
      closed = true;
      stopWatching();
      stopLocalOnly?.();
      for (const tail of tails.values()) tail.wake?.();
    },
  };
}

export type Hub = ReturnType<typeof createHub>;
