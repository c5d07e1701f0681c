/**
 * The row mapping (src/infra/db/rows.ts): `rowMapping` converts each column by its SQL type, and
 * `schemaRows` derives the columns of a spec schema from the OpenAPI document (the entity's fields
 * are written in the spec and the migration only). Read back from a real table on whichever store
 * the run uses, so the drivers' own conversions (pg and PGlite parse json, answer Dates and
 * counts as text) are the ones checked.
 */
import { randomUUID } from 'node:crypto';
import { jsonTimestamp, rowMapping, schemaRows, wsSchemaRows, type StoredRow } from '../../src/infra/db/rows';
import { useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

describe('schemaRows', () => {
  test('derives the select list and the column types from the schema', () => {
    const presets = schemaRows('SettingPreset');
    expect(presets.select).toBe('id, user_id, kind, name, payload, is_default, created_at, updated_at');
    const admin = schemaRows('SettingPreset', { omit: ['payload'], from: { kind: "'x'" }, extra: { rank: 'bigint' } });
    expect(admin.select).toBe("id, user_id, 'x' as kind, name, is_default, created_at, updated_at, rank");
    const row = admin.map({ id: 'a', user_id: 'u', kind: 'x', name: 'n', is_default: false, created_at: new Date('2026-01-02T03:04:05.678Z'), updated_at: '2026-01-02 03:04:05.678+00', rank: '7' });
    expect(row).toEqual({ id: 'a', userId: 'u', kind: 'x', name: 'n', isDefault: false, createdAt: '2026-01-02T03:04:05.678Z', updatedAt: '2026-01-02T03:04:05.678Z', rank: 7 });
    expect(Object.keys(row)).toEqual(['id', 'userId', 'kind', 'name', 'isDefault', 'createdAt', 'updatedAt', 'rank']);
  });

  test('reads the members of a join from the named table, except those selected from elsewhere', () => {
    const joined = schemaRows('SettingPreset', { table: 'p', omit: ['payload'], from: { name: 'u.display_name' }, extra: { rank: { type: 'bigint', from: 'count(*)' } } });
    expect(joined.select).toBe('p.id as id, p.user_id as user_id, p.kind as kind, u.display_name as name, p.is_default as is_default, p.created_at as created_at, p.updated_at as updated_at, count(*) as rank');
  });

  test('names the columns of a relation the database renders as JSON by their members, in order, and refuses types whose JSON differs from map()', () => {
    const presets = schemaRows('SettingPreset', { table: 'p', omit: ['payload'], extra: { rank: { type: 'bigint', from: 'count(*)' } } });
    expect(presets.jsonSelect).toBe(
      'p.id as "id", p.user_id as "userId", p.kind as "kind", p.name as "name", p.is_default as "isDefault", ' +
        `(p.created_at) at time zone 'UTC' as "createdAt", (p.updated_at) at time zone 'UTC' as "updatedAt", count(*) as "rank"`,
    );
    expect(() => rowMapping({ id: 'uuid', blob: 'bytes' }).jsonSelect).toThrow('column blob is bytes');
    expect(() => rowMapping({ id: 'uuid', ratio: 'double' }).jsonSelect).toThrow('column ratio is double');
  });

  test("finishes PostgreSQL's JSON timestamps as the driver's Date prints them", () => {
    expect(jsonTimestamp('2026-11-26T23:31:12.668504')).toBe('2026-11-26T23:31:12.668Z');
    expect(jsonTimestamp('2026-11-26T23:31:12.6685')).toBe('2026-11-26T23:31:12.668Z');
    expect(jsonTimestamp('2026-11-26T23:31:12.5')).toBe('2026-11-26T23:31:12.500Z');
    expect(jsonTimestamp('2026-11-26T23:31:12.05')).toBe('2026-11-26T23:31:12.050Z');
    expect(jsonTimestamp('2026-11-26T23:31:12')).toBe('2026-11-26T23:31:12.000Z');
    expect(jsonTimestamp('2026-11-26T23:31:12.000999')).toBe('2026-11-26T23:31:12.000Z');
    // Past the four-digit years: the driver's parser, as a row's timestamp (statement.ts apiTimestamp).
    expect(jsonTimestamp('12345-06-07T08:09:10.5')).toBe(new Date(Date.UTC(12345, 5, 7, 8, 9, 10, 500)).toISOString());
    expect(jsonTimestamp('0044-03-15T12:00:00.5 BC')).toBe('-000043-03-15T12:00:00.500Z');
    expect(() => jsonTimestamp('infinity')).toThrow(RangeError);
  });

  test('refuses a schema or a member the document does not have', () => {
    expect(() => schemaRows('NoSuchSchema' as 'SettingPreset')).toThrow('no schema NoSuchSchema');
    expect(() => schemaRows('SettingPreset', { omit: ['nope' as 'payload'] })).toThrow('has no member nope');
  });

  test('adjusts a member once converted, never a NULL, and keeps the select list', () => {
    const upper = (value: string) => value.toUpperCase();
    const presets = schemaRows('SettingPreset', { adjust: { name: upper, payload: (value) => ({ wrapped: value }) } });
    expect(presets.select).toBe(schemaRows('SettingPreset').select);
    const row = presets.map({ id: 'a', user_id: 'u', kind: 'k', name: 'night', payload: '{"a":1}', is_default: true, created_at: '2026-01-02T03:04:05.678Z', updated_at: '2026-01-02T03:04:05.678Z' });
    expect(row.name).toBe('NIGHT');
    expect(row.payload).toEqual({ wrapped: { a: 1 } });
    expect(presets.map({ name: null }).name).toBeNull();
    expect(() => schemaRows('SettingPreset', { adjust: { nope: upper } as never })).toThrow('has no member nope');
    const raw = rowMapping({ scopes: { type: 'json', adjust: (value: string[]) => [...value].sort() } });
    expect(raw.map({ scopes: '["b","a"]' }).scopes).toEqual(['a', 'b']);
  });

  test('qualifies the members by a join\'s table alias, except those with their own source', () => {
    const presets = schemaRows('SettingPreset', { table: 'p', omit: ['payload'], from: { name: 'u.display_name' }, extra: { owner_email: { type: 'text', nullable: true, from: 'u.email' }, rank: 'integer' } });
    expect(presets.select).toBe('p.id as id, p.user_id as user_id, p.kind as kind, u.display_name as name, p.is_default as is_default, p.created_at as created_at, p.updated_at as updated_at, u.email as owner_email, p.rank as rank');
    const row = presets.map({ id: 'a', user_id: 'u', kind: 'k', name: 'n', is_default: false, created_at: '2026-01-02T03:04:05.678Z', updated_at: '2026-01-02T03:04:05.678Z', owner_email: null, rank: 2 });
    expect(row).toEqual({ id: 'a', userId: 'u', kind: 'k', name: 'n', isDefault: false, createdAt: '2026-01-02T03:04:05.678Z', updatedAt: '2026-01-02T03:04:05.678Z', ownerEmail: null, rank: 2 });
  });

  test('wsSchemaRows reads a socket frame\'s data schema: JSON Schema null types as nullable, date-times as timestamps', () => {
    const log = wsSchemaRows('chat:moderation_log', { omit: ['reason'], extra: { raw: 'json' } });
    expect(log.select).toBe('id, action, platform, target_user_id, target_username, platform_message_id, moderator_user_id, moderator_name, duration_secs, source, created_at, raw');
    const row = log.map({ id: 'i', action: 'ban', platform: 'platform_a', target_user_id: null, duration_secs: '600', created_at: new Date('2026-01-02T03:04:05.678Z'), raw: '{"a":1}' });
    expect(row).toMatchObject({ id: 'i', targetUserId: null, moderatorName: null, durationSecs: 600, createdAt: '2026-01-02T03:04:05.678Z', raw: { a: 1 } });
    expect(() => wsSchemaRows('chat:moderation_log', { omit: ['nope' as 'reason'] })).toThrow('wsSchemaRows(chat:moderation_log): the schema has no member nope');
    expect(() => wsSchemaRows('event' as 'chat:moderation_log')).toThrow('no frame event');
  });

  test('parses json only when the driver answered text, and leaves nulls null', () => {
    const mapping = rowMapping({ data: 'json', at: { type: 'timestamp', nullable: true }, n: 'bigint' });
    expect(mapping.map({ data: '{"a":1}', at: null, n: 3 })).toEqual({ data: { a: 1 }, at: null, n: 3 });
    const parsed = { a: 1 };
    expect(mapping.map({ data: parsed, at: undefined, n: '4' }).data).toBe(parsed);
  });
});

describe('schemaRows on a real table', () => {
  const t = useTestApp();

  test('a stored preset reads back as its API form', async () => {
    const user = await devLogin(t, `rows-${randomUUID()}@example.test`);
    const created = await api(t, 'POST', '/me/setting-presets', { token: user.accessToken, body: { kind: 'overlay', name: 'Night', payload: { theme: 'dark', size: 3 } } });
    expect(created.status).toBe(201);
    const wire = created.body.data as Record<string, string | boolean>;
    const presets = schemaRows('SettingPreset');
    const row = await t.app.db.knex.raw(`select ${presets.select} from setting_presets where id = ?`, [wire.id]);
    const [read] = ((row.rows ?? row) as Record<string, unknown>[]).map(presets.map);
    expect(read).toEqual({
      id: wire.id,
      userId: wire.user_id,
      kind: 'overlay',
      name: 'Night',
      payload: { theme: 'dark', size: 3 },
      isDefault: wire.is_default,
      createdAt: wire.created_at,
      updatedAt: wire.updated_at,
    });
  });

  test('a row kept in stored form (StoredRow) is selected by its declared columns and keeps the driver\'s Dates', async () => {
    const columns = { id: 'uuid', user_id: 'uuid', expires_at: 'timestamp', revoked_at: { type: 'timestamp', nullable: true } } as const;
    const user = await devLogin(t, `rows-${randomUUID()}@example.test`);
    const row: StoredRow<typeof columns> | undefined = await t.app.db.knex('sessions').where({ id: user.sessionId }).first(Object.keys(columns));
    expect(Object.keys(row!).sort()).toEqual(['expires_at', 'id', 'revoked_at', 'user_id']);
    expect(row).toMatchObject({ id: user.sessionId, user_id: user.userId, revoked_at: null });
    expect(row!.expires_at).toBeInstanceOf(Date);
  });

  test('a relation rendered by the database as JSON (jsonSelect, fromJson) equals its rows mapped by map, on this store', async () => {
    const columns = { id: 'uuid', at: 'timestamp', n: 'bigint', doc: 'json', flag: 'boolean', label: { type: 'text', nullable: true }, tag: { type: 'text', adjust: (v: string) => v.toUpperCase() } } as const;
    const mapping = rowMapping(columns);
    // Every millisecond's edges and a spread of microsecond fractions, on both sides of midnight and of a leap day.
    const fractions = ['000000', '000001', '000999', '001000', '123456', '289000', '500000', '999000', '999999'];
    const instants = ['2024-02-28 23:59:59', '2024-02-29 00:00:00', '1999-12-31 23:59:59', '1970-01-01 00:00:00'].flatMap((at) => fractions.map((f) => `${at}.${f}+00`));
    const rows = instants.map((at, i) => ({ id: randomUUID(), at, n: String(2 ** 40 + i), doc: JSON.stringify({ i, b: [true, null], s: `"quoted" ü ${i}`, z: 1.5 }), flag: i % 2 === 0, label: i % 3 ? `l${i}` : null, tag: `t${i}` }));
    const values = rows.map(() => '(?::uuid, ?::timestamptz, ?::bigint, ?::jsonb, ?::boolean, ?::text, ?::text)').join(', ');
    const bindings = rows.flatMap((r) => [r.id, r.at, r.n, r.doc, r.flag, r.label, r.tag]);
    const source = `(values ${values}) as e(${Object.keys(columns).join(', ')})`;
    const knex = t.app.db.knex;
    const plain = await knex.raw(`select ${mapping.select} from ${source}`, bindings);
    const mapped = ((plain.rows ?? plain) as Record<string, unknown>[]).map(mapping.map);
    const rendered = await knex.raw(`select (select json_agg(r) from (select ${mapping.jsonSelect} from ${source}) r)::text as page`, bindings);
    const [{ page }] = (rendered.rows ?? rendered) as { page: string }[];
    const parsed = (JSON.parse(page) as Record<string, unknown>[]).map((item) => mapping.fromJson(item));
    expect(parsed).toEqual(mapped);
    expect(JSON.stringify(parsed)).toBe(JSON.stringify(mapped));
    expect(parsed[1]).toMatchObject({ at: '2024-02-28T23:59:59.000Z', label: 'l1', tag: 'T1' });
  });
});
