/**
 * Hot reads (src/infra/db/hot-read.ts) never answer older than the request, on one node and across
 * nodes that share only the database: on PostgreSQL a second node with its own cache and bus
 * namespace (so no invalidation notice can reach it) must see at once a role shrunk, a member
 * added, a key revoked and an event emitted on the first; on the embedded store the same changes
 * made straight in the database (no API, no notice) are seen by the next request.
 */
import { randomUUID } from 'node:crypto';
import { hotRead } from '../../src/infra/db/hot-read';
import { statement } from '../../src/infra/db/statement';
import { startTestApp, services, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const t = useTestApp();

/** Warms the kept results on `node`: the same request twice. */
async function twice(node: TestApp, path: string, token: string) {
  await api(node, 'GET', path, { token });
  return api(node, 'GET', path, { token });
}

describe('kept reads follow every change at once', () => {
  let owner: LoggedIn;
  let member: LoggedIn;
  let roleId: string;
  let key: string;
  let keyId: string;

  beforeAll(async () => {
    owner = await devLogin(t);
    member = await joinAccount(t, owner, await devLogin(t), { roleName: `readers-${randomUUID().slice(0, 8)}`, permissions: ['events:read', 'members:read', 'apikeys:create'] });
    const roles = await api(t, 'GET', '/account/roles', { token: owner.accessToken });
    roleId = (roles.body.data as { id: string; name: string }[]).find((r) => r.name.startsWith('readers-'))!.id;
    const created = await api(t, 'POST', '/api-keys', { token: member.accessToken, body: { label: 'hot', permissions: ['events:read'] } });
    ({ key, id: keyId } = created.body.data as { key: string; id: string });
  });

  /**
   * Runs `check` with node A alone, or on PostgreSQL with A and a node B that shares A's database
   * only (its own Redis namespace, so no notice reaches it). B lives for the whole check, so what
   * it kept before a change is what it must not answer after.
   */
  async function withNodes(check: (nodes: TestApp[]) => Promise<void>): Promise<void> {
    if (!services.postgres) return check([t]);
    const b = await startTestApp({ database_url: t.app.config.database_url, rate_limits: { enabled: false } });
    try {
      await check([t, b]);
    } finally {
      await b.stop();
    }
  }

  test('an event emitted, a member added, a role shrunk and a key revoked are seen by the next request', async () => {
    await withNodes(async (nodes) => {
      for (const node of nodes) {
        expect((await twice(node, '/events', member.accessToken)).status).toBe(200);
        expect((await twice(node, '/account/members', owner.accessToken)).status).toBe(200);
        expect((await twice(node, '/events', key)).status).toBe(200);
      }
      // A new event, through the API of node A.
      const emitted = await api(t, 'POST', '/events/emit', { token: owner.accessToken, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { n: randomUUID() } } });
      const eventId = (emitted.body.data as { id: string }).id;
      for (const node of nodes) expect(((await api(node, 'GET', '/events', { token: member.accessToken })).body.data as { id: string }[])[0]!.id).toBe(eventId);
      // A renamed member, straight in the database (no API, no notice).
      const name = `renamed ${randomUUID().slice(0, 8)}`;
      await t.app.db.knex('users').where({ id: member.userId }).update({ display_name: name });
      for (const node of nodes) {
        const members = (await api(node, 'GET', '/account/members', { token: owner.accessToken })).body.data as { user_id: string; display_name: string }[];
        expect(members.find((m) => m.user_id === member.userId)?.display_name).toBe(name);
      }
      // The member's role loses events:read: their session and their key lose it on every node.
      expect((await api(t, 'PATCH', `/account/roles/${roleId}`, { token: owner.accessToken, body: { permissions: ['members:read', 'apikeys:create'] } })).status).toBe(200);
      for (const node of nodes) {
        expect((await api(node, 'GET', '/events', { token: member.accessToken })).status).toBe(403);
        expect((await api(node, 'GET', '/events', { token: key })).status).toBe(403);
      }
      // The key revoked straight in the database.
      await t.app.db.knex('credentials').where({ id: keyId }).update({ revoked_at: new Date() });
      for (const node of nodes) {
        await node.app.cache.del(`apikey:${await keyHash(key)}`);
        expect((await api(node, 'GET', '/account/members', { token: key })).status).toBe(401);
      }
    });
  });

  test('a session revoked straight in the database is refused by the next request on every node', async () => {
    const user = await devLogin(t);
    await withNodes(async (nodes) => {
      for (const node of nodes) expect((await twice(node, '/tokens/me', user.accessToken)).status).toBe(200);
      await t.app.db.knex('sessions').where({ id: user.sessionId }).update({ revoked_at: new Date() });
      for (const node of nodes) expect((await api(node, 'GET', '/tokens/me', { token: user.accessToken })).status).toBe(401);
    });
  });
});

describe('embedded: what counts as a write', () => {
  const embedded = services.postgres ? test.skip : test;

  embedded('a select named in a leading comment keeps kept results; any other statement drops them', async () => {
    const knex = t.app.db.knex;
    let loads = 0;
    const read = hotRead(knex, async (id: string) => ({ id, load: ++loads }), (id) => id);
    await read('a');
    expect(loads).toBe(1);
    await knex.raw('/* named */ select 1');
    await knex.raw('-- named\n  select 2');
    expect(await read('a')).toEqual({ id: 'a', load: 1 });
    await knex.raw("/* named */ update users set display_name = display_name where id = '00000000-0000-0000-0000-000000000000'");
    expect(await read('a')).toEqual({ id: 'a', load: 2 });
  });

  embedded('a write that bumps no counter keeps guarded reads and drops unguarded ones; any other drops both', async () => {
    const knex = t.app.db.knex;
    let loads = 0;
    const guard = { id: 'test', sql: 'select 0', bindings: [] };
    const guarded = hotRead(knex, async (id: string) => ({ id, load: ++loads }), (id) => id, () => guard);
    const unguarded = hotRead(knex, async (id: string) => ({ id, load: ++loads }), (id) => id);
    expect(await guarded('g')).toEqual({ id: 'g', load: 1 });
    expect(await unguarded('u')).toEqual({ id: 'u', load: 2 });
    const nothing = "update credentials set last_used_at = last_used_at where id = '00000000-0000-0000-0000-000000000000'";
    await statement(knex, nothing, [], { bumpsNoGuard: true });
    expect(await guarded('g')).toEqual({ id: 'g', load: 1 });
    expect(await unguarded('u')).toEqual({ id: 'u', load: 3 });
    await statement(knex, nothing, []);
    expect(await guarded('g')).toEqual({ id: 'g', load: 4 });
    expect(await unguarded('u')).toEqual({ id: 'u', load: 5 });
  });
});

describe('PostgreSQL: a read that brings its own version', () => {
  const onPostgres = services.postgres ? test : test.skip;

  onPostgres('the calls of one key that find their kept result stale share its next load; a call runs its step before a load only', async () => {
    const knex = t.app.db.knex;
    let version = 1;
    let loads = 0;
    const id = `versioned-${randomUUID()}`;
    const versioned = async (key: string) => {
      loads += 1;
      const at = String(version);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { value: { key, load: loads }, version: at };
    };
    const read = hotRead(knex, async (key: string) => (await versioned(key)).value, (key) => key, () => ({ id, sql: 'select ?::bigint', bindings: [version] }), { versioned });
    let steps = 0;
    const step = async () => void (steps += 1);
    await read.beforeLoad(step, 'a');
    expect(steps).toBe(1);
    await Promise.all(Array.from({ length: 20 }, () => read('a')));
    expect(loads).toBe(1);
    // A page read by many requests while its account is written to: one load per change (and one
    // more for the calls that arrived while it ran), not one per request.
    version = 2;
    const answers = await Promise.all(Array.from({ length: 20 }, () => read('a')));
    expect(loads).toBeLessThanOrEqual(3);
    expect(answers.every((a) => a.load > 1)).toBe(true);
    expect(await read.beforeLoad(step, 'a')).toEqual({ key: 'a', load: loads });
    expect(steps).toBe(1);
    version = 3;
    expect(await read.beforeLoad(step, 'a')).toEqual({ key: 'a', load: loads });
    expect(steps).toBe(2);
  });
});

describe('writes marked bumpsNoGuard bump no counter', () => {
  test("a key's last_used_at touch leaves the access and event versions as they were", async () => {
    const owner = await devLogin(t);
    const created = await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'touch', permissions: ['events:read'] } });
    const { key, id } = created.body.data as { key: string; id: string };
    const knex = t.app.db.knex;
    await knex('credentials').where({ id }).update({ last_used_at: null });
    const counters = async () => ({
      access: (await knex('data_versions').where({ name: 'access' }).first('n'))?.n,
      events: await knex('event_versions').where({ account_id: owner.accountId }).first('n'),
    });
    const before = await counters();
    expect((await api(t, 'GET', '/tokens/me', { token: key })).status).toBe(200);
    for (let i = 0; i < 100 && !(await knex('credentials').where({ id }).first('last_used_at'))?.last_used_at; i++) await new Promise((r) => setTimeout(r, 20));
    expect((await knex('credentials').where({ id }).first('last_used_at'))?.last_used_at).toBeInstanceOf(Date);
    expect(await counters()).toEqual(before);
  });
});

async function keyHash(key: string): Promise<string> {
  const { tokenHash } = await import('../../src/auth/credentials');
  return tokenHash(key);
}
