/**
 * WebSocket (spec/ws-protocol/, AsyncAPI 3, bundled by ws-parts.ts): the checks on messages, channel families and
 * relay entries, and the generated files generated/ws.ts (types, channel and relay tables,
 * limits), generated/ws-validators.js (standalone ajv), generated/ws-validators.d.ts and
 * generated/ws-document.ts (the bundled document at run time, and where each frame's data is).
 */
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import standaloneCode from 'ajv/dist/standalone';
import { BANNER, FEATURE_RE, PERMISSION_RE, fail } from './common';
import { bundleWs } from './ws-parts';

const CHANNEL_GATE_KINDS = [
  'Public',
  'PublicWhenFeature',
  'Authenticated',
  'Permission',
  'AccountScoped',
  'UserPermission',
  'OverlayToken',
  'WidgetToken',
  'ExtensionOwner',
  /** A user session of the user the channel names (`notifications:{user_id}`). */
  'OwnUser',
  'Unknown',
] as const;

type JsonSchema = Record<string, unknown>;
interface WsMessage {
  'x-direction': string;
  name?: string;
  title?: string;
  payload: JsonSchema;
}
interface WsChannel {
  address: string;
  parameters?: Record<string, unknown>;
  messages?: Record<string, { $ref?: string }>;
  'x-gate'?: { kind?: string; permission?: string; flag?: string };
  'x-feature'?: string | null;
  'x-broadcast-permission'?: string;
  'x-relay'?: WsRelay;
}
export interface WsDoc {
  channels: Record<string, WsChannel>;
  components: { messages: Record<string, WsMessage>; schemas: Record<string, JsonSchema> };
  'x-limits': Record<string, number>;
}
/** A channel family: an AsyncAPI channel with a gate (every channel but the session itself). */
interface WsFamily {
  id: string;
  pattern: string;
  gate?: { kind?: string; permission?: string; flag?: string };
  feature?: string | null;
  broadcast_permission?: string;
  relay?: WsRelay;
  /** Component message names of the family's frames. */
  messages: string[];
}
/** A channel's row of the relay table (its `x-relay`), as written in spec/ws-protocol/. */
interface WsRelay {
  bus?: unknown;
  envelope?: unknown;
  form?: unknown;
  event_type_default?: unknown;
  resume?: unknown;
  discriminant?: unknown;
}
/** Where a relayed family's frames are replayed from after a `since`. */
const RESUME_SOURCES = ['stored', 'buffer'];
/** The envelope members each relay form fills; the envelope's payload schema must declare them. */
const RELAY_FORMS: Record<string, string[]> = { legacy: ['type', 'data'], lifted: ['type', 'channel', 'event_type', 'data'] };
const placeholders = (pattern: string) => [...pattern.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]!).sort();
/** The wire `type` of a message (its payload's `type` const). */
const wireType = (m: WsMessage) => (m.payload.properties as Record<string, JsonSchema> | undefined)?.type?.const as string | undefined;

/** A channel pattern as the run-time matcher reads it (src/realtime/channels.ts). */
const patternRe = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split(/(\{[a-z_]+\})/)
      .map((part) => {
        const placeholder = /^\{([a-z_]+)\}$/.exec(part);
        if (!placeholder) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        return placeholder[1]!.endsWith('_channel') ? '(.+)' : '([^:]+)';
      })
      .join('')}$`,
  );

/**
 * The matcher takes the first family whose pattern matches, so a family an earlier one would take
 * (`ideas:list` after `ideas:{idea_id}`) is never reached: refused, whatever order the parts give.
 */
function checkShadowing(families: WsFamily[]): void {
  families.forEach((later, j) => {
    const sample = later.pattern.replace(/\{[a-z_]+\}/g, 'x');
    const earlier = families.slice(0, j).find((f) => patternRe(f.pattern).test(sample));
    if (earlier) fail(`ws channel ${later.pattern}: never matched, ws channel ${earlier.pattern} comes first and takes its names (list the literal address first)`);
  });
}

/** The channel families of the document, in document order (the matcher tries them in that order). */
function wsFamilies(doc: WsDoc): WsFamily[] {
  return Object.entries(doc.channels)
    .filter(([, c]) => c['x-gate'] !== undefined)
    .map(([id, c]) => ({
      id,
      pattern: c.address,
      gate: c['x-gate'],
      feature: c['x-feature'],
      broadcast_permission: c['x-broadcast-permission'],
      relay: c['x-relay'],
      messages: Object.values(c.messages ?? {}).map((m) => (m.$ref ?? '').replace('#/components/messages/', '')),
    }));
}

/**
 * Refuses a relay entry that is not complete: the bus channel (a literal family, then the
 * channel pattern's placeholders), a server message type as envelope that the family's frames of
 * that type declare with the members the form fills, and for the lifted form an explicit
 * event_type_default (a type or null). Bus families are unique: the relay finds its row by the
 * family of the bus channel.
 */
function checkRelay(where: string, family: WsFamily, relay: unknown, doc: WsDoc, families: Map<string, string>): void {
  const pattern = family.pattern;
  if (typeof relay !== 'object' || relay === null || Array.isArray(relay)) {
    fail(`${where}: relay must be an object`);
    return;
  }
  const r = relay as WsRelay;
  if (typeof r.bus !== 'string' || !/^[a-z_-]+:/.test(r.bus)) fail(`${where}: relay needs bus (family:{placeholders}, e.g. events:{account_id})`);
  else {
    if (JSON.stringify(placeholders(r.bus)) !== JSON.stringify(placeholders(pattern))) fail(`${where}: relay bus ${r.bus} must carry the placeholders of ${pattern}`);
    const busFamily = r.bus.slice(0, r.bus.indexOf(':'));
    const other = families.get(busFamily);
    if (other) fail(`${where}: relay bus family ${busFamily} is already relayed to ${other}`);
    families.set(busFamily, pattern);
  }
  const form = typeof r.form === 'string' ? RELAY_FORMS[r.form] : undefined;
  if (!form) fail(`${where}: relay needs form (${Object.keys(RELAY_FORMS).join(' or ')})`);
  const frames = family.messages.map((name) => doc.components.messages[name]).filter((m): m is WsMessage => m !== undefined && wireType(m) === r.envelope);
  if (typeof r.envelope !== 'string' || frames.length === 0 || frames.some((m) => m['x-direction'] !== 'server')) {
    fail(`${where}: relay needs envelope (the type of server messages of the channel)`);
  } else if (form) {
    for (const message of frames) {
      const members = Object.keys((message.payload.properties as Record<string, unknown> | undefined) ?? {});
      const missing = form.filter((m) => !members.includes(m));
      if (missing.length) fail(`${where}: relay envelope ${String(r.envelope)} lacks ${missing.join(', ')} for the ${String(r.form)} form`);
    }
  }
  if (r.form === 'lifted' && !('event_type_default' in r)) fail(`${where}: a lifted relay needs event_type_default (an event type or null)`);
  if (r.form === 'lifted' && r.event_type_default !== null && r.event_type_default !== undefined && typeof r.event_type_default !== 'string') {
    fail(`${where}: relay event_type_default must be a string or null`);
  }
  if (r.form === 'legacy' && 'event_type_default' in r) fail(`${where}: event_type_default applies to lifted relays only`);
  if (!RESUME_SOURCES.includes(r.resume as string)) fail(`${where}: relay needs resume (${RESUME_SOURCES.join(' or ')})`);
  if (r.discriminant !== undefined) kindsOf(where, family, r, doc);
}

/**
 * A legacy family whose frames come in several messages names the envelope member the relay sets
 * on every frame (`discriminant`): each of the family's messages declares it, required, as a const
 * of its own. The relay gives a frame the kind of the first message, in the channel's order, whose
 * schema the frame validates against (spec/ws-protocol/root.json, "Relay"), so list the most
 * specific message first and an open one (data of any shape) last.
 */
function kindsOf(where: string, family: WsFamily, r: WsRelay, doc: WsDoc, report = true): Array<{ kind: string; message: string }> {
  const problem = report ? fail : () => undefined;
  const member = r.discriminant;
  if (typeof member !== 'string' || !/^[a-z_]+$/.test(member)) {
    problem(`${where}: relay discriminant must be the name of an envelope member`);
    return [];
  }
  if (r.form !== 'legacy') problem(`${where}: relay discriminant applies to legacy relays (a lifted relay's frames differ by event_type)`);
  const kinds: Array<{ kind: string; message: string }> = [];
  for (const name of family.messages) {
    const payload = doc.components.messages[name]?.payload;
    const value = (payload?.properties as Record<string, JsonSchema> | undefined)?.[member]?.const;
    if (typeof value !== 'string' || !((payload?.required as string[] | undefined) ?? []).includes(member)) problem(`${where}: message ${name} must declare ${member} as a required const (the relay's discriminant)`);
    else if (kinds.some((k) => k.kind === value)) problem(`${where}: message ${name} repeats ${member} ${value}; every message of the family needs its own`);
    else kinds.push({ kind: value, message: name });
  }
  return kinds;
}

function pascal(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((s) => s[0]!.toUpperCase() + s.slice(1))
    .join('');
}

/** Emits a TypeScript type for the JSON Schema subset the WebSocket protocol uses. */
function tsType(schema: JsonSchema, refs: Record<string, string>): string {
  if (schema.$ref) return refs[schema.$ref as string] ?? 'unknown';
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as JsonSchema[]).map((s) => `(${tsType(s, refs)})`).join(' | ');
  if (Array.isArray(schema.type)) return (schema.type as string[]).map((t) => tsType({ ...schema, type: t }, refs)).join(' | ');
  switch (schema.type) {
    case 'null':
      return 'null';
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return `Array<${tsType((schema.items as JsonSchema) ?? {}, refs)}>`;
    case 'object': {
      const required = new Set((schema.required as string[]) ?? []);
      const props = Object.entries((schema.properties as Record<string, JsonSchema>) ?? {}).map(
        ([k, v]) => `  ${JSON.stringify(k)}${required.has(k) ? '' : '?'}: ${tsType(v, refs)};`,
      );
      return props.length ? `{\n${props.join('\n')}\n}` : 'Record<string, unknown>';
    }
    default:
      return 'unknown';
  }
}

/**
 * The frames whose `data` is one object schema with declared members, by wire type: the rows a
 * socket-only entity is stored as (src/infra/db/rows.ts, wsSchemaRows). A wire type carried by
 * more than one message or sub-type schema (`event`) names no one data schema and is left out.
 */
function frameData(doc: WsDoc): Array<{ type: string; pointer: string; ts: string }> {
  const carriers = new Map<string, Array<{ pointer: string; ts: string; data: JsonSchema }>>();
  const visit = (payload: JsonSchema, at: string, ts: string) => {
    const properties = payload.properties as Record<string, JsonSchema> | undefined;
    const type = properties?.type?.const;
    if (typeof type !== 'string' || !properties?.data) return;
    carriers.set(type, [...(carriers.get(type) ?? []), { pointer: `${at}/properties/data`, ts: `NonNullable<${ts}["data"]>`, data: properties.data }]);
  };
  for (const [name, m] of Object.entries(doc.components.messages)) visit(m.payload, `#/components/messages/${name}/payload`, `Ws${pascal(name)}Message`);
  for (const [name, s] of Object.entries(doc.components.schemas)) visit(s, `#/components/schemas/${name}`, `Ws${pascal(name)}`);
  const declared = (s: JsonSchema): boolean => {
    const target = typeof s.$ref === 'string' ? doc.components.schemas[s.$ref.replace('#/components/schemas/', '')] : s;
    return target?.type === 'object' && Object.keys((target.properties as object | undefined) ?? {}).length > 0;
  };
  return [...carriers]
    .filter(([, list]) => list.length === 1 && declared(list[0]!.data))
    .map(([type, [only]]) => ({ type, pointer: only!.pointer, ts: only!.ts }))
    .sort((a, b) => a.type.localeCompare(b.type));
}

/** generated/ws-document.ts: the bundled document (as spec/published/asyncapi.json publishes it) and its frames' data schemas. */
export function wsDocumentModule(doc: WsDoc): string {
  const pointers = Object.fromEntries(frameData(doc).map((f) => [f.type, f.pointer]));
  return `${BANNER}
/** The bundled WebSocket protocol (spec/ws-protocol/): what the row mappings of socket-only entities read. */
export const wsDocument = ${JSON.stringify(doc, null, 2)};

/** Per wire type (WsFrameData in ./ws), the JSON pointer of its frame's data schema in wsDocument. */
export const wsFrameData: Readonly<Record<string, string>> = ${JSON.stringify(pointers, null, 2)};
`;
}

export function wsModules(doc: WsDoc): { types: string; validators: string; declarations: string } {
  const refs: Record<string, string> = {};
  for (const name of Object.keys(doc.components.schemas)) refs[`#/components/schemas/${name}`] = `Ws${pascal(name)}`;
  const messages = Object.entries(doc.components.messages).sort(([a], [b]) => a.localeCompare(b));
  for (const [name, m] of messages) {
    if (m['x-direction'] !== 'client' && m['x-direction'] !== 'server') fail(`ws message ${name}: x-direction must be client or server`);
    if (typeof wireType(m) !== 'string') fail(`ws message ${name}: payload.type must be a const`);
    if (m.name !== wireType(m)) fail(`ws message ${name}: name must be its wire type ${String(wireType(m))}`);
    if (!m.title) fail(`ws message ${name}: no title`);
  }
  // Wire types: one validator and one type per `type` value, the union of the messages carrying it.
  const byType = new Map<string, { direction: string; names: string[] }>();
  for (const [name, m] of messages) {
    const type = wireType(m)!;
    const entry = byType.get(type) ?? { direction: m['x-direction'], names: [] };
    if (entry.direction !== m['x-direction']) fail(`ws message type ${type}: both client and server messages carry it`);
    entry.names.push(name);
    byType.set(type, entry);
  }
  const types = [...byType.entries()].sort(([a], [b]) => a.localeCompare(b));
  for (const [type, { names }] of types) {
    const clash = messages.find(([name]) => pascal(name) === pascal(type) && !(names.length === 1 && names[0] === name));
    if (clash) fail(`ws message ${clash[0]}: its name clashes with the wire type ${type}`);
  }
  const client = types.filter(([, t]) => t.direction === 'client');
  const server = types.filter(([, t]) => t.direction === 'server');

  const families = wsFamilies(doc);
  checkShadowing(families);
  const relayFamilies = new Map<string, string>();
  for (const family of families) {
    const where = `ws channel ${family.pattern}`;
    const kind = family.gate?.kind;
    if (!kind) fail(`${where}: no gate kind`);
    else if (!(CHANNEL_GATE_KINDS as readonly string[]).includes(kind)) fail(`${where}: unknown gate kind ${kind}`);
    if ((kind === 'Permission' || kind === 'UserPermission') && !PERMISSION_RE.test(family.gate?.permission ?? '')) {
      fail(`${where}: ${kind} needs a permission`);
    }
    if (kind === 'PublicWhenFeature' && !FEATURE_RE.test(family.gate?.flag ?? '')) fail(`${where}: PublicWhenFeature needs a flag`);
    if (family.feature !== null && family.feature !== undefined && !FEATURE_RE.test(family.feature)) fail(`${where}: bad feature ${family.feature}`);
    const params = Object.keys(doc.channels[family.id]!.parameters ?? {}).sort();
    if (JSON.stringify(params) !== JSON.stringify(placeholders(family.pattern))) fail(`${where}: parameters must be exactly the address placeholders`);
    for (const name of family.messages) {
      const m = doc.components.messages[name];
      if (!m || m['x-direction'] !== 'server') fail(`${where}: message ${name} is not a server message of components.messages`);
    }
    if (family.relay !== undefined) checkRelay(where, family, family.relay, doc, relayFamilies);
  }

  const schemaTypes = Object.entries(doc.components.schemas)
    .map(([name, s]) => `export type Ws${pascal(name)} = ${tsType(s, refs)};`)
    .join('\n\n');
  const messageTypes = messages
    .map(([name, m]) => `/** ${name}: ${m.title} (${m['x-direction']} message \`${wireType(m)}\`) */\nexport type Ws${pascal(name)}Message = ${tsType(m.payload, refs)};`)
    .join('\n\n');
  const typeUnions = types
    .filter(([type, { names }]) => !(names.length === 1 && names[0] === type))
    .map(([type, { names }]) => `/** Every \`${type}\` frame. */\nexport type Ws${pascal(type)}Message = ${names.map((n) => `Ws${pascal(n)}Message`).join(' | ')};`)
    .join('\n\n');
  const union = (list: typeof types) => list.map(([type]) => `Ws${pascal(type)}Message`).join(' | ');
  const discriminantOf = (family: WsFamily) =>
    typeof family.relay?.discriminant === 'string' ? { member: family.relay.discriminant, kinds: kindsOf(`ws channel ${family.pattern}`, family, family.relay, doc, false) } : null;
  const relayOf = (family: WsFamily) => {
    const r = family.relay;
    return r
      ? { bus: r.bus, envelope: r.envelope, form: r.form, eventTypeDefault: r.form === 'lifted' ? (r.event_type_default ?? null) : null, resume: r.resume, discriminant: discriminantOf(family) }
      : null;
  };
  const channels = families.map((c) => ({
    pattern: c.pattern,
    gate: c.gate,
    feature: c.feature ?? null,
    broadcastPermission: c.broadcast_permission ?? null,
    relay: relayOf(c),
    messages: c.messages,
  }));
  const relays = Object.fromEntries(
    families.filter((c) => c.relay && typeof c.relay.bus === 'string').map((c) => [(c.relay!.bus as string).split(':')[0], { ...relayOf(c), channel: c.pattern }]),
  );
  const messageWireTypes = Object.fromEntries(messages.map(([name, m]) => [name, wireType(m)]));
  const typesOut = `${BANNER}
${schemaTypes}

${messageTypes}

${typeUnions}

/** The data of each frame whose data is one object schema, by wire type (its schema: wsFrameData in ./ws-document). */
export interface WsFrameData {
${frameData(doc).map((f) => `  ${JSON.stringify(f.type)}: ${f.ts};`).join('\n')}
}

export type WsClientMessage = ${union(client)};
export type WsServerMessage = ${union(server)};
export type WsClientMessageType = WsClientMessage['type'];
export type WsServerMessageType = WsServerMessage['type'];

export const clientMessageTypes = ${JSON.stringify(client.map(([n]) => n))} as const;
export const serverMessageTypes = ${JSON.stringify(server.map(([n]) => n))} as const;
/** Every named message of components.messages with its wire \`type\`. */
export const messageWireTypes: Readonly<Record<string, string>> = ${JSON.stringify(messageWireTypes, null, 2)};

export type ChannelGateKind = ${CHANNEL_GATE_KINDS.map((k) => `'${k}'`).join(' | ')};
export interface ChannelSpec {
  /** Pattern with {placeholders} (the AsyncAPI channel address), e.g. events:{account_id}. */
  pattern: string;
  gate: { kind: ChannelGateKind; permission?: string; flag?: string };
  feature: string | null;
  /** Permission a client needs to broadcast; null when client broadcasts are refused. */
  broadcastPermission: string | null;
  /** How the internal bus feeds this channel; null when nothing is relayed to it. */
  relay: ChannelRelay | null;
  /** The named messages (components.messages) of the frames the channel carries. */
  messages: readonly string[];
}

/** legacy: the envelope's data is the publisher's JSON; lifted: event_type and data come out of the payload. */
export type RelayForm = ${Object.keys(RELAY_FORMS).map((k) => `'${k}'`).join(' | ')};
export interface ChannelRelay {
  /** Internal bus channel, with the channel pattern's placeholders, e.g. music:{account_id}. */
  bus: string;
  /** The server message that wraps each bus message. */
  envelope: WsServerMessageType;
  form: RelayForm;
  /** event_type when a lifted payload names none; null when the envelope then carries none. */
  eventTypeDefault: string | null;
  /** Replay source after a subscribe's since: the events table (stored) or the per-channel buffer. */
  resume: ResumeSource;
  /**
   * A legacy family whose frames come in several messages: the envelope member the relay sets on
   * every frame, and its value per message, in the order the relay tries them (the first whose
   * schema the frame validates against); null when the family's frames need none.
   */
  discriminant: { member: string; kinds: ReadonlyArray<{ kind: string; message: string }> } | null;
}
export type ResumeSource = ${RESUME_SOURCES.map((k) => `'${k}'`).join(' | ')};
export const channels: readonly ChannelSpec[] = ${JSON.stringify(channels, null, 2)};

/**
 * The relay table by internal bus family (the bus channel up to its first colon): only these
 * families are relayed; \`channel\` is the socket channel pattern each delivers to.
 */
export const relays: Readonly<Record<string, ChannelRelay & { channel: string }>> = ${JSON.stringify(relays, null, 2)};

export const wsLimits = ${JSON.stringify(doc['x-limits'], null, 2)} as const;
`;

  // One Ajv per validator, each emitted in its own scope: Ajv numbers its functions per instance, so
  // a change to one frame's schema rewrites that frame's validators and leaves the others' text as it was.
  const compiled: string[] = [];
  const emit = (exportName: string, schema: JsonSchema) => {
    const ajv = new Ajv({ code: { source: true, lines: true }, strict: true, allowUnionTypes: true, allErrors: false });
    addFormats(ajv);
    ajv.addSchema(schema, exportName);
    const code = standaloneCode(ajv, { [exportName]: exportName }).replace(/^"use strict";/, '');
    compiled.push(`exports.${exportName} = (function () {\nconst exports = {};\n${code}\nreturn exports.${exportName};\n})();\n`);
  };
  for (const [name, m] of messages) emit(`validate${pascal(name)}`, inlineRefs(m.payload, doc.components.schemas));
  // A wire type's validator tries its messages' validators in turn (what `anyOf` did), so it shares
  // their code instead of compiling every message a second time; on failure it keeps every branch's
  // errors in order, as `anyOf` reported them.
  for (const [type, { names }] of types) {
    if (names.length === 1 && names[0] === type) continue;
    const members = names.map((n) => `exports.validate${pascal(n)}`).join(', ');
    compiled.push(`exports.validate${pascal(type)} = (function () {
const members = [${members}];
function validate(data) {
  const errors = [];
  for (const member of members) {
    if (member(data)) {
      validate.errors = null;
      return true;
    }
    errors.push(...(member.errors || []));
  }
  validate.errors = errors;
  return false;
}
return validate;
})();
`);
  }
  const validators = `${BANNER.replace('/* eslint-disable */\n', '/* eslint-disable */\n"use strict";\n')}${compiled.join('')}`;
  const typeNames = [...new Set([...messages.map(([n]) => n), ...types.map(([t]) => t)])].sort((a, b) => a.localeCompare(b));
  const declarations = `${BANNER}import type { ErrorObject } from 'ajv';
import type { ${typeNames.map((n) => `Ws${pascal(n)}Message`).join(', ')} } from './ws';

export interface WsValidator<T> {
  (data: unknown): data is T;
  errors?: ErrorObject[] | null;
}
${typeNames.map((n) => `export declare const validate${pascal(n)}: WsValidator<Ws${pascal(n)}Message>;`).join('\n')}
`;
  return { types: typesOut, validators, declarations };
}

/** A payload with the component schemas it names written in, and no vendor extension (ajv's strict mode knows none). */
function inlineRefs(schema: unknown, defs: Record<string, JsonSchema>): JsonSchema {
  return JSON.parse(JSON.stringify(schema), (k, v) => {
    if (k.startsWith('x-')) return undefined;
    if (v && typeof v === 'object' && typeof v.$ref === 'string' && v.$ref.startsWith('#/components/schemas/')) {
      return inlineRefs(defs[v.$ref.slice('#/components/schemas/'.length)], defs);
    }
    return v;
  }) as JsonSchema;
}

/** Bundles spec/ws-protocol/ (ws-parts.ts); the text is what is published (see published.ts). */
export function readWs(openapi?: Record<string, unknown>): { text: string; doc: WsDoc } {
  const doc = bundleWs(openapi);
  return { text: `${JSON.stringify(doc, null, 2)}\n`, doc: doc as unknown as WsDoc };
}
