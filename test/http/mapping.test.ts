/**
 * The snake_case ⇄ camelCase mapping as a unit: declared members are renamed at every depth,
 * opaque JSON (an object schema without declared properties) passes through untouched whatever
 * its keys, undeclared domain members never reach the wire, and hostile keys stay ordinary keys.
 * Shapes are read from the generated OpenAPI document, as the router reads them.
 */
import fc from 'fast-check';
import { openapiDocument } from '../../generated/openapi-document';
import { routes } from '../../generated/rest';
import { camelKeys, camelName, shapeOf, toDomain, toWire } from '../../src/http/mapping';

const doc = {
  components: {
    schemas: {
      Event: {
        type: 'object',
        additionalProperties: false,
        properties: {
          event_type: { type: 'string' },
          raw: { type: 'object', additionalProperties: true },
          source_channel: { $ref: '#/components/schemas/Channel' },
          tags: { type: 'array', items: { $ref: '#/components/schemas/Tag' } },
        },
      },
      Channel: { type: 'object', nullable: true, properties: { platform_channel_id: { type: 'string' }, display_name: { type: 'string' } } },
      Tag: { type: 'object', properties: { tag_id: { type: 'string' } } },
      Tree: { type: 'object', properties: { node_name: { type: 'string' }, child_nodes: { type: 'array', items: { $ref: '#/components/schemas/Tree' } } } },
      Either: { oneOf: [{ $ref: '#/components/schemas/Tag' }, { $ref: '#/components/schemas/Channel' }] },
    },
  },
};
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

describe('mapping', () => {
  test('names: snake_case to camelCase', () => {
    expect(camelName('user_id')).toBe('userId');
    expect(camelName('max_sound_file_size')).toBe('maxSoundFileSize');
    expect(camelName('x_2y')).toBe('x2y');
    expect(camelName('id')).toBe('id');
    expect(camelKeys({ user_id: 'u', account_id: 'a', page: 2 })).toEqual({ userId: 'u', accountId: 'a', page: 2 });
  });

  test('declared members are renamed at every depth; opaque JSON keeps its keys as sent', () => {
    const shape = shapeOf(ref('Event'), doc);
    const domain = {
      eventType: 'platform_a:follow',
      raw: { user_id: 'u1', nestedKey: { snake_case: 1, camelCase: 2 } },
      sourceChannel: { platformChannelId: 'c1', displayName: 'Chan' },
      tags: [{ tagId: 't1' }],
      internalOnly: 'never on the wire',
    };
    const wire = toWire(domain, shape);
    expect(wire).toEqual({
      event_type: 'platform_a:follow',
      raw: { user_id: 'u1', nestedKey: { snake_case: 1, camelCase: 2 } },
      source_channel: { platform_channel_id: 'c1', display_name: 'Chan' },
      tags: [{ tag_id: 't1' }],
    });
    expect((wire as { raw: unknown }).raw).toBe(domain.raw);
    const { internalOnly: _internal, ...declared } = domain;
    expect(toDomain(wire, shape)).toEqual(declared);
  });

  test('nulls and absent members pass as they are; a value already in wire form is accepted', () => {
    const shape = shapeOf(ref('Event'), doc);
    expect(toWire({ eventType: 'a', sourceChannel: null }, shape)).toEqual({ event_type: 'a', source_channel: null });
    expect(toWire({ event_type: 'a' }, shape)).toEqual({ event_type: 'a' });
  });

  test('recursive schemas terminate and map every level', () => {
    const shape = shapeOf(ref('Tree'), doc);
    expect(toWire({ nodeName: 'a', childNodes: [{ nodeName: 'b', childNodes: [] }] }, shape)).toEqual({ node_name: 'a', child_nodes: [{ node_name: 'b', child_nodes: [] }] });
  });

  test('a union maps with the option whose members fit the value', () => {
    const shape = shapeOf(ref('Either'), doc);
    expect(toWire({ platformChannelId: 'c' }, shape)).toEqual({ platform_channel_id: 'c' });
    expect(toDomain({ tag_id: 't' }, shape)).toEqual({ tagId: 't' });
  });

  test('hostile keys in a request stay ordinary keys (no prototype is touched)', () => {
    const shape = shapeOf(ref('Event'), doc);
    const body = JSON.parse('{"event_type":"a","__proto__":{"polluted":true},"raw":{"__proto__":{"x":1}}}') as unknown;
    const domain = toDomain(body, shape) as Record<string, unknown>;
    expect(Object.getPrototypeOf(domain)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(domain)).toEqual(['eventType', '__proto__', 'raw']);
  });

  test('the audit ingest body: metadata is opaque, its keys stay as sent', () => {
    const op = (openapiDocument.paths as unknown as Record<string, Record<string, { requestBody: { content: Record<string, { schema: unknown }> } }>>)['/internal/audit-ingest']!.post!;
    const shape = shapeOf(op.requestBody.content['application/json']!.schema);
    const metadata = { ip_address: 'kept', someKey: { user_id: 'x' } };
    expect(toDomain({ user_id: 'u', type: 'user:login', ip_address: '1.2.3.4', metadata }, shape)).toEqual({ userId: 'u', type: 'user:login', ipAddress: '1.2.3.4', metadata });
  });

  test('property: for every REST response schema, a wire value that fits it survives domain and back unchanged', () => {
    type Schema = Record<string, unknown>;
    const resolve = (node: unknown): Schema => {
      let current = node as Schema;
      while (typeof current?.$ref === 'string') current = (current.$ref as string).slice(2).split('/').reduce<any>((acc, k) => acc[k], openapiDocument) as Schema;
      return current;
    };
    const opaqueKeys = fc.constantFrom('user_id', 'userId', 'a_b_c', 'raw', '__proto__', 'x');
    const opaque = fc.dictionary(opaqueKeys, fc.oneof(fc.string(), fc.integer(), fc.dictionary(opaqueKeys, fc.string(), { maxKeys: 2 })), { maxKeys: 3 });
    const fitting = (node: unknown, depth = 0): fc.Arbitrary<unknown> => {
      const schema = resolve(node);
      if (!schema || depth > 6) return fc.constant(null);
      if (schema.type === 'array') return fc.array(fitting(schema.items, depth + 1), { maxLength: 2 });
      const properties = schema.properties as Record<string, unknown> | undefined;
      if (properties && Object.keys(properties).length) {
        return fc.record(Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, fitting(v, depth + 1)])), { requiredKeys: [] });
      }
      if (schema.type === 'object' || schema.type === undefined) return opaque;
      return schema.type === 'string' ? fc.string() : schema.type === 'boolean' ? fc.boolean() : fc.integer();
    };
    const schemas = routes.flatMap((route) => {
      const op = (openapiDocument.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>)[route.path.replace(/^\/v1/, '')]![route.method]!;
      return Object.values(op.responses).map((response) => (resolve(response).content as Record<string, { schema?: unknown }> | undefined)?.['application/json']?.schema);
    });
    for (const schema of schemas.filter((s) => s !== undefined)) {
      const shape = shapeOf(schema);
      fc.assert(
        fc.property(fitting(schema), (wire) => {
          expect(toWire(toDomain(wire, shape), shape)).toEqual(wire);
        }),
        { numRuns: 25 },
      );
    }
  });
});
