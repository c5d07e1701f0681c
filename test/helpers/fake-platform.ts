/**
 * A fake chat platform on 127.0.0.1 for the platforms module's adapters (src/modules/platforms/):
 * one HTTP server answering the three platforms under `/<platform>` (send, moderate, user
 * profiles, live chat ids and polled live chat pages) and a WebSocket endpoint
 * `/platform_a/socket` standing in for platform_a's socket, where a test pushes frames to the
 * connected channel (each upgrade's `Authorization` is recorded). Every request is recorded; a
 * request no route answers is recorded in `unexpected` and answered 404, so a test can fail on any
 * unmocked outbound call.
 *
 * The fake speaks the declared contracts: `contractFrame(platform, message, overrides)` builds a
 * frame of a message of spec/platforms/<platform>.json from its payload schema (every declared
 * member filled) and refuses to answer one the generated validator would reject, so a test drives
 * exactly what the specs say the platforms send.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { platformMessages, type PlatformMessageSpec } from '../../generated/platforms';
import * as platformValidators from '../../generated/platform-validators';

type Schema = Record<string, unknown>;

/** A value the schema accepts, every declared member of an object filled (`key` names strings and times). */
function sampleOf(schema: Schema, key: string): unknown {
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const type = Array.isArray(schema.type) ? (schema.type as string[]).find((t) => t !== 'null') : (schema.type as string | undefined);
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(Object.entries(properties).filter(([, s]) => Object.keys(s).length > 0).map(([k, s]) => [k, sampleOf(s, k)]));
    }
    case 'array':
      return Array.from({ length: Math.max(1, Number(schema.minItems ?? 1)) }, (_, i) => sampleOf(schema.items as Schema, `${key}-${i + 1}`));
    case 'integer':
    case 'number':
      return Math.max(1, Number(schema.minimum ?? 1));
    case 'boolean':
      return false;
    case 'string':
      if (typeof schema.pattern === 'string') return 'USD';
      if (/(_at|^published|^updated)$/.test(key)) return '2026-11-28T09:00:00.000Z';
      return `${key}-sample`.slice(0, Number(schema.maxLength ?? 200));
    default:
      return null;
  }
}

/** The declared messages of a platform (spec/platforms/<platform>.json), by name. */
export function contractMessages(platform: string): readonly PlatformMessageSpec[] {
  return platformMessages[platform] ?? [];
}

/**
 * A frame of `message` as spec/platforms/<platform>.json declares it, with `overrides` on top (an
 * `undefined` override leaves a member out); throws when the declared validator would not accept it (the fake never sends off-contract).
 */
export function contractFrame(platform: string, message: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const spec = contractMessages(platform).find((m) => m.name === message);
  if (!spec) throw new Error(`spec/platforms/${platform}.json declares no message ${message}`);
  const doc = JSON.parse(readFileSync(path.join(__dirname, '../../spec/platforms', `${platform}.json`), 'utf8')) as { components: { messages: Record<string, { payload: Schema }> } };
  const frame = { ...(sampleOf(doc.components.messages[message]!.payload, message) as Record<string, unknown>), ...overrides };
  // An override of `undefined` leaves the member out.
  for (const [key, value] of Object.entries(frame)) if (value === undefined) delete frame[key];
  const validate = platformValidators[spec.validator];
  if (!validate(frame)) throw new Error(`the ${platform} ${message} frame is off-contract: ${JSON.stringify(validate.errors)}`);
  return frame;
}

export type FakeOutcome = 'ok' | 'refuse' | 'fail';

export interface RecordedRequest {
  platform: string;
  method: string;
  path: string;
  query: Record<string, string>;
  body: Record<string, unknown> | null;
  /** The request's `Authorization` header (the acting grant's `Bearer` token), null without one. */
  authorization: string | null;
}

export interface FakeLiveChatItem {
  id: string;
  author: { channel_id: string; name?: string; display_name?: string; avatar_url?: string };
  message: string;
  published_at?: string;
}

export interface FakePlatform {
  /** `http://127.0.0.1:<port>`; a platform's API base URL is `${url}/<platform>`. */
  url: string;
  apiUrl(platform: string): string;
  /** The platform_a chat socket URL. */
  socketUrl: string;
  requests: RecordedRequest[];
  unexpected: RecordedRequest[];
  /** Profiles by `${platform}:${user_id}`. */
  users: Map<string, { login: string; display_name: string | null; avatar_url: string | null }>;
  /** Live chat ids by `${platform}:${channel_id}` (a channel without one is not live). */
  liveChats: Map<string, string>;
  /** Polled live chat items by live chat id, served two per page (any item a contract declares: `contractFrame('platform_b', ...)`). */
  liveChatItems: Map<string, (FakeLiveChatItem | Record<string, unknown>)[]>;
  /** music_platform activity feed items by the caller's access token (`GET /music_platform/me/activity`), served two per page. */
  musicActivity: Map<string, Record<string, unknown>[]>;
  outcomes: { send: FakeOutcome; moderate: FakeOutcome; users: FakeOutcome };
  /** Resolves once platform_a's worker holds a socket for the channel. */
  socketFor(channelId: string): Promise<WebSocket>;
  push(channelId: string, frame: unknown): Promise<void>;
  /** Open platform_a sockets of a channel right now (every one, not only the newest). */
  openSockets(channelId: string): number;
  /** When each platform_a socket of a channel was opened (ms since the epoch), in order. */
  openedAt(channelId: string): number[];
  /** The `Authorization` header of each platform_a socket upgrade of a channel (null without one), in order. */
  socketAuthorizations(channelId: string): (string | null)[];
  /**
   * Sends a frame to the channel's open socket, as a platform with a replay on connect does: the
   * channel's frames are kept, and every new socket of the channel gets all of them first (a
   * frame sent while no socket was open arrives with the next one; one sent on a socket that died
   * before its node read it arrives again on the next). Needs `startFakePlatform({ replay: true })`.
   */
  deliver(channelId: string, frame: unknown): void;
  sent(platform: string): RecordedRequest[];
  moderated(platform: string): RecordedRequest[];
  reset(): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Record<string, unknown> | null> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      try {
        resolve(text ? (JSON.parse(text) as Record<string, unknown>) : null);
      } catch {
        resolve(null);
      }
    });
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

export async function startFakePlatform(options: { replay?: boolean } = {}): Promise<FakePlatform> {
  const requests: RecordedRequest[] = [];
  const unexpected: RecordedRequest[] = [];
  const users = new Map<string, { login: string; display_name: string | null; avatar_url: string | null }>();
  const liveChats = new Map<string, string>();
  const liveChatItems = new Map<string, (FakeLiveChatItem | Record<string, unknown>)[]>();
  const musicActivity = new Map<string, Record<string, unknown>[]>();
  const outcomes: FakePlatform['outcomes'] = { send: 'ok', moderate: 'ok', users: 'ok' };
  const channelSockets = new Map<string, WebSocket>();
  const socketWaiters = new Map<string, ((socket: WebSocket) => void)[]>();
  const allSockets = new Map<string, Set<WebSocket>>();
  const opened = new Map<string, number[]>();
  const authorizations = new Map<string, (string | null)[]>();
  const history = new Map<string, string[]>();
  let sentCounter = 0;

  const failure = (res: ServerResponse, outcome: FakeOutcome): boolean => {
    if (outcome === 'refuse') json(res, 403, { error: 'refused by the fake platform' });
    else if (outcome === 'fail') json(res, 503, { error: 'the fake platform is down' });
    else return false;
    return true;
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const [platform = '', ...rest] = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      const record: RecordedRequest = { platform, method: req.method ?? 'GET', path: `/${rest.join('/')}`, query: Object.fromEntries(url.searchParams), body: await readBody(req), authorization: req.headers.authorization ?? null };
      requests.push(record);
      const [a, b, c] = rest;
      if (req.method === 'POST' && a === 'channels' && b && c === 'chat' && rest[3] === 'messages') {
        if (failure(res, outcomes.send)) return;
        sentCounter += 1;
        return json(res, 200, { id: `${platform}-sent-${sentCounter}` });
      }
      if (req.method === 'POST' && a === 'channels' && b && c === 'moderation') {
        if (failure(res, outcomes.moderate)) return;
        return json(res, 204, undefined);
      }
      if (req.method === 'GET' && a === 'users' && b && rest.length === 2) {
        if (failure(res, outcomes.users)) return;
        const user = users.get(`${platform}:${b}`);
        return user ? json(res, 200, { id: b, ...user }) : json(res, 404, { error: 'no such user' });
      }
      if (req.method === 'GET' && a === 'channels' && b && c === 'live-chat') {
        const id = liveChats.get(`${platform}:${b}`);
        return id ? json(res, 200, { live_chat_id: id }) : json(res, 404, { error: 'not live' });
      }
      if (req.method === 'GET' && a === 'live-chats' && b && c === 'messages') {
        const items = liveChatItems.get(b);
        if (!items) return json(res, 404, { error: 'no such live chat' });
        const start = Number(url.searchParams.get('page_token') ?? '0');
        const page = items.slice(start, start + 2);
        return json(res, 200, { items: page, next_page_token: String(start + page.length), polling_interval_ms: 50 });
      }
      if (req.method === 'GET' && platform === 'music_platform' && a === 'me' && b === 'activity') {
        const items = musicActivity.get((record.authorization ?? '').replace(/^Bearer /, ''));
        if (!items) return json(res, 401, { error: 'unknown token' });
        const start = Number(url.searchParams.get('cursor') ?? '0');
        const page = items.slice(start, start + 2);
        return json(res, 200, { items: page, next_cursor: String(start + page.length) });
      }
      unexpected.push(record);
      json(res, 404, { error: 'unexpected request' });
    })();
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== '/platform_a/socket') {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const channelId = url.searchParams.get('channel_id') ?? '';
      channelSockets.set(channelId, ws);
      allSockets.set(channelId, (allSockets.get(channelId) ?? new Set()).add(ws));
      opened.set(channelId, [...(opened.get(channelId) ?? []), Date.now()]);
      authorizations.set(channelId, [...(authorizations.get(channelId) ?? []), req.headers.authorization ?? null]);
      ws.on('close', () => {
        if (channelSockets.get(channelId) === ws) channelSockets.delete(channelId);
        allSockets.get(channelId)?.delete(ws);
      });
      ws.on('error', () => undefined);
      if (options.replay) for (const text of history.get(channelId) ?? []) ws.send(text);
      for (const waiter of socketWaiters.get(channelId) ?? []) waiter(ws);
      socketWaiters.delete(channelId);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  const socketFor = (channelId: string): Promise<WebSocket> => {
    const open = channelSockets.get(channelId);
    if (open && open.readyState === WebSocket.OPEN) return Promise.resolve(open);
    return new Promise((resolve) => socketWaiters.set(channelId, [...(socketWaiters.get(channelId) ?? []), resolve]));
  };

  return {
    url,
    apiUrl: (platform) => `${url}/${platform}`,
    socketUrl: `ws://127.0.0.1:${port}/platform_a/socket`,
    requests,
    unexpected,
    users,
    liveChats,
    liveChatItems,
    musicActivity,
    outcomes,
    socketFor,
    async push(channelId, frame) {
      const socket = await socketFor(channelId);
      await new Promise<void>((resolve, reject) => socket.send(JSON.stringify(frame), (error) => (error ? reject(error) : resolve())));
    },
    openSockets: (channelId) => [...(allSockets.get(channelId) ?? [])].filter((ws) => ws.readyState === WebSocket.OPEN).length,
    openedAt: (channelId) => [...(opened.get(channelId) ?? [])],
    socketAuthorizations: (channelId) => [...(authorizations.get(channelId) ?? [])],
    deliver(channelId, frame) {
      if (!options.replay) throw new Error('deliver() needs startFakePlatform({ replay: true })');
      const text = JSON.stringify(frame);
      history.set(channelId, [...(history.get(channelId) ?? []), text]);
      const open = channelSockets.get(channelId);
      if (open && open.readyState === WebSocket.OPEN) open.send(text);
    },
    sent: (platform) => requests.filter((r) => r.platform === platform && r.method === 'POST' && r.path.endsWith('/chat/messages')),
    moderated: (platform) => requests.filter((r) => r.platform === platform && r.method === 'POST' && r.path.endsWith('/moderation')),
    reset() {
      requests.length = 0;
      unexpected.length = 0;
      outcomes.send = 'ok';
      outcomes.moderate = 'ok';
      outcomes.users = 'ok';
    },
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
