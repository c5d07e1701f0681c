/**
 * A WebSocket test client over a real connection. Every message the server sends is checked
 * against the generated validators of spec/ws-protocol/, so a drift fails the test, and must
 * come as a text frame (a browser hands a binary frame to its page as a Blob). A frame of a
 * channel family is checked against that family's own messages (its AsyncAPI channel): a frame
 * with `channel` by the channel it names, a legacy frame by the family whose relay wraps it.
 */
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import * as validators from '../../generated/ws-validators';
import { channels, serverMessageTypes, type WsServerMessage } from '../../generated/ws';
import { matchChannel } from '../../src/realtime/channels';

type Check = ((data: unknown) => boolean) & { errors?: unknown };
const pascal = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((s) => s[0]!.toUpperCase() + s.slice(1))
    .join('');
const validatorOf = (name: string): Check => {
  const validate = (validators as unknown as Record<string, Check>)[`validate${pascal(name)}`];
  if (!validate) throw new Error(`no generated validator for ${name}`);
  return validate;
};
const byType: Record<string, Check> = Object.fromEntries(serverMessageTypes.map((type) => [type, validatorOf(type)]));
/** Legacy frames name no channel: their family is the one whose relay wraps bus messages in their type. */
const legacyFamily = new Map(channels.filter((c) => c.relay?.form === 'legacy').map((c) => [c.relay!.envelope as string, c]));

/** The envelope check alone: the message is one of the spec's messages of its `type` (any channel's). */
export function assertServerEnvelope(message: unknown): asserts message is WsServerMessage {
  const type = (message as { type?: string }).type ?? '';
  const validate = byType[type];
  if (!validate) throw new Error(`server sent an undeclared message type: ${JSON.stringify(message)}`);
  if (!validate(message)) throw new Error(`server message does not match the WebSocket protocol (spec/ws-protocol/): ${JSON.stringify(message)} ${JSON.stringify(validate.errors)}`);
}

export function assertServerMessage(message: unknown): asserts message is WsServerMessage {
  assertServerEnvelope(message);
  const type = (message as { type: string }).type;
  const channel = (message as { channel?: unknown }).channel;
  const family = typeof channel === 'string' ? matchChannel(channel)?.spec : legacyFamily.get(type);
  // Control frames (welcome, subscribed, error, ...) belong to the session, not to a family.
  if (!family || ['error', 'subscribed', 'unsubscribed'].includes(type)) return;
  const own = family.messages.map(validatorOf);
  if (!own.some((check) => check(message))) {
    throw new Error(`server message does not match any message of channel ${family.pattern} (${family.messages.join(', ')}): ${JSON.stringify(message)}`);
  }
}

export interface TestSocket {
  socket: WebSocket;
  /** Resolves with the next server message (validated), or rejects after `timeoutMs`. */
  next(timeoutMs?: number): Promise<WsServerMessage>;
  /** Resolves with the next message satisfying `predicate`, skipping others. */
  nextMatching(predicate: (m: WsServerMessage) => boolean, timeoutMs?: number): Promise<WsServerMessage>;
  send(message: unknown): void;
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export function connect(url: string, options: { headers?: Record<string, string> } = {}): Promise<TestSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: options.headers });
    const queue: WsServerMessage[] = [];
    const waiters: ((m: WsServerMessage) => void)[] = [];
    const closed = new Promise<{ code: number; reason: string }>((done) => socket.on('close', (code, reason) => done({ code, reason: reason.toString() })));
    socket.on('message', (data, isBinary) => {
      if (isBinary) throw new Error(`server sent a binary frame: ${data.toString()}`);
      const message = JSON.parse(data.toString()) as unknown;
      assertServerMessage(message);
      const waiter = waiters.shift();
      if (waiter) waiter(message);
      else queue.push(message);
    });
    socket.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => reject(Object.assign(new Error(`upgrade refused with ${res.statusCode}`), { status: res.statusCode, body })));
    });
    socket.once('error', reject);
    const next = (timeoutMs = 5000) =>
      new Promise<WsServerMessage>((done, fail) => {
        const queued = queue.shift();
        if (queued) return done(queued);
        const waiter = (m: WsServerMessage) => {
          clearTimeout(timer);
          done(m);
        };
        // A wait that timed out leaves the line: the next message is the next caller's, not
        // swallowed by a promise that already failed (which lost every later message of a socket
        // polled with short waits, as test/infra/redis-outage.test.ts does after a restart).
        const timer = setTimeout(() => {
          const at = waiters.indexOf(waiter);
          if (at !== -1) waiters.splice(at, 1);
          fail(new Error('timed out waiting for a server message'));
        }, timeoutMs);
        waiters.push(waiter);
      });
    socket.once('open', () => {
      socket.off('error', reject);
      resolve({
        socket,
        next,
        async nextMatching(predicate, timeoutMs = 5000) {
          const deadline = Date.now() + timeoutMs;
          for (;;) {
            const message = await next(Math.max(1, deadline - Date.now()));
            if (predicate(message)) return message;
          }
        },
        send: (message) => socket.send(typeof message === 'string' ? message : JSON.stringify(message)),
        closed,
        close: () => socket.close(),
      });
    });
  });
}

/** Rejects when `promise` has not settled within `ms`, naming what it waited for. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Sockets pushed into the returned list are closed after each test (terminated when they do not
 * close within 3 s), so a failing test leaves no connection behind.
 */
export function closeSocketsAfterEach(): TestSocket[] {
  const opened: TestSocket[] = [];
  afterEach(async () => {
    const sockets = opened.splice(0);
    for (const s of sockets) s.close();
    await Promise.all(sockets.map((s) => within(s.closed, 3000, 'a socket to close').catch(() => s.socket.terminate())));
  });
  return opened;
}

export interface RefusedUpgrade {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON error body `{ error, message }`. */
  body: { error: string; message: string };
}

/**
 * Attempts an upgrade that must be refused before the 101 switch; resolves with the HTTP answer.
 * An accepted upgrade is closed at once and rejects, naming the URL.
 */
export function refusedUpgrade(url: string, options: { headers?: Record<string, string> } = {}): Promise<RefusedUpgrade> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: options.headers });
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) as RefusedUpgrade['body'] });
        } catch (error) {
          reject(error as Error);
        }
      });
    });
    socket.once('open', () => {
      socket.terminate();
      reject(new Error(`upgrade to ${url} was accepted`));
    });
    socket.once('error', reject);
  });
}

/** Stops reading from the socket (a slow client): the server's outbound queue then grows. */
export function pauseReading(s: TestSocket): () => void {
  const raw = (s.socket as unknown as { _socket: Socket })._socket;
  raw.pause();
  return () => raw.resume();
}
