/**
 * Chat (Part 2, "Chat"): the ingest pipeline every platform path ends in (webhooks, the
 * platform_a socket worker, the platform_b poller), the history with its filters, the chatter
 * search, send and moderate through the platform adapters, and the profile refresh with its
 * cooldown. Everything a socket sees goes out on the internal bus channel `chat:{account_id}`
 * (relayed to sockets as `chat:message`) only after its transaction committed: a full message row,
 * or a sub-type discriminated by `type` (`chat:delete`, `chat:clear_user`, `chat:moderation_log`,
 * `chat:user_treatment_update`). Gates are enforced by the bindings' shared code; this service
 * checks data only (input shapes, the per-action moderation permission, connections, cooldowns).
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { WsFrameData } from '../../../generated/ws';
import { wsDocument, wsFrameData } from '../../../generated/ws-document';
import { hasPermission, requireAccountId, type AuthContext } from '../../auth/context';
import { AppError, scrubbedMessages } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { Cache } from '../../infra/cache';
import type { Logger } from '../../infra/logger';
import { shapeOf, toWire } from '../../http/mapping';
import { pageOf, type Page, type PageRequest } from '../../paging';
import type { ChatAdapters } from '../platforms';
import type { ChatIngest, ChatPlatform, ModerationIngest } from './api';
import { chatMessages } from './errors';
import { userTreatments, type ChatRepo, type ModerationEntry } from './repo';
import type { ChatMessage, ChatUserProfile, ChatUserSearchItem, ModerateInput, ModerateResult, ModerationAction, SendErrorCode, SendInput, SendResult, UserTreatment } from './types';
import { UUID_RE } from '../../infra/ids';

export const chatPlatforms: readonly ChatPlatform[] = ['platform_a', 'platform_b', 'platform_c'];
/** Platforms whose chat is sent (and moderated) as the acting user through a login grant; platform_b goes through the channel connection. */
const loginSendPlatforms: ReadonlySet<string> = new Set(['platform_a', 'platform_c']);

export const HISTORY_SEARCH_WINDOW_MS = 12 * 3600 * 1000;
export const MAX_KEYWORDS = 20;
export const MAX_KEYWORD_LENGTH = 100;
export const REFRESH_COOLDOWN_SECONDS = 600;
const SEARCH_DEFAULT_LIMIT = 10;
const SEARCH_MAX_LIMIT = 25;
const SEARCH_MIN_QUERY = 2;
const DEFAULT_TIMEOUT_SECS = 300;
/** Longest timeout: platform_b's live chat allows a day, the other platforms two weeks. */
const PLATFORM_B_MAX_TIMEOUT_SECS = 86400;
const MAX_TIMEOUT_SECS = 1_209_600;

export type { ChatMessage, ChatSourceChannelView, ChatUserProfile, ChatUserSearchItem, ModerateInput, ModerateResult, ModerationAction, SendErrorCode, SendInput, SendResult, UserTreatment } from './types';

export interface HistoryFilter {
  platform?: string | null;
  platformUserId?: string | null;
  liveChatId?: string | null;
  from?: string | null;
  to?: string | null;
  /** Keywords: comma-separated (REST) or a list (GraphQL). */
  search?: string | readonly string[] | null;
}

/** A reply the platform adapters read (the webhook's `ChatIngest` carries none). */
export interface ChatReply {
  messageId: string;
  username?: string | null;
  message?: string | null;
}

export const chatBusChannel = (accountId: string) => `chat:${accountId}`;

const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const fieldError = (field: string, message: string) => AppError.validation(message, { fields: [{ field, message }] });

function checkPlatform(platform: unknown): ChatPlatform {
  if (typeof platform !== 'string' || !chatPlatforms.includes(platform as ChatPlatform)) throw fieldError('platform', chatMessages.invalidPlatform);
  return platform as ChatPlatform;
}

/** An optional identifier: absent (undefined/null/blank) or 1 to `max` characters after trimming. */
function optionalId(field: string, value: string | null | undefined, max = 200): string | undefined {
  if (value === undefined || value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed.length === 0 || trimmed.length > max) throw fieldError(field, chatMessages.invalidField(field, max));
  return trimmed;
}

function time(field: 'from' | 'to', value: string | null | undefined): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const parsed = RFC3339_RE.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(parsed.getTime())) throw fieldError(field, chatMessages.invalidTime(field));
  return parsed;
}

/** The keyword rule: split (REST), trim, drop blanks; at most 20 of at most 100 characters. */
export function keywordsOf(search: string | readonly string[] | null | undefined): string[] | undefined {
  if (search === undefined || search === null) return undefined;
  const items = (typeof search === 'string' ? search.split(',') : search).map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) return undefined;
  if (items.length > MAX_KEYWORDS) throw fieldError('search', chatMessages.tooManyKeywords);
  if (items.some((k) => [...k].length > MAX_KEYWORD_LENGTH)) throw fieldError('search', chatMessages.keywordTooLong);
  return items;
}

/** The wire form of a message: the REST row, and the `data` of `chat:message` on the socket. */
const messageShape = shapeOf({ $ref: '#/components/schemas/ChatMessage' });
export const messageWire = (m: ChatMessage) => toWire(m, messageShape) as Record<string, unknown>;

/**
 * `chat:moderation_log` data (Part 2: action, platform, target_user_id, target_username,
 * moderator_name, ...): the entry mapped by the frame's data schema (spec/ws-protocol/; no REST
 * schema to map by), so the stored-only columns stay off the wire.
 */
const moderationShape = shapeOf({ $ref: wsFrameData['chat:moderation_log'] }, wsDocument);
const moderationWire = (e: ModerationEntry) => toWire(e, moderationShape) as WsFrameData['chat:moderation_log'];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown, max: number): string | null => (typeof value === 'string' && value.length > 0 ? value.slice(0, max) : null);

export interface ChatServiceDeps {
  repo: ChatRepo;
  knex: Knex;
  bus: Bus;
  cache: Cache;
  /** Prefix of the cache's Redis keys (the cooldown claim uses Redis directly for its atomic SET NX). */
  redisPrefix: string;
  log: Logger;
  adapters: ChatAdapters;
  /** Display names of users (the moderator's name in the log when their login grant has none). */
  userNames(userIds: string[]): Promise<Map<string, string>>;
  /** The retention windows (events module): `(account_id, days)` per account. */
  retentionWindowsSql: string;
  /** A login connection's access token, refreshed when near expiry (signin module); absent: none sent. */
  grantToken?: (loginConnectionId: string) => Promise<{ token: string | null; reconnect: boolean }>;
  /** A channel or bot connection's access token, under the same refresh rule (signin module); absent: none sent. */
  accountGrantToken?: (accountId: string, platform: string, type: 'channel' | 'bot') => Promise<{ token: string | null; reconnect: boolean }>;
  now?: () => number;
}

export function createChatService(deps: ChatServiceDeps) {
  const { repo, knex, bus, cache, log, adapters } = deps;
  const now = deps.now ?? Date.now;

  /**
   * Who a platform call acts as, and the token it carries. platform_a and platform_c:
   * a signed-in user acts through their login grant assigned in the account; a credential with no
   * user (a service key, an extension's install token) acts as the account's bot connection.
   * platform_b: the channel connection. A stored grant's token is refreshed when near expiry; a
   * connection recorded by an operator has none (the deployment's credential proxy supplies it).
   * A missing or flagged grant is `login_reconnect_required`, the one code Part 1 has for it.
   */
  async function actingAs(
    auth: AuthContext,
    accountId: string,
    platform: ChatPlatform,
    channel: { reconnectRequired: boolean },
  ): Promise<{ ok: true; platformUserId: string | null; displayName: string | null; accessToken: string | null } | { ok: false; message: string }> {
    const tokenOf = async (lookup: Promise<{ token: string | null; reconnect: boolean }> | null, reconnectMessage: string) => {
      const token = lookup ? await lookup : null;
      return token?.reconnect ? ({ ok: false, message: reconnectMessage } as const) : ({ ok: true, token: token?.token ?? null } as const);
    };
    if (!loginSendPlatforms.has(platform)) {
      if (channel.reconnectRequired) return { ok: false, message: chatMessages.channelReconnect(platform) };
      const token = await tokenOf(deps.accountGrantToken?.(accountId, platform, 'channel') ?? null, chatMessages.channelReconnect(platform));
      return token.ok ? { ok: true, platformUserId: null, displayName: null, accessToken: token.token } : token;
    }
    if (auth.userId) {
      const grant = await repo.loginGrant(accountId, auth.userId, platform);
      if (!grant) return { ok: false, message: chatMessages.noLoginGrant(platform) };
      if (grant.reconnectRequired) return { ok: false, message: chatMessages.loginReconnect(platform) };
      const token = await tokenOf(deps.grantToken?.(grant.id) ?? null, chatMessages.loginReconnect(platform));
      return token.ok ? { ok: true, platformUserId: grant.platformUserId, displayName: grant.displayName, accessToken: token.token } : token;
    }
    const bot = await repo.botOf(accountId, platform);
    if (!bot) return { ok: false, message: chatMessages.noBotConnection(platform) };
    if (bot.reconnectRequired) return { ok: false, message: chatMessages.botReconnect(platform) };
    const token = await tokenOf(deps.accountGrantToken?.(accountId, platform, 'bot') ?? null, chatMessages.botReconnect(platform));
    return token.ok ? { ok: true, platformUserId: bot.platformUserId, displayName: null, accessToken: token.token } : token;
  }

  async function publish(accountId: string, payload: Record<string, unknown>): Promise<void> {
    await bus.publish(chatBusChannel(accountId), JSON.stringify(payload));
  }

  /** Publishes after the commit; a bus failure is logged, never undoes the stored row. */
  async function publishAll(accountId: string, payloads: Record<string, unknown>[]): Promise<void> {
    for (const payload of payloads) await publish(accountId, payload).catch((error: unknown) => log.warn({ err: error }, 'chat broadcast failed'));
  }

  function moderationBroadcasts(row: ModerationEntry, deleted: ChatMessage | undefined): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    if ((row.action === 'ban' || row.action === 'timeout') && row.targetUserId) {
      out.push({
        type: 'chat:clear_user',
        platform: row.platform,
        platform_user_id: row.targetUserId,
        deleted_by: row.moderatorName,
        action: row.action,
        duration_secs: row.action === 'ban' ? null : row.durationSecs,
      });
    }
    if (row.action === 'delete' && row.platformMessageId) {
      out.push({ type: 'chat:delete', platform_message_id: row.platformMessageId, deleted_by: deleted?.deletedBy ?? row.moderatorName });
    }
    out.push({ type: 'chat:moderation_log', data: moderationWire(row) });
    return out;
  }

  /** The 10-minute cooldown per account, platform and user: claims it, or answers the seconds left. */
  async function claimRefresh(accountId: string, platform: string, platformUserId: string): Promise<number | null> {
    const key = `chat:refresh:${accountId}:${platform}:${encodeURIComponent(platformUserId)}`;
    const until = now() + REFRESH_COOLDOWN_SECONDS * 1000;
    const left = (stored: string | null) => {
      const expires = Number(stored);
      return Number.isFinite(expires) ? Math.min(REFRESH_COOLDOWN_SECONDS, Math.max(1, Math.ceil((expires - now()) / 1000))) : REFRESH_COOLDOWN_SECONDS;
    };
    if (cache.redis) {
      // Atomic across nodes: only one caller wins the claim.
      const full = deps.redisPrefix + key;
      const set = await cache.redis.set(full, String(until), 'EX', REFRESH_COOLDOWN_SECONDS, 'NX');
      if (set === 'OK') return null;
      return left(await cache.redis.get(full));
    }
    const stored = await cache.get(key);
    if (stored !== null && Number(stored) > now()) return left(stored);
    await cache.set(key, String(until), REFRESH_COOLDOWN_SECONDS);
    return null;
  }

  async function releaseRefresh(accountId: string, platform: string, platformUserId: string): Promise<void> {
    const key = `chat:refresh:${accountId}:${platform}:${encodeURIComponent(platformUserId)}`;
    await (cache.redis ? cache.redis.del(deps.redisPrefix + key) : cache.del(key)).catch((error: unknown) => log.warn({ err: error }, 'refresh cooldown release failed'));
  }

  async function channelOrThrow(accountId: string, platform: ChatPlatform) {
    const channel = await repo.channelOf(accountId, platform);
    if (!channel) throw AppError.notFound(chatMessages.noChannelConnection(platform));
    return channel;
  }

  const service = {
    // ------------------------------------------------------------------ pipeline (ChatPipeline)
    /** Stores the message (once per platform id), updates the sender's profile, then broadcasts the row. */
    async ingestMessage(input: ChatIngest & { reply?: ChatReply | null }): Promise<void> {
      if (typeof input.accountId !== 'string' || !UUID_RE.test(input.accountId)) throw AppError.validation(chatMessages.invalidIngest('accountId'));
      const platform = checkPlatform(input.platform);
      for (const field of ['platformMessageId', 'platformUserId', 'username'] as const) {
        const value = input[field];
        if (typeof value !== 'string' || value.length === 0 || value.length > 200) throw AppError.validation(chatMessages.invalidIngest(field));
      }
      if (typeof input.message !== 'string') throw AppError.validation(chatMessages.invalidIngest('message'));
      const sentAt = input.sentAt instanceof Date && !Number.isNaN(input.sentAt.getTime()) ? input.sentAt : new Date(now());
      const shared = Boolean(input.isSharedChat) && isObject(input.sourceChannel);
      const source = shared
        ? {
            platform_channel_id: String(input.sourceChannel!.platformChannelId),
            login: String(input.sourceChannel!.login),
            display_name: input.sourceChannel!.displayName ?? null,
            avatar_url: input.sourceChannel!.avatarUrl ?? null,
          }
        : null;
      const accountId = input.accountId.toLowerCase();
      const stored = await knex.transaction(async (trx) => {
        const row = await repo.insertMessage(trx, {
          id: randomUUID(),
          account_id: accountId,
          platform,
          platform_message_id: input.platformMessageId,
          platform_user_id: input.platformUserId,
          username: input.username,
          display_name: text(input.displayName, 200),
          avatar_url: text(input.avatarUrl, 2000),
          message: input.message,
          emotes: input.emotes ?? null,
          badges: input.badges ?? null,
          reply_to_message_id: text(input.reply?.messageId, 200),
          reply_to_username: text(input.reply?.username, 200),
          reply_to_message: text(input.reply?.message, 10_000),
          live_chat_id: text(input.liveChatId, 200),
          is_shared_chat: shared,
          source_channel: source,
          raw: isObject(input.raw) ? input.raw : {},
          sent_at: sentAt,
        });
        if (!row) return undefined;
        await repo.seen(trx, {
          accountId,
          platform,
          platformUserId: input.platformUserId,
          username: input.username,
          displayName: text(input.displayName, 200),
          avatarUrl: text(input.avatarUrl, 2000),
          at: sentAt,
        });
        return row;
      });
      // Committed (a redelivery stored nothing and broadcasts nothing).
      if (stored) await publishAll(accountId, [messageWire(stored)]);
    },

    /**
     * Appends to the moderation log (once per platform action id), soft-deletes on `delete`, then
     * broadcasts. True when it was recorded now, false for a redelivery (nothing broadcast).
     */
    async recordModeration(input: ModerationIngest): Promise<boolean> {
      if (typeof input.accountId !== 'string' || !UUID_RE.test(input.accountId)) throw AppError.validation(chatMessages.invalidIngest('accountId'));
      const platform = checkPlatform(input.platform);
      if (!['ban', 'unban', 'timeout', 'delete', 'clear'].includes(input.action)) throw AppError.validation(chatMessages.invalidIngest('action'));
      const raw = isObject(input.raw) ? input.raw : {};
      const messageId = text(raw.platform_message_id, 200) ?? text(raw.message_id, 200);
      const accountId = input.accountId.toLowerCase();
      const duration = typeof input.durationSecs === 'number' && Number.isInteger(input.durationSecs) && input.durationSecs > 0 ? input.durationSecs : null;
      const result = await knex.transaction(async (trx) => {
        const row = await repo.insertModeration(trx, {
          id: randomUUID(),
          account_id: accountId,
          platform,
          action: input.action,
          platform_action_id: text(input.platformActionId, 200),
          target_user_id: text(input.targetUserId, 200),
          target_username: text(input.targetUsername, 200),
          platform_message_id: input.action === 'delete' ? messageId : null,
          moderator_user_id: text(input.moderatorUserId, 200),
          moderator_name: text(input.moderatorName, 200),
          duration_secs: input.action === 'timeout' ? duration : null,
          reason: text(input.reason, 500),
          source: 'platform',
          raw,
        });
        if (!row) return undefined;
        const deleted = row.action === 'delete' && messageId ? await repo.softDelete(trx, accountId, platform, messageId, row.moderatorName ?? null) : undefined;
        return { row, deleted };
      });
      if (result) await publishAll(accountId, moderationBroadcasts(result.row, result.deleted));
      return Boolean(result);
    },

    /** The platform's treatment of a chatter (platform_a's suspicious-user states): stored on the profile and broadcast. */
    async updateUserTreatment(input: { accountId: string; platform: ChatPlatform; platformUserId: string; username?: string | null; treatment: UserTreatment }): Promise<void> {
      const platform = checkPlatform(input.platform);
      if (!userTreatments.includes(input.treatment)) throw AppError.validation(chatMessages.invalidIngest('treatment'));
      if (typeof input.platformUserId !== 'string' || input.platformUserId.length === 0 || input.platformUserId.length > 200) throw AppError.validation(chatMessages.invalidIngest('platformUserId'));
      const accountId = input.accountId.toLowerCase();
      await repo.setTreatment(knex, { accountId, platform, platformUserId: input.platformUserId, username: text(input.username, 200) ?? input.platformUserId, treatment: input.treatment });
      await publishAll(accountId, [{ type: 'chat:user_treatment_update', platform, platform_user_id: input.platformUserId, user_treatment: input.treatment }]);
    },

    // ------------------------------------------------------------------ reads
    async history(auth: AuthContext, filter: HistoryFilter, request: PageRequest): Promise<Page<ChatMessage>> {
      const accountId = requireAccountId(auth);
      const platform = filter.platform ? checkPlatform(filter.platform) : undefined;
      const keywords = keywordsOf(filter.search);
      let from = time('from', filter.from);
      const to = time('to', filter.to);
      // A keyword search always has a lower bound: `from`, or the last 12 hours.
      if (keywords && !from) from = new Date(now() - HISTORY_SEARCH_WINDOW_MS);
      const { rows, total } = await repo.history(
        accountId,
        {
          platform,
          platformUserId: optionalId('platform_user_id', filter.platformUserId),
          liveChatId: optionalId('live_chat_id', filter.liveChatId),
          keywords,
          from,
          to,
        },
        request.limit,
        request.offset,
      );
      return pageOf(rows, total, request);
    },

    async searchUsers(auth: AuthContext, input: { query?: string | null; platforms?: string | readonly string[] | null; limit?: number | null }): Promise<ChatUserSearchItem[]> {
      const accountId = requireAccountId(auth);
      const query = (input.query ?? '').trim();
      const platforms = (typeof input.platforms === 'string' ? input.platforms.split(',') : (input.platforms ?? [])).map((p) => p.trim()).filter(Boolean).map(checkPlatform);
      const asked = typeof input.limit === 'number' && Number.isFinite(input.limit) ? Math.trunc(input.limit) : SEARCH_DEFAULT_LIMIT;
      const limit = Math.min(SEARCH_MAX_LIMIT, Math.max(1, asked));
      if ([...query].length < SEARCH_MIN_QUERY) return [];
      return (await repo.searchUsers(accountId, query, platforms.length ? platforms : undefined, limit));
    },

    // ------------------------------------------------------------------ platform actions
    /** Part 1 "chat/send": every outcome is a result (200); only an unsupported platform or no channel connection throws. */
    async send(auth: AuthContext, input: SendInput): Promise<SendResult> {
      const accountId = requireAccountId(auth);
      const platform = checkPlatform(input.platform);
      const message = typeof input.message === 'string' ? input.message.trim() : '';
      if (message.length === 0 || [...message].length > 500) throw fieldError('message', chatMessages.invalidMessage);
      const liveChatId = optionalId('live_chat_id', input.liveChatId);
      if (liveChatId && platform !== 'platform_b') throw fieldError('live_chat_id', chatMessages.liveChatIdPlatformB);
      const replyTo = optionalId('reply_to_message_id', input.replyToMessageId);
      // Part 1 "chat/send": no channel connection is a hard validation error (400), not a lookup miss.
      const channel = await repo.channelOf(accountId, platform);
      if (!channel) throw fieldError('platform', chatMessages.noChannelConnection(platform));
      const failed = (errorCode: SendErrorCode, error: string): SendResult => ({ sent: false, errorCode, error, platform });

      const acting = await actingAs(auth, accountId, platform, channel);
      if (!acting.ok) return failed('login_reconnect_required', acting.message);
      const { platformUserId: senderId, accessToken } = acting;
      const adapter = adapters[platform];
      let liveChat = liveChatId ?? null;
      if (platform === 'platform_b' && !liveChat) {
        const resolved = await adapter.resolveLiveChatId(channel.platformChannelId, accessToken);
        if (!resolved.ok) return resolved.kind === 'refused' ? failed('send_failed', chatMessages.sendFailed) : failed('internal_error', chatMessages.platformUnreachable);
        if (!resolved.value) return failed('send_failed', chatMessages.sendFailed);
        liveChat = resolved.value;
      }
      const outcome = await adapter.send({ channelId: channel.platformChannelId, senderId, message, liveChatId: liveChat, replyToMessageId: replyTo ?? null, accessToken });
      if (outcome.ok) return { sent: true, messageId: outcome.value.messageId, platform };
      log.warn({ platform, kind: outcome.kind, reason: outcome.message }, 'chat send failed');
      return outcome.kind === 'refused' ? failed('send_failed', chatMessages.sendFailed) : failed('internal_error', chatMessages.platformUnreachable);
    },

    /** Ban, timeout or delete through the platform; on success logged and broadcast like a platform's own action. */
    async moderate(auth: AuthContext, input: ModerateInput): Promise<ModerateResult> {
      const accountId = requireAccountId(auth);
      if (!['ban', 'timeout', 'delete'].includes(input.action)) throw fieldError('action', chatMessages.invalidAction);
      const action = input.action as ModerationAction;
      // The gate admitted any of the three; the action needs its own.
      const permission = `chat:${action}`;
      if (!hasPermission(auth, permission)) throw AppError.forbidden(`Missing permission: ${permission}`);
      const platform = checkPlatform(input.platform);
      const userId = optionalId('user_id', input.userId);
      const messageId = optionalId('message_id', input.messageId);
      if (action !== 'delete' && !userId) throw fieldError('user_id', chatMessages.userIdRequired);
      if (action === 'delete' && !messageId) throw fieldError('message_id', chatMessages.messageIdRequired);
      let duration: number | null = null;
      if (action === 'timeout') {
        duration = input.durationSecs ?? DEFAULT_TIMEOUT_SECS;
        const max = platform === 'platform_b' ? PLATFORM_B_MAX_TIMEOUT_SECS : MAX_TIMEOUT_SECS;
        if (!Number.isInteger(duration) || duration < 1 || duration > max) throw fieldError('duration_secs', chatMessages.invalidDuration);
      }
      if (input.reason !== undefined && input.reason !== null && [...input.reason].length > 500) throw fieldError('reason', chatMessages.invalidReason);
      const reason = input.reason?.trim() || null;
      const liveChatId = optionalId('live_chat_id', input.liveChatId);
      if (liveChatId && platform !== 'platform_b') throw fieldError('live_chat_id', chatMessages.liveChatIdPlatformB);
      const channel = await channelOrThrow(accountId, platform);
      const refusedResult = (errorCode: string, message: string): ModerateResult => ({ success: false, action, platform, details: { error_code: errorCode, message } });

      const acting = await actingAs(auth, accountId, platform, channel);
      if (!acting.ok) return refusedResult('login_reconnect_required', acting.message);
      const adapter = adapters[platform];
      let liveChat = liveChatId ?? null;
      if (platform === 'platform_b' && !liveChat) {
        const resolved = await adapter.resolveLiveChatId(channel.platformChannelId, acting.accessToken);
        if (!resolved.ok) return refusedResult(resolved.kind === 'refused' ? 'moderation_failed' : 'internal_error', resolved.kind === 'refused' ? chatMessages.moderationFailed : chatMessages.platformUnreachable);
        liveChat = resolved.value;
      }
      const outcome = await adapter.moderate({
        channelId: channel.platformChannelId,
        action,
        userId: userId ?? null,
        messageId: messageId ?? null,
        durationSecs: duration,
        reason,
        liveChatId: liveChat,
        moderatorId: acting.platformUserId,
        accessToken: acting.accessToken,
      });
      if (!outcome.ok) {
        log.warn({ platform, action, kind: outcome.kind, reason: outcome.message }, 'chat moderation failed');
        return outcome.kind === 'refused' ? refusedResult('moderation_failed', chatMessages.moderationFailed) : refusedResult('internal_error', chatMessages.platformUnreachable);
      }
      const moderatorName = acting.displayName ?? (auth.userId ? ((await deps.userNames([auth.userId])).get(auth.userId) ?? null) : (auth.label ?? null));
      const result = await knex.transaction(async (trx) => {
        const target = userId ? await repo.profile(accountId, platform, userId, trx) : undefined;
        const row = (await repo.insertModeration(trx, {
          id: randomUUID(),
          account_id: accountId,
          platform,
          action,
          platform_action_id: null,
          target_user_id: userId ?? null,
          target_username: target?.username ?? null,
          platform_message_id: messageId ?? null,
          moderator_user_id: acting.platformUserId,
          moderator_name: moderatorName,
          duration_secs: duration,
          reason,
          source: 'service',
          raw: { acting_user_id: auth.userId, ...(liveChat ? { live_chat_id: liveChat } : {}) },
        }))!;
        const deleted = action === 'delete' && messageId ? await repo.softDelete(trx, accountId, platform, messageId, moderatorName) : undefined;
        if (row.action === 'delete' && !row.targetUserId && deleted) {
          row.targetUserId = deleted.platformUserId;
          row.targetUsername = deleted.username;
        }
        return { row, deleted };
      });
      await publishAll(accountId, moderationBroadcasts(result.row, result.deleted));
      return { success: true, action, platform };
    },

    /** Re-fetches a chatter's profile; one refresh per account, platform and user every 10 minutes. */
    async refreshProfile(auth: AuthContext, platformInput: string, platformUserIdInput: string): Promise<ChatUserProfile> {
      const accountId = requireAccountId(auth);
      const platform = checkPlatform(platformInput);
      const platformUserId = optionalId('platform_user_id', platformUserIdInput);
      if (!platformUserId) throw fieldError('platform_user_id', chatMessages.invalidField('platform_user_id', 200));
      const wait = await claimRefresh(accountId, platform, platformUserId);
      if (wait !== null) throw new AppError('REFRESH_COOLDOWN', chatMessages.refreshCooldown(wait), { retry_after_seconds: wait });
      const fetched = await adapters[platform].fetchUser(platformUserId);
      if (!fetched.ok || !fetched.value) {
        // Nothing was refreshed: the next attempt need not wait.
        await releaseRefresh(accountId, platform, platformUserId);
        if (fetched.ok || fetched.kind === 'refused') throw AppError.notFound(chatMessages.platformUserNotFound);
        // Not configured or not answering: an expected state of a third party, not a fault here.
        log.warn({ platform, reason: fetched.message }, 'chat profile refresh failed');
        throw new AppError('PLATFORM_UNAVAILABLE', scrubbedMessages.PLATFORM_UNAVAILABLE);
      }
      return repo.refreshed({ accountId, platform, platformUserId, username: fetched.value.username, displayName: fetched.value.displayName, avatarUrl: fetched.value.avatarUrl });
    },

    // ------------------------------------------------------------------ retention
    /** Chat rows older than each account's effective chat_retention_days (0 keeps forever); answers rows deleted. */
    sweepRetention: (): Promise<number> => repo.deleteExpired(deps.retentionWindowsSql),

    /** The moderation log of an account, newest first (tests and operators). */
    moderationLog: async (accountId: string, limit = 50) => (await repo.moderationLog(accountId, limit)).map(moderationWire),
  };
  return service;
}

export type ChatService = ReturnType<typeof createChatService>;
