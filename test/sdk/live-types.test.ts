/**
 * Typed live payloads: what a consumer can tell apart on a channel without a cast.
 *
 * - The protocol document (spec/published/asyncapi.json, what the SDK's socket types are generated
 *   from): every channel whose frames come in several messages tells them apart by a required
 *   `type`, `event_type` or `kind` (the events channel's discriminant, which the relay sets on every
 *   frame) with disjoint values. No channel is exempt.
 * - A consumer file that narrows every family by `type`, `event_type`, `kind` and chat's
 *   `data.type`, with plain switches (exhaustive where the family is closed) and no cast,
 *   compiled with `tsc --strict` against the SDK's sources (as test/sdk/readme-examples.test.ts
 *   does for the guide). `isMessage`, which consumers used while three families could not be told
 *   apart on the wire, still narrows by shape and is checked against frames of each kind.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { frameShapes, isMessage, type ChannelMessage } from '../../sdk/src/index';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

/** The discriminants a frame may carry: the session's `type`, a lifted family's `event_type`, the events channel's `kind`. */
const DISCRIMINANTS = ['type', 'event_type', 'kind'];

type Schema = { const?: unknown; enum?: unknown[]; $ref?: string };
type Payload = { required?: string[]; properties?: Record<string, Schema> };
type Document = {
  channels: Record<string, { address: string; messages?: Record<string, { $ref?: string; payload?: Payload }> }>;
  components: { messages: Record<string, { payload?: Payload }> };
};

/** The values a required discriminant may take, or null when it is open (or optional). */
function discriminantValues(payload: Payload, property: string): unknown[] | null {
  if (!payload.required?.includes(property)) return null;
  const schema = payload.properties?.[property];
  if (schema?.const !== undefined) return [schema.const];
  return Array.isArray(schema?.enum) ? schema.enum : null;
}

/** Two payloads are told apart when a discriminant is required in both with no value in common. */
function distinguishable(a: Payload, b: Payload): boolean {
  return DISCRIMINANTS.some((property) => {
    const left = discriminantValues(a, property);
    const right = discriminantValues(b, property);
    return left !== null && right !== null && left.every((value) => !right.includes(value));
  });
}

const CONSUMER = `
import { isMessage, type ChannelMessage, type WsServerMessage } from '@creator-backend/sdk';

const never = (value: never): never => {
  throw new Error('unexpected ' + JSON.stringify(value));
};

export function sessionFrame(message: WsServerMessage): string {
  switch (message.type) {
    case 'welcome':
      return message.session_id;
    case 'error':
      return message.code;
    case 'subscribed':
    case 'unsubscribed':
      return message.channel;
    default:
      return message.type;
  }
}

export function sound(message: ChannelMessage<'sounds:{account_id}'>): string {
  switch (message.event_type) {
    case 'sound:play':
      return message.data.sound_id;
    case 'sound:stop':
      return message.channel;
    default:
      return never(message);
  }
}

export function presence(message: ChannelMessage<'presence:{resource_channel}'>): number {
  switch (message.event_type) {
    case 'bootstrap':
      return message.data.connections.length;
    case 'presence:join':
    case 'presence:leave':
      return message.data.user_id ? 1 : 0;
    default:
      return never(message);
  }
}

export function idea(message: ChannelMessage<'ideas:{idea_id}'>): string {
  switch (message.event_type) {
    case 'idea:created':
    case 'idea:updated':
    case 'idea:status_changed':
    case 'idea:voted':
      return message.data.title ?? message.data.id;
    case 'comment:created':
    case 'comment:updated':
    case 'comment:voted':
      return message.data.idea_id;
    case 'idea:deleted':
    case 'comment:deleted':
      return message.data.id;
    default:
      return never(message);
  }
}

export function publicStats(message: ChannelMessage<'public-stats:{platform}:{broadcast_id}'>): string {
  switch (message.event_type) {
    case 'bootstrap':
    case 'public-stats:update':
      return message.channel;
    default:
      return never(message);
  }
}

export function streamEvent(message: ChannelMessage<'events:{account_id}'>): string {
  switch (message.kind) {
    case 'event':
      return message.data.type + ' ' + message.data.created_at + ' ' + Object.keys(message.data.raw).length + ' ' + (message.data.external_id ?? '');
    case 'notice':
      return message.data.type;
    case 'broadcast':
      return JSON.stringify(message.data);
    default:
      return never(message);
  }
}

// One message each: every frame is the settings update, its event_type says so.
export function overlay(message: ChannelMessage<'overlay:{key}'>): number {
  const eventType: 'overlay:update' = message.event_type;
  return eventType.length + message.data.version + Object.keys(message.data.settings).length;
}

export function widget(message: ChannelMessage<'widget:{widget_instance_id}'>): string {
  const eventType: 'widget:update' = message.event_type;
  return eventType + message.data.type;
}

export function notification(message: ChannelMessage<'notifications:{user_id}'>): string {
  return message.data.status;
}

// Code written for isMessage still compiles and narrows.
export function storedEventByShape(message: ChannelMessage<'events:{account_id}'>): string | null {
  return isMessage('streamEvent', message) ? message.data.platform : null;
}

export function overlayByShape(message: ChannelMessage<'overlay:{key}'>): number | null {
  return isMessage('overlaySettingsUpdate', message) ? message.data.version : null;
}

export function chat(message: ChannelMessage<'chat:{account_id}'>): string {
  const data = message.data;
  if (!('type' in data)) return data.message ?? '';
  switch (data.type) {
    case 'chat:delete':
      return data.platform_message_id;
    case 'chat:clear_user':
      return data.action;
    case 'chat:moderation_log':
      return data.type;
    case 'chat:user_treatment_update':
      return data.user_treatment;
    default:
      return never(data);
  }
}
`;

describe('typed live payloads', () => {
  let dir = '';
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('every channel with several messages tells them apart by a required type, event_type or kind', () => {
    const doc = JSON.parse(readFileSync(path.join(root, 'spec/published/asyncapi.json'), 'utf8')) as Document;
    const payloadOf = (message: { $ref?: string; payload?: Payload }): Payload => (message.$ref ? doc.components.messages[message.$ref.split('/').pop()!]!.payload! : message.payload!);
    const undiscriminated: string[] = [];
    for (const channel of Object.values(doc.channels)) {
      if (!channel.address.includes(':')) continue; // the session itself (/v1/ws): its own frames differ by `type`
      const payloads = Object.values(channel.messages ?? {}).map(payloadOf);
      const apart = payloads.every((a, i) => payloads.every((b, j) => i >= j || distinguishable(a, b)));
      if (!apart) undiscriminated.push(channel.address);
    }
    expect(undiscriminated).toEqual([]);
  });

  test('isMessage still tells a stored event from a notice or broadcast, and a settings update by its shape', () => {
    const row = { id: '6f1c1f9e-8a3b-4c55-9d6e-0a1b2c3d4e5f', account_id: '0c0ffee0-0000-4000-8000-000000000001', type: 'platform_a:follower', platform: 'platform_a', external_id: null, raw: { user_name: 'ada' }, created_at: '2026-11-28T12:00:00.000Z' };
    const stored: ChannelMessage<'events:{account_id}'> = { type: 'event', kind: 'event', data: row, cursor: 'e:1:x' };
    const online: ChannelMessage<'events:{account_id}'> = { type: 'event', kind: 'notice', data: { type: 'channel:online', account_id: row.account_id, platform: 'platform_a', platform_channel_id: '42', event_id: row.id, raw: {}, at: row.created_at } };
    const broadcast: ChannelMessage<'events:{account_id}'> = { type: 'event', kind: 'broadcast', data: { ...row, raw: 'not an object' } };
    expect([stored, online, broadcast].map((m) => isMessage('streamEvent', m))).toEqual([true, false, false]);

    const overlay = { id: row.id, account_id: row.account_id, name: 'Alerts', settings: { color: 'red' }, version: 3, created_at: row.created_at, updated_at: row.created_at };
    const settings: ChannelMessage<'overlay:{key}'> = { type: 'event', channel: 'overlay:k', event_type: 'overlay:update', data: overlay };
    const fractional: ChannelMessage<'overlay:{key}'> = { type: 'event', channel: 'overlay:k', event_type: 'overlay:update', data: { ...overlay, version: 1.5 } };
    expect([settings, fractional].map((m) => isMessage('overlaySettingsUpdate', m))).toEqual([true, false]);
    // Anything else on the wire (an older server's frame, say) is not taken for a settings update.
    expect(isMessage('overlaySettingsUpdate', { event_type: 'overlay:update', data: { text: 'hello' } })).toBe(false);
    expect(isMessage('overlaySettingsUpdate', { event_type: 'alert:show', data: overlay })).toBe(false);

    expect(Object.keys(frameShapes)).toEqual(expect.arrayContaining(['overlaySettingsUpdate', 'streamEvent', 'widgetSettingsUpdate']));
  });

  test('a consumer narrows the discriminated families without a cast under tsc --strict', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'sdk-live-types-'));
    writeFileSync(path.join(dir, 'consumer.ts'), CONSUMER);
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          lib: ['ES2022', 'DOM'],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
          paths: { '@creator-backend/sdk': [path.join(root, 'sdk/src/index.ts')] },
        },
        files: ['consumer.ts'],
      }),
    );
    const output = await run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', dir, '--pretty', 'false'], { cwd: dir }).then(
      () => '',
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
    expect(output).toBe('');
    expect(CONSUMER).not.toMatch(/\bas\s+(?!const\b)[A-Za-z{[(]|<[A-Z]\w*>\s*\w/);
  });
});
