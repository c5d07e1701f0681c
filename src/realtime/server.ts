/**
 * The WebSocket endpoint at /v1/ws. Before the 101 switch, an upgrade is admitted in this order:
 * the path; the credential (a presented but invalid one fails closed with HTTP 401); the caller's
 * rate budget, the same one HTTP draws from (HTTP 429 with Retry-After); the open-socket caps per
 * anonymous client address and per credential (HTTP 429). After it: sessions with the protocol of
 * spec/ws-protocol/ (every client message checked by the generated validators), the 5 s
 * heartbeat tick, the 30 s silence timeout, the outbound queue bounded in messages and in bytes,
 * and revocation: a revoked session or token ends its sockets on every node with TOKEN_REVOKED
 * and close code 4002, from the bus notice at once or from the periodic re-check at the latest.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { clientMessageTypes, wsLimits, type WsClientMessage, type WsErrorCode, type WsServerMessage } from '../../generated/ws';
import * as validators from '../../generated/ws-validators';
import type { WsValidator } from '../../generated/ws-validators';
import { ANONYMOUS, type AuthContext } from '../auth/context';
import type { CredentialResolver, Resolution } from '../auth/credentials';
import type { Revocations } from '../auth/revocations';
import type { Config } from '../config/config';
import { messages, scrubbedMessages } from '../errors';
import type { RateDecision, RateLimiter } from '../http/rate-limit';
import { clientAddressResolver } from '../http/request';
import { guardFor, guarded, unowned } from '../infra/listeners';
import type { Logger } from '../infra/logger';
import type { ChannelGate } from './channels';
import type { Hub, Subscriber } from './hub';
import { compareCursors } from './resume';
import { isPresenceChannel, type Presence, type PresenceMember } from './presence';

export const WS_PATH = '/v1/ws';

/** Close codes of the private range (spec/ws-protocol/ describes 4000 and 4001). */
export const closeCodes = {
  silence: 4000,
  expired: 4001,
  /** The session or token behind the socket was revoked (TOKEN_REVOKED). */
  revoked: 4002,
  /** The outbound queue overflowed (in messages or bytes): the client fell behind. */
  overflow: 1013,
} as const;

/** RFC 6455 "Message Too Big": ws's own close for a message past its maxPayload. */
const MESSAGE_TOO_BIG = 1009;

/** How long a revocation is remembered for upgrades that were verified just before it. */
const REVOKED_MEMORY_MS = 120_000;

const clientValidators: Record<string, WsValidator<WsClientMessage>> = {
  subscribe: validators.validateSubscribe,
  unsubscribe: validators.validateUnsubscribe,
  broadcast: validators.validateBroadcast,
  ping: validators.validatePing,
};

export interface RealtimeOptions {
  credentials: CredentialResolver;
  channels: ChannelGate;
  hub: Hub;
  log: Logger;
  version: string;
  /** The per-context budget HTTP requests draw from (http/rate-limit.ts); every upgrade is charged to it. */
  limiter: RateLimiter;
  /** Revocation notices from every node: the sockets of a revoked credential are closed. */
  revocations: Revocations;
  /** Which of these contexts' credentials were revoked since their upgrade (the periodic re-check). */
  revokedAmong(contexts: Iterable<AuthContext>): Promise<Set<string>>;
  /** Express's trust-proxy value (`http.trust_proxy`): anonymous sockets key on the address Express derives. */
  trustProxy: Config['http']['trust_proxy'];
  /** Open-socket caps and the outbound byte cap (the `realtime` config section). */
  caps: Readonly<Config['realtime']>;
  /** Overrides of spec limits (tests shorten the silence timeout). */
  limits?: Partial<{ silenceTimeoutMs: number; heartbeatTickMs: number; outboundQueue: number; channelQueue: number; revalidateMs: number }>;
  /** Presence channels (join, leave, bootstrap) across nodes; without it presence subscribes get no list. */
  presence?: Presence;
  /** The presence entry of a session (display name and avatar of its user). */
  presenceMember?(sessionId: string, auth: AuthContext): Promise<PresenceMember>;
  /** Modules' `bootstrap` snapshots by channel pattern, sent as an `event` after `subscribed` (null sends nothing). */
  bootstraps?: Readonly<Record<string, (params: Record<string, string>) => Promise<unknown>>>;
}

interface Session {
  id: string;
  socket: WebSocket;
  auth: AuthContext;
  channels: Set<string>;
  lastSeen: number;
  /** Messages and bytes handed to the socket and not yet written out. */
  pending: number;
  pendingBytes: number;
  subscriber: Subscriber;
  /** Messages not yet written out, per subscribed channel (CHANNEL_DROPPED above `channelQueue`). */
  behind: Map<string, { pending: number }>;
  /** Live frames held while a channel's replay is sent (they follow it, without what it held). */
  replaying: Map<string, { message: WsServerMessage; frame?: Buffer }[]>;
}

type Headers = Record<string, string>;

/** Answers an upgrade with a plain HTTP error before the switch, as ws does for a failed handshake. */
function rejectUpgrade(socket: Duplex, status: number, body: { error: string; message: string }, headers: Headers = {}): void {
  if (socket.destroyed) return;
  const text = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(text)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ];
  socket.once('finish', guarded(() => socket.destroy(), unowned));
  socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
}

/** The X-RateLimit-* headers HTTP responses carry, for a counted decision. */
function rateHeaders(decision: RateDecision): Headers {
  if (decision.outcome !== 'allowed' && decision.outcome !== 'rejected') return {};
  return {
    'X-RateLimit-Limit': String(decision.limit),
    'X-RateLimit-Remaining': String(decision.remaining),
    'X-RateLimit-Reset': String(decision.resetAt),
    ...(decision.outcome === 'rejected' ? { 'Retry-After': String(decision.retryAfterSeconds) } : {}),
  };
}

function anonymousMember(session: Session): PresenceMember {
  return { session_id: session.id, user_id: session.auth.userId, account_id: session.auth.accountId, display_name: null, avatar_url: null };
}

export function createRealtimeServer(options: RealtimeOptions) {
  const limits = {
    maxFrameBytes: wsLimits.max_frame_bytes,
    silenceTimeoutMs: options.limits?.silenceTimeoutMs ?? wsLimits.silence_timeout_ms,
    heartbeatTickMs: options.limits?.heartbeatTickMs ?? wsLimits.heartbeat_tick_ms,
    outboundQueue: options.limits?.outboundQueue ?? wsLimits.outbound_queue_messages,
    /** Messages one channel may hold in the outbound queue before it is dropped (half the session's queue). */
    channelQueue: options.limits?.channelQueue ?? Math.max(1, Math.floor((options.limits?.outboundQueue ?? wsLimits.outbound_queue_messages) / 2)),
    outboundQueueBytes: options.caps.outbound_queue_bytes,
    revalidateMs: options.limits?.revalidateMs ?? wsLimits.overlay_revalidate_ms,
  };
  const sessions = new Map<string, Session>();
  const sessionOf = new WeakMap<WebSocket, Session>();
  const tooLarge = `Message exceeds ${limits.maxFrameBytes} bytes`;
  /**
   * A message over max_frame_bytes is answered with MESSAGE_TOO_LARGE and the session stays (see
   * onMessage). One over max_buffered_frame_bytes is not read in: ws stops reading and closes the
   * socket with 1009 itself, then emits 'error' (WS_ERR_UNSUPPORTED_MESSAGE_LENGTH), when nothing can
   * be sent any more. Its one public hook before the close frame is the socket class
   * (`WebSocketServer`'s `WebSocket` option): this class puts the error frame ahead of that close.
   * ws closes with 1009 for nothing else, and this module never does.
   */
  class SizeLimitedSocket extends WebSocket {
    override close(code?: number, reason?: string | Buffer): void {
      if (code !== MESSAGE_TOO_BIG || this.readyState !== this.OPEN) return super.close(code, reason);
      const session = sessionOf.get(this);
      if (session) error(session, 'MESSAGE_TOO_LARGE', tooLarge);
      else this.send(JSON.stringify({ type: 'error', code: 'MESSAGE_TOO_LARGE', message: tooLarge } satisfies WsServerMessage));
      super.close(code, reason ?? 'Message too large');
    }
  }
  const wss = new WebSocketServer({ noServer: true, maxPayload: wsLimits.max_buffered_frame_bytes, WebSocket: SizeLimitedSocket });
  const { log, hub, channels } = options;
  const clientAddress = clientAddressResolver(options.trustProxy);
  /** Open sockets (and upgrades past admission) per cap key, on this node. */
  const openCount = new Map<string, number>();
  /** Credentials revoked lately: an upgrade verified just before the notice still ends at open. */
  const recentlyRevoked = new LRUCache<string, true>({ max: 100_000, ttl: REVOKED_MEMORY_MS });

  /**
   * Takes one of the caller's open-socket slots: per client address for Anonymous (and for a
   * credential without a stable id), per credential otherwise; system keys are not capped.
   * Answers the release, or null when the cap is reached.
   */
  function reserveSlot(auth: AuthContext, address: string): (() => void) | null {
    if (auth.kind === 'system_key') return () => undefined;
    const identity = auth.kind === 'anonymous' ? null : (auth.credentialId ?? auth.userId);
    const key = identity ? `credential:${identity}` : `address:${address}`;
    const max = identity ? options.caps.max_sockets_per_credential : options.caps.max_sockets_per_address;
    const current = openCount.get(key) ?? 0;
    if (current >= max) return null;
    openCount.set(key, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (openCount.get(key) ?? 1) - 1;
      if (left > 0) openCount.set(key, left);
      else openCount.delete(key);
    };
  }

  /**
   * `frame` is `message` serialised, when the caller has it already: a fan-out encodes it once and
   * every socket writes the same bytes (sent as a text frame).
   */
  function send(session: Session, message: WsServerMessage, channel?: string, frame?: Buffer): void {
    if (session.socket.readyState !== session.socket.OPEN) return;
    const data = frame ?? Buffer.from(JSON.stringify(message));
    const bytes = data.length;
    // A client that does not read holds at most 256 messages and outbound_queue_bytes of them
    // (one message alone may exceed the byte cap: it is never split or refused on its own).
    if (session.pending >= limits.outboundQueue || (session.pending > 0 && session.pendingBytes + bytes > limits.outboundQueueBytes)) {
      log.warn({ session_id: session.id, pending: session.pending, pending_bytes: session.pendingBytes }, 'closing a session whose outbound queue is full');
      session.socket.close(closeCodes.overflow, 'Outbound queue overflow');
      return;
    }
    session.pending += 1;
    session.pendingBytes += bytes;
    const perChannel = channel === undefined ? undefined : session.behind.get(channel);
    if (perChannel) perChannel.pending += 1;
    session.socket.send(data, { binary: false }, () => {
      session.pending -= 1;
      session.pendingBytes -= bytes;
      if (perChannel) perChannel.pending -= 1;
    });
  }

  /**
   * A message for one subscribed channel. A client that fell behind on that channel (more than
   * `channelQueue` of its messages unwritten) loses the channel with CHANNEL_DROPPED and keeps
   * the session; one that stays behind overall overflows the session's queue and is closed.
   */
  function deliverOn(session: Session, channel: string, message: WsServerMessage, frame?: Buffer): void {
    const held = session.replaying.get(channel);
    if (held) {
      // A replay that cannot keep up with the live channel loses it, as a slow reader does.
      if (held.length >= limits.outboundQueue) return dropChannel(session, channel);
      held.push({ message, frame });
      return;
    }
    const state = session.behind.get(channel);
    if (!state || !session.channels.has(channel)) return;
    if (state.pending >= limits.channelQueue) return dropChannel(session, channel);
    send(session, message, channel, frame);
  }

  /** Resolves once the channel's unwritten frames are under half its share of the queue (or the socket is gone). */
  async function drained(session: Session, channel: string): Promise<void> {
    while (session.socket.readyState === session.socket.OPEN && (session.behind.get(channel)?.pending ?? 0) >= limits.channelQueue / 2) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /**
   * Sends what the client missed on `channel` after `since`, then the live frames held meanwhile
   * that come after the replay (no duplicate: the hub was live before the replay was read, so
   * nothing falls between). A since that cannot be served is RESUME_GAP; the channel stays live.
   */
  async function resume(session: Session, channel: string, since: string): Promise<void> {
    let replay: Awaited<ReturnType<Hub['replay']>>;
    try {
      replay = await hub.replay(channel, since);
    } catch (cause) {
      log.warn({ err: cause, channel }, 'channel replay failed');
      replay = { gap: true };
    }
    let last: string | undefined;
    if (replay && 'gap' in replay) {
      error(session, 'RESUME_GAP', `Cannot resume ${channel} after the given cursor; reload its state`, channel);
    } else if (replay) {
      // A live frame still in flight to this node may be one the client had already.
      last = since;
      // Live frames stay held (deliverOn) while the replay drains at the socket's pace.
      for (const message of replay.frames) {
        if (!session.channels.has(channel)) break;
        await drained(session, channel);
        send(session, message, channel);
        last = (message as { cursor?: string }).cursor ?? last;
      }
    }
    const held = session.replaying.get(channel) ?? [];
    session.replaying.delete(channel);
    for (const { message, frame } of held) {
      const cursor = (message as { cursor?: string }).cursor;
      if (last && cursor && (compareCursors(cursor, last) ?? 1) <= 0) continue;
      deliverOn(session, channel, message, frame);
    }
  }

  function leaveChannel(session: Session, channel: string): Promise<void> {
    session.replaying.delete(channel);
    session.channels.delete(channel);
    session.behind.delete(channel);
    const left = isPresenceChannel(channel) && options.presence ? options.presence.leave(channel, session.id) : Promise.resolve();
    return Promise.all([hub.remove(channel, session.subscriber), left]).then(() => undefined);
  }

  function dropChannel(session: Session, channel: string): void {
    log.warn({ session_id: session.id, channel }, 'dropping a channel the client fell behind on');
    void leaveChannel(session, channel).catch((cause: unknown) => log.warn({ err: cause, channel }, 'dropping a channel failed'));
    error(session, 'CHANNEL_DROPPED', `Fell behind on ${channel}; resubscribe`, channel);
  }

  const error = (session: Session, code: WsErrorCode, message: string, channel?: string) =>
    send(session, { type: 'error', code, message, ...(channel ? { channel } : {}) });

  /** Ends a session whose credential was revoked: TOKEN_REVOKED, then close code 4002. */
  function endRevoked(session: Session): void {
    if (session.socket.readyState !== session.socket.OPEN) return;
    const revokedSession = session.auth.kind === 'jwt' && Boolean(session.auth.sessionId);
    error(session, 'TOKEN_REVOKED', revokedSession ? messages.sessionRevoked : messages.tokenRevoked);
    session.socket.close(closeCodes.revoked, revokedSession ? 'Session revoked' : 'Token revoked');
  }

  function revoke(credentialId: string): void {
    recentlyRevoked.set(credentialId, true);
    for (const session of sessions.values()) {
      if (session.auth.credentialId === credentialId) endRevoked(session);
    }
  }

  const listening = options.revocations.listen((notice) => revoke(notice.credential_id)).catch((cause: unknown) => {
    log.error({ err: cause }, 'could not listen for revocations; open sockets close at the periodic re-check');
    return null;
  });

  /** The fallback for a lost notice: one batched look-up of every open socket's credential. */
  let revalidating = false;
  let lastRevalidation = Date.now();
  async function revalidate(): Promise<void> {
    const checked = [...sessions.values()].filter((s) => s.auth.credentialId && s.auth.kind !== 'anonymous' && s.auth.kind !== 'system_key');
    if (checked.length === 0) return;
    const revoked = await options.revokedAmong(checked.map((s) => s.auth));
    for (const id of revoked) revoke(id);
  }

  async function onMessage(session: Session, data: RawData, isBinary: boolean): Promise<void> {
    session.lastSeen = Date.now();
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : (data as Buffer | ArrayBuffer).byteLength;
    if (size > limits.maxFrameBytes) return error(session, 'MESSAGE_TOO_LARGE', tooLarge);
    if (isBinary) return error(session, 'INVALID_FORMAT', 'Binary frames are not accepted');
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8'));
    } catch {
      return error(session, 'INVALID_FORMAT', 'Message is not valid JSON');
    }
    const type = (parsed as { type?: unknown } | null)?.type;
    const validate = typeof type === 'string' && (clientMessageTypes as readonly string[]).includes(type) ? clientValidators[type] : undefined;
    if (!validate) return error(session, 'INVALID_FORMAT', 'Unknown message type');
    if (!validate(parsed)) {
      const first = validate.errors?.[0];
      const where = first?.instancePath ? first.instancePath.slice(1).replace(/\//g, '.') : type;
      return error(session, 'INVALID_FORMAT', `Invalid ${type} message: ${where} ${first?.message ?? 'is invalid'}`);
    }
    const message = parsed as WsClientMessage;
    switch (message.type) {
      case 'ping':
        return send(session, { type: 'pong' });
      case 'subscribe': {
        if (session.channels.has(message.channel)) return send(session, { type: 'subscribed', channel: message.channel });
        const result = await channels.check(message.channel, session.auth);
        const bootstrap = 'channel' in result ? options.bootstraps?.[result.channel.spec.pattern] : undefined;
        if ('refusal' in result) return error(session, result.refusal.code, result.refusal.message, message.channel);
        try {
          await hub.add(message.channel, session.subscriber);
        } catch (cause) {
          log.error({ err: cause, channel: message.channel }, 'subscribe failed');
          return error(session, 'SUBSCRIBE_FAILED', 'Could not register the subscription', message.channel);
        }
        if (session.socket.readyState !== session.socket.OPEN) return hub.remove(message.channel, session.subscriber);
        // With since, live frames are held from the moment the hub delivers them until the replay is sent.
        if (message.since !== undefined) session.replaying.set(message.channel, []);
        session.channels.add(message.channel);
        session.behind.set(message.channel, { pending: 0 });
        send(session, { type: 'subscribed', channel: message.channel });
        if (message.since !== undefined) await resume(session, message.channel, message.since);
        if (isPresenceChannel(message.channel) && options.presence) {
          const channel = message.channel;
          const member = options.presenceMember ? await options.presenceMember(session.id, session.auth) : anonymousMember(session);
          await options.presence.join(channel, member, (m) => deliverOn(session, channel, m));
        }
        if (bootstrap && 'channel' in result) {
          const data = await bootstrap(result.channel.params).catch((cause: unknown) => log.warn({ err: cause, channel: message.channel }, 'channel bootstrap failed'));
          if (data !== null && data !== undefined) deliverOn(session, message.channel, { type: 'event', channel: message.channel, event_type: 'bootstrap', data } as WsServerMessage);
        }
        return;
      }
      case 'unsubscribe': {
        if (session.channels.has(message.channel)) await leaveChannel(session, message.channel);
        return send(session, { type: 'unsubscribed', channel: message.channel });
      }
      case 'broadcast': {
        // The gate before the payload, as on REST and GraphQL: a caller who may not broadcast
        // learns nothing from the payload's check.
        const result = await channels.checkBroadcast(message.channel, session.auth);
        if ('refusal' in result) return error(session, result.refusal.code, result.refusal.message, message.channel);
        try {
          JSON.parse(message.payload);
        } catch {
          return error(session, 'INVALID_FORMAT', 'Broadcast payload is not valid JSON', message.channel);
        }
        await hub.publish(message.channel, message.payload);
        return;
      }
    }
  }

  function open(socket: WebSocket, auth: AuthContext): void {
    const id = randomUUID();
    const session: Session = {
      id,
      socket,
      auth,
      channels: new Set(),
      lastSeen: Date.now(),
      pending: 0,
      pendingBytes: 0,
      subscriber: { id, deliver: (m, channel, frame) => deliverOn(session, channel, m, frame) },
      behind: new Map(),
      replaying: new Map(),
    };
    sessions.set(id, session);
    sessionOf.set(socket, session);
    // One message at a time per session: replies keep the client's order, and an unsubscribe
    // sent right after a subscribe cannot overtake it.
    let inOrder = Promise.resolve();
    // Every callback of this socket is guarded (src/infra/listeners.ts): a failure in one is this
    // socket's INTERNAL_SERVER_ERROR and its close (1011), never an uncaught exception.
    const guard = guardFor((cause) => {
      log.error({ err: cause, session_id: id }, 'websocket message failed');
      error(session, 'INTERNAL_SERVER_ERROR', scrubbedMessages.INTERNAL_SERVER_ERROR);
      socket.close(1011, 'Internal error');
    });
    socket.on(
      'message',
      guard((data: RawData, isBinary: boolean) => {
        inOrder = inOrder.then(() =>
          onMessage(session, data, isBinary).catch(
            guard((cause: unknown) => {
              log.error({ err: cause, session_id: id }, 'websocket message failed');
              error(session, 'INTERNAL_SERVER_ERROR', scrubbedMessages.INTERNAL_SERVER_ERROR);
            }),
          ),
        );
      }),
    );
    socket.on(
      'close',
      guard(() => {
        sessions.delete(id);
        for (const channel of [...session.channels]) void leaveChannel(session, channel).catch(() => undefined);
        session.channels.clear();
      }),
    );
    socket.on('error', guard((cause: Error) => log.debug({ err: cause, session_id: id }, 'websocket error')));
    if (auth.credentialId && recentlyRevoked.has(auth.credentialId)) return endRevoked(session);
    send(session, { type: 'welcome', session_id: id, server_version: options.version });
  }

  const tick = setInterval(() => {
    const now = Date.now();
    for (const session of sessions.values()) {
      if (now - session.lastSeen > limits.silenceTimeoutMs) {
        session.socket.close(closeCodes.silence, 'Silence timeout');
      } else if (session.auth.expiresAt && now >= session.auth.expiresAt) {
        error(session, 'TOKEN_EXPIRED', 'Token expired');
        session.socket.close(closeCodes.expired, 'Token expired');
      }
    }
    if (!revalidating && now - lastRevalidation >= limits.revalidateMs) {
      revalidating = true;
      lastRevalidation = now;
      revalidate()
        .catch((cause: unknown) => log.warn({ err: cause }, 'websocket credential re-check failed'))
        .finally(() => {
          revalidating = false;
        });
    }
  }, limits.heartbeatTickMs);
  tick.unref();

  // The 101 response carries the same X-RateLimit-* headers an HTTP response would.
  const upgradeHeaders = new WeakMap<IncomingMessage, Headers>();
  wss.on(
    'headers',
    guarded((lines: string[], req: IncomingMessage) => {
      for (const [name, value] of Object.entries(upgradeHeaders.get(req) ?? {})) lines.push(`${name}: ${value}`);
    }, unowned),
  );

  return {
    async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
      const url = new URL(req.url ?? '/', 'http://local');
      if (url.pathname !== WS_PATH) return rejectUpgrade(socket, 404, { error: 'NOT_FOUND', message: messages.notFound });
      const address = clientAddress(req);
      let resolution: Resolution;
      try {
        resolution = await options.credentials.resolve({
          authorization: req.headers.authorization,
          queryToken: url.searchParams.get('token') ?? undefined,
          transport: 'ws',
        });
      } catch (cause) {
        log.error({ err: cause }, 'websocket upgrade authentication failed');
        socket.destroy();
        return;
      }
      // Every upgrade is charged like an HTTP request; a refused credential is charged as Anonymous.
      const decision = await options.limiter.consume(resolution.failure ? ANONYMOUS : resolution.context, address);
      if (decision.outcome === 'unavailable') log[decision.first ? 'warn' : 'debug']({ err: decision.error, tier: decision.tier }, 'rate limiter unavailable; upgrade allowed');
      const headers = rateHeaders(decision);
      if (decision.outcome === 'rejected') return rejectUpgrade(socket, 429, { error: 'RATE_LIMIT_EXCEEDED', message: messages.rateLimitExceeded }, headers);
      if (resolution.failure) return rejectUpgrade(socket, 401, { error: resolution.failure.code, message: resolution.failure.message }, headers);
      if (socket.destroyed) return;
      const release = reserveSlot(resolution.context, address);
      if (!release) return rejectUpgrade(socket, 429, { error: 'RATE_LIMIT_EXCEEDED', message: messages.tooManyConnections }, headers);
      // The slot is held until the connection ends, however the handshake or the session ends.
      socket.once('close', guarded(release, unowned));
      upgradeHeaders.set(req, headers);
      wss.handleUpgrade(req, socket, head, (ws) => open(ws, resolution.context));
    },
    stats: () => ({ sessions: sessions.size, channels: hub.channelCount() }),
    /** Resolves once this node listens for revocation notices. */
    ready: listening.then(() => undefined),
    /** Closes every session (1001 going away), stops the heartbeat and the revocation listener. */
    async close(): Promise<void> {
      clearInterval(tick);
      // Not awaited: a bus that is down must not hold the shutdown.
      void listening.then((stop) => stop?.()).catch(() => undefined);
      for (const session of sessions.values()) session.socket.close(1001, 'Server shutting down');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export type RealtimeServer = ReturnType<typeof createRealtimeServer>;
