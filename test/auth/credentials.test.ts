import { ANONYMOUS, grants, hasPermission, systemKeyContext } from '../../src/auth/context';
import { createCredentialResolver, credentialFormats, parseCredential, tokenHash } from '../../src/auth/credentials';
import { createSystemKeyVerifier } from '../../src/auth/system-keys';

const hex = 'a1'.repeat(32);

describe('credential formats (Part 1 table)', () => {
  test.each([
    ['system_key', 'lm_sys_', 71],
    ['user_api_key', 'lm_usr_', 71],
    ['service_key', 'lm_svc_', 71],
    ['developer_api_key', 'lm_dev_', 71],
    ['popout', 'lm_pop_', 71],
    ['overlay', 'lm_overlay_', 75],
    ['shared_overlay', 'lm_share_', 73],
    ['extension', 'lm_ext_', 71],
    ['widget', 'lm_widget_', 74],
  ])('%s: prefix %s, total length %i', (kind, prefix, length) => {
    const parsed = parseCredential(`${prefix}${hex}`);
    expect(parsed?.format.kind).toBe(kind);
    expect(parsed?.format.length).toBe(length);
    expect(parsed?.wellFormed).toBe(true);
    expect(parseCredential(`${prefix}${hex}0`)?.wellFormed).toBe(false);
    expect(parseCredential(`${prefix}${hex.toUpperCase()}`)?.wellFormed).toBe(false);
  });

  test('JWTs are lm_ followed by a JWT beginning eyJ', () => {
    expect(parseCredential('lm_eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln')).toMatchObject({ format: { kind: 'jwt' }, wellFormed: true });
    expect(parseCredential('lm_eyJonly')?.wellFormed).toBe(false);
    expect(parseCredential('lm_other')).toBeNull();
    expect(parseCredential('eyJhbGciOiJIUzI1NiJ9.e.s')).toBeNull();
  });

  test('transports: keys header-only, popout query-only, tokens both', () => {
    const byKind = Object.fromEntries(credentialFormats.map((f) => [f.kind, f]));
    for (const kind of ['system_key', 'user_api_key', 'service_key', 'developer_api_key']) expect(byKind[kind]).toMatchObject({ header: true, query: false });
    expect(byKind.popout).toMatchObject({ header: false, query: true });
    for (const kind of ['overlay', 'shared_overlay', 'extension', 'widget', 'jwt']) expect(byKind[kind]).toMatchObject({ header: true, query: true });
  });
});

describe('resolution order', () => {
  const key = `lm_sys_${hex}`;
  const resolver = createCredentialResolver({
    system_key: createSystemKeyVerifier([{ label: 'bot', key_sha256: tokenHash(key), permissions: ['events:*'] }]),
  });

  test('a valid system key in the header resolves; the context keeps only the hash', async () => {
    const { context, failure } = await resolver.resolve({ authorization: `Bearer ${key}`, transport: 'http' });
    expect(failure).toBeNull();
    expect(context.kind).toBe('system_key');
    expect(context.credentialId).toBe(tokenHash(key));
    expect(JSON.stringify({ ...context, permissions: [...context.permissions] })).not.toContain(key);
  });

  test('a recognised prefix in the header is final: ?token= is not consulted', async () => {
    const unknown = `lm_sys_${'b2'.repeat(32)}`;
    const result = await resolver.resolve({ authorization: `Bearer ${unknown}`, queryToken: key, transport: 'http' });
    expect(result.context).toBe(ANONYMOUS);
    expect(result.failure?.code).toBe('UNAUTHORIZED');
  });

  test('an unrecognised header falls through to ?token=, which refuses header-only kinds', async () => {
    const result = await resolver.resolve({ authorization: 'Bearer something-else', queryToken: key, transport: 'http' });
    expect(result.context).toBe(ANONYMOUS);
    expect(result.failure).not.toBeNull();
  });

  test.each([
    ['?token=lm_garbage', { queryToken: 'lm_garbage' }],
    ['?token=garbage', { queryToken: 'garbage' }],
    ['Bearer lm_garbage', { authorization: 'Bearer lm_garbage' }],
    ['Basic credentials', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['an unrecognised header beside a valid ?token=', { authorization: 'Bearer lm_garbage', queryToken: `lm_overlay_${hex}` }],
  ])('on the upgrade an unrecognised credential (%s) is a failure, not Anonymous', async (_name, input) => {
    const result = await resolver.resolve({ ...input, transport: 'ws' });
    expect(result).toEqual({ context: ANONYMOUS, failure: { code: 'UNAUTHORIZED', message: expect.any(String) } });
  });

  test('on REST and GraphQL the same unrecognised credentials stay Anonymous without failure', async () => {
    for (const input of [{ queryToken: 'lm_garbage' }, { queryToken: 'garbage' }, { authorization: 'Bearer lm_garbage' }]) {
      expect(await resolver.resolve({ ...input, transport: 'http' })).toEqual({ context: ANONYMOUS, failure: null });
    }
  });

  test('a popout token in the header is refused (query-only)', async () => {
    const result = await resolver.resolve({ authorization: `Bearer lm_pop_${hex}`, transport: 'http' });
    expect(result.context).toBe(ANONYMOUS);
    expect(result.failure).not.toBeNull();
  });

  test('a raw JWT in ?token= is honoured only on the WebSocket upgrade', async () => {
    const jwt = 'lm_eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln';
    const calls: string[] = [];
    const withJwt = createCredentialResolver({
      jwt: async (_c, transport) => {
        calls.push(transport);
        return { code: 'TOKEN_EXPIRED', message: 'expired' };
      },
    });
    expect((await withJwt.resolve({ queryToken: jwt, transport: 'http' })).context).toBe(ANONYMOUS);
    expect(calls).toEqual([]);
    expect((await withJwt.resolve({ queryToken: jwt, transport: 'ws' })).failure?.code).toBe('TOKEN_EXPIRED');
    expect(calls).toEqual(['ws']);
  });

  test('no credential is Anonymous without failure', async () => {
    expect(await resolver.resolve({ transport: 'ws' })).toEqual({ context: ANONYMOUS, failure: null });
  });
});

describe('grants', () => {
  test('resource wildcards count for system keys only; *:* and * are literal', () => {
    const system = systemKeyContext({ keyHash: 'h', label: 'l', permissions: ['events:*', '*:*', '*'] });
    expect(hasPermission(system, 'events:read')).toBe(true);
    expect(hasPermission(system, 'chat:read')).toBe(false);
    expect(hasPermission(system, '*:*')).toBe(true);
    expect(hasPermission(system, 'admin-roles:read', 'admin')).toBe(false);
    expect(grants(new Set(['events:*']), 'events:read', false)).toBe(false);
    expect(grants(new Set(['*']), 'events:read', true)).toBe(false);
    expect(hasPermission(ANONYMOUS, 'events:read')).toBe(false);
  });
});
