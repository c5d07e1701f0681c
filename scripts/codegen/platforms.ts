/**
 * The platforms' inbound contracts (spec/platforms/<platform>.json, one AsyncAPI document per
 * platform): what each platform sends the service (platform_a's socket frames, platform_b's polled
 * live chat items and WebSub entries, platform_c's webhook bodies). Each message declares how it
 * is recognised (`x-match`: the members, or the receiver's header as `event_type`, that pick it),
 * its payload (JSON Schema) and how it is ingested (`x-ingest`: stored as an event type, or handed
 * to the chat, moderation or treatment pipeline). The checks refuse a document or message that
 * lacks one of those, an event type outside its platform, and two messages one frame could match.
 *
 * Generates generated/platforms.ts (the message table per platform, read by
 * src/modules/platforms/contracts.ts), generated/platform-validators.js (standalone ajv, one
 * validator per message) and its declarations, so the adapters' parsers validate what the specs
 * declare and nothing else.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import standaloneCode from 'ajv/dist/standalone';
import { BANNER, fail, readSpec, root } from './common';

export const PLATFORMS_DIR = 'spec/platforms';
const PLATFORM_RE = /^[a-z][a-z0-9_]*$/;
const EVENT_TYPE_RE = /^[A-Za-z0-9_.-]+:[A-Za-z0-9_.:-]+$/;
const INGEST_KINDS = ['event', 'chat', 'moderation', 'treatment'];
const STREAM_STATES = ['online', 'offline', 'update'];
const PUBLISHES = ['now-playing'];

type JsonSchema = Record<string, unknown>;
interface PlatformMessageSpec {
  name?: string;
  title?: string;
  'x-match'?: Record<string, unknown>;
  'x-ingest'?: { kind?: string; type?: string; stream?: string; publish?: string; transient?: Record<string, string> };
  payload?: JsonSchema;
}
interface PlatformDoc {
  asyncapi?: string;
  'x-platform'?: string;
  /** A signed receiver's body member naming the connection (its `platform_channel_id`) the account resolves by. */
  'x-connection-key'?: string;
  channels?: Record<string, { messages?: Record<string, { $ref?: string }> }>;
  components?: { messages?: Record<string, PlatformMessageSpec>; schemas?: Record<string, JsonSchema> };
}

export interface PlatformContracts {
  docs: Array<{ file: string; platform: string; doc: PlatformDoc }>;
}

const pascal = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((s) => s[0]!.toUpperCase() + s.slice(1))
    .join('');

export const validatorName = (platform: string, message: string) => `validate${pascal(platform)}${pascal(message)}`;

/** Reads and checks every document under spec/platforms/. */
export function readPlatforms(): PlatformContracts {
  const files = readdirSync(path.join(root, PLATFORMS_DIR)).sort();
  const docs: PlatformContracts['docs'] = [];
  for (const file of files) {
    const where = `${PLATFORMS_DIR}/${file}`;
    if (!file.endsWith('.json')) {
      fail(`${where}: only <platform>.json documents belong in ${PLATFORMS_DIR}`);
      continue;
    }
    let doc: PlatformDoc;
    try {
      doc = JSON.parse(readSpec(where)) as PlatformDoc;
    } catch (error) {
      fail(`${where}: does not parse (${(error as Error).message})`);
      continue;
    }
    const platform = doc['x-platform'];
    if (typeof platform !== 'string' || !PLATFORM_RE.test(platform) || `${platform}.json` !== file) {
      fail(`${where}: x-platform must name the platform the file is named after`);
      continue;
    }
    if (typeof doc.asyncapi !== 'string' || !doc.asyncapi.startsWith('3.')) fail(`${where}: asyncapi must be 3.x`);
    checkMessages(where, platform, doc);
    docs.push({ file: where, platform, doc });
  }
  return { docs };
}

function checkMessages(where: string, platform: string, doc: PlatformDoc): void {
  const messages = doc.components?.messages ?? {};
  if (Object.keys(messages).length === 0) fail(`${where}: no messages`);
  const referenced = new Set<string>();
  for (const [id, channel] of Object.entries(doc.channels ?? {})) {
    for (const ref of Object.values(channel.messages ?? {})) {
      const name = (ref.$ref ?? '').replace('#/components/messages/', '');
      if (!messages[name]) fail(`${where}: channel ${id} names ${ref.$ref ?? '(no $ref)'}, which components.messages lacks`);
      referenced.add(name);
    }
  }
  const matches = new Map<string, string>();
  for (const [name, m] of Object.entries(messages)) {
    const at = `${where} message ${name}`;
    if (!referenced.has(name)) fail(`${at}: no channel carries it`);
    if (m.name !== name) fail(`${at}: name must be ${name}`);
    if (!m.title) fail(`${at}: no title`);
    const match = m['x-match'];
    if (!match || typeof match !== 'object' || Object.keys(match).length === 0 || Object.values(match).some((v) => typeof v !== 'string' && typeof v !== 'boolean')) {
      fail(`${at}: x-match must name the members (strings or booleans) that pick it`);
    } else {
      const key = JSON.stringify(Object.entries(match).sort(([a], [b]) => a.localeCompare(b)));
      const other = matches.get(key);
      if (other) fail(`${at}: matches what ${other} matches`);
      matches.set(key, name);
    }
    const ingest = m['x-ingest'];
    if (!ingest || !INGEST_KINDS.includes(ingest.kind ?? '')) fail(`${at}: x-ingest.kind must be one of ${INGEST_KINDS.join(', ')}`);
    else if (ingest.kind === 'event') {
      if (typeof ingest.type !== 'string' || !EVENT_TYPE_RE.test(ingest.type) || !ingest.type.startsWith(`${platform}:`) || ingest.type.length > 100) fail(`${at}: x-ingest.type must be a ${platform}: event type`);
      if (ingest.stream !== undefined && !STREAM_STATES.includes(ingest.stream)) fail(`${at}: x-ingest.stream must be one of ${STREAM_STATES.join(', ')}`);
      if (ingest.publish !== undefined && !PUBLISHES.includes(ingest.publish)) fail(`${at}: x-ingest.publish must be one of ${PUBLISHES.join(', ')}`);
    }
    for (const type of Object.values(ingest?.transient ?? {})) if (!type.startsWith(`${platform}:`)) fail(`${at}: transient type ${type} is not a ${platform}: type`);
    if (!m.payload || m.payload.type !== 'object') fail(`${at}: payload must be an object schema`);
    const key = doc['x-connection-key'];
    if (key !== undefined && !((m.payload?.required as string[] | undefined) ?? []).includes(key)) fail(`${at}: the payload must require the connection key ${key}`);
  }
}

/** generated/platforms.ts, generated/platform-validators.js and .d.ts. */
export function platformModules(contracts: PlatformContracts): { table: string; validators: string; declarations: string } {
  const ajv = new Ajv({ code: { source: true, lines: true }, strict: true, allowUnionTypes: true, allErrors: false });
  addFormats(ajv);
  const exportsMap: Record<string, string> = {};
  const table: Record<string, unknown[]> = {};
  const connectionKeys: Record<string, string> = {};
  for (const { platform, doc } of contracts.docs) {
    const schemas = doc.components?.schemas ?? {};
    if (doc['x-connection-key']) connectionKeys[platform] = doc['x-connection-key'];
    table[platform] = Object.entries(doc.components?.messages ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, m]) => {
        const validator = validatorName(platform, name);
        const id = `platform:${platform}:${name}`;
        try {
          ajv.addSchema(inlineRefs(m.payload ?? {}, schemas), id);
          ajv.getSchema(id);
        } catch (error) {
          fail(`${PLATFORMS_DIR}/${platform}.json message ${name}: payload does not compile (${(error as Error).message})`);
          ajv.removeSchema(id);
          return null;
        }
        exportsMap[validator] = id;
        const ingest = m['x-ingest'] ?? {};
        return {
          name,
          title: m.title ?? '',
          match: m['x-match'] ?? {},
          ingest: { kind: ingest.kind, ...(ingest.type ? { type: ingest.type } : {}), ...(ingest.stream ? { stream: ingest.stream } : {}), ...(ingest.publish ? { publish: ingest.publish } : {}), ...(ingest.transient ? { transient: ingest.transient } : {}) },
          validator,
        };
      })
      .filter((m) => m !== null);
  }
  const names = Object.keys(exportsMap).sort();
  const tableOut = `${BANNER}
/** How an inbound message is ingested (spec/platforms/, \`x-ingest\`). */
export type PlatformIngest =
  | { kind: 'event'; type: string; stream?: 'online' | 'offline' | 'update'; publish?: 'now-playing' }
  | { kind: 'chat' }
  | { kind: 'moderation'; transient?: Readonly<Record<string, string>> }
  | { kind: 'treatment' };

/** One message a platform sends: what picks it (\`match\`), how it is ingested, and its validator in ./platform-validators. */
export interface PlatformMessageSpec {
  name: string;
  title: string;
  match: Readonly<Record<string, string | boolean>>;
  ingest: PlatformIngest;
  validator: ${names.length ? names.map((n) => `'${n}'`).join(' | ') : 'never'};
}

/** The messages of each platform's inbound document (spec/platforms/<platform>.json), by platform. */
export const platformMessages: Readonly<Record<string, readonly PlatformMessageSpec[]>> = ${JSON.stringify(table, null, 2)};

/** The signed receivers' body member naming the connection the account resolves by (\`x-connection-key\`), by platform. */
export const platformConnectionKeys: Readonly<Record<string, string>> = ${JSON.stringify(connectionKeys, null, 2)};
`;
  const validators = `${BANNER.replace('/* eslint-disable */\n', '/* eslint-disable */\n"use strict";\n')}${standaloneCode(ajv, exportsMap).replace(/^"use strict";/, '')}`;
  const declarations = `${BANNER}import type { ErrorObject } from 'ajv';

export interface PlatformValidator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}
${names.map((n) => `export declare const ${n}: PlatformValidator;`).join('\n')}
`;
  return { table: tableOut, validators, declarations };
}

function inlineRefs(schema: unknown, defs: Record<string, JsonSchema>): JsonSchema {
  return JSON.parse(JSON.stringify(schema), (_k, v) => {
    if (v && typeof v === 'object' && typeof v.$ref === 'string' && v.$ref.startsWith('#/components/schemas/')) {
      return inlineRefs(defs[v.$ref.slice('#/components/schemas/'.length)], defs);
    }
    return v;
  }) as JsonSchema;
}
