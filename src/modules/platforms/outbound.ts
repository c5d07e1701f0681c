/**
 * The platforms' outbound calls: the only code that calls the chat platforms' APIs. Chat (send,
 * moderate, profiles) and the platform_b poller see the `ChatPlatformAdapter` interface;
 * `createHttpAdapter` speaks the platforms' HTTP APIs at the base URL configured per platform (`chat.platforms.<platform>.api_url`), which tests point at a
 * fake server on 127.0.0.1. A request names the acting platform user (`sender_id`, `moderator_id`)
 * and the channel, and carries the acting grant's token as `Authorization: Bearer`: the
 * signed-in user's login grant, or the account's bot connection when no user acts (a service key,
 * an extension), or platform_b's channel connection (also for the live chat polling of its
 * ingest worker). Without a stored grant (an operator-recorded
 * connection) a deployment's credential proxy at the base URL supplies it.
 *
 * Wire contract (JSON):
 * - `POST {api}/channels/{channel_id}/chat/messages` `{ sender_id, message, live_chat_id?, reply_to_message_id? }` → `{ id }`
 * - `POST {api}/channels/{channel_id}/moderation` `{ action, user_id?, message_id?, duration_secs?, reason?, live_chat_id?, moderator_id? }` → 2xx
 * - `GET {api}/users/{user_id}` → `{ id, login, display_name, avatar_url }` (404: unknown user)
 * - `GET {api}/channels/{channel_id}/live-chat` → `{ live_chat_id }` (404: no live broadcast)
 * - `GET {api}/live-chats/{live_chat_id}/messages?page_token=` → `{ items, next_page_token, polling_interval_ms }` (polling, platform_b)
 * A 4xx answer is the platform refusing; a 5xx, a network failure or a timeout is the platform
 * being unreachable. Credentials never appear in logs: the token is only ever in the request header.
 */
import type { ChatPlatform } from './inputs';

export interface PlatformUser {
  platformUserId: string;
  username: string;
  displayName: string | null;
  avatarUrl: string | null;
}

/** What a platform answered: a value, a refusal (4xx) or no answer (5xx, network, timeout, not configured). */
export type PlatformOutcome<T> = { ok: true; value: T } | { ok: false; kind: 'refused' | 'unreachable'; message: string };

export interface SendRequest {
  channelId: string;
  /** The acting platform user: the user's login grant's, or the account's bot's; null when the platform sends as the channel. */
  senderId: string | null;
  message: string;
  liveChatId?: string | null;
  replyToMessageId?: string | null;
  /**
   * The acting grant's access token, sent as `Authorization: Bearer`: the user's login
   * grant, the account's bot connection, or (platform_b) the channel connection; null without one.
   */
  accessToken?: string | null;
}

export interface ModerateRequest {
  channelId: string;
  action: 'ban' | 'timeout' | 'delete';
  userId?: string | null;
  messageId?: string | null;
  durationSecs?: number | null;
  reason?: string | null;
  liveChatId?: string | null;
  moderatorId?: string | null;
  /** The acting grant's access token (as for `SendRequest`), sent as `Authorization: Bearer`; null without one. */
  accessToken?: string | null;
}

export interface ChatPlatformAdapter {
  readonly platform: ChatPlatform;
  send(request: SendRequest): Promise<PlatformOutcome<{ messageId: string }>>;
  moderate(request: ModerateRequest): Promise<PlatformOutcome<null>>;
  /** The platform's profile of a user; `null` when the platform does not know them. */
  fetchUser(platformUserId: string): Promise<PlatformOutcome<PlatformUser | null>>;
  /** The channel's current live chat (platform_b); `null` when it is not live. `accessToken`: the channel connection's. */
  resolveLiveChatId(channelId: string, accessToken?: string | null): Promise<PlatformOutcome<string | null>>;
  /** One page of a live chat (platform_b polling). `accessToken`: the channel connection's. */
  pollLiveChat(liveChatId: string, pageToken: string | null, accessToken?: string | null): Promise<PlatformOutcome<{ items: unknown[]; nextPageToken: string | null; pollingIntervalMs: number | null }>>;
}

export type ChatAdapters = Readonly<Record<ChatPlatform, ChatPlatformAdapter>>;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);

export function createHttpAdapter(platform: ChatPlatform, options: { apiUrl: string | null; timeoutMs: number }): ChatPlatformAdapter {
  const base = options.apiUrl?.replace(/\/+$/, '') ?? null;
  const seg = encodeURIComponent;

  async function call(method: 'GET' | 'POST', path: string, body?: Json, accessToken?: string | null): Promise<PlatformOutcome<{ status: number; json: unknown }>> {
    if (!base) return { ok: false, kind: 'unreachable', message: `${platform} API is not configured` };
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: { accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}), ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch {
      return { ok: false, kind: 'unreachable', message: `${platform} did not answer` };
    }
    const text = await res.text().catch(() => '');
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (res.status >= 500) return { ok: false, kind: 'unreachable', message: `${platform} answered ${res.status}` };
    return { ok: true, value: { status: res.status, json } };
  }

  const refused = (status: number, json: unknown): { ok: false; kind: 'refused'; message: string } => ({
    ok: false,
    kind: 'refused',
    message: (isObject(json) && str(json.error)) || `${platform} answered ${status}`,
  });

  return {
    platform,
    async send(request) {
      const answer = await call('POST', `/channels/${seg(request.channelId)}/chat/messages`, {
        sender_id: request.senderId,
        message: request.message,
        ...(request.liveChatId ? { live_chat_id: request.liveChatId } : {}),
        ...(request.replyToMessageId ? { reply_to_message_id: request.replyToMessageId } : {}),
      }, request.accessToken);
      if (!answer.ok) return answer;
      const { status, json } = answer.value;
      if (status >= 400) return refused(status, json);
      const id = isObject(json) ? str(json.id) : null;
      return id ? { ok: true, value: { messageId: id } } : { ok: false, kind: 'unreachable', message: `${platform} answered without a message id` };
    },
    async moderate(request) {
      const answer = await call('POST', `/channels/${seg(request.channelId)}/moderation`, {
        action: request.action,
        ...(request.userId ? { user_id: request.userId } : {}),
        ...(request.messageId ? { message_id: request.messageId } : {}),
        ...(request.durationSecs !== undefined && request.durationSecs !== null ? { duration_secs: request.durationSecs } : {}),
        ...(request.reason ? { reason: request.reason } : {}),
        ...(request.liveChatId ? { live_chat_id: request.liveChatId } : {}),
        ...(request.moderatorId ? { moderator_id: request.moderatorId } : {}),
      }, request.accessToken);
      if (!answer.ok) return answer;
      return answer.value.status >= 400 ? refused(answer.value.status, answer.value.json) : { ok: true, value: null };
    },
    async fetchUser(platformUserId) {
      const answer = await call('GET', `/users/${seg(platformUserId)}`);
      if (!answer.ok) return answer;
      const { status, json } = answer.value;
      if (status === 404) return { ok: true, value: null };
      if (status >= 400) return refused(status, json);
      const login = isObject(json) ? str(json.login) : null;
      if (!isObject(json) || !login) return { ok: false, kind: 'unreachable', message: `${platform} answered an unreadable profile` };
      return { ok: true, value: { platformUserId, username: login, displayName: str(json.display_name), avatarUrl: str(json.avatar_url) } };
    },
    async resolveLiveChatId(channelId, accessToken) {
      const answer = await call('GET', `/channels/${seg(channelId)}/live-chat`, undefined, accessToken);
      if (!answer.ok) return answer;
      const { status, json } = answer.value;
      if (status === 404) return { ok: true, value: null };
      if (status >= 400) return refused(status, json);
      return { ok: true, value: isObject(json) ? str(json.live_chat_id) : null };
    },
    async pollLiveChat(liveChatId, pageToken, accessToken) {
      const query = pageToken ? `?page_token=${seg(pageToken)}` : '';
      const answer = await call('GET', `/live-chats/${seg(liveChatId)}/messages${query}`, undefined, accessToken);
      if (!answer.ok) return answer;
      const { status, json } = answer.value;
      if (status >= 400) return refused(status, json);
      const body = isObject(json) ? json : {};
      // The items as the platform sent them: the poller reads them against spec/platforms/platform_b.json.
      const items = Array.isArray(body.items) ? (body.items as unknown[]) : [];
      const interval = typeof body.polling_interval_ms === 'number' && Number.isFinite(body.polling_interval_ms) ? body.polling_interval_ms : null;
      return { ok: true, value: { items, nextPageToken: str(body.next_page_token), pollingIntervalMs: interval } };
    },
  };
}
