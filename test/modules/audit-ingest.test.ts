/**
 * The audit log, part 3 of the audit suites (audit-helpers.ts holds what the parts share; Part 2,
 * "Audit log"): POST /v1/internal/audit-ingest, the system keys it accepts, the principals it
 * refuses and the bodies it validates, each row read back through real HTTP.
 */
import { useTestApp } from '../helpers/app';
import { devLogin, type LoggedIn } from '../helpers/users';
import { ingestKey, wildcardKey, starKey, readerKey, UNAUTHORIZED, MISSING_AUDIT_INGEST, UUID_RE, newEmail, okPage, auditKit } from './audit-helpers';

describe('audit log', () => {
  const t = useTestApp({
    rate_limits: { enabled: false },
    auth: { system_keys: [ingestKey.config, wildcardKey.config, starKey.config, readerKey.config] },
  });
  const { myLog, accountLog, ingest, operator } = auditKit(t);

  // ---------------------------------------------------------------- POST /v1/internal/audit-ingest

  describe('POST /v1/internal/audit-ingest', () => {
    let user: LoggedIn;
    const userRows = async () => okPage(await myLog(user.accessToken, { limit: '200' }));

    beforeAll(async () => {
      user = await devLogin(t, newEmail('ingest'));
    });

    test('a system key with audit:ingest records a user-scope row without account: 201 { id }', async () => {
      const metadata = { provider: 'platform_a', attempt: 2, nested: { ok: true } };
      const res = await ingest({ user_id: user.userId, type: 'user:mfa_enabled', ip_address: '192.0.2.44', user_agent: 'auth-service/3.1', metadata });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body)).toEqual(['id']);
      expect(res.body.id).toMatch(UUID_RE);

      const page = await userRows();
      const row = page.items.find((i) => i.id === res.body.id);
      expect(row).toMatchObject({
        scope: 'user',
        type: 'user:mfa_enabled',
        user_id: user.userId,
        account_id: null,
        ip_address: '192.0.2.44',
        user_agent: 'auth-service/3.1',
      });
      expect(row!.metadata).toMatchObject(metadata);
      expect(page.items[0]!.id).toBe(res.body.id); // the newest row
      // The account never sees it.
      expect(okPage(await accountLog(user.accessToken)).items.some((i) => i.id === res.body.id)).toBe(false);
    });

    test.each(['user:login', 'user:login_failed', 'user:mfa_enabled', 'user:mfa_disabled', 'user:oauth_granted'])('type %s is accepted', async (type) => {
      const res = await ingest({ user_id: user.userId, type });
      expect(res.status).toBe(201);
      const page = okPage(await myLog(user.accessToken, { type }));
      expect(page.items.map((i) => i.id)).toContain(res.body.id);
    });

    test('audit:* also grants it', async () => {
      const res = await ingest({ user_id: user.userId, type: 'user:login_failed' }, wildcardKey.key);
      expect(res.status).toBe(201);
      expect((await userRows()).items[0]).toMatchObject({ id: res.body.id, type: 'user:login_failed', scope: 'user', account_id: null });
    });

    test('omitted metadata defaults to an empty object; null ip and user agent stay null', async () => {
      const res = await ingest({ user_id: user.userId, type: 'user:mfa_disabled', ip_address: null, user_agent: null });
      expect(res.status).toBe(201);
      const row = (await userRows()).items.find((i) => i.id === res.body.id)!;
      expect(row).toMatchObject({ ip_address: null, user_agent: null, account_id: null });
      expect(row.metadata).toEqual({});
    });

    describe('refused principals', () => {
      const body = () => ({ user_id: user.userId, type: 'user:login' });

      test('a bare *:* system key: 403 "Missing permission: audit:ingest"', async () => {
        const before = (await userRows()).total;
        const res = await ingest(body(), starKey.key);
        expect(res.status).toBe(403);
        expect(res.body).toEqual(MISSING_AUDIT_INGEST);
        expect((await userRows()).total).toBe(before);
      });

      test('a system key without it: 403 "Missing permission: audit:ingest"', async () => {
        const res = await ingest(body(), readerKey.key);
        expect(res.status).toBe(403);
        expect(res.body).toEqual(MISSING_AUDIT_INGEST);
      });

      test('anonymous: 401 "Authentication required"', async () => {
        const res = await ingest(body(), null);
        expect(res.status).toBe(401);
        expect(res.body).toEqual(UNAUTHORIZED);
      });

      test.each(['user JWT', 'super-admin operator JWT', 'user API key', 'service key'])('%s: 403 FORBIDDEN', async (kind) => {
        const owner = kind === 'super-admin operator JWT' ? await operator() : await devLogin(t, newEmail('ingest-refused'));
        let token = owner.accessToken;
        if (kind === 'user API key') {
          token = (await t.app.authStore.mint({ kind: 'user_api_key', userId: owner.userId, accountId: owner.accountId, createdBy: owner.userId, permissions: [] })).token;
        } else if (kind === 'service key') {
          token = (await t.app.authStore.mint({ kind: 'service_key', accountId: owner.accountId, createdBy: owner.userId, permissions: ['audit-log:read'] })).token;
        }
        const before = (await userRows()).total;
        const res = await ingest(body(), token);
        expect(res.status).toBe(403);
        expect(res.body.error).toBe('FORBIDDEN');
        expect(typeof res.body.message).toBe('string');
        expect((await userRows()).total).toBe(before);
      });
    });

    describe('body validation: 400 VALIDATION_ERROR, nothing recorded', () => {
      const cases: [string, () => Record<string, unknown>][] = [
        ['type account:created', () => ({ user_id: user.userId, type: 'account:created' })],
        ['type system:x', () => ({ user_id: user.userId, type: 'system:x' })],
        ['type user:other', () => ({ user_id: user.userId, type: 'user:other' })],
        ['missing type', () => ({ user_id: user.userId })],
        ['missing user_id', () => ({ type: 'user:login' })],
        ['user_id not a UUID', () => ({ user_id: 'not-a-uuid', type: 'user:login' })],
        ['metadata as an array', () => ({ user_id: user.userId, type: 'user:login', metadata: [1, 2] })],
        ['metadata as a string', () => ({ user_id: user.userId, type: 'user:login', metadata: 'hello' })],
        ['metadata as null', () => ({ user_id: user.userId, type: 'user:login', metadata: null })],
        ['metadata past 65536 bytes as JSON', () => ({ user_id: user.userId, type: 'user:login', metadata: { blob: 'x'.repeat(65_536 - 11 + 1) } })],
        ['metadata past the bound in multi-byte characters', () => ({ user_id: user.userId, type: 'user:login', metadata: { blob: 'é'.repeat(32_768) } })],
      ];

      test('metadata of exactly 65536 bytes as JSON is recorded; one byte more is refused naming the bound', async () => {
        const fits = { blob: 'x'.repeat(65_536 - 11) }; // {"blob":"…"} adds 11 bytes
        expect(Buffer.byteLength(JSON.stringify(fits))).toBe(65_536);
        expect((await ingest({ user_id: user.userId, type: 'user:login', metadata: fits })).status).toBe(201);
        const res = await ingest({ user_id: user.userId, type: 'user:login', metadata: { blob: `${fits.blob}x` } });
        expect(res.status).toBe(400);
        expect(res.body.message).toBe('metadata must be at most 65536 bytes as JSON');
      });

      test.each(cases)('%s', async (_name, body) => {
        const before = (await userRows()).total;
        const res = await ingest(body());
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('VALIDATION_ERROR');
        expect(typeof res.body.message).toBe('string');
        expect(res.body.message!.length).toBeGreaterThan(0);
        expect((await userRows()).total).toBe(before);
      });
    });
  });
});
