/** Config of sign-in providers and of secrets at rest, and the secret box itself. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSecretBox, loadSecretBox } from '../../src/auth/secrets';
import { loadConfig, type ConfigError } from '../../src/config/config';

const key = () => randomBytes(32).toString('base64');
const production = { env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'x'.repeat(40) } };
const problems = (overrides: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) => {
  try {
    loadConfig({ env, overrides });
    return [];
  } catch (error) {
    return (error as ConfigError).problems;
  }
};

describe('sign-in config', () => {
  test('production refuses to start without an encryption key', () => {
    expect(problems(production)).toContain('secrets.encryption_keys: at least one key is required in production (provider tokens are encrypted at rest)');
    expect(problems({ ...production, secrets: { encryption_keys: [{ id: 'k1', key: key() }] } })).toEqual([]);
  });

  test('keys and client secrets may come from the environment, named by the file', () => {
    const config = loadConfig({
      env: { SIGNIN_KEY: key(), IDP_SECRET: 's3cret' },
      overrides: {
        secrets: { encryption_keys: [{ id: 'k2', key_env: 'SIGNIN_KEY' }] },
        auth: { providers: [{ slug: 'idp', kind: 'oidc', issuer: 'https://idp.example', client_id: 'c', client_secret_env: 'IDP_SECRET', purposes: ['login'] }] },
      },
    });
    expect(config.auth.providers[0]).toMatchObject({ slug: 'idp', client_secret: 's3cret', scopes: ['openid', 'email', 'profile'] });
    expect(config.secrets.encryption_keys[0]!.id).toBe('k2');
    expect(problems({ auth: { providers: [{ slug: 'idp', kind: 'oidc', issuer: 'https://idp.example', client_id: 'c', client_secret_env: 'MISSING', purposes: ['login'] }] } })).toEqual([
      'auth.providers.0.client_secret_env: environment variable MISSING is not set',
    ]);
  });

  test('each provider kind needs what it uses; slugs are unique; bad keys and allow-list entries are refused', () => {
    const base = { client_id: 'c', client_secret: 's', purposes: ['login'] };
    expect(problems({ auth: { providers: [{ ...base, slug: 'a', kind: 'oidc' }] } })).toContain('auth.providers.0.issuer: required for an oidc provider (discovery)');
    expect(problems({ auth: { providers: [{ ...base, slug: 'b', kind: 'oauth2', authorization_endpoint: 'https://x/auth' }] } })).toEqual([
      'auth.providers.0.token_endpoint: required for an oauth2 provider',
      'auth.providers.0.userinfo_endpoint: required for an oauth2 provider',
    ]);
    const twice = { ...base, slug: 'a', kind: 'oidc', issuer: 'https://x' };
    expect(problems({ auth: { providers: [twice, twice] } })).toContain('auth.providers.1.slug: a is listed twice');
    expect(problems({ auth: { providers: [{ ...twice, purposes: [] }] } }).length).toBeGreaterThan(0);
    expect(problems({ secrets: { encryption_keys: [{ id: 'k', key: 'c2hvcnQ=' }] } })).toEqual(['secrets.encryption_keys.0.key: must be 32 bytes, base64 (openssl rand -base64 32)']);
    expect(problems({ auth: { redirect_allow_list: ['https://dash.example/signed-in?x=1'] } }).length).toBe(1);
    expect(problems({ ...production, secrets: { encryption_keys: [{ id: 'k1', key: key() }] }, auth: { ...production.auth, providers: [twice] } })).toContain(
      'auth.public_url: required in production when auth.providers is set (the providers redirect to <public_url>/v1/auth/callback/<slug>)',
    );
  });
});

describe('secrets at rest', () => {
  test('AES-256-GCM: sealed text names its key, differs every time, and does not open when changed', () => {
    const box = createSecretBox([{ id: 'k1', key: key() }]);
    const a = box.seal('provider-token');
    expect(a).toMatch(/^v1\.k1\./);
    expect(a).not.toContain('provider-token');
    expect(box.seal('provider-token')).not.toBe(a);
    expect(box.open(a)).toBe('provider-token');
    const parts = a.split('.');
    const flipped = [...parts.slice(0, 4), Buffer.from(Buffer.from(parts[4]!, 'base64url').map((b, i) => (i === 0 ? b ^ 1 : b))).toString('base64url')].join('.');
    expect(() => box.open(flipped)).toThrow();
    expect(() => box.open(a.replace('.k1.', '.k2.'))).toThrow();
  });

  test('keys rotate: new writes use the first key, old values open with the key they name', () => {
    const old = { id: 'old', key: key() };
    const sealed = createSecretBox([old]).seal('t');
    const rotated = createSecretBox([{ id: 'new', key: key() }, old]);
    expect(rotated.open(sealed)).toBe('t');
    expect(rotated.seal('t')).toMatch(/^v1\.new\./);
  });

  test('development generates one key into the data dir and reads it back; memory:// keeps it in memory', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-secrets-'));
    const config = loadConfig({ env: {}, overrides: { env: 'development', data_dir: dir } });
    const first = await loadSecretBox(config);
    const sealed = first.seal('t');
    expect((await loadSecretBox(config)).open(sealed)).toBe('t');
    expect(JSON.parse(readFileSync(path.join(dir, 'secrets.key'), 'utf8'))).toMatchObject({ id: 'dev' });
    expect(statSync(path.join(dir, 'secrets.key')).mode & 0o077).toBe(0);
    const memory = await loadSecretBox(loadConfig({ env: {}, overrides: { env: 'development', data_dir: 'memory://' } }));
    expect(memory.open(memory.seal('t'))).toBe('t');
  });
});
