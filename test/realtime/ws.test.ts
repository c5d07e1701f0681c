/**
 * The WebSocket endpoint over real connections: the session protocol of spec/ws-protocol/
 * (welcome, ping, validation, frame limit), the channel gates and feature flags, client broadcasts,
 * bus relays, upgrade authentication and the silence timeout. Every server message is validated
 * against the spec by the `connect` helper. Runs embedded and against Postgres and Redis.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { systemKey, useTestApp, type TestApp } from '../helpers/app';
import { connect, type TestSocket, within, closeSocketsAfterEach } from '../helpers/ws';
import { wsLimits, type WsServerMessage } from '../../generated/ws';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const MAX_FRAME_BYTES = 65536;

const keys = {
  events: systemKey('events', ['events:read', 'events:create']),
  reader: systemKey('reader', ['events:read']),
  wildcard: systemKey('wildcard', ['events:*']),
  starStar: systemKey('star-star', ['*:*']),
  chat: systemKey('chat', ['chat:read']),
  music: systemKey('music', ['music_platform:read']),
};

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** Sockets opened by the current test; closed (and their close awaited) after each test. */
const opened = closeSocketsAfterEach();

async function open(url: string, headers?: Record<string, string>): Promise<TestSocket> {
  const socket = await connect(url, headers ? { headers } : {});
  opened.push(socket);
  return socket;
}

/** Opens a session and consumes its welcome message. */
async function session(url: string, headers?: Record<string, string>): Promise<TestSocket> {
  const socket = await open(url, headers);
  expect((await socket.next()).type).toBe('welcome');
  return socket;
}


/** Resolves with the rejection of a connect() that must be refused before the 101 switch. */
async function refused(url: string, headers?: Record<string, string>): Promise<Error & { status?: number; body?: string }> {
  try {
    const socket = await connect(url, headers ? { headers } : {});
    opened.push(socket);
  } catch (error) {
    return error as Error & { status?: number; body?: string };
  }
  throw new Error(`upgrade to ${url} was accepted`);
}

async function subscribe(s: TestSocket, channel: string): Promise<WsServerMessage> {
  s.send({ type: 'subscribe', channel });
  return s.next();
}

async function wsGauge(t: TestApp): Promise<{ sessions: number; channels: number }> {
  const res = await fetch(`${t.url}/v1/health`);
  const body = (await res.json()) as { data: { websocket: { sessions: number; channels: number } } };
  return body.data.websocket;
}

/** Polls the health gauge until `ok` holds (server-side close handlers may trail the client). */
async function gaugeWhen(t: TestApp, ok: (g: { sessions: number; channels: number }) => boolean): Promise<{ sessions: number; channels: number }> {
  const deadline = Date.now() + 2000;
  for (;;) {
    const gauge = await wsGauge(t);
    if (ok(gauge) || Date.now() > deadline) return gauge;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A ping message padded with trailing JSON whitespace to exactly `bytes` bytes. */
function paddedPing(bytes: number): string {
  const base = JSON.stringify({ type: 'ping' });
  const text = base + ' '.repeat(bytes - base.length);
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

describe('WebSocket /v1/ws', () => {
  const t = useTestApp({ auth: { system_keys: Object.values(keys).map((k) => k.config) } });

  test('welcome arrives first with a uuid session_id and the configured server_version', async () => {
    const s = await open(t.wsUrl);
    const welcome = await s.next();
    expect(welcome).toEqual({ type: 'welcome', session_id: expect.stringMatching(UUID), server_version: t.app.config.version });
    const other = await open(t.wsUrl);
    const second = await other.next();
    expect(second.type).toBe('welcome');
    expect((second as { session_id: string }).session_id).not.toBe((welcome as { session_id: string }).session_id);
  });

  test('ping is answered with pong', async () => {
    const s = await session(t.wsUrl);
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
  });

  test('the test client: a wait that timed out does not take the next message from the next wait', async () => {
    const s = await session(t.wsUrl);
    for (let i = 0; i < 3; i++) await expect(s.next(20)).rejects.toThrow('timed out waiting for a server message');
    s.send({ type: 'ping' });
    expect(await s.next(2000)).toEqual({ type: 'pong' });
    await expect(s.nextMatching(() => false, 20)).rejects.toThrow('timed out');
    s.send({ type: 'ping' });
    expect(await s.next(2000)).toEqual({ type: 'pong' });
  });

  test('malformed messages get INVALID_FORMAT and the session stays open', async () => {
    const s = await session(t.wsUrl);
    s.send('this is not json');
    expect(await s.next()).toMatchObject({ type: 'error', code: 'INVALID_FORMAT' });
    s.send({ type: 'teleport', channel: 'x' });
    expect(await s.next()).toMatchObject({ type: 'error', code: 'INVALID_FORMAT' });
    s.send({ type: 'subscribe' });
    expect(await s.next()).toMatchObject({ type: 'error', code: 'INVALID_FORMAT' });
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
    expect(s.socket.readyState).toBe(s.socket.OPEN);
  });

  test('a text frame over 65536 bytes gets MESSAGE_TOO_LARGE; exactly 65536 bytes is accepted', async () => {
    const s = await session(t.wsUrl);
    s.send(paddedPing(MAX_FRAME_BYTES + 1));
    expect(await s.next()).toMatchObject({ type: 'error', code: 'MESSAGE_TOO_LARGE' });
    s.send(paddedPing(MAX_FRAME_BYTES));
    expect(await s.next()).toEqual({ type: 'pong' });
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
    expect(s.socket.readyState).toBe(s.socket.OPEN);
  });

  test('a text frame the server does not read in (over max_buffered_frame_bytes) gets MESSAGE_TOO_LARGE, then the close 1009', async () => {
    const s = await session(t.wsUrl);
    s.socket.on('error', () => undefined); // the server may reset the rest of the upload
    s.send(paddedPing(wsLimits.max_buffered_frame_bytes + 1));
    expect(await s.next()).toEqual({ type: 'error', code: 'MESSAGE_TOO_LARGE', message: `Message exceeds ${MAX_FRAME_BYTES} bytes` });
    expect(await within(s.closed, 5000, 'the close after MESSAGE_TOO_LARGE')).toEqual({ code: 1009, reason: 'Message too large' });
  });

  test('a frame just over max_frame_bytes gets the same error body and the session stays', async () => {
    const s = await session(t.wsUrl);
    s.send(paddedPing(MAX_FRAME_BYTES + 1));
    expect(await s.next()).toEqual({ type: 'error', code: 'MESSAGE_TOO_LARGE', message: `Message exceeds ${MAX_FRAME_BYTES} bytes` });
    expect(s.socket.readyState).toBe(s.socket.OPEN);
  });

  test('a binary frame gets INVALID_FORMAT', async () => {
    const s = await session(t.wsUrl);
    s.socket.send(Buffer.from(JSON.stringify({ type: 'ping' })), { binary: true });
    expect(await s.next()).toMatchObject({ type: 'error', code: 'INVALID_FORMAT' });
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
  });

  test('public channel: subscribe is idempotent, shows in the health gauge, unsubscribe removes it', async () => {
    const channel = `login-assignments:${randomBytes(4).toString('hex')}`;
    const s = await session(t.wsUrl);
    expect(await subscribe(s, channel)).toEqual({ type: 'subscribed', channel });
    expect(await subscribe(s, channel)).toEqual({ type: 'subscribed', channel });
    const during = await gaugeWhen(t, (g) => g.channels === 1);
    expect(during.sessions).toBeGreaterThanOrEqual(1);
    expect(during.channels).toBe(1);
    s.send({ type: 'unsubscribe', channel });
    expect(await s.next()).toEqual({ type: 'unsubscribed', channel });
    expect((await wsGauge(t)).channels).toBe(0);
  });

  test('subscribe then unsubscribe sent back to back: replies come in order and delivery stops', async () => {
    // Spec: unsubscribe is answered with unsubscribed and "delivery stops immediately".
    const kept = `events:${randomUUID()}`;
    const dropped = `events:${randomUUID()}`;
    const s = await session(t.wsUrl, bearer(keys.events.key));
    expect(await subscribe(s, kept)).toEqual({ type: 'subscribed', channel: kept });
    s.send({ type: 'subscribe', channel: dropped });
    s.send({ type: 'unsubscribe', channel: dropped });
    expect(await s.next()).toEqual({ type: 'subscribed', channel: dropped });
    expect(await s.next()).toEqual({ type: 'unsubscribed', channel: dropped });
    await t.app.bus.publish(dropped, JSON.stringify({ leaked: true }));
    await t.app.bus.publish(kept, JSON.stringify({ marker: true }));
    expect(await s.next()).toEqual({ type: 'event', kind: 'broadcast', data: { marker: true }, cursor: expect.any(String) });
  });

  test('anonymous subscribe to events:<uuid> and to an unknown channel is UNAUTHORIZED with the channel set', async () => {
    const s = await session(t.wsUrl);
    const events = `events:${randomUUID()}`;
    expect(await subscribe(s, events)).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel: events });
    expect(await subscribe(s, 'nope:1')).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel: 'nope:1' });
    // A refused channel is not registered.
    expect((await gaugeWhen(t, (g) => g.channels === 0)).channels).toBe(0);
  });

  test('system key: subscribe events:<uuid>, and a broadcast from another session is delivered as { type: event, data }', async () => {
    const channel = `events:${randomUUID()}`;
    const listener = await session(t.wsUrl, bearer(keys.events.key));
    expect(await subscribe(listener, channel)).toEqual({ type: 'subscribed', channel });
    const sender = await session(t.wsUrl, bearer(keys.events.key));
    sender.send({ type: 'broadcast', channel, payload: JSON.stringify({ hello: 1 }) });
    expect(await listener.next()).toEqual({ type: 'event', kind: 'broadcast', data: { hello: 1 }, cursor: expect.any(String) });
    // The sender is not subscribed and gets no reply to a successful broadcast.
    sender.send({ type: 'ping' });
    expect(await sender.next()).toEqual({ type: 'pong' });
  });

  test('broadcast with a payload that is not JSON gets INVALID_FORMAT', async () => {
    const channel = `events:${randomUUID()}`;
    const sender = await session(t.wsUrl, bearer(keys.events.key));
    sender.send({ type: 'broadcast', channel, payload: 'not json' });
    expect(await sender.next()).toMatchObject({ type: 'error', code: 'INVALID_FORMAT' });
  });

  test('a broadcast the caller may not send is UNAUTHORIZED whatever its payload: the gate comes before the payload check', async () => {
    const channel = `events:${randomUUID()}`;
    const reader = await session(t.wsUrl, bearer(keys.reader.key));
    reader.send({ type: 'broadcast', channel, payload: 'not json' });
    expect(await reader.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel });
  });

  test('broadcast without the write permission (events:read only) is UNAUTHORIZED and not delivered', async () => {
    const channel = `events:${randomUUID()}`;
    const listener = await session(t.wsUrl, bearer(keys.events.key));
    expect(await subscribe(listener, channel)).toEqual({ type: 'subscribed', channel });
    const reader = await session(t.wsUrl, bearer(keys.reader.key));
    expect(await subscribe(reader, channel)).toEqual({ type: 'subscribed', channel });
    reader.send({ type: 'broadcast', channel, payload: JSON.stringify({ hello: 2 }) });
    expect(await reader.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel });
    // Nothing reached the listener: the next event it sees is a marker broadcast afterwards by a
    // permitted session (the bus keeps one publisher's order, embedded and on Redis).
    const writer = await session(t.wsUrl, bearer(keys.events.key));
    writer.send({ type: 'broadcast', channel, payload: JSON.stringify({ marker: true }) });
    expect(await listener.next()).toEqual({ type: 'event', kind: 'broadcast', data: { marker: true }, cursor: expect.any(String) });
  });

  test('a system key with the resource wildcard events:* may subscribe; *:* grants nothing', async () => {
    const channel = `events:${randomUUID()}`;
    const wild = await session(t.wsUrl, bearer(keys.wildcard.key));
    expect(await subscribe(wild, channel)).toEqual({ type: 'subscribed', channel });
    const star = await session(t.wsUrl, bearer(keys.starStar.key));
    expect(await subscribe(star, channel)).toMatchObject({ type: 'error', code: 'UNAUTHORIZED', channel });
  });

  test('feature flags: events:<uuid> gives FEATURE_DISABLED while feature:events is off', async () => {
    const features = t.app.modules.features;
    const s = await session(t.wsUrl, bearer(keys.events.key));
    try {
      await features.setGlobal('feature:events', false);
      const channel = `events:${randomUUID()}`;
      expect(await subscribe(s, channel)).toMatchObject({ type: 'error', code: 'FEATURE_DISABLED', channel });
    } finally {
      await features.setGlobal('feature:events', true);
    }
    const channel = `events:${randomUUID()}`;
    expect(await subscribe(s, channel)).toEqual({ type: 'subscribed', channel });
  });

  test('feature flags: public-stats follows system:public_stats', async () => {
    const features = t.app.modules.features;
    const channel = 'public-stats:platform_a:123';
    const s = await session(t.wsUrl);
    expect(await subscribe(s, channel)).toEqual({ type: 'subscribed', channel });
    s.send({ type: 'unsubscribe', channel });
    expect(await s.next()).toEqual({ type: 'unsubscribed', channel });
    try {
      await features.setGlobal('system:public_stats', false);
      expect(await subscribe(s, channel)).toMatchObject({ type: 'error', code: 'FEATURE_DISABLED', channel });
    } finally {
      await features.setGlobal('system:public_stats', true);
    }
  });

  test('upgrade auth: an unknown system key in the header is refused with 401 before the switch', async () => {
    const error = await refused(t.wsUrl, bearer(`lm_sys_${randomBytes(32).toString('hex')}`));
    expect(error.status).toBe(401);
    expect(JSON.parse(error.body ?? '')).toEqual({ error: 'UNAUTHORIZED', message: expect.any(String) });
  });

  test('upgrade auth: a system key in ?token= is refused with 401 (system keys are header-only)', async () => {
    const error = await refused(`${t.wsUrl}?token=${keys.events.key}`);
    expect(error.status).toBe(401);
    expect(JSON.parse(error.body ?? '')).toEqual({ error: 'UNAUTHORIZED', message: expect.any(String) });
  });

  test.each([
    ['?token=lm_garbage', '?token=lm_garbage', undefined],
    ['?token=garbage', '?token=garbage', undefined],
    ['Authorization: Bearer lm_garbage', '', 'Bearer lm_garbage'],
  ])('upgrade auth: an unrecognised credential (%s) is refused with 401, not an anonymous socket', async (_name, query, authorization) => {
    const error = await refused(`${t.wsUrl}${query}`, authorization ? { Authorization: authorization } : undefined);
    expect(error.status).toBe(401);
    expect(JSON.parse(error.body ?? '')).toEqual({ error: 'UNAUTHORIZED', message: expect.any(String) });
  });

  test('upgrade auth: no credential connects anonymously', async () => {
    const s = await open(t.wsUrl);
    expect((await s.next()).type).toBe('welcome');
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
  });

  test('an upgrade on another path is refused with 404', async () => {
    const error = await refused(t.wsUrl.replace(/\/v1\/ws$/, '/v1/wsx'));
    expect(error.status).toBe(404);
  });

  test('bus relay: chat:<uuid> publishes arrive as chat:message', async () => {
    const channel = `chat:${randomUUID()}`;
    const s = await session(t.wsUrl, bearer(keys.chat.key));
    expect(await subscribe(s, channel)).toEqual({ type: 'subscribed', channel });
    await t.app.bus.publish(channel, JSON.stringify({ text: 'hi' }));
    expect(await s.nextMatching((m) => m.type === 'chat:message')).toEqual({ type: 'chat:message', data: { text: 'hi' }, cursor: expect.any(String) });
  });

  test('bus relay: music:<uuid> publishes arrive on music_platform:<uuid> as music_platform:now-playing', async () => {
    const account = randomUUID();
    const channel = `music_platform:${account}`;
    const s = await session(t.wsUrl, bearer(keys.music.key));
    expect(await subscribe(s, channel)).toEqual({ type: 'subscribed', channel });
    const data = { track: 'Song', playing: true, progress_ms: 1200 };
    await t.app.bus.publish(`music:${account}`, JSON.stringify(data));
    expect(await s.nextMatching((m) => m.type === 'music_platform:now-playing')).toEqual({ type: 'music_platform:now-playing', data, cursor: expect.any(String) });
  });
});

describe('WebSocket silence timeout', () => {
  const t = useTestApp({}, { realtimeLimits: { silenceTimeoutMs: 300, heartbeatTickMs: 100 } });

  test('a silent session is closed with 4000', async () => {
    const started = Date.now();
    const s = await open(t.wsUrl);
    expect((await s.next()).type).toBe('welcome');
    const closed = await within(s.closed, 2000, 'the silence timeout');
    expect(closed.code).toBe(4000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});
