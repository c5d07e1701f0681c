/**
 * Configuration an operator expects: every key of the schema from the environment under one rule
 * (`SVC_` + the key path in upper case, nested keys joined by `__`), the pool size and migration
 * switch, and production's refusals of published or short secrets and of the placeholder
 * security.txt contact.
 */
import { loadConfig } from '../../src/config/config';

const key = 'A'.repeat(43) + '=';
const production = { env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'x'.repeat(40) }, secrets: { encryption_keys: [{ id: 'k1', key }] } };

describe('configuration from the environment', () => {
  test('SVC_<PATH> sets any key, typed by the schema; JSON for lists and objects', () => {
    const config = loadConfig({
      env: {
        SVC_AUTH__JWT_SECRET: 's'.repeat(48),
        SVC_METRICS__PORT: '9999',
        SVC_LOG__LEVEL: 'debug',
        SVC_DB__POOL_MAX: '25',
        SVC_DB__MIGRATE_ON_START: 'false',
        SVC_RATE_LIMITS__ENABLED: 'false',
        SVC_HTTP__CORS_ORIGINS: '["https://dash.example.com"]',
        SVC_PAYMENTS__WEBHOOK_SECRET: 'w'.repeat(40),
        SVC_JOBS__PERIODS: '{"events.gift-sweep": 7}',
        SVC_TIMESERIES_URL: '',
        SVC_DOCS__SWAGGER_UI: 'false',
      },
    });
    expect(config.auth.jwt_secret).toBe('s'.repeat(48));
    expect(config.metrics.port).toBe(9999);
    expect(config.log.level).toBe('debug');
    expect(config.db).toEqual({ migrate_on_start: false, pool_max: 25 });
    expect(config.rate_limits.enabled).toBe(false);
    expect(config.http.cors_origins).toEqual(['https://dash.example.com']);
    expect(config.payments.webhook_secret).toBe('w'.repeat(40));
    expect(config.jobs.periods).toEqual({ 'events.gift-sweep': 7 });
    expect(config.timeseries_url).toBeNull();
    expect(config.docs.swagger_ui).toBe(false);
  });

  test('the file is overridden by the environment; an SVC_ name that names no key, or bad JSON, is a problem', () => {
    expect(loadConfig({ env: { SVC_PORT: '7000' }, overrides: {} }).port).toBe(7000);
    expect(loadConfig({ env: { SVC_PORT: '7000', PORT: '7001' } }).port).toBe(7001);
    expect(() => loadConfig({ env: { SVC_AUTH__JWT_SECRETS: 'x' } })).toThrow('SVC_AUTH__JWT_SECRETS: names no configuration key');
    expect(() => loadConfig({ env: { SVC_HTTP__CORS_ORIGINS: 'https://a.example' } })).toThrow('SVC_HTTP__CORS_ORIGINS: is not JSON');
    // Outside every section: a secret some `key_env` names, not a configuration key.
    expect(loadConfig({ env: { SVC_SECRETS_KEY: 'x' } }).env).toBe('development');
    expect(() => loadConfig({ env: { SVC_DB__POOL_MAX: 'many' } })).toThrow('db.pool_max: must be integer');
  });
});

describe('production refusals', () => {
  test("the README's example secret, the development default, and secrets under 32 bytes", () => {
    expect(() => loadConfig({ env: {}, overrides: { ...production, auth: { jwt_secret: 'a-long-random-secret-of-at-least-32-characters' } } })).toThrow(/auth\.jwt_secret: is the example from the README/);
    expect(() => loadConfig({ env: {}, overrides: { ...production, auth: { jwt_secret: 'development-only-secret-change-me-0123456789' } } })).toThrow(/auth\.jwt_secret: is the example/);
    expect(() => loadConfig({ env: {}, overrides: { ...production, auth: { jwt_secret: 'é'.repeat(15) } } })).toThrow(/auth\.jwt_secret: must be set to at least 32 bytes/);
    expect(() => loadConfig({ env: {}, overrides: { ...production, payments: { webhook_secret: 'short' } } })).toThrow(/payments\.webhook_secret: must be at least 32 bytes/);
    expect(() => loadConfig({ env: {}, overrides: { ...production, webhooks: { platform_b_secret: 'short' } } })).toThrow(/webhooks\.platform_b_secret: must be at least 32 bytes/);
    expect(loadConfig({ env: {}, overrides: { ...production, payments: { webhook_secret: 'short' }, env: 'development' } }).payments.webhook_secret).toBe('short');
  });

  test('security.txt: no contact by default in production (not served), the placeholder refused, one of its own accepted', () => {
    expect(loadConfig({ env: {}, overrides: production }).security_txt.contact).toBeNull();
    expect(loadConfig({ env: {} }).security_txt.contact).toBe('mailto:security@example.com');
    expect(() => loadConfig({ env: {}, overrides: { ...production, security_txt: { contact: 'mailto:security@example.com' } } })).toThrow(/security_txt\.contact: is the example\.com placeholder/);
    expect(loadConfig({ env: { SVC_SECURITY_TXT__CONTACT: 'mailto:security@creators.test' }, overrides: production }).security_txt.contact).toBe('mailto:security@creators.test');
  });
});
