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
    expect(config.docs).toEqual({ swagger_ui: true, openapi_json: true, asyncapi_ui: true });
    expect(config.graphql.playground).toBe(true);
    expect(Object.isFrozen(config) && Object.isFrozen(config.auth)).toBe(true);
  });

  test('environment variables override the SVC_CONFIG file, which overrides defaults', () => {
    const yaml = file('svc.yaml', 'port: 9000\ndocs:\n  swagger_ui: false\nmetrics:\n  port: 9999\n');
    const config = loadConfig({ env: { SVC_CONFIG: yaml, PORT: '7000', DATABASE_URL: 'postgres://db/x', REDIS_URL: 'redis://r:6379', TIMESERIES_URL: 'postgres://ts/y', SVC_DATA_DIR: '/tmp/d' } });
    expect(config.port).toBe(7000);
    expect(config.docs).toEqual({ swagger_ui: false, openapi_json: true, asyncapi_ui: true });
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

  test('graphql limits: defaults, introspection off in production unless set, bounds checked', () => {
    const production = { env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'x'.repeat(40) }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } };
    expect(loadConfig({ env: {} }).graphql).toEqual({ playground: true, introspection: true, max_depth: 12, max_aliases: 30, max_directives: 50, max_tokens: 5000, max_cost: 5000 });
    expect(loadConfig({ env: {}, overrides: production }).graphql.introspection).toBe(false);
    expect(loadConfig({ env: {}, overrides: { ...production, graphql: { introspection: true } } }).graphql.introspection).toBe(true);
    let error: ConfigError | undefined;
    try {
      loadConfig({ env: {}, overrides: { graphql: { max_depth: 101, max_cost: 0, max_tokens: 'many' } } });
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error?.problems).toEqual(expect.arrayContaining(['graphql.max_depth: must be <= 100', 'graphql.max_cost: must be >= 1', 'graphql.max_tokens: must be integer']));
  });

  test('production refuses the development JWT secret and dev login', () => {
    expect(() => loadConfig({ env: {}, overrides: { env: 'production' } })).toThrow(/auth\.jwt_secret/);
    expect(() => loadConfig({ env: {}, overrides: { env: 'production', auth: { jwt_secret: 'x'.repeat(40), dev_login: true } } })).toThrow(/auth\.dev_login/);
    const ok = loadConfig({ env: {}, overrides: { env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'x'.repeat(40) }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } } });
    expect(ok.auth.dev_login).toBe(false);
    expect(ok.graphql.playground).toBe(false);
  });

  test('production refuses the development-only webhook switches with a clear message; development accepts them', () => {
    const production = { env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'x'.repeat(40) }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } };
    expect(() => loadConfig({ env: {}, overrides: { ...production, payments: { allow_unsigned_webhooks: true } } })).toThrow(
      'payments.allow_unsigned_webhooks: cannot be enabled in production (it accepts unsigned payment events)',
    );
    expect(() => loadConfig({ env: {}, overrides: { ...production, webhooks: { require_signatures: false } } })).toThrow(
      'webhooks.require_signatures: cannot be false in production (it accepts unsigned platform webhooks)',
    );
    const development = loadConfig({ env: {}, overrides: { env: 'development', payments: { allow_unsigned_webhooks: true }, webhooks: { require_signatures: false } } });
    expect(development.payments.allow_unsigned_webhooks).toBe(true);
    expect(development.webhooks.require_signatures).toBe(false);
  });

  test('payout submission: off by default; production refuses it on without the provider\'s credentials, which come from SVC_ variables too', () => {
    const production = { env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'x'.repeat(40) }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } };
    expect(loadConfig({ env: {}, overrides: production }).payouts).toMatchObject({ enabled: false, client_id: null, client_secret: null });
    expect(() => loadConfig({ env: {}, overrides: { ...production, payouts: { enabled: true, client_id: 'id' } } })).toThrow(
      "payouts.client_secret: must be set in production while payouts.enabled is true (the payout provider's credentials)",
    );
    const fromEnv = loadConfig({ env: { SVC_PAYOUTS__ENABLED: 'true', SVC_PAYOUTS__CLIENT_ID: 'id', SVC_PAYOUTS__CLIENT_SECRET: 'provider-secret' }, overrides: production });
    expect(fromEnv.payouts).toMatchObject({ enabled: true, client_id: 'id', client_secret: 'provider-secret' });
    expect(() => loadConfig({ env: {}, overrides: { payouts: { retry: { max_attempts: 0 } } } })).toThrow(/payouts\.retry\.max_attempts/);
  });

  test('the listener binds 127.0.0.1 outside production and 0.0.0.0 in production; `host` overrides both', () => {
    const production = { env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'x'.repeat(40) }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } };
    expect(loadConfig({ env: {} }).host).toBe('127.0.0.1');
    expect(loadConfig({ env: {}, overrides: { env: 'test' } }).host).toBe('127.0.0.1');
    expect(loadConfig({ env: {}, overrides: production }).host).toBe('0.0.0.0');
    expect(loadConfig({ env: {}, overrides: { host: '0.0.0.0' } }).host).toBe('0.0.0.0');
    expect(loadConfig({ env: {}, overrides: { ...production, host: '127.0.0.1' } }).host).toBe('127.0.0.1');
    const yaml = file('host.yaml', 'host: "::"\n');
    expect(loadConfig({ env: { SVC_CONFIG: yaml } }).host).toBe('::');
  });

  test('http.cors_origins is empty by default and takes origins only', () => {
    expect(loadConfig({ env: {} }).http.cors_origins).toEqual([]);
    const origins = ['https://dash.example.com', 'http://localhost:5173', 'https://Dash.Example.com:8443/'];
    expect(loadConfig({ env: {}, overrides: { http: { cors_origins: origins } } }).http.cors_origins).toEqual(origins);
    for (const bad of ['dash.example.com', 'https://dash.example.com/app', 'https://*.example.com', 'ftp://files.example.com', 'https://dash.example.com?x=1', '*']) {
      expect(() => loadConfig({ env: {}, overrides: { http: { cors_origins: [bad] } } })).toThrow(`http.cors_origins: ${JSON.stringify(bad)} is not an origin`);
    }
    expect(() => loadConfig({ env: {}, overrides: { http: { cors_origins: 'https://dash.example.com' } } })).toThrow('http.cors_origins: must be array');
  });

  test('jobs: defaults, periods by name, and a lease renewed at least twice in its lifetime', () => {
    expect(loadConfig({ env: {} }).jobs).toEqual({ poll_interval_ms: 2000, periods: {}, lease_ttl_ms: 20_000, lease_renew_ms: 5000, node_id: null });
    expect(loadConfig({ env: {}, overrides: { jobs: { periods: { 'events.gift-sweep': 10 }, node_id: 'node-a' } } }).jobs).toMatchObject({ periods: { 'events.gift-sweep': 10 }, node_id: 'node-a' });
    expect(() => loadConfig({ env: {}, overrides: { jobs: { lease_ttl_ms: 5000, lease_renew_ms: 4000 } } })).toThrow('jobs.lease_renew_ms: must be at most half of jobs.lease_ttl_ms');
    expect(() => loadConfig({ env: {}, overrides: { jobs: { periods: { 'events.gift-sweep': 0 } } } })).toThrow('jobs.periods.events.gift-sweep: must be >= 1');
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
