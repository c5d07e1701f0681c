/**
 * JWT verification (src/auth/jwt.ts): a verified token's claims are kept until its `exp`, so a
 * repeated token is not verified again, yet it expires exactly as before and a forged or altered
 * token is never answered from what was kept.
 */
import { createJwtService } from '../../src/auth/jwt';
import { BEYOND_P1_CLAIM, PREVIOUS_RELEASE_READS_ARRAYS, decodeClaim, decodePermissions, encodeClaims, encodePermissions } from '../../src/auth/permission-claims';
import { accountPermissions, adminPermissions, userPermissions } from '../../src/auth/registry';

describe('JWT verification', () => {
  test('a token verified twice gives the same claims, and they cannot be changed', async () => {
    const jwt = createJwtService('a-secret-that-is-long-enough-for-hs256');
    const { token } = await jwt.sign({ sub: 'u1', use: 'access', account_permissions: ['events:read'] }, { ttlSeconds: 60 });
    const first = await jwt.verify(token);
    const second = await jwt.verify(token);
    expect(first).toMatchObject({ ok: true, claims: { sub: 'u1', use: 'access', account_permissions: ['events:read'] } });
    expect(second).toEqual(first);
    if (!second.ok) throw new Error('unreachable');
    expect(Object.isFrozen(second.claims)).toBe(true);
    expect(Object.isFrozen(second.claims.account_permissions)).toBe(true);
  });

  test('a kept token still expires at its exp', async () => {
    const jwt = createJwtService('a-secret-that-is-long-enough-for-hs256');
    // exp is in whole seconds: the token ends at the next second boundary after now + 1 s.
    const expiresAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000);
    const { token } = await jwt.sign({ sub: 'u1', use: 'access' }, { expiresAt });
    expect((await jwt.verify(token)).ok).toBe(true);
    expect((await jwt.verify(token)).ok).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, expiresAt.getTime() - Date.now() + 20));
    expect(await jwt.verify(token)).toEqual({ ok: false, expired: true });
  });

  test('an altered token or another secret is refused even after the original was kept', async () => {
    const jwt = createJwtService('a-secret-that-is-long-enough-for-hs256');
    const { token } = await jwt.sign({ sub: 'u1', use: 'access' }, { ttlSeconds: 60 });
    expect((await jwt.verify(token)).ok).toBe(true);
    const [head, body, signature] = token.split('.');
    const forged = `${head}.${Buffer.from(JSON.stringify({ sub: 'u2', use: 'access', exp: 9_999_999_999, iss: 'creator-backend' })).toString('base64url')}.${signature}`;
    expect(forged).not.toBe(token);
    expect(await jwt.verify(forged)).toEqual({ ok: false, expired: false });
    const first = signature!.charAt(0);
    expect(await jwt.verify(`${head}.${body}.${first === 'A' ? 'B' : 'A'}${signature!.slice(1)}`)).toEqual({ ok: false, expired: false });
    expect(await createJwtService('another-secret-that-is-long-enough').verify(token)).toEqual({ ok: false, expired: false });
  });

  test('permission claims are readable arrays: whole families as their wildcard, a whole scope as *:*, read back as the same strings', async () => {
    const jwt = createJwtService('a-secret-that-is-long-enough-for-hs256');
    const all = { account_permissions: [...accountPermissions], admin_permissions: [...adminPermissions], user_permissions: [...userPermissions] };
    const { token } = await jwt.sign({ sub: 'u1', use: 'access', ...all }, { ttlSeconds: 60 });
    expect(token.length).toBeLessThan(700);
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (PREVIOUS_RELEASE_READS_ARRAYS) expect(payload).toMatchObject({ account_permissions: ['*:*'], admin_permissions: ['*:*'], user_permissions: ['*:*'] });
    // While the previous release serves beside this one: its bitmaps, with what they cannot hold apart.
    else expect(payload).toMatchObject({ account_permissions: expect.stringMatching(/^p1\.QbWmM2Pg\./), [BEYOND_P1_CLAIM]: { admin_permissions: expect.arrayContaining(['mail:edit']) } });
    const verified = await jwt.verify(token);
    if (!verified.ok) throw new Error('refused');
    for (const [name, list] of Object.entries(all)) expect([...verified.claims[name as keyof typeof all]!].sort()).toEqual([...list].sort());

    // An administrator: every family but the four excluded strings' families spelled out.
    const administrator = accountPermissions.filter((p) => !['account:delete', 'plan:read', 'plan:edit', 'extension-dev:payouts'].includes(p));
    const claim = encodePermissions('account_permissions', administrator);
    expect(claim).toContain('events:*');
    expect(claim).toContain('account:read');
    expect(claim).toContain('extension-dev:read');
    expect(claim).not.toContain('plan:*');
    expect(claim.some((p) => p.startsWith('plan:') || p === 'account:delete' || p === 'account:*')).toBe(false);
    expect(decodePermissions('account_permissions', claim).sort()).toEqual([...administrator].sort());

    // A wildcard means its own scope's family only; a string outside the registry stays as it is.
    expect(decodePermissions('user_permissions', ['events:*'])).toEqual([]);
    expect(decodePermissions('admin_permissions', ['ideas:*']).sort()).toEqual(adminPermissions.filter((p) => p.startsWith('ideas:')).sort());
    expect(encodePermissions('account_permissions', ['events:read', 'legacy:grant'])).toEqual(['events:read', 'legacy:grant']);
    expect(decodePermissions('account_permissions', ['events:read', 7])).toEqual(['events:read']);
    expect(decodePermissions('account_permissions', 'nonsense')).toEqual([]);
    expect(decodePermissions('account_permissions', {})).toEqual([]);
  });

  test("the previous release's bitmap claims are read over its own registry index, so its tokens keep their grants here", () => {
    // An owner's claims as the previous release minted them (every account string; the user's own).
    expect(decodePermissions('account_permissions', 'p1.QbWmM2Pg.____________________DwAAAAAAAAAAAAAAAAAA').sort()).toEqual([...accountPermissions].sort());
    expect(decodePermissions('user_permissions', 'p1.QbWmM2Pg.AAAAAAAAAAAAAAAAAAAA8D8AAAAAAAAAAAAAAAAA').sort()).toEqual([...userPermissions].sort());
    // Another registry's bitmap names nothing.
    expect(decodePermissions('account_permissions', 'p1.AAAAAAAA.____________________DwAAAAAAAAAAAAAAAAAA')).toEqual([]);
    // What the bitmap cannot hold rides beside it and is read back with it.
    const minted = encodeClaims({ admin_permissions: [...adminPermissions] });
    expect(decodeClaim('admin_permissions', minted).sort()).toEqual([...adminPermissions].sort());
  });
});
