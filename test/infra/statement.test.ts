/**
 * Named statements (src/infra/db/statement.ts) on either store: prepared once (on PGlite by
 * src/infra/db/pglite-client.ts), then bound and run with each call's values, converted both ways
 * as an unnamed query converts them; a failed call leaves the statement usable.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { apiTimestamp, statement, statementCounter } from '../../src/infra/db/statement';
import { useTestApp } from '../helpers/app';

const t = useTestApp();
const table = `statement_test_${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  await t.app.db.knex.raw(`create table ${table} (id uuid primary key, n int not null, at timestamptz, raw jsonb, tags text[])`);
});

describe('named statements', () => {
  test('each call binds its own values and answers rows converted as an unnamed query does', async () => {
    const insert = `insert into ${table} (id, n, at, raw, tags) values (?, ?, ?, ?, ?) returning *`;
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const at = new Date('2026-11-26T05:00:00.123Z');
    for (const [i, id] of ids.entries()) {
      const [row] = await statement<{ id: string; n: number; at: Date; raw: unknown; tags: string[] }>(t.app.db.knex, insert, [id, i, at, JSON.stringify({ i, nested: { ok: true } }), [`tag-${i}`, 'x']]);
      expect(row).toEqual({ id, n: i, at, raw: { i, nested: { ok: true } }, tags: [`tag-${i}`, 'x'] });
    }
    const select = `select id, n from ${table} where n >= ? and id = any(?) order by n`;
    for (const from of [0, 1, 2, 3]) {
      const named = await statement<{ id: string; n: number }>(t.app.db.knex, select, [from, ids]);
      const plain = (await t.app.db.knex.raw(select, [from, ids])) as { rows: { id: string; n: number }[] };
      expect(named).toEqual(plain.rows);
      expect(named.map((r) => r.n)).toEqual([0, 1, 2].filter((n) => n >= from));
    }
    expect(await statement(t.app.db.knex, `select n from ${table} where id = ?`, [null])).toEqual([]);
  });

  test('a call that fails refuses with the database error, and the next call of the same text runs', async () => {
    const insert = `insert into ${table} (id, n) values (?, ?) returning n`;
    const id = randomUUID();
    expect(await statement(t.app.db.knex, insert, [id, 7])).toEqual([{ n: 7 }]);
    await expect(statement(t.app.db.knex, insert, [id, 8])).rejects.toMatchObject({ code: '23505' });
    expect(await statement(t.app.db.knex, insert, [randomUUID(), 9])).toEqual([{ n: 9 }]);
  });

  test('an escaped question mark stays a literal (jsonb key test), the placeholders around it are numbered in order', async () => {
    const text = "select ?::int as a, ('{\"k\": 1}'::jsonb \\? ?) as has, ?::text as b";
    expect(await statement(t.app.db.knex, text, [1, 'k', 'x'])).toEqual([{ a: 1, has: true, b: 'x' }]);
    expect(await statement(t.app.db.knex, text, [2, 'nope', 'y'])).toEqual([{ a: 2, has: false, b: 'y' }]);
    expect(await statement(t.app.db.knex, text, [3, 'k', 'z'])).toEqual(((await t.app.db.knex.raw(text, [3, 'k', 'z'])) as { rows: unknown[] }).rows ?? []);
  });

  test('every call gives its connection back, failed or not: more calls than the pool holds, at once and one after another, all answer', async () => {
    const id = randomUUID();
    const insert = `insert into ${table} (id, n) values (?, ?) returning n`;
    await statement(t.app.db.knex, insert, [id, 1]);
    for (let i = 0; i < 25; i++) await expect(statement(t.app.db.knex, insert, [id, i])).rejects.toMatchObject({ code: '23505' });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => statement<{ n: number }>(t.app.db.knex, 'select ?::int as n', [i])));
    expect(answers.map(([row]) => row!.n)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  test("every call counts in its handle's statement count, on a lent connection as through knex", async () => {
    const count = statementCounter(t.app.db.knex);
    const before = count();
    for (let i = 0; i < 20; i++) await statement(t.app.db.knex, 'select ?::int as n', [i]);
    expect(count() - before).toBeGreaterThanOrEqual(20);
    expect(t.app.db.statements()).toBe(count());
  });

  test('rows of every column type, and results that span many of the backend\'s output chunks, read as an unnamed query reads them', async () => {
    // On the embedded store an unnamed query is read by PGlite's own parser, a named one by
    // pg-protocol's (pglite-client.ts): both must give the same values, also for multi-byte text.
    const text = `select g as n, g::bigint * 1000000000 as big, g % 2 = 0 as even, (g * 1.5)::numeric(10, 2) as num, (g / 3.0)::float8 as f,
        repeat('é😀', g % 7) as s, decode(lpad(to_hex(g), 4, '0'), 'hex') as b, date '2026-11-26' + g as d, null::text as nothing,
        jsonb_build_object('g', g, 'list', jsonb_build_array(g, 'x')) as j, array[g, g + 1] as arr, now() - g * interval '1 second' as at
      from generate_series(1, ?::int) g`;
    for (const rows of [0, 1, 3000]) {
      const named = await statement<Record<string, unknown>>(t.app.db.knex, text, [rows]);
      const plain = ((await t.app.db.knex.raw(text.replace('now() -', "timestamptz '2026-11-26 12:00:00+00' -"), [rows])) as { rows: Record<string, unknown>[] }).rows;
      const fixed = await statement<Record<string, unknown>>(t.app.db.knex, text.replace('now() -', "timestamptz '2026-11-26 12:00:00+00' -"), [rows]);
      expect(named).toHaveLength(rows);
      expect(fixed).toEqual(plain);
    }
  });

  test('on the root handle, a named statement waits for an open transaction and never sees its uncommitted rows', async () => {
    const id = randomUUID();
    const count = `select count(*)::int as c from ${table} where id = ?`;
    let inserted!: () => void;
    const insertedYet = new Promise<void>((resolve) => (inserted = resolve));
    let seenInside: unknown;
    const transaction = t.app.db.knex.transaction(async (trx) => {
      await trx(table).insert({ id, n: 200 });
      inserted();
      await new Promise((resolve) => setTimeout(resolve, 50));
      seenInside = await statement(trx, count, [id]);
      throw new Error('roll back');
    });
    await insertedYet;
    // Issued while the transaction is open: it runs after the rollback, on the database's one connection.
    const outside = await statement(t.app.db.knex, count, [id]);
    await expect(transaction).rejects.toThrow('roll back');
    expect(seenInside).toEqual([{ c: 1 }]);
    expect(outside).toEqual([{ c: 0 }]);
  });

  test('inside a transaction, a named statement sees its writes and a rollback undoes them', async () => {
    const id = randomUUID();
    const count = `select count(*)::int as c from ${table} where id = ?`;
    await t.app.db.knex
      .transaction(async (trx) => {
        await trx(table).insert({ id, n: 100 });
        expect(await statement(trx, count, [id])).toEqual([{ c: 1 }]);
        throw new Error('roll back');
      })
      .catch((error: Error) => expect(error.message).toBe('roll back'));
    expect(await statement(t.app.db.knex, count, [id])).toEqual([{ c: 0 }]);
  });
});

describe('timestamps in the API form (apiTimestamps)', () => {
  /** The driver's own timestamptz parser. */
  const parseDate = pg.types.getTypeParser(1184, 'text') as (text: string) => Date | number;
  const driverIso = (text: string) => (parseDate(text) as Date).toISOString();

  test('apiTimestamp writes every microsecond fraction of a UTC value exactly as the Date the driver would build prints it', () => {
    for (let micros = 0; micros < 1_000_000; micros++) {
      const text = `2026-11-26 11:09:44.${String(micros).padStart(6, '0')}+00`;
      const expected = driverIso(text);
      const got = apiTimestamp(text);
      if (got !== expected) throw new Error(`${text}: ${String(got)} where the driver gives ${expected}`);
    }
    for (const text of ['2026-11-26 11:09:44+00', '2026-11-26 11:09:44.5+00', '0005-01-01 00:00:00+00', '1999-12-31 23:59:59.999999+00']) expect(apiTimestamp(text)).toBe(driverIso(text));
  });

  test('another zone, an era or an infinity goes to the driver’s own parser', () => {
    for (const text of ['2026-11-26 11:09:44.1+02', '2026-11-26 11:09:44-05:30', '0044-03-15 12:00:00+00 BC']) {
      const got = apiTimestamp(text);
      expect(got).toBeInstanceOf(Date);
      expect((got as Date).getTime()).toBe((parseDate(text) as Date).getTime());
    }
    expect(apiTimestamp('infinity')).toBe(Infinity);
  });

  test('a statement run with it answers the same instants a row mapping writes from the driver’s Dates', async () => {
    const at = ['2026-11-26T05:00:00.123Z', '2026-01-01T00:00:00.000Z', '2026-06-30T23:59:59.999Z'];
    const ids = at.map(() => randomUUID());
    for (const [i, id] of ids.entries()) await t.app.db.knex.raw(`insert into ${table} (id, n, at) values (?, ?, ?::timestamptz + interval '456 microseconds')`, [id, 100 + i, at[i]!]);
    const select = `select id, at from ${table} where id = any(?) order by n`;
    const asText = await statement<{ id: string; at: string | Date }>(t.app.db.knex, select, [ids], { apiTimestamps: true });
    const asDates = await statement<{ id: string; at: Date }>(t.app.db.knex, select, [ids]);
    expect(asDates.map((r) => r.at.toISOString())).toEqual(at);
    // Both stores answer the API's text for a named statement.
    expect(asText.map((r) => r.at)).toEqual(at);
  });
});
