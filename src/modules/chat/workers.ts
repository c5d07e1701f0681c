/**
 * Ingest workers for the platforms that do not push webhooks: platform_a's persistent outbound
 * chat socket (one per connected channel, reconnected after a drop) and platform_b's live chat
 * polling. Each connected channel is a unit of owned work (src/modules/workers/leases.ts): the
 * node holding its lease runs it, `start(unit)` and `stop(unit)` follow the lease. Both only
 * translate the platform's messages into the pipeline (`ingestMessage`, `recordModeration`,
 * `updateUserTreatment`), which is idempotent on the platform's ids, so a replay after a
 * reconnect or a handover between nodes stores nothing twice.
 *
 * platform_a socket (`{socket_url}?channel_id=<id>`), JSON text frames:
 * - `{ type: 'chat.message', id, user_id, login, display_name?, avatar_url?, message, emotes?, badges?,
 *     reply?: { message_id, login?, message? }, shared_chat?: { channel_id, login, display_name?, avatar_url? }, sent_at? }`
 * - `{ type: 'moderation', id?, action: ban | unban | timeout | delete | clear, target_user_id?, target_login?,
 *     moderator_id?, moderator_login?, duration_secs?, reason?, message_id? }`
 * - `{ type: 'user.treatment', user_id, login?, treatment: active_monitoring | restricted | none }`
 * - `{ type: 'notification', id, event: follow | subscription | gift | cheer | raid, user_id?, login?, display_name?, ... }`
 *   (issue 33 item 6): the channel's stream events. Each is stored and broadcast through the
 *   events module's `emitFor`, the path of `POST /v1/events/emit`, as `platform_a:follower`,
 *   `platform_a:subscribe`, `platform_a:gift` (the worker's name for sub gifts), `platform_a:cheer`
 *   or `platform_a:raid`, with the whole frame as `raw` and `platform_a:<id>` as its external id,
 *   so a frame replayed on a reconnect or after a handover is stored and broadcast once. Gift
 *   frames meet the events module's community gift bundling as any emitted gift does (a header
 *   with `community_gift_id` and `total`, its hidden notices, a standalone summary held).
 * A `moderation` frame with `ban` or `unban` also goes to the events channel as `platform_a:ban` /
 * `platform_a:unban`, broadcast and never stored (Part 2: they flow through the chat path), once
 * per moderation action the chat path recorded. Other frames are ignored.
 */
import { createHash } from 'node:crypto';
import WebSocket, { type RawData } from 'ws';
import { guardFor } from '../../infra/listeners';
import type { Logger } from '../../infra/logger';
import type { OwnedWork } from '../workers';
import type { ChatPlatformAdapter } from './adapters';
import type { ChatService } from './service';
import type { UserTreatment } from './types';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const date = (value: unknown): Date | undefined => {
  const parsed = typeof value === 'string' ? new Date(value) : undefined;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed : undefined;
};

export interface Connected {
  accountId: string;
  platformChannelId: string;
}

/** A unit of ingest: `${account_id}:${platform_channel_id}`. */
export const unitOf = (c: Connected): string => `${c.accountId}:${c.platformChannelId}`;
export function connectedOf(unit: string): Connected {
  const split = unit.indexOf(':');
  return { accountId: unit.slice(0, split), platformChannelId: unit.slice(split + 1) };
}

export interface Worker extends OwnedWork {
  /** Stops every unit this node runs (the module closing). */
  stopAll(): Promise<void>;
}

type Pipeline = Pick<ChatService, 'ingestMessage' | 'recordModeration' | 'updateUserTreatment'>;

/** The events module's public entries the platform_a worker feeds (stored events, and broadcast-only ones). */
export interface EventSink {
  emitFor(accountId: string, input: { type: string; platform: string; raw: Record<string, unknown>; externalId?: string | null }): Promise<unknown>;
  emitBot(input: { accountId: string; eventType: string; platform: string; username: string; raw: unknown }): Promise<unknown>;
}

/** platform_a notification names → event types (Part 2 catalogue; `gift` is the worker's name for sub gifts). */
export const platformANotificationTypes: Readonly<Record<string, string>> = {
  follow: 'platform_a:follower',
  subscription: 'platform_a:subscribe',
  gift: 'platform_a:gift',
  cheer: 'platform_a:cheer',
  raid: 'platform_a:raid',
};

/** The event's external id (at most 255 characters, the events table's bound). */
const externalIdOf = (id: string) => (id.length <= 240 ? `platform_a:${id}` : `platform_a:sha256:${createHash('sha256').update(id).digest('hex')}`);

/** Translates one platform_a socket frame into the pipeline (chat) and the events module (stream events). */
export async function handlePlatformAFrame(pipeline: Pipeline, accountId: string, frame: unknown, events?: EventSink): Promise<void> {
  if (!isObject(frame)) return;
  switch (frame.type) {
    case 'chat.message': {
      const id = str(frame.id);
      const userId = str(frame.user_id);
      const login = str(frame.login);
      if (!id || !userId || !login || typeof frame.message !== 'string') return;
      const reply = isObject(frame.reply) && str(frame.reply.message_id) ? { messageId: str(frame.reply.message_id)!, username: str(frame.reply.login), message: str(frame.reply.message) } : null;
      const shared = isObject(frame.shared_chat) && str(frame.shared_chat.channel_id) ? frame.shared_chat : null;
      await pipeline.ingestMessage({
        accountId,
        platform: 'platform_a',
        platformMessageId: id,
        platformUserId: userId,
        username: login,
        displayName: str(frame.display_name),
        avatarUrl: str(frame.avatar_url),
        message: frame.message,
        emotes: frame.emotes ?? null,
        badges: frame.badges ?? null,
        isSharedChat: Boolean(shared),
        sourceChannel: shared ? { platformChannelId: str(shared.channel_id)!, login: str(shared.login) ?? str(shared.channel_id)!, displayName: str(shared.display_name), avatarUrl: str(shared.avatar_url) } : null,
        raw: frame,
        sentAt: date(frame.sent_at),
        reply,
      });
      return;
    }
    case 'moderation': {
      const action = frame.action;
      if (action !== 'ban' && action !== 'unban' && action !== 'timeout' && action !== 'delete' && action !== 'clear') return;
      const recorded = await pipeline.recordModeration({
        accountId,
        platform: 'platform_a',
        action,
        platformActionId: str(frame.id),
        targetUserId: str(frame.target_user_id),
        targetUsername: str(frame.target_login),
        moderatorUserId: str(frame.moderator_id),
        moderatorName: str(frame.moderator_login),
        durationSecs: typeof frame.duration_secs === 'number' ? frame.duration_secs : null,
        reason: str(frame.reason),
        raw: frame,
      });
      const target = str(frame.target_login) ?? str(frame.target_user_id);
      if (recorded && events && (action === 'ban' || action === 'unban') && target) {
        await events.emitBot({ accountId, eventType: `platform_a:${action}`, platform: 'platform_a', username: target.slice(0, 100), raw: frame });
      }
      return;
    }
    case 'notification': {
      const id = str(frame.id);
      const type = typeof frame.event === 'string' ? platformANotificationTypes[frame.event] : undefined;
      if (!id || !type || !events) return;
      await events.emitFor(accountId, { type, platform: 'platform_a', raw: frame, externalId: externalIdOf(id) });
      return;
    }
    case 'user.treatment': {
      const userId = str(frame.user_id);
      const treatment = frame.treatment;
      if (!userId || (treatment !== 'active_monitoring' && treatment !== 'restricted' && treatment !== 'none')) return;
      await pipeline.updateUserTreatment({ accountId, platform: 'platform_a', platformUserId: userId, username: str(frame.login), treatment: treatment as UserTreatment });
      return;
    }
    default:
      return;
  }
}

/**
 * platform_a: one socket per channel this node holds, reopened `reconnectMs` after a drop while
 * the lease lasts. `stop` closes the socket and waits for the frames it delivered, so nothing is
 * ingested from it after the lease is given up.
 */
export function createPlatformASocketWorker(deps: { socketUrl: string; reconnectMs: number; connected: () => Promise<Connected[]>; pipeline: Pipeline; events?: EventSink; log: Logger }): Worker {
  const units = new Map<string, { socket: WebSocket | null; chain: Promise<void>; retry?: NodeJS.Timeout }>();

  function open(unit: string): void {
    const entry = units.get(unit);
    if (!entry) return;
    const c = connectedOf(unit);
    const url = new URL(deps.socketUrl);
    url.searchParams.set('channel_id', c.platformChannelId);
    const socket = new WebSocket(url);
    entry.socket = socket;
    // Frames of one socket are handled in order.
    // The socket's callbacks are guarded (src/infra/listeners.ts): a failure is logged, never thrown into ws.
    const guard = guardFor((error) => deps.log.warn({ err: error }, 'platform_a chat socket handler failed'));
    socket.on(
      'message',
      guard((data: RawData) => {
        let frame: unknown;
        try {
          frame = JSON.parse(data.toString());
        } catch {
          return;
        }
        if (units.get(unit)?.socket !== socket) return;
        entry.chain = entry.chain.then(() => handlePlatformAFrame(deps.pipeline, c.accountId, frame, deps.events)).catch(guard((error: unknown) => deps.log.warn({ err: error }, 'platform_a chat frame failed')));
      }),
    );
    socket.on('error', guard((error: Error) => deps.log.debug({ err: error }, 'platform_a chat socket error')));
    socket.on(
      'close',
      guard(() => {
        const current = units.get(unit);
        if (current?.socket !== socket) return;
        current.socket = null;
        current.retry = setTimeout(() => open(unit), deps.reconnectMs);
        current.retry.unref();
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
      open(unit);
    },
    stop,
    async stopAll() {
      await Promise.all([...units.keys()].map(stop));
    },
  };
}

/**
 * platform_b: polls the live chat of every channel this node holds, with the channel connection's
 * token (`channelToken`) as every platform_b call. The live chat id is resolved
 * once per broadcast (again after the platform stops answering for it); the page token carries on
 * between polls so each message is read once (a node taking a channel over starts from the first
 * page, which the idempotent pipeline stores nothing of twice).
 */
export function createPlatformBPoller(deps: {
  adapter: ChatPlatformAdapter;
  intervalMs: number;
  connected: () => Promise<Connected[]>;
  pipeline: Pipeline;
  log: Logger;
  /**
   * The account's platform_b channel connection's access token (signin's `accountGrantToken`,
   * refreshed when near expiry), sent with the live chat look-up and every poll as platform
   * calls carry it; `reconnect`: the grant is flagged, so the channel is not polled until it is
   * connected again. Absent, or `token: null` (an operator-recorded connection): none is sent.
   */
  channelToken?: (accountId: string) => Promise<{ token: string | null; reconnect: boolean }>;
}): Worker {
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
      await deps.pipeline.ingestMessage({
        accountId: c.accountId,
        platform: 'platform_b',
        platformMessageId: item.id,
        platformUserId: item.authorId,
        username: item.authorName,
        displayName: item.authorDisplayName,
        avatarUrl: item.authorAvatarUrl,
        message: item.message,
        liveChatId: current.liveChatId,
        raw: item.raw,
        sentAt: date(item.publishedAt),
      });
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
      .catch((error: unknown) => deps.log.warn({ err: error }, 'platform_b chat poller failed'))
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
