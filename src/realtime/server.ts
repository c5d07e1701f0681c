/**
 * The WebSocket endpoint at /v1/ws: upgrade authentication (a presented but invalid credential
 * fails closed with HTTP 401 before the switch), sessions with the protocol of
 * spec/ws-protocol.json (every client message checked by the generated validators), the 5 s
 * heartbeat tick, the 30 s silence timeout and the bounded outbound queue.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { clientMessageTypes, wsLimits, type WsClientMessage, type WsErrorCode, type WsServerMessage } from '../../generated/ws';
import * as validators from '../../generated/ws-validators';
import type { WsValidator } from '../../generated/ws-validators';
import type { AuthContext } from '../auth/context';
import type { CredentialResolver } from '../auth/credentials';
import { messages, scrubbedMessages } from '../errors';
import type { Logger } from '../infra/logger';
import type { ChannelGate } from './channels';
import type { Hub } from './hub';

export const WS_PATH = '/v1/ws';

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
  /** Overrides of spec limits (tests shorten the silence timeout). */
  limits?: Partial<{ silenceTimeoutMs: number; heartbeatTickMs: number; outboundQueue: number }>;
}

interface Session {
  id: string;
  socket: WebSocket;
  auth: AuthContext;
  channels: Set<string>;
  lastSeen: number;
  pending: number;
  subscriber: { id: string; deliver(message: WsServerMessage): void };
}

function rejectUpgrade(socket: Duplex, status: number, body: { error: string; message: string }): void {
  const text = JSON.stringify(body);
  const reason = status === 401 ? 'Unauthorized' : 'Not Found';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}

export function createRealtimeServer(options: RealtimeOptions) {
  const limits = {
    maxFrameBytes: wsLimits.max_frame_bytes,
    silenceTimeoutMs: options.limits?.silenceTimeoutMs ?? wsLimits.silence_timeout_ms,
    heartbeatTickMs: options.limits?.heartbeatTickMs ?? wsLimits.heartbeat_tick_ms,
    outboundQueue: options.limits?.outboundQueue ?? wsLimits.outbound_queue_messages,
  };
  // Frames over the protocol limit are answered with MESSAGE_TOO_LARGE; ws itself only closes
  // (1009) on frames far beyond it, so one oversized message does not end the session.
  const wss = new WebSocketServer({ noServer: true, maxPayload: limits.maxFrameBytes * 16 });
  const sessions = new Map<string, Session>();
  const { log, hub, channels } = options;

  function send(session: Session, message: WsServerMessage): void {
    if (session.socket.readyState !== session.socket.OPEN) return;
    if (session.pending >= limits.outboundQueue) {
      log.warn({ session_id: session.id }, 'closing a session whose outbound queue is full');
      session.socket.close(1013, 'Outbound queue overflow');
      return;
    }
    session.pending += 1;
    session.socket.send(JSON.stringify(message), () => {
      session.pending -= 1;
    });
  }

  const error = (session: Session, code: WsErrorCode, message: string, channel?: string) =>
    send(session, { type: 'error', code, message, ...(channel ? { channel } : {}) });

  async function onMessage(session: Session, data: RawData, isBinary: boolean): Promise<void> {
    session.lastSeen = Date.now();
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : (data as Buffer | ArrayBuffer).byteLength;
    if (size > limits.maxFrameBytes) return error(session, 'MESSAGE_TOO_LARGE', `Message exceeds ${limits.maxFrameBytes} bytes`);
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
        if ('refusal' in result) return error(session, result.refusal.code, result.refusal.message, message.channel);
        try {
          await hub.add(message.channel, session.subscriber);
        } catch (cause) {
          log.error({ err: cause, channel: message.channel }, 'subscribe failed');
          return error(session, 'SUBSCRIBE_FAILED', 'Could not register the subscription', message.channel);
        }
        if (session.socket.readyState !== session.socket.OPEN) return hub.remove(message.channel, session.subscriber);
        session.channels.add(message.channel);
        return send(session, { type: 'subscribed', channel: message.channel });
      }
      case 'unsubscribe': {
        session.channels.delete(message.channel);
        await hub.remove(message.channel, session.subscriber);
        return send(session, { type: 'unsubscribed', channel: message.channel });
      }
      case 'broadcast': {
        try {
          JSON.parse(message.payload);
        } catch {
          return error(session, 'INVALID_FORMAT', 'Broadcast payload is not valid JSON', message.channel);
        }
        const result = await channels.checkBroadcast(message.channel, session.auth);
        if ('refusal' in result) return error(session, result.refusal.code, result.refusal.message, message.channel);
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
      subscriber: { id, deliver: (m) => send(session, m) },
    };
    sessions.set(id, session);
    // One message at a time per session: replies keep the client's order, and an unsubscribe
    // sent right after a subscribe cannot overtake it.
    let inOrder = Promise.resolve();
    socket.on('message', (data, isBinary) => {
      inOrder = inOrder.then(() =>
        onMessage(session, data, isBinary).catch((cause: unknown) => {
          log.error({ err: cause, session_id: id }, 'websocket message failed');
          error(session, 'INTERNAL_SERVER_ERROR', scrubbedMessages.INTERNAL_SERVER_ERROR);
        }),
      );
    });
    socket.on('close', () => {
      sessions.delete(id);
      for (const channel of session.channels) void hub.remove(channel, session.subscriber);
      session.channels.clear();
    });
    socket.on('error', (cause) => log.debug({ err: cause, session_id: id }, 'websocket error'));
    send(session, { type: 'welcome', session_id: id, server_version: options.version });
  }

  const tick = setInterval(() => {
    const now = Date.now();
    for (const session of sessions.values()) {
      if (now - session.lastSeen > limits.silenceTimeoutMs) {
        session.socket.close(4000, 'Silence timeout');
      } else if (session.auth.expiresAt && now >= session.auth.expiresAt) {
        error(session, 'TOKEN_EXPIRED', 'Token expired');
        session.socket.close(4001, 'Token expired');
      }
    }
  }, limits.heartbeatTickMs);
  tick.unref();

  return {
    async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
      const url = new URL(req.url ?? '/', 'http://local');
      if (url.pathname !== WS_PATH) return rejectUpgrade(socket, 404, { error: 'NOT_FOUND', message: messages.notFound });
      let resolution;
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
      if (resolution.failure) return rejectUpgrade(socket, 401, { error: resolution.failure.code, message: resolution.failure.message });
      wss.handleUpgrade(req, socket, head, (ws) => open(ws, resolution.context));
    },
    stats: () => ({ sessions: sessions.size, channels: hub.channelCount() }),
    /** Closes every session (1001 going away) and stops the heartbeat. */
    async close(): Promise<void> {
      clearInterval(tick);
      for (const session of sessions.values()) session.socket.close(1001, 'Server shutting down');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export type RealtimeServer = ReturnType<typeof createRealtimeServer>;
