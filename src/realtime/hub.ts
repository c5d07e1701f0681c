/**
 * This node's channel registry: which local sessions listen on which channel, with one bus
 * subscription per relayed channel while at least one local session listens. Messages reach
 * sockets only through the bus, so every node serves every client.
 */
import type { Bus } from '../infra/bus';
import type { Logger } from '../infra/logger';
import type { WsServerMessage } from '../../generated/ws';
import { busChannelFor, relayEnvelope } from './channels';
import { isBuffered, isStored, storedCursor, unframe, type ChannelLog, type StoredReplay } from './resume';

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

export function createHub(deps: { bus: Bus; log: Logger; channelLog?: ChannelLog; storedReplay?: StoredReplay }) {
  const listeners = new Map<string, Set<Subscriber>>();
  const unsubscribers = new Map<string, Promise<() => Promise<void>>>();

  /** The cursor of a bus message: logged ones carry theirs; a stored family's comes from the event itself. */
  function cursorOf(busChannel: string, text: string): { cursor: string | null; message: string } {
    const framed = unframe(text);
    if (framed.cursor !== null || !isStored(busChannel)) return framed;
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      return framed;
    }
    return { cursor: storedCursor(payload), message: text };
  }

  function fanOut(socketChannel: string, busChannel: string, text: string): void {
    const { cursor, message } = cursorOf(busChannel, text);
    const envelope = relayEnvelope(busChannel, socketChannel, message, cursor);
    if (!envelope) {
      deps.log.warn({ channel: busChannel }, 'dropped a bus message that is not JSON');
      return;
    }
    const frame = Buffer.from(JSON.stringify(envelope));
    for (const subscriber of listeners.get(socketChannel) ?? []) subscriber.deliver(envelope, socketChannel, frame);
  }

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
        if (busChannel) {
          const pending = deps.bus.subscribe(busChannel, (_c, message) => fanOut(channel, busChannel, message));
          unsubscribers.set(channel, pending);
          try {
            await pending;
          } catch (error) {
            listeners.delete(channel);
            unsubscribers.delete(channel);
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
  };
}

export type Hub = ReturnType<typeof createHub>;
