/**
 * Where a normalised input (inputs.ts) goes once its account is known: an event is stored and
 * broadcast through the events module's `emitFor` (the path of POST /v1/events/emit, idempotent on
 * the external id, so a platform's replay stores and broadcasts nothing twice), and a stream
 * start, change or end that was new also reaches streams.ts (channel notice, stream session),
 * and a new music playback event is published as `music_platform:now-playing`;
 * chat, moderation and treatment inputs go to the chat module's pipeline (registered with
 * `registerChat`, read at call time), and a moderation input with a transient type
 * (platform_a:ban / unban) is broadcast, never stored, once the moderation log recorded it.
 */
import type { ChatSink, PlatformInput } from './inputs';
import type { Streams } from './streams';

/** The events module's entries the platforms feed (stored events, and broadcast-only ones). */
export interface EventSink {
  emitFor(accountId: string, input: { type: string; platform: string; raw: Record<string, unknown>; externalId?: string | null }): Promise<{ duplicate: boolean; event: { id: string; raw: unknown; createdAt: string } }>;
  emitBot(input: { accountId: string; eventType: string; platform: string; username: string; raw: unknown }): Promise<unknown>;
}

export type Deliver = (accountId: string, input: PlatformInput) => Promise<void>;

export function createDeliver(deps: { events: EventSink; chat: () => ChatSink | null; streams: Streams }): Deliver {
  return async function deliver(accountId, input) {
    switch (input.kind) {
      case 'event': {
        const result = await deps.events.emitFor(accountId, { type: input.type, platform: input.platform, raw: input.raw, externalId: input.externalId });
        if (input.publish === 'now-playing' && !result.duplicate) await deps.streams.nowPlaying(accountId, { id: result.event.id, type: input.type, raw: input.raw, createdAt: result.event.createdAt });
        if (input.stream && !result.duplicate) {
          await deps.streams.report({ accountId, platform: input.platform, state: input.stream, platformChannelId: input.platformChannelId, event: { id: result.event.id, raw: input.raw, createdAt: result.event.createdAt } });
        }
        return;
      }
      case 'chat': {
        const chat = deps.chat();
        if (chat) await chat.ingestMessage({ accountId, ...input.message });
        return;
      }
      case 'moderation': {
        const chat = deps.chat();
        if (!chat) return;
        const recorded = await chat.recordModeration({ accountId, ...input.moderation });
        if (recorded && input.transient) {
          await deps.events.emitBot({ accountId, eventType: input.transient.type, platform: input.moderation.platform, username: input.transient.username.slice(0, 100), raw: input.moderation.raw ?? {} });
        }
        return;
      }
      case 'treatment': {
        const chat = deps.chat();
        if (chat) await chat.updateUserTreatment({ accountId, ...input.treatment });
        return;
      }
    }
  };
}
