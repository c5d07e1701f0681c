/**
 * The relay table generated from spec/ws-protocol.json (Part 2, "Events": internal bus channel →
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
import { systemKey, useTestApp } from '../helpers/app';
import { assertServerMessage, closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

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
  // The ideas board's live updates (issue 15): the list and one idea, both lifted with the publisher's event type.
  ideas: { channel: 'ideas:list', envelope: 'event', form: 'lifted', eventTypeDefault: null },
  idea: { channel: 'ideas:{idea_id}', envelope: 'event', form: 'lifted', eventTypeDefault: null },
} as const;

type Family = keyof typeof SPEC_TABLE;
const families = Object.keys(SPEC_TABLE) as Family[];

/** A concrete socket channel and its bus channel for a family, with one fresh id. */
function names(family: Family, id: string): { socket: string; bus: string } {
  const socket = SPEC_TABLE[family].channel.replace(/\{[a-z_]+\}/, id);
  return { socket, bus: relays[family].bus.replace(/\{[a-z_]+\}/, id) };
}

/** What a socket of the family receives for a publisher's JSON, per Part 2. */
function expected(family: Family, socket: string, published: Record<string, unknown>): WsServerMessage {
  const row = SPEC_TABLE[family];
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
      expect(channel?.relay).toEqual({ bus: relay.bus, envelope: relay.envelope, form: relay.form, eventTypeDefault: relay.eventTypeDefault });
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
    for (const published of payloads) {
      const envelope = relayEnvelope(bus, socket, JSON.stringify(published));
      assertServerMessage(envelope);
      expect(envelope).toEqual(expected(family, socket, published));
    }
    expect(relayEnvelope(bus, socket, 'not json')).toBeNull();
  });

  test('channels without a relay row have no bus channel', () => {
    for (const name of ['presence:events:1', 'public-stats:platform_a:1', 'login-assignments:1', 'ext-logs:1', 'ext-install-logs:1', 'nope:1']) {
      expect(busChannelFor(name)).toBeNull();
    }
  });
});

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
    const published = SPEC_TABLE[family].form === 'legacy' ? { text: 'hi', n: 1 } : { event_type: `${family}:changed`, data: { n: 1 } };
    await t.app.bus.publish(bus, JSON.stringify(published));
    expect(await s.next()).toEqual(expected(family, socket, published));
    const bare = { data: { n: 2 } };
    await t.app.bus.publish(bus, JSON.stringify(bare));
    expect(await s.next()).toEqual(expected(family, socket, bare));
  });
});
