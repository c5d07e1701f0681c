import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, sha256Hex } from '../../src/config/config';

describe('loadConfig', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'config-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, text: string) => {
    const target = path.join(dir, name);
    writeFileSync(target, text);
    return target;
  };

  test('defaults match the bootstrap contract', () => {
    const config = loadConfig({ env: {} });
    expect(config.port).toBe(8080);
    expect(config.env).toBe('development');
    expect(config.data_dir).toBe('./.data');
    expect(config.database_url).toBeNull();
    expect(config.redis_url).toBeNull();
    expect(config.metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(config.http.trust_proxy).toBe('loopback');
    expect(config.docs).toEqual({ swagger_ui: true, openapi_json: true });
    expect(config.graphql.playground).toBe(true);
    expect(Object.isFrozen(config) && Object.isFrozen(config.auth)).toBe(true);
  });

  test('environment variables override the SVC_CONFIG file, which overrides defaults', () => {
    const yaml = file('svc.yaml', 'port: 9000\ndocs:\n  swagger_ui: false\nmetrics:\n  port: 9999\n');
    const config = loadConfig({ env: { SVC_CONFIG: yaml, PORT: '7000', DATABASE_URL: 'postgres://db/x', REDIS_URL: 'redis://r:6379', TIMESERIES_URL: 'postgres://ts/y', SVC_DATA_DIR: '/tmp/d' } });
    expect(config.port).toBe(7000);
    expect(config.docs).toEqual({ swagger_ui: false, openapi_json: true });
    expect(config.metrics).toEqual({ host: '127.0.0.1', port: 9999 });
    expect(config.database_url).toBe('postgres://db/x');
    expect(config.timeseries_url).toBe('postgres://ts/y');
    expect(config.redis_url).toBe('redis://r:6379');
    expect(config.data_dir).toBe('/tmp/d');
  });

  test('reads JSON files too', () => {
    const json = file('svc.json', JSON.stringify({ graphql: { playground: false } }));
    expect(loadConfig({ env: { SVC_CONFIG: json } }).graphql.playground).toBe(false);
  });

  test('a file that does not parse gives a clear message naming the file', () => {
    const bad = file('bad.yaml', 'port: [1, 2\n');
    expect(() => loadConfig({ env: { SVC_CONFIG: bad } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { SVC_CONFIG: bad } })).toThrow(/SVC_CONFIG: .*bad\.yaml is not valid YAML/);
    const badJson = file('bad.json', '{ "port": ');
    expect(() => loadConfig({ env: { SVC_CONFIG: badJson } })).toThrow(/is not valid JSON/);
    expect(() => loadConfig({ env: { SVC_CONFIG: path.join(dir, 'missing.yaml') } })).toThrow(/cannot read/);
  });

  test('every problem is reported at once, with the key that is wrong', () => {
    const bad = file('wrong.yaml', 'port: high\nmetrics:\n  port: -1\nunknown_key: 1\ndocs:\n  swagger_ui: maybe\n');
    let error: ConfigError | undefined;
    try {
      loadConfig({ env: { SVC_CONFIG: bad } });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = error!.problems.join('\n');
    expect(text).toContain('port: must be integer');
    expect(text).toContain('metrics.port: must be >= 0');
    expect(text).toContain('(unknown_key)');
    expect(text).toContain('docs.swagger_ui: must be boolean');
  });

  test('production refuses the development JWT secret and dev login', () => {
    expect(() => loadConfig({ env: {}, overrides: { env: 'production' } })).toThrow(/auth\.jwt_secret/);
    expect(() => loadConfig({ env: {}, overrides: { env: 'production', auth: { jwt_secret: 'x'.repeat(40), dev_login: true } } })).toThrow(/auth\.dev_login/);
    const ok = loadConfig({ env: {}, overrides: { env: 'production', auth: { jwt_secret: 'x'.repeat(40) } } });
    expect(ok.auth.dev_login).toBe(false);
    expect(ok.graphql.playground).toBe(false);
  });

  test('system keys keep only their SHA-256 hash', () => {
    const key = `lm_sys_${'ab'.repeat(32)}`;
    const config = loadConfig({
      env: {},
      overrides: { auth: { system_keys: [{ label: 'bot', key, permissions: ['events:*'] }, { label: 'ci', key_sha256: 'c'.repeat(64), permissions: [] }] } },
    });
    expect(config.auth.system_keys).toEqual([
      { label: 'bot', key_sha256: sha256Hex(key), permissions: ['events:*'] },
      { label: 'ci', key_sha256: 'c'.repeat(64), permissions: [] },
    ]);
    expect(JSON.stringify(config)).not.toContain(key);
  });

  test('a system key must be well formed and given exactly once', () => {
    expect(() => loadConfig({ env: {}, overrides: { auth: { system_keys: [{ label: 'x', key: 'lm_sys_short', permissions: [] }] } } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: {}, overrides: { auth: { system_keys: [{ label: 'x', permissions: [] }] } } })).toThrow(ConfigError);
  });
});
