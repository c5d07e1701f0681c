/**
 * `GET /v1/events` answers the page's JSON text as the database rendered it (repo.ts `textPage`,
 * src/http/rest.ts `jsonText`): these tests hold it to the bytes the parse-and-serialise path
 * writes (the service's `list`, the REST name mapping, the collection envelope, JSON.stringify), on
 * many pages of varied payloads, through filters, offsets, the byte budget, the kept page and
 * ETag/304, on whichever store the run has (embedded PGlite, or PostgreSQL with DATABASE_URL).
 */
import { randomUUID } from 'node:crypto';
import createETag from 'etag';
import fc from 'fast-check';
import { openapiDocument } from '../../generated/openapi-document';
import type { AuthContext } from '../../src/auth/context';
import { collection } from '../../src/http/envelope';
import { camelKeys, shapeOf, toWire } from '../../src/http/mapping';
import { pageFor } from '../../src/http/paging';
import { useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

/** A byte budget small enough that pages of the large payloads stop early. */
const PAGE_MAX_BYTES = 300_000;
const t = useTestApp({ events: { page_max_bytes: PAGE_MAX_BYTES } });

const eventShape = shapeOf({ $ref: '#/components/schemas/Event' }, openapiDocument);

let owner: LoggedIn;

/** The answer's bytes and headers, as a client receives them. */
async function raw(path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; etag: string | null }> {
  const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${owner.accessToken}`, ...headers } });
  return { status: res.status, text: await res.text(), etag: res.headers.get('etag') };
}

/** The parse-and-serialise answer of the same request: the service's domain page, mapped and wrapped as bindRest wraps a collection. */
async function reference(path: string): Promise<string> {
  const url = new URL(path, 'http://local');
  const query = Object.fromEntries(url.searchParams) as Record<string, string>;
  const auth = { accountId: owner.accountId } as AuthContext;
  const page = await t.app.modules.events.list(auth, camelKeys(query), pageFor('events', query));
  return JSON.stringify(collection({ ...page, items: page.items.map((item) => toWire(item, eventShape)) }, path));
}

async function expectSame(path: string): Promise<string> {
  const [got, want] = [await raw(path), await reference(path)];
  expect(got.status).toBe(200);
  expect(got.text).toBe(want);
  expect(got.etag).toBe(createETag(Buffer.from(want, 'utf8'), { weak: true }));
  return got.text;
}

/** Payloads the API takes (each goes through the request's JSON.parse, as a client's would). */
const sent: Record<string, unknown>[] = [
  { user_id: 'u-unicode', msg: 'héllo 日本語 🎉 \u2028\u2029 ñ', ключ: 'значение', '🔑': ['ü', { 'ß': 'ẞ' }] },
  { user_id: 'u-escapes', s: '"quoted" \\ back / slash \b\f\n\r\t \u0001 \u001f \u007f', '': 'empty key', 'a"b': 1, 'c\\d': '\\', 'e\nf': 'x' },
  { user_id: 'u-numbers', big: Number('12345678901234567890'), tiny: 1e-7, edge: 1e-6, exp: 1e21, below: 1e20, neg: -0, sum: 0.1 + 0.2, max: Number.MAX_VALUE, min: 5e-324, unsafe: 2 ** 53 + 1, frac: -1234.5678, ints: [0, -1, 42, 2 ** 31, 2 ** 32] },
  { b: 1, '10': 2, a: 3, '0': 4, '4294967295': 5, '4294967294': 6, '01': 7, '-1': 8, ' ': 9, '9': 10, zz: { '2': 'two', '1': 'one', x: 'x' } },
  { user_id: 'u-nested', deep: JSON.parse(`${'{"n":['.repeat(20)}1${']}'.repeat(20)}`) as unknown, empty: {}, none: [], mixed: [1, 'a', null, true, false, { k: [] }, [[]]] },
  { user_id: 'u-nulls', n: null, arr: [null, { x: null }], t: true, f: false },
  { user_id: 'u-large', text: 'large, "payload": with separators, '.repeat(1_500), list: Array.from({ length: 300 }, (_v, i) => ({ i, s: `item ${i}, ok: yes` })) },
  { __proto__x: 1, constructor: 'c', toString: 's', hasOwnProperty: 'h' },
];

/** Payloads written by other means than the API (older writers, operators): texts PostgreSQL reads into jsonb as they are. */
const stored: string[] = [
  '{"user_id": "u-direct", "a": 1.50, "b": 1e400, "c": 12345678901234567890, "d": 1E2, "e": -0.0, "f": 0.0000001, "g": 1e-400, "h": "\\u00e9\\ud83d\\ude00", "i": -1e400, "j": 0.1000, "k": 100.0}',
  '{"n": [1.0, 2.50, 3e0, 1e-5, 123456789012345678901234567890, 0.30000000000000004, 4.35, 9007199254740993, 1234567890123456, -123456789012345, 1.7976931348623158e308, 2.4703282292062328e-324, 2.4703282292062327e-324]}',
  '{"duplicate": 1, "duplicate": 2, "3": "three", "": null}',
  '{"flat": 9007199254740993, "x": "y"}',
  '{"flat": 0.10, "x": "y"}',
  '{"10": 1, "x": "y"}',
  '{}',
  `{"user_id": "u-huge", "blob": "${'x, \\"y\\": z \\\\ '.repeat(20_000)}"}`,
];

beforeAll(async () => {
  owner = await devLogin(t);
  // Random payloads (seeded): any JSON the API takes, with unicode text, in objects of any keys.
  const randomRaws = fc.sample(fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.jsonValue({ stringUnit: 'grapheme', maxDepth: 3 }), { maxKeys: 8 }), { numRuns: 120, seed: 20261128 });
  const raws = [...sent, ...randomRaws.filter((r) => !JSON.stringify(r).includes('\\u0000'))];
  let n = 0;
  for (const body of raws) {
    n += 1;
    const res = await api(t, 'POST', '/events/emit', {
      token: owner.accessToken,
      body: { type: n % 3 === 0 ? 'platform_a:follow' : 'platform_b:chat', platform: n % 3 === 0 ? 'platform_a' : 'platform_b', raw: body, ...(n % 4 === 0 ? { external_id: `ext-"${n}"-é` } : {}) },
    });
    expect(res.status).toBe(201);
  }
  // Rows written directly (as a migration or an older release would), some sharing a timestamp
  // (the order falls back to the id), and some of them large.
  const at = new Date('2026-11-20T10:11:12.345678Z');
  for (const [i, text] of stored.entries()) {
    await t.app.db.knex('events').insert({
      id: randomUUID(),
      account_id: owner.accountId,
      type: 'platform_c:direct',
      platform: 'platform_c',
      external_id: i % 2 ? null : `direct-${i}`,
      raw: t.app.db.knex.raw('?::jsonb', [text]),
      hidden: false,
      created_at: i < 2 ? at : new Date(at.getTime() + i * 1234.567),
    });
  }
}, 120_000);

describe('the spliced events page is the parse-and-serialise answer, byte for byte', () => {
  test('every page of every size, asked by page and by offset', async () => {
    for (const limit of [1, 3, 7, 25, 100]) {
      const first = JSON.parse(await expectSame(`/v1/events?limit=${limit}`)) as { _meta: { pages: number } };
      expect(first._meta.pages).toBeGreaterThan(0);
      for (let page = 2; page <= Math.min(first._meta.pages + 1, 12); page += 1) await expectSame(`/v1/events?page=${page}&limit=${limit}`);
    }
    for (const offset of [0, 1, 5, 50, 130, 1000]) await expectSame(`/v1/events?offset=${offset}&limit=10`);
  });

  test('filters (types, platform, user_id, search, from/to) and a page past the end', async () => {
    for (const path of [
      '/v1/events?types=platform_a:follow',
      '/v1/events?types=platform_a:follow,platform_c:direct&limit=5&page=2',
      '/v1/events?platform=platform_c',
      '/v1/events?user_id=u-numbers',
      '/v1/events?search=%22quoted%22',
      '/v1/events?search=%C3%A9',
      '/v1/events?search=100%25',
      '/v1/events?from=2026-11-20T10:11:12Z&to=2026-11-20T10:11:20Z',
      '/v1/events?to=2026-11-20T10:11:13Z',
      '/v1/events?page=999&limit=10',
      '/v1/events?user_id=nobody',
    ]) {
      await expectSame(path);
    }
  });

  test('the byte budget stops a page early and names the next one; following _links.next walks every event once', async () => {
    let path: string | undefined = '/v1/events?limit=100';
    const ids: string[] = [];
    let truncated = 0;
    while (path) {
      const page = JSON.parse(await expectSame(path)) as { data: { id: string }[]; _meta: { truncated?: boolean; total: number }; _links: { next?: string } };
      if (page._meta.truncated) truncated += 1;
      ids.push(...page.data.map((e) => e.id));
      path = page._links.next;
    }
    expect(truncated).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    const [counted] = await t.app.db.knex('events').where({ account_id: owner.accountId, hidden: false }).count({ n: '*' });
    expect(ids.length).toBe(Number(counted!.n));
  });

  test('a kept page answers the same bytes and ETag; If-None-Match answers 304; a write changes the page', async () => {
    const path = '/v1/events?limit=20&page=2';
    const answers = [await raw(path), await raw(path), await raw(path), await raw(path)];
    const want = await reference(path);
    for (const answer of answers) {
      expect(answer.text).toBe(want);
      expect(answer.etag).toBe(answers[0]!.etag);
    }
    // fetch adds `Cache-Control: no-cache` to a conditional request unless one is set.
    const conditional = { 'if-none-match': answers[0]!.etag!, 'cache-control': 'max-age=0' };
    const unchanged = await raw(path, conditional);
    expect(unchanged.status).toBe(304);
    expect(unchanged.text).toBe('');
    await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_b:chat', platform: 'platform_b', raw: { after: 'write' } } });
    const after = await raw(path);
    expect(after.etag).not.toBe(answers[0]!.etag);
    expect(after.text).toBe(await reference(path));
    expect((await raw(path, conditional)).status).toBe(200);
  });

  test('a raw changed after it was stored (gift bundling, erasure, an operator) is served changed', async () => {
    const path = '/v1/events?user_id=u-rewritten';
    const id = randomUUID();
    await t.app.db.knex('events').insert({ id, account_id: owner.accountId, type: 'platform_c:direct', platform: 'platform_c', raw: JSON.stringify({ user_id: 'u-rewritten', v: 1 }), hidden: false, created_at: new Date() });
    expect(await expectSame(path)).toContain('"v":1');
    await t.app.db.knex('events').where({ id }).update({ raw: t.app.db.knex.raw('?::jsonb', ['{"user_id": "u-rewritten", "v": 2.50, "list": [1, {"10": "ten", "a": 1}]}']) });
    expect(await expectSame(path)).toContain('"v":2.5,"list":[1,{"10":"ten","a":1}]');
    // Only `raw` rewrites its text: a change of another column leaves it as it is.
    await t.app.db.knex('events').where({ id }).update({ external_id: 'rewritten' });
    expect(await expectSame(path)).toContain('"v":2.5');
  });

  test('the answer is the spliced text: its events are the stored rows in the API form', async () => {
    const page = JSON.parse((await raw('/v1/events?user_id=u-direct')).text) as { data: { raw: Record<string, unknown>; created_at: string }[] };
    expect(page.data).toHaveLength(1);
    expect(page.data[0]!.raw).toEqual({ user_id: 'u-direct', a: 1.5, b: null, c: 12345678901234567000, d: 100, e: 0, f: 1e-7, g: 0, h: 'é😀', i: null, j: 0.1, k: 100 });
    expect(page.data[0]!.created_at).toMatch(/^2026-11-20T10:11:\d\d\.\d{3}Z$/);
  });
});
