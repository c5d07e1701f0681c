/**
 * The WebSocket client of /v1/ws, typed from the protocol document (generated/ws.ts): subscribe,
 * unsubscribe and broadcast per channel family, ping/pong, reconnect with exponential backoff
 * and full jitter, re-subscribe after a reconnect with the last cursor seen as `since` (resume),
 * RESUME_GAP handed to the subscriber, and tokens through a callback.
 *
 * A socket closed before `welcome` is a refused upgrade (a browser sees 401/403/429 only as a
 * 1006 close): the client mints a new token once and tries again at once; if that socket is
 * refused too it backs off. The WebSocket implementation is injected (the browser's by default;
 * the node entry passes `ws`), so this module imports nothing Node-only.
 *
 * `connect()` always settles: at the welcome; at once with the refusal when the credential is
 * refused (minting the token answered 401 or 403, or the upgrade did, where the WebSocket
 * implementation tells the status: `ws` does, a browser does not); else with TIMEOUT after
 * `connectTimeoutMs`, while the client keeps trying in the background until close().
 */
import { ApiError, statusOfCode, toApiError } from './errors.js';
import {
  channelFamilies,
  frameShapes,
  wsLimits,
  type FrameShapeMessages,
  type BroadcastFamily,
  type ChannelFamily,
  type ChannelMessages,
  type WsClientMessage,
  type WsServerMessage,
  type WsWelcomeMessage,
} from './generated/ws.js';

export { channelFamilies, frameShapes, type ChannelFamily, type ChannelMessages, type BroadcastFamily, type WsServerMessage, type WsClientMessage, type FrameShapeMessages } from './generated/ws.js';

/** A JSON value's type as JSON Schema names it (`integer` for whole numbers, which are also `number`). */
const jsonTypeOf = (value: unknown): string[] =>
  value === null ? ['null'] : Array.isArray(value) ? ['array'] : typeof value === 'number' ? (Number.isInteger(value) ? ['integer', 'number'] : ['number']) : [typeof value];

/**
 * Checks a frame's shape against one typed message of its channel (`frameShapes`, from
 * spec/ws-protocol/): true when the frame has the message's `event_type` and every required member
 * of its `data` schema with the schema's JSON type, so the narrowed `data` is what the type says.
 * Every frame of a channel family also carries a required discriminant (`type`, `event_type`, or
 * `kind` on events:{account_id}), so a plain `switch` narrows without it:
 *
 *   onMessage: (message) => { if (message.kind === 'event') show(message.data.raw); }
 *   onMessage: (message) => { if (isMessage('streamEvent', message)) show(message.data.raw); }
 */
export function isMessage<N extends keyof FrameShapeMessages>(name: N, message: { readonly event_type?: unknown; readonly data: unknown }): message is FrameShapeMessages[N] {
  const shape: { readonly eventType: string | null; readonly data: Readonly<Record<string, readonly string[]>> } = frameShapes[name];
  if (shape.eventType !== null && message.event_type !== shape.eventType) return false;
  const data = message.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return false;
  return Object.entries(shape.data).every(([member, types]) => {
    if (!Object.prototype.hasOwnProperty.call(data, member)) return false;
    return types.length === 0 || jsonTypeOf((data as Record<string, unknown>)[member]).some((t) => types.includes(t));
  });
}

/** The part of the WebSocket API the client uses (the browser's WebSocket and `ws` both have it). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: () => void): void;
  /** `ws` passes an ErrorEvent whose message names a refused upgrade's status; a browser's Event has none. */
  addEventListener(type: 'error', listener: (event: { message?: unknown }) => void): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** Why a token is asked for: the first connection, a socket closed before welcome, or the server said it expired. */
export type TokenReason = 'connect' | 'refused' | 'expired';

/** Filled-in values of a family's `{placeholders}`. */
export type ChannelParams<F extends ChannelFamily> = { [K in (typeof channelFamilies)[F]['params'][number]]: string };

/** What a subscriber receives: the family's server message, with the resume cursor when the server sends one. */
export type ChannelMessage<F extends ChannelFamily> = ChannelMessages[F] & { cursor?: string };

export interface SubscribeHandlers<F extends ChannelFamily> {
  onMessage(message: ChannelMessage<F>): void;
  /** The server acknowledged the subscription (after every (re)connect). */
  onSubscribed?(): void;
  /**
   * RESUME_GAP: the server cannot replay from the cursor (too old, or not understood). The
   * subscription is live from now on; reload the state over REST.
   */
  onGap?(error: ApiError): void;
  /** A refusal of this channel (SUBSCRIBE_FAILED, UNAUTHORIZED, FEATURE_DISABLED, CHANNEL_DROPPED): the subscription ends. */
  onError?(error: ApiError): void;
  /** Resume from a cursor kept from an earlier run. */
  since?: string;
}

export interface Subscription {
  readonly channel: string;
  /** The last cursor seen on the channel (what a reconnect resumes from). */
  readonly cursor: string | undefined;
  unsubscribe(): void;
}

export type ConnectionState = 'idle' | 'connecting' | 'open' | 'waiting' | 'closed';

export interface RealtimeOptions {
  /** `ws(s)://host/v1/ws`. */
  url: string;
  /** Mints a token for `?token=` (a WebSocket JWT, or an overlay/widget/popout token). */
  getToken(reason: TokenReason): Promise<string>;
  /** Default: globalThis.WebSocket. */
  WebSocket?: WebSocketConstructor;
  /** Backoff: the n-th wait is random() × min(maxDelayMs, initialDelayMs × 2^n). */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  /**
   * How long connect() waits for the welcome before it rejects with TIMEOUT (default 10 s). The
   * client goes on trying after that; close() stops it.
   */
  connectTimeoutMs?: number;
  /** Ping after this much silence (default a third of the server's silence timeout). */
  pingIntervalMs?: number;
  /** No frame this long after a ping: the connection is dead and is replaced (default the ping interval). */
  pongTimeoutMs?: number;
  random?: () => number;
  onStateChange?(state: ConnectionState): void;
  /** Errors not tied to one channel: a token that cannot be minted (its own error: UNAUTHORIZED, NETWORK_ERROR, …), INVALID_FORMAT, TOKEN_EXPIRED, … */
  onError?(error: ApiError): void;
}

interface ChannelEntry {
  family: ChannelFamily;
  cursor: string | undefined;
  listeners: Set<SubscribeHandlers<ChannelFamily>>;
}

const CHANNEL_REFUSALS = new Set(['SUBSCRIBE_FAILED', 'UNAUTHORIZED', 'FEATURE_DISABLED', 'CHANNEL_DROPPED']);
const OPEN = 1;

/** The channel name of a family with its parameters filled in (`events:{account_id}` → `events:<id>`). */
export function channelName<F extends ChannelFamily>(family: F, params: ChannelParams<F>): string {
  return family.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = (params as Record<string, string | undefined>)[name];
    if (!value) throw new TypeError(`channel ${family} needs ${name}`);
    return value;
  });
}

export class RealtimeClient {
  private readonly options: RealtimeOptions;
  private readonly channels = new Map<string, ChannelEntry>();
  private socket: WebSocketLike | null = null;
  private token: string | null = null;
  private welcomed = false;
  /** A socket closed before welcome already made us mint a fresh token in this run of failures. */
  private remintedAfterRefusal = false;
  private failures = 0;
  private stopped = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private pingTimer: ReturnType<typeof setTimeout> | null = null;
  private pongTimer: ReturnType<typeof setTimeout> | null = null;
  private waiters: { resolve(w: WsWelcomeMessage): void; reject(e: ApiError): void }[] = [];
  /** The status a refused upgrade named in the socket's error event (`ws` only), for the close that follows. */
  private refusedStatus = 0;
  private currentState: ConnectionState = 'idle';
  /** The session id of the last welcome. */
  sessionId: string | null = null;

  constructor(options: RealtimeOptions) {
    this.options = options;
  }

  get state(): ConnectionState {
    return this.currentState;
  }

  /**
   * Opens the connection (if not open) and resolves at the next welcome; rejects with an ApiError
   * when the credential is refused (its 401 or 403), or with TIMEOUT after `connectTimeoutMs`.
   */
  connect(): Promise<WsWelcomeMessage> {
    if (this.stopped) return Promise.reject(closedError());
    const timeoutMs = this.options.connectTimeoutMs ?? 10_000;
    const welcome = new Promise<WsWelcomeMessage>((resolve, reject) => {
      const waiter = {
        resolve: (w: WsWelcomeMessage) => {
          clearTimeout(timer);
          resolve(w);
        },
        reject: (e: ApiError) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new ApiError(0, { error: 'TIMEOUT', message: `No welcome from ${this.options.url} within ${timeoutMs} ms`, details: { timeout_ms: timeoutMs } }));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
    if (this.currentState === 'idle') void this.open('connect');
    return welcome;
  }

  subscribe<F extends ChannelFamily>(family: F, params: ChannelParams<F>, handlers: SubscribeHandlers<F>): Subscription {
    const channel = channelName(family, params);
    let entry = this.channels.get(channel);
    const listener = handlers as unknown as SubscribeHandlers<ChannelFamily>;
    if (!entry) {
      entry = { family, cursor: handlers.since, listeners: new Set() };
      this.channels.set(channel, entry);
      entry.listeners.add(listener);
      if (this.welcomed) this.sendSubscribe(channel, entry);
    } else {
      entry.listeners.add(listener);
    }
    const current = entry;
    return {
      channel,
      get cursor() {
        return current.cursor;
      },
      unsubscribe: () => {
        current.listeners.delete(listener);
        if (current.listeners.size > 0 || this.channels.get(channel) !== current) return;
        this.channels.delete(channel);
        if (this.welcomed) this.send({ type: 'unsubscribe', channel });
      },
    };
  }

  /** Sends a client broadcast (families whose spec names a broadcast permission; the payload is a string). */
  broadcast<F extends BroadcastFamily>(family: F, params: ChannelParams<F>, payload: string): void {
    if (!this.welcomed) throw new Error('not connected: await connect() first');
    this.send({ type: 'broadcast', channel: channelName(family, params), payload });
  }

  /** Closes for good: no reconnect. */
  close(): void {
    this.stopped = true;
    this.clearTimers();
    const socket = this.socket;
    this.socket = null;
    this.welcomed = false;
    socket?.close(1000, 'client closed');
    this.rejectWaiters(closedError());
    this.setState('closed');
  }

  private rejectWaiters(error: ApiError): void {
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  private setState(state: ConnectionState): void {
    if (state === this.currentState) return;
    this.currentState = state;
    this.options.onStateChange?.(state);
  }

  private send(message: WsClientMessage | (WsClientMessage & { since?: string })): void {
    if (this.socket && this.socket.readyState === OPEN) this.socket.send(JSON.stringify(message));
  }

  private sendSubscribe(channel: string, entry: ChannelEntry): void {
    // `since` only with a cursor: a server without resume refuses unknown members.
    this.send(entry.cursor === undefined ? { type: 'subscribe', channel } : { type: 'subscribe', channel, since: entry.cursor });
  }

  private async open(reason: TokenReason): Promise<void> {
    if (this.stopped) return;
    this.setState('connecting');
    let token: string;
    try {
      if (!this.token || reason !== 'connect') this.token = await this.options.getToken(reason);
      token = this.token;
    } catch (thrown) {
      const error = toApiError(thrown);
      this.options.onError?.(error);
      if (error.status === 401 || error.status === 403) {
        // The credential is refused: no retry can help until the caller changes it, so stop here
        // (subscriptions are kept; a later connect() starts again).
        this.rejectWaiters(error);
        this.failures = 0;
        this.setState('idle');
        return;
      }
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) return;
    const Impl = this.options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    let socket: WebSocketLike;
    try {
      if (!Impl) throw new TypeError('no WebSocket implementation: pass options.WebSocket (in Node, use the sdk/node entry)');
      const url = new URL(this.options.url);
      url.searchParams.set('token', token);
      socket = new Impl(url.toString());
    } catch (thrown) {
      // No implementation, or a URL it refuses: nothing a retry can mend.
      this.rejectWaiters(toApiError(thrown));
      this.setState('idle');
      return;
    }
    this.socket = socket;
    this.welcomed = false;
    this.refusedStatus = 0;
    socket.addEventListener('message', (event) => {
      if (socket === this.socket) this.onFrame(event.data);
    });
    socket.addEventListener('close', (event) => {
      if (socket === this.socket) this.onClosed(event.code);
    });
    socket.addEventListener('error', (event) => {
      // A close event follows every error; it decides what happens next. `ws` names a refused
      // upgrade's status here ("Unexpected server response: 401"); a browser tells nothing.
      const status = /Unexpected server response: (\d{3})/.exec(String(event?.message ?? ''));
      if (socket === this.socket && status) this.refusedStatus = Number(status[1]);
    });
  }

  private onFrame(data: unknown): void {
    let frame: WsServerMessage & { cursor?: unknown; channel?: unknown };
    try {
      frame = JSON.parse(typeof data === 'string' ? data : String(data)) as typeof frame;
    } catch {
      return;
    }
    this.armPing();
    switch (frame.type) {
      case 'welcome':
        this.welcomed = true;
        this.failures = 0;
        this.remintedAfterRefusal = false;
        this.sessionId = frame.session_id;
        this.setState('open');
        for (const [channel, entry] of this.channels) this.sendSubscribe(channel, entry);
        for (const waiter of this.waiters.splice(0)) waiter.resolve(frame);
        return;
      case 'pong':
      case 'unsubscribed':
        return;
      case 'subscribed':
        for (const l of this.channels.get(frame.channel)?.listeners ?? []) l.onSubscribed?.();
        return;
      case 'error':
        this.onErrorFrame(frame);
        return;
      default:
        this.deliver(frame);
    }
  }

  private onErrorFrame(frame: Extract<WsServerMessage, { type: 'error' }>): void {
    const error = new ApiError(statusOfCode(frame.code), { error: frame.code, message: frame.message });
    const code: string = frame.code;
    const entry = frame.channel ? this.channels.get(frame.channel) : undefined;
    if (entry && code === 'RESUME_GAP') {
      for (const l of entry.listeners) l.onGap?.(error);
      return;
    }
    if (entry && CHANNEL_REFUSALS.has(code)) {
      this.channels.delete(frame.channel!);
      for (const l of entry.listeners) l.onError?.(error);
      return;
    }
    if (code === 'TOKEN_EXPIRED' || code === 'TOKEN_REVOKED') this.token = null;
    this.options.onError?.(error);
  }

  /** Routes a data frame: by its channel, or (legacy frames name none) by the family whose envelope it is. */
  private deliver(frame: WsServerMessage & { cursor?: unknown; channel?: unknown }): void {
    const targets: ChannelEntry[] = [];
    if (typeof frame.channel === 'string') {
      const entry = this.channels.get(frame.channel);
      if (entry) targets.push(entry);
    } else {
      for (const entry of this.channels.values()) {
        const family = channelFamilies[entry.family];
        if (family.form === 'legacy' && family.envelope === frame.type) targets.push(entry);
      }
    }
    for (const entry of targets) {
      if (typeof frame.cursor === 'string') entry.cursor = frame.cursor;
      for (const l of entry.listeners) l.onMessage(frame as ChannelMessage<ChannelFamily>);
    }
  }

  private onClosed(code: number): void {
    const wasWelcomed = this.welcomed;
    this.socket = null;
    this.welcomed = false;
    this.clearTimers();
    if (this.stopped) return;
    if (!wasWelcomed && !this.remintedAfterRefusal) {
      // Refused upgrade (or a dead network): a fresh token once, at once.
      this.remintedAfterRefusal = true;
      void this.open('refused');
      return;
    }
    if (!wasWelcomed && (this.refusedStatus === 401 || this.refusedStatus === 403)) {
      // A fresh token refused too: whoever waits for connect() hears it now (the client backs off).
      const code = this.refusedStatus === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN';
      this.rejectWaiters(new ApiError(this.refusedStatus, { error: code, message: `The WebSocket upgrade was refused (${this.refusedStatus})` }));
    }
    if (code === 4002) this.token = null;
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    const initial = this.options.reconnect?.initialDelayMs ?? 500;
    const max = this.options.reconnect?.maxDelayMs ?? 30_000;
    const delay = Math.floor((this.options.random ?? Math.random)() * Math.min(max, initial * 2 ** this.failures));
    this.failures++;
    this.setState('waiting');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      // After a wait, a refused socket may again mint once (a token can expire during an outage).
      this.remintedAfterRefusal = false;
      void this.open('connect');
    }, delay);
  }

  /** Any frame proves the connection alive; after pingIntervalMs of silence ping, and give up pongTimeoutMs later. */
  private armPing(): void {
    const interval = this.options.pingIntervalMs ?? Math.floor(wsLimits.silence_timeout_ms / 3);
    const timeout = this.options.pongTimeoutMs ?? interval;
    if (this.pingTimer) clearTimeout(this.pingTimer);
    if (this.pongTimer) clearTimeout(this.pongTimer);
    this.pongTimer = null;
    this.pingTimer = setTimeout(() => {
      this.send({ type: 'ping' });
      this.pongTimer = setTimeout(() => {
        const dead = this.socket;
        if (!dead) return;
        this.onClosed(1006);
        dead.close(4000, 'no pong');
      }, timeout);
    }, interval);
  }

  private clearTimers(): void {
    for (const timer of [this.retryTimer, this.pingTimer, this.pongTimer]) if (timer) clearTimeout(timer);
    this.retryTimer = this.pingTimer = this.pongTimer = null;
  }
}

const closedError = () => new ApiError(0, { error: 'ABORTED', message: 'The realtime client is closed' });

export function createRealtimeClient(options: RealtimeOptions): RealtimeClient {
  return new RealtimeClient(options);
}
