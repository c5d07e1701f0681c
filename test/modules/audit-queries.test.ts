/**
 * The audit log, part 2 of the audit suites (audit-helpers.ts holds what the parts share; Part 2,
 * "Audit log"): pagination and clamping, the type/from/to filters and resolved_names, the same on
 * every surface (me, account, admin; REST and GraphQL). Everything goes through real HTTP; rows
 * come from the operations that record them or from the ingest endpoint.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type ApiResult, type LoggedIn } from '../helpers/users';
import { ingestKey, wildcardKey, starKey, readerKey, MY_LOG, ACCOUNT_LOG, ADMIN_LOG, type AuditItem, type AuditPage, bearer, newEmail, displayNameOf, accountNameOf, sleep, sortedNames, toGqlPage, expectOkGql, okPage, auditKit } from './audit-helpers';

describe('audit log', () => {
  const t = useTestApp({
    rate_limits: { enabled: false },
    auth: { system_keys: [ingestKey.config, wildcardKey.config, starKey.config, readerKey.config] },
  });
  const { myLog, accountLog, adminLog, ingest, createRole, createPopout, operator } = auditKit(t);

  // ---------------------------------------------------------------- pagination and clamping

  describe('pagination and clamping', () => {
    interface Surface {
      rest(query: Record<string, string>): Promise<ApiResult>;
      gql(filter: Record<string, unknown>): Promise<ReturnType<typeof toGqlPage>>;
      /** Ids of the five rows, newest first. */
      ids: string[];
    }
    const surfaces: Record<string, Surface> = {};

    beforeAll(async () => {
      // me: a user with five user rows (account_created, login, three ingested)
      const user = await devLogin(t, newEmail('page-me'));
      for (const seq of [1, 2, 3]) expect((await ingest({ user_id: user.userId, type: 'user:mfa_enabled', metadata: { seq } })).status).toBe(201);
      // account: an owner with five role rows
      const owner = await devLogin(t, newEmail('page-acct'));
      for (const n of [1, 2, 3, 4, 5]) await createRole(owner, `Paging role ${n}`);
      const op = await operator();

      const mePage = okPage(await myLog(user.accessToken, { limit: '200' }));
      const accountPage = okPage(await accountLog(owner.accessToken, { limit: '200' }));
      expect(mePage.items.map((i) => [i.type, i.metadata.seq ?? null])).toEqual([
        ['user:mfa_enabled', 3],
        ['user:mfa_enabled', 2],
        ['user:mfa_enabled', 1],
        ['user:login', null],
        ['user:account_created', null],
      ]);
      expect(accountPage.items.map((i) => i.metadata.name)).toEqual(['Paging role 5', 'Paging role 4', 'Paging role 3', 'Paging role 2', 'Paging role 1']);

      surfaces.me = {
        rest: (query) => myLog(user.accessToken, query),
        gql: async (filter) => expectOkGql(await gql(t.url, MY_LOG, { filter }, bearer(user.accessToken)), 'myAuditLog'),
        ids: mePage.items.map((i) => i.id),
      };
      surfaces.account = {
        rest: (query) => accountLog(owner.accessToken, query),
        gql: async (filter) => expectOkGql(await gql(t.url, ACCOUNT_LOG, { filter }, bearer(owner.accessToken)), 'accountAuditLog'),
        ids: accountPage.items.map((i) => i.id),
      };
      surfaces.admin = {
        rest: (query) => adminLog(op.accessToken, { user_id: user.userId, ...query }),
        gql: async (filter) => expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { userId: user.userId, ...filter } }, bearer(op.accessToken)), 'adminAuditLog'),
        ids: mePage.items.map((i) => i.id),
      };
    });

    const cases: [string, Record<string, string>, { page: number; limit: number; total_pages: number; slice: [number, number] }][] = [
      ['defaults: page 1, limit 50', {}, { page: 1, limit: 50, total_pages: 1, slice: [0, 5] }],
      ['limit=2 (first page)', { limit: '2' }, { page: 1, limit: 2, total_pages: 3, slice: [0, 2] }],
      ['limit=2&page=2', { limit: '2', page: '2' }, { page: 2, limit: 2, total_pages: 3, slice: [2, 4] }],
      ['limit=2&page=3 (last, partial)', { limit: '2', page: '3' }, { page: 3, limit: 2, total_pages: 3, slice: [4, 5] }],
      ['limit=2&page=4 (beyond the end)', { limit: '2', page: '4' }, { page: 4, limit: 2, total_pages: 3, slice: [5, 5] }],
      ['limit=0 clamps to 1', { limit: '0' }, { page: 1, limit: 1, total_pages: 5, slice: [0, 1] }],
      ['limit=-5 clamps to 1', { limit: '-5' }, { page: 1, limit: 1, total_pages: 5, slice: [0, 1] }],
      ['limit=1000 clamps to 200', { limit: '1000' }, { page: 1, limit: 200, total_pages: 1, slice: [0, 5] }],
      ['page=0 counts as 1', { limit: '3', page: '0' }, { page: 1, limit: 3, total_pages: 2, slice: [0, 3] }],
    ];

    describe.each(['me', 'account', 'admin'])('%s', (surfaceName) => {
      test.each(cases)('REST %s', async (_name, query, expected) => {
        const surface = surfaces[surfaceName]!;
        const page = okPage(await surface.rest(query));
        expect({ ...page, items: page.items.map((i) => i.id) }).toEqual({
          items: surface.ids.slice(...expected.slice),
          total: 5,
          page: expected.page,
          limit: expected.limit,
          total_pages: expected.total_pages,
        });
      });

      test.each(cases)('GraphQL %s', async (_name, query, expected) => {
        const surface = surfaces[surfaceName]!;
        const filter = Object.fromEntries(Object.entries(query).map(([k, v]) => [k, Number(v)]));
        const page = await surface.gql(filter);
        expect({ ...page, items: page.items.map((i) => i.id) }).toEqual({
          items: surface.ids.slice(...expected.slice),
          total: 5,
          page: expected.page,
          limit: expected.limit,
          totalPages: expected.total_pages,
        });
      });

      test('rows are newest first', async () => {
        const page = okPage(await surfaces[surfaceName]!.rest({}));
        const times = page.items.map((i) => Date.parse(i.created_at));
        expect(times.every((time, i) => i === 0 || time <= times[i - 1]!)).toBe(true);
        expect(new Set(times).size).toBeGreaterThan(1);
      });
    });
  });

  // ---------------------------------------------------------------- filters

  describe('filters: type, from, to', () => {
    let user: LoggedIn;
    let owner: LoggedIn;
    let op: LoggedIn;
    /** The user's rows, newest first: X (mfa_disabled), W (mfa_enabled), login, account_created. */
    let rows: AuditItem[];

    beforeAll(async () => {
      user = await devLogin(t, newEmail('filter-me'));
      await sleep(40);
      expect((await ingest({ user_id: user.userId, type: 'user:mfa_enabled' })).status).toBe(201);
      await sleep(40);
      expect((await ingest({ user_id: user.userId, type: 'user:mfa_disabled' })).status).toBe(201);
      rows = okPage(await myLog(user.accessToken)).items;
      expect(rows.map((r) => r.type)).toEqual(['user:mfa_disabled', 'user:mfa_enabled', 'user:login', 'user:account_created']);
      owner = await devLogin(t, newEmail('filter-acct'));
      await createRole(owner, 'Filter role');
      await createPopout(owner);
      op = await operator();
    });

    const midpoint = (a: string, b: string) => new Date((Date.parse(a) + Date.parse(b)) / 2).toISOString();
    const ids = (page: AuditPage) => page.items.map((i) => i.id);

    test('type is an exact match on every surface', async () => {
      const me = okPage(await myLog(user.accessToken, { type: 'user:login' }));
      expect(me.total).toBe(1);
      expect(me.items.map((i) => i.type)).toEqual(['user:login']);
      expect(okPage(await myLog(user.accessToken, { type: 'user:log' })).total).toBe(0);
      expect(okPage(await myLog(user.accessToken, { type: 'USER:LOGIN' })).total).toBe(0);
      const meGql = expectOkGql(await gql(t.url, MY_LOG, { filter: { type: 'user:login' } }, bearer(user.accessToken)), 'myAuditLog');
      expect(meGql).toEqual(toGqlPage(me));

      const account = okPage(await accountLog(owner.accessToken, { type: 'account:popout_token_created' }));
      expect(account.items.map((i) => i.type)).toEqual(['account:popout_token_created']);
      expect(account.total).toBe(1);
      expect(okPage(await accountLog(owner.accessToken, { type: 'account:role' })).total).toBe(0);

      const admin = okPage(await adminLog(op.accessToken, { user_id: user.userId, type: 'user:mfa_enabled' }));
      expect(ids(admin)).toEqual([rows[1]!.id]);
      const adminGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { userId: user.userId, type: 'user:mfa_enabled' } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(adminGql).toEqual(toGqlPage(admin));
    });

    test('from and to bound created_at (RFC 3339, any offset)', async () => {
      const [x, w, login] = rows;
      const afterLogin = midpoint(login!.created_at, w!.created_at);
      const afterW = midpoint(w!.created_at, x!.created_at);

      const fromPage = okPage(await myLog(user.accessToken, { from: afterLogin }));
      expect(ids(fromPage)).toEqual([x!.id, w!.id]);
      expect(fromPage.total).toBe(2);

      const toPage = okPage(await myLog(user.accessToken, { to: afterLogin }));
      expect(ids(toPage)).toEqual(rows.slice(2).map((r) => r.id));
      expect(toPage.total).toBe(2);

      const between = okPage(await myLog(user.accessToken, { from: afterLogin, to: afterW }));
      expect(ids(between)).toEqual([w!.id]);

      // The same instant written with a +02:00 offset selects the same rows.
      const shifted = new Date(Date.parse(afterLogin) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      expect(ids(okPage(await myLog(user.accessToken, { from: shifted })))).toEqual([x!.id, w!.id]);

      const viaGql = expectOkGql(await gql(t.url, MY_LOG, { filter: { from: afterLogin, to: afterW } }, bearer(user.accessToken)), 'myAuditLog');
      expect(viaGql).toEqual(toGqlPage(between));

      const admin = okPage(await adminLog(op.accessToken, { user_id: user.userId, from: afterLogin, to: afterW }));
      expect(ids(admin)).toEqual([w!.id]);
      const account = okPage(await accountLog(owner.accessToken, { from: new Date(Date.now() + 3600_000).toISOString() }));
      expect(account.total).toBe(0);
    });

    test('from is inclusive: from=<a row\'s created_at> keeps that row', async () => {
      const w = rows[1]!;
      expect(ids(okPage(await myLog(user.accessToken, { from: w.created_at })))).toEqual([rows[0]!.id, w.id]);
    });

    test('to is inclusive: to=<a row\'s created_at> keeps that row', async () => {
      const w = rows[1]!;
      expect(ids(okPage(await myLog(user.accessToken, { to: w.created_at })))).toEqual(rows.slice(1).map((r) => r.id));
      expect(ids(okPage(await myLog(user.accessToken, { from: w.created_at, to: w.created_at })))).toEqual([w.id]);
    });

    test.each([
      ['from=yesterday', { from: 'yesterday' }],
      ['to=yesterday', { to: 'yesterday' }],
      ['from=not-a-date&to=2026-13-45T99:00:00Z', { from: 'not-a-date', to: '2026-13-45T99:00:00Z' }],
    ])('an unparseable bound is ignored, not a 400 (%s)', async (_name, query) => {
      const without = okPage(await myLog(user.accessToken));
      const page = okPage(await myLog(user.accessToken, query));
      expect(page).toEqual(without);
      expect(page.total).toBe(4);
      const viaGql = expectOkGql(await gql(t.url, MY_LOG, { filter: query }, bearer(user.accessToken)), 'myAuditLog');
      expect(viaGql).toEqual(toGqlPage(without));
      const account = okPage(await accountLog(owner.accessToken, query));
      expect(account).toEqual(okPage(await accountLog(owner.accessToken)));
      expect(account.total).toBe(2);
      const admin = okPage(await adminLog(op.accessToken, { user_id: user.userId, ...query }));
      expect(admin).toEqual(without);
    });
  });

  // ---------------------------------------------------------------- resolved_names

  describe('resolved_names', () => {
    test('the acting user, the account and the role of a role row resolve at read time; a deleted role drops out, its id stays', async () => {
      const owner = await devLogin(t, newEmail('names-owner'));
      const roleId = await createRole(owner, 'Name Check');
      const user = { id: owner.userId, kind: 'user' as const, display_name: displayNameOf(owner) };
      const account = { id: owner.accountId!, kind: 'account' as const, display_name: accountNameOf(owner) };

      const read = async () => {
        const page = okPage(await accountLog(owner.accessToken, { type: 'account:role_created' }));
        expect(page.total).toBe(1);
        return page;
      };

      const first = await read();
      expect(first.items[0]).toMatchObject({ user_id: owner.userId, account_id: owner.accountId, metadata: expect.objectContaining({ role_id: roleId }) });
      expect(sortedNames(first.items[0]!.resolved_names)).toEqual(sortedNames([user, account, { id: roleId, kind: 'role', display_name: 'Name Check' }]));
      const viaGql = expectOkGql(await gql(t.url, ACCOUNT_LOG, { filter: { type: 'account:role_created' } }, bearer(owner.accessToken)), 'accountAuditLog');
      expect(viaGql).toEqual(toGqlPage(first));

      // Renamed: the old row shows the current name.
      const renamed = await api(t, 'PATCH', `/account/roles/${roleId}`, { token: owner.accessToken, body: { name: 'Renamed Check' } });
      expect(renamed.status).toBe(200);
      const second = await read();
      expect(second.items[0]!.id).toBe(first.items[0]!.id);
      expect(sortedNames(second.items[0]!.resolved_names)).toEqual(sortedNames([user, account, { id: roleId, kind: 'role', display_name: 'Renamed Check' }]));

      // Deleted: the role is no longer resolved, the raw id stays in metadata.
      const deleted = await api(t, 'DELETE', `/account/roles/${roleId}`, { token: owner.accessToken });
      expect(deleted.status).toBe(200);
      const third = await read();
      expect(third.items[0]!.id).toBe(first.items[0]!.id);
      expect(third.items[0]!.metadata).toMatchObject({ role_id: roleId, name: 'Name Check' });
      expect(sortedNames(third.items[0]!.resolved_names)).toEqual(sortedNames([user, account]));
      const afterGql = expectOkGql(await gql(t.url, ACCOUNT_LOG, { filter: { type: 'account:role_created' } }, bearer(owner.accessToken)), 'accountAuditLog');
      expect(afterGql).toEqual(toGqlPage(third));
    });

    test('an ingested row for an unknown user keeps user_id and resolves no name for it', async () => {
      const op = await operator();
      const ghost = randomUUID();
      const res = await ingest({ user_id: ghost, type: 'user:login_failed', ip_address: '198.51.100.9' });
      expect(res.status).toBe(201);
      const page = okPage(await adminLog(op.accessToken, { user_id: ghost }));
      expect(page.total).toBe(1);
      expect(page.items[0]).toMatchObject({ id: res.body.id, user_id: ghost, scope: 'user', type: 'user:login_failed', account_id: null, resolved_names: [] });
      const viaGql = expectOkGql(await gql(t.url, ADMIN_LOG, { filter: { userId: ghost } }, bearer(op.accessToken)), 'adminAuditLog');
      expect(viaGql).toEqual(toGqlPage(page));
    });

    test('a known user referenced from ingested metadata resolves, an unknown one is omitted', async () => {
      const user = await devLogin(t, newEmail('names-ingest'));
      const known = await devLogin(t, newEmail('names-known'));
      const ghost = randomUUID();
      const res = await ingest({ user_id: user.userId, type: 'user:oauth_granted', metadata: { target_user_id: known.userId, other_user_id: ghost } });
      expect(res.status).toBe(201);
      const page = okPage(await myLog(user.accessToken, { type: 'user:oauth_granted' }));
      expect(page.total).toBe(1);
      expect(page.items[0]!.metadata).toMatchObject({ target_user_id: known.userId, other_user_id: ghost });
      expect(sortedNames(page.items[0]!.resolved_names)).toEqual(
        sortedNames([
          { id: user.userId, kind: 'user', display_name: displayNameOf(user) },
          { id: known.userId, kind: 'user', display_name: displayNameOf(known) },
        ]),
      );
    });
  });
});
