/**
 * The relay table generated from spec/ws-protocol/ (Part 2, "Events": internal bus channel →
 * envelope, event type default, delivered socket channel): the table holds exactly the spec's
 * rows; every family's envelope is checked against the server message schemas; and the families
 * a test credential can subscribe to are relayed end to end over real WebSocket connections and
 * the real bus (embedded, or Redis when REDIS_URL is set). Overlay and widget channels need a
 * bound token (test/realtime/protocol.test.ts relays them over sockets) and install channels have
 * no binding module yet, so their rows are checked here on the relay functions the hub calls.
 */
import { randomUUID } from 'node:crypto';
import { channels, relays, type WsServerMessage } from '../../generated/ws';
import { busChannelFor, relayEnvelope } from '../../src/realtime/channels';
import { compareCursors } from '../../src/realtime/resume';
import { systemKey, useTestApp } from '../helpers/app';
import { assertServerEnvelope, closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

/** Part 2, "Relay envelopes", row by row: bus family → socket channel family, envelope, form, default. */
const SPEC_TABLE = {
  events: { channel: 'events:{account_id}', envelope: 'event', form: 'legacy', eventTypeDefault: null },
  music: { channel: 'music_platform:{account_id}', envelope: 'music_platform:now-playing', form: 'legacy', eventTypeDefault: null },
  chat: { channel: 'chat:{account_id}', envelope: 'chat:message', form: 'legacy', eventTypeDefault: null },
  automations: { channel: 'automations:{account_id}', envelope: 'automation', form: 'legacy', eventTypeDefault: null },
  overlay: { channel: 'overlay:{key}', envelope: 'event', form: 'lifted', eventTypeDefault: 'overlay:update' },
  widget: { channel: 'widget:{widget_instance_id}', envelope: 'event', form: 'lifted', eventTypeDefault: 'widget:update' },
  'ext-storage': { channel: 'ext-storage:{install_id}', envelope: 'event', form: 'lifted', eventTypeDefault: 'storage:update' },
  sounds: { channel: 'sounds:{account_id}', envelope: 'event', form: 'lifted', eventTypeDefault: null },
  history: { channel: 'history:{account_id}', envelope: 'event', form: 'lifted', eventTypeDefault: null },
  // The ideas board's live updates: the list and one idea, both lifted with the publisher's event type.
  ideas: { channel: 'ideas:list', envelope: 'event', form: 'lifted', eventTypeDefault: null },
  idea: { channel: 'ideas:{idea_id}', envelope: 'event', form: 'lifted', eventTypeDefault: null },
  // Extension log lines: a developer's own extension, and an account's installs.
  'ext-logs': { channel: 'ext-logs:{extension_id}', envelope: 'event', form: 'lifted', eventTypeDefault: 'extension:log' },
  'ext-install-logs': { channel: 'ext-install-logs:{account_id}', envelope: 'event', form: 'lifted', eventTypeDefault: 'extension:log' },
  // A broadcast's public statistics after each crawler batch, and one login assignment's outcome.
  'public-stats': { channel: 'public-stats:{platform}:{broadcast_id}', envelope: 'event', form: 'lifted', eventTypeDefault: 'public-stats:update' },
  'login-assignments': { channel: 'login-assignments:{id}', envelope: 'event', form: 'lifted', eventTypeDefault: null },
  // A user's own new notifications.
  notifications: { channel: 'notifications:{user_id}', envelope: 'event', form: 'lifted', eventTypeDefault: null },
} as const;

type Family = keyof typeof SPEC_TABLE;
const families = Object.keys(SPEC_TABLE) as Family[];

/** A concrete socket channel and its bus channel for a family, with one fresh id. */
function names(family: Family, id: string): { socket: string; bus: string } {
  const socket = SPEC_TABLE[family].channel.replace(/\{[a-z_]+\}/g, id);
  return { socket, bus: relays[family].bus.replace(/\{[a-z_]+\}/g, id) };
}

/**
 * The events channel's discriminant: an Event (stored, test or bot) is `event`, a notice of the
 * service (`channel:online` / `channel:offline`) is `notice`, anything else a client broadcast.
 */
function eventsKind(published: Record<string, unknown>): string {
  const isEvent = ['id', 'account_id', 'type', 'platform', 'external_id', 'raw', 'created_at'].every((k) => k in published) && typeof published.raw === 'object';
  if (isEvent) return 'event';
  return published.type === 'channel:online' || published.type === 'channel:offline' ? 'notice' : 'broadcast';
}

/** What a socket of the family receives for a publisher's JSON, per Part 2 (and the events channel's `kind`). */
function expected(family: Family, socket: string, published: Record<string, unknown>): WsServerMessage {
  const row = SPEC_TABLE[family];
  if (family === 'events') return { type: row.envelope, kind: eventsKind(published), data: published } as WsServerMessage;
  if (row.form === 'legacy') return { type: row.envelope, data: published } as WsServerMessage;
  const eventType = (published.event_type ?? published.type ?? row.eventTypeDefault) as string | null;
  return { type: 'event', channel: socket, ...(eventType ? { event_type: eventType } : {}), data: published.data ?? null } as WsServerMessage;
}

describe('the generated relay table', () => {
  test('holds exactly the rows of the spec, each on a declared channel pattern', () => {
    const generated = Object.fromEntries(Object.entries(relays).map(([family, r]) => [family, { channel: r.channel, envelope: r.envelope, form: r.form, eventTypeDefault: r.eventTypeDefault }]));
    expect(generated).toEqual(SPEC_TABLE);
    for (const [family, relay] of Object.entries(relays)) {
      const channel = channels.find((c) => c.pattern === relay.channel);
      expect(channel?.relay).toEqual({ bus: relay.bus, envelope: relay.envelope, form: relay.form, eventTypeDefault: relay.eventTypeDefault, resume: relay.resume, discriminant: relay.discriminant });
      // Only the events channel's legacy frames come in several messages: the relay sets their kind.
      expect(relay.discriminant).toEqual(
        family === 'events'
          ? { member: 'kind', kinds: [{ kind: 'event', message: 'streamEvent' }, { kind: 'notice', message: 'eventsNotice' }, { kind: 'broadcast', message: 'eventsBroadcast' }] }
          : null,
      );
      // The events channel resumes from the stored events; every other relayed family from its buffer.
      expect(relay.resume).toBe(family === 'events' ? 'stored' : 'buffer');
      expect(relay.bus.startsWith(`${family}:`)).toBe(true);
    }
    expect(channels.filter((c) => c.relay).map((c) => c.pattern).sort()).toEqual(families.map((f) => SPEC_TABLE[f].channel).sort());
  });

  test.each(families)('%s: the socket channel maps to its bus channel and every payload shape gets the spec envelope', (family) => {
    const id = randomUUID();
    const { socket, bus } = names(family, id);
    expect(busChannelFor(socket)).toBe(bus);
    const payloads: Record<string, unknown>[] = [
      { data: { n: 1 } },
      { event_type: `${family}:named`, data: { n: 2 } },
      { type: `${family}:typed`, data: { n: 3 } },
      { event_type: `${family}:both`, type: 'ignored', data: { n: 4 } },
      { text: 'no data member' },
    ];
    // Synthetic payloads exercise the relay's forms: only the envelope of their type is checked
    // here (the family's own data shapes are checked on every frame a socket receives).
    for (const published of payloads) {
      const envelope = relayEnvelope(bus, socket, JSON.stringify(published));
      assertServerEnvelope(envelope);
      expect(envelope).toEqual(expected(family, socket, published));
      expect(relayEnvelope(bus, socket, JSON.stringify(published), 's:1-0')).toEqual({ ...expected(family, socket, published), cursor: 's:1-0' });
    }
    expect(relayEnvelope(bus, socket, 'not json')).toBeNull();
  });

  test('every events frame says which message it is: an Event, a notice of the service or a client broadcast', () => {
    const account = randomUUID();
    const { socket, bus } = names('events', account);
    const event = { id: randomUUID(), account_id: account, type: 'platform_a:follower', platform: 'platform_a', external_id: null, raw: { user: 'u1' }, created_at: '2026-11-28T12:00:00.000Z' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [event, 'event'],
      // A test event is an Event too (never stored, so no cursor).
      [{ ...event, type: 'test:follower', platform: 'test' }, 'event'],
      [{ type: 'channel:online', account_id: account, platform: 'platform_a', platform_channel_id: '42', event_id: event.id, raw: {}, at: event.created_at }, 'notice'],
      [{ type: 'channel:offline', platform: 'platform_a' }, 'notice'],
      // A client broadcast, even one that looks like an event but is not one.
      [{ type: 'obs:action', action: 'scene' }, 'broadcast'],
      [{ ...event, raw: 'not an object' }, 'broadcast'],
      [{ ...event, id: 'not-a-uuid' }, 'broadcast'],
    ];
    for (const [published, kind] of cases) {
      const envelope = relayEnvelope(bus, socket, JSON.stringify(published));
      assertServerEnvelope(envelope);
      expect(envelope).toEqual({ type: 'event', kind, data: published });
    }
  });

  test('channels without a relay row have no bus channel', () => {
    for (const name of ['presence:events:1', 'nope:1']) {
      expect(busChannelFor(name)).toBeNull();
    }
  });
});

const soundId = randomUUID();
/** Two bus messages per family as its publishers write them. */
/** A stream session as src/modules/platforms/streams.ts publishes it (spec/ws-protocol/modules/history.json). */
const SESSION = {
  id: '00000000-0000-4000-8000-0000000005e5',
  account_id: '00000000-0000-4000-8000-00000000acc0',
  platform: 'platform_a',
  platform_channel_id: 'chan-1',
  stream_id: 'stream-1',
  title: 'Live',
  category: null,
  started_at: '2026-11-28T09:00:00.000Z',
  updated_at: '2026-11-28T09:00:00.000Z',
};

const REALISTIC: Record<'events' | 'music' | 'chat' | 'automations' | 'history' | 'sounds', [Record<string, unknown>, Record<string, unknown>]> = {
  events: [
    { id: randomUUID(), account_id: randomUUID(), type: 'platform_a:follower', platform: 'platform_a', external_id: null, raw: { user_id: 'u1' }, created_at: '2026-01-01T00:00:00.000Z' },
    { type: 'channel:online', platform: 'platform_a' },
  ],
  music: [{ track: 'a', playing: true }, { track: 'b', playing: false }],
  chat: [
    { id: randomUUID(), username: 'viewer', message: 'hi', emotes: [], badges: [], is_shared_chat: false, source_channel: null },
    { type: 'chat:delete', platform_message_id: 'm1', deleted_by: 'mod' },
  ],
  automations: [{ automation_id: 'a1', status: 'ran' }, { automation_id: 'a1', status: 'done' }],
  history: [
    { event_type: 'history:session_started', data: { ...SESSION, updates: 0, ended_at: null } },
    { event_type: 'history:session_updated', data: { ...SESSION, updates: 1, ended_at: '2026-11-28T10:00:00.000Z' } },
  ],
  sounds: [
    { event_type: 'sound:play', data: { sound_id: soundId, name: 'ding', content_type: 'audio/mpeg', duration_ms: 100, volume: 1, target: null, stream_url: `/v1/sounds/${soundId}/stream` } },
    { event_type: 'sound:stop', data: { sound_id: soundId, target: null } },
  ],
};

describe('relay over real connections', () => {
  const key = systemKey('relay', ['events:read', 'music_platform:read', 'chat:read', 'automations:read', 'history:read']);
  const t = useTestApp({ auth: { system_keys: [key.config] } });
  const opened = closeSocketsAfterEach();

  async function session(): Promise<TestSocket> {
    const socket = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${key.key}` } });
    opened.push(socket);
    expect((await socket.next()).type).toBe('welcome');
    return socket;
  }

  // Every family whose gate a system key passes: Permission and AccountScoped channels.
  test.each(['events', 'music', 'chat', 'automations', 'history', 'sounds'] as const)('%s: a bus publish reaches the socket channel in the spec envelope', async (family) => {
    const { socket, bus } = names(family, randomUUID());
    const s = await session();
    s.send({ type: 'subscribe', channel: socket });
    expect(await s.next()).toEqual({ type: 'subscribed', channel: socket });
    // What the family's publishers send (the frames must match the family's messages in the spec).
    const [published, second] = REALISTIC[family];
    await t.app.bus.publish(bus, JSON.stringify(published));
    const first = await s.next();
    expect(first).toEqual({ ...expected(family, socket, published), cursor: expect.any(String) });
    await t.app.bus.publish(bus, JSON.stringify(second));
    const next = await s.next();
    expect(next).toEqual({ ...expected(family, socket, second), cursor: expect.any(String) });
    // Cursors increase per channel.
    expect(compareCursors((first as { cursor: string }).cursor, (next as { cursor: string }).cursor)).toBeLessThan(0);
  });
});
