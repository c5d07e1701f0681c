/**
 * Presence channels (Part 2, "Events": `presence:{resource_channel}`): who is connected to a
 * resource. A subscriber gets a `bootstrap` event with the connection list, then `presence:join`
 * and `presence:leave` as others come and go, on every node: joins and leaves travel on the bus
 * channel of the same name, and a node that starts listening on a channel asks the others for
 * their members (`sync`) before it answers its first bootstrap; a reply later than that wait reaches
 * the node's sessions as `presence:join`. Owns no gate: the channel gate
 * (AccountScoped, resolved through the wrapped channel's account) runs before `join`.
 */
import type { Bus } from '../infra/bus';
import type { Logger } from '../infra/logger';
import type { WsServerMessage } from '../../generated/ws';

export interface PresenceMember {
  session_id: string;
  user_id: string | null;
  account_id: string | null;
  display_name: string | null;
  avatar_url: string | null;
}

type BusNote =
  | { op: 'join' | 'leave'; node: string; member: PresenceMember }
  | { op: 'sync'; node: string }
  | { op: 'members'; node: string; to: string; members: PresenceMember[] };

interface ChannelState {
  /** Sessions of this node on the channel, with their delivery. */
  local: Map<string, { member: PresenceMember; deliver(message: WsServerMessage): void }>;
  /** Every member this node knows of (its own and other nodes'). */
  known: Map<string, PresenceMember>;
  stop: Promise<() => Promise<void>>;
}

export const isPresenceChannel = (channel: string) => channel.startsWith('presence:');

export function createPresence(deps: { bus: Bus; log: Logger; nodeId: string; syncWaitMs?: number }) {
  const { bus, log, nodeId } = deps;
  const states = new Map<string, ChannelState>();
  const event = (channel: string, eventType: string, data: unknown): WsServerMessage => ({ type: 'event', channel, event_type: eventType, data }) as WsServerMessage;

  /** Tells this node's other sessions on the channel that `member` joined or left. */
  function announce(state: ChannelState, channel: string, op: 'join' | 'leave', member: PresenceMember): void {
    for (const [sessionId, local] of state.local) {
      if (sessionId !== member.session_id) local.deliver(event(channel, `presence:${op}`, member));
    }
  }

  function onNote(channel: string, text: string): void {
    const state = states.get(channel);
    if (!state) return;
    let note: BusNote;
    try {
      note = JSON.parse(text) as BusNote;
    } catch {
      return;
    }
    switch (note.op) {
      case 'join':
      case 'leave': {
        if (note.op === 'join') state.known.set(note.member.session_id, note.member);
        else state.known.delete(note.member.session_id);
        announce(state, channel, note.op, note.member);
        return;
      }
      case 'sync': {
        if (note.node === nodeId || state.local.size === 0) return;
        const members = [...state.local.values()].map((l) => l.member);
        void bus.publish(channel, JSON.stringify({ op: 'members', node: nodeId, to: note.node, members } satisfies BusNote));
        return;
      }
      case 'members': {
        if (note.to !== nodeId) return;
        // A reply that comes after the sync wait is not lost: members the bootstrap could not list
        // reach this node's sessions as joins, so every list converges.
        for (const member of note.members) {
          if (state.known.has(member.session_id)) continue;
          state.known.set(member.session_id, member);
          announce(state, channel, 'join', member);
        }
        return;
      }
    }
  }

  return {
    /** Adds a session to a presence channel, sends it the bootstrap list and announces its join. */
    async join(channel: string, member: PresenceMember, deliver: (message: WsServerMessage) => void): Promise<void> {
      let state = states.get(channel);
      if (!state) {
        const fresh: ChannelState = { local: new Map(), known: new Map(), stop: bus.subscribe(channel, (_c, text) => onNote(channel, text)) };
        state = fresh;
        states.set(channel, fresh);
        await fresh.stop;
        if (bus.kind === 'redis') {
          await bus.publish(channel, JSON.stringify({ op: 'sync', node: nodeId } satisfies BusNote));
          await new Promise((resolve) => setTimeout(resolve, deps.syncWaitMs ?? 150));
        }
      } else {
        await state.stop;
      }
      state.local.set(member.session_id, { member, deliver });
      state.known.set(member.session_id, member);
      deliver(event(channel, 'bootstrap', { connections: [...state.known.values()] }));
      await bus.publish(channel, JSON.stringify({ op: 'join', node: nodeId, member } satisfies BusNote));
    },
    /** Removes a session (unsubscribe, dropped channel or closed socket) and announces its leave. */
    async leave(channel: string, sessionId: string): Promise<void> {
      const state = states.get(channel);
      const local = state?.local.get(sessionId);
      if (!state || !local) return;
      state.local.delete(sessionId);
      state.known.delete(sessionId);
      await bus.publish(channel, JSON.stringify({ op: 'leave', node: nodeId, member: local.member } satisfies BusNote));
      if (state.local.size === 0) {
        states.delete(channel);
        await (await state.stop)().catch((error: unknown) => log.warn({ err: error, channel }, 'presence unsubscribe failed'));
      }
    },
  };
}

export type Presence = ReturnType<typeof createPresence>;
