/**
 * The WebSocket protocol (spec/ws-protocol/, bundled into spec/published/asyncapi.json) as
 * AsyncAPI tools read it: `@asyncapi/parser` (the reference parser, with its Spectral ruleset) reports no error and no warning, and every channel family the server
 * gates is a real channel there, its address the channel name pattern with each placeholder a
 * declared parameter, carrying named and titled messages. The gates and relay table the server
 * runs on are the ones codegen derived from the same channels.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Parser, DiagnosticSeverity } from '@asyncapi/parser';
import { channels, messageWireTypes, relays } from '../../generated/ws';
import { wsDocument, wsFrameData } from '../../generated/ws-document';
import { resolveRef } from '../../src/infra/names';
import { useTestApp } from '../helpers/app';

const text = readFileSync(path.join(__dirname, '../../spec/published/asyncapi.json'), 'utf8');

describe('AsyncAPI document', () => {
  test('validates with no error and no warning', async () => {
    const { document, diagnostics } = await new Parser().parse(text);
    const problems = diagnostics.filter((d) => d.severity === DiagnosticSeverity.Error || d.severity === DiagnosticSeverity.Warning);
    expect(problems.map((d) => `${d.code} ${d.path.join('.')}: ${d.message}`)).toEqual([]);
    expect(document).toBeDefined();
  });

  test('every gated channel family is an AsyncAPI channel with its parameters and named, titled messages', async () => {
    const { document } = await new Parser().parse(text);
    const parsed = new Map(document!.channels().all().map((c) => [c.address(), c]));
    expect(parsed.get('/v1/ws')).toBeDefined();
    for (const family of channels) {
      const channel = parsed.get(family.pattern);
      expect(channel).toBeDefined();
      const placeholders = [...family.pattern.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
      expect(channel!.parameters().all().map((p) => p.id()).sort()).toEqual(placeholders.sort());
      const names = channel!.messages().all().map((m) => m.id());
      expect(names.sort()).toEqual([...family.messages].sort());
      for (const message of channel!.messages().all()) {
        expect(message.name()).toBe(messageWireTypes[message.id()]);
        expect(message.title()).toBeTruthy();
      }
    }
    // The families the relay feeds have frames, and an operation of the server sends them.
    const sent = new Set(document!.operations().filterBySend().flatMap((o) => o.channels().all().map((c) => c.address())));
    for (const relay of Object.values(relays)) expect(sent).toContain(relay.channel);
  });

  test('the run-time document is the published one, and each frame data pointer names an object schema carried by that frame type alone', () => {
    expect(wsDocument).toEqual(JSON.parse(text));
    expect(Object.keys(wsFrameData)).toContain('chat:moderation_log');
    for (const [type, pointer] of Object.entries(wsFrameData)) {
      expect(resolveRef({ $ref: pointer }, wsDocument)).toMatchObject({ type: 'object', properties: expect.any(Object) });
      const frame = resolveRef({ $ref: pointer.replace(/\/properties\/data$/, '') }, wsDocument) as { properties: { type: { const: string } } };
      expect(frame.properties.type.const).toBe(type);
    }
    // `event` is carried by many messages: no one data schema.
    expect(wsFrameData.event).toBeUndefined();
  });

  test('names every event_type the service sends', async () => {
    const doc = JSON.parse(text) as { components: { messages: Record<string, { payload: { properties: Record<string, { const?: string; enum?: string[] }> } }> } };
    const named = new Set(
      Object.values(doc.components.messages).flatMap((m) => {
        const eventType = m.payload.properties.event_type;
        return eventType?.const ? [eventType.const] : (eventType?.enum ?? []);
      }),
    );
    for (const sent of ['presence:join', 'presence:leave', 'bootstrap', 'sound:play', 'sound:stop', 'history:session_started', 'idea:created', 'comment:deleted']) {
      expect(named).toContain(sent);
    }
    const chatTypes = JSON.stringify((JSON.parse(text) as { components: { schemas: unknown } }).components.schemas);
    for (const sub of ['chat:delete', 'chat:clear_user', 'chat:moderation_log', 'chat:user_treatment_update']) expect(chatTypes).toContain(`"const":"${sub}"`);
  });

  describe('served', () => {
    const t = useTestApp();
    test('at /v1/asyncapi.json, exactly the checked-in document', async () => {
      const res = await fetch(`${t.url}/v1/asyncapi.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.text()).toBe(text);
    });
  });
});
