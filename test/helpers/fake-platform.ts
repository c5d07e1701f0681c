/**
 * A fake chat platform on 127.0.0.1 for the chat adapters (src/modules/chat/adapters.ts): one HTTP
 * server answering the three platforms under `/<platform>` (send, moderate, user profiles, live
 * chat ids and polled live chat pages) and a WebSocket endpoint `/platform_a/socket` standing in for
 * platform_a's chat socket, where a test pushes frames to the connected channel. Every request is
 * recorded; a request no route answers is recorded in `unexpected` and answered 404, so a test can
 * fail on any unmocked outbound call.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

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
  /** Polled live chat items by live chat id, served two per page. */
  liveChatItems: Map<string, FakeLiveChatItem[]>;
  outcomes: { send: FakeOutcome; moderate: FakeOutcome; users: FakeOutcome };
  /** Resolves once platform_a's worker holds a socket for the channel. */
  socketFor(channelId: string): Promise<WebSocket>;
  push(channelId: string, frame: unknown): Promise<void>;
  /** Open platform_a sockets of a channel right now (every one, not only the newest). */
  openSockets(channelId: string): number;
  /** When each platform_a socket of a channel was opened (ms since the epoch), in order. */
  openedAt(channelId: string): number[];
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
  const liveChatItems = new Map<string, FakeLiveChatItem[]>();
  const outcomes: FakePlatform['outcomes'] = { send: 'ok', moderate: 'ok', users: 'ok' };
  const channelSockets = new Map<string, WebSocket>();
  const socketWaiters = new Map<string, ((socket: WebSocket) => void)[]>();
  const allSockets = new Map<string, Set<WebSocket>>();
  const opened = new Map<string, number[]>();
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
    outcomes,
    socketFor,
    async push(channelId, frame) {
      const socket = await socketFor(channelId);
      await new Promise<void>((resolve, reject) => socket.send(JSON.stringify(frame), (error) => (error ? reject(error) : resolve())));
    },
    openSockets: (channelId) => [...(allSockets.get(channelId) ?? [])].filter((ws) => ws.readyState === WebSocket.OPEN).length,
    openedAt: (channelId) => [...(opened.get(channelId) ?? [])],
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
