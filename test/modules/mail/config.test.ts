/** The mail config: transport choice, the production refusal of `log`, SMTP settings and their bounds. */
import { loadConfig } from '../../../src/config/config';

describe('mail config', () => {
  const production = { env: 'production', auth: { jwt_secret: 'x'.repeat(40) }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } };

  test('log is the default; production refuses it unless mail.allow_log_transport says so', () => {
    expect(loadConfig({ env: {}, overrides: { env: 'test' } }).mail.transport).toBe('log');
    expect(() => loadConfig({ env: {}, overrides: production })).toThrow(/mail\.transport: `log` sends no mail/);
    expect(loadConfig({ env: {}, overrides: { ...production, mail: { allow_log_transport: true } } }).mail.transport).toBe('log');
    const smtp = loadConfig({ env: {}, overrides: { ...production, mail: { transport: 'smtp', smtp: { host: 'smtp.example.test' } } } });
    expect(smtp.mail.smtp).toMatchObject({ host: 'smtp.example.test', port: 587, pool: true });
  });

  test('smtp needs a host; a password named by environment variable is read once; bounds and line breaks are refused', () => {
    expect(() => loadConfig({ env: {}, overrides: { mail: { transport: 'smtp' } } })).toThrow(/mail\.smtp\.host: required/);
    expect(() => loadConfig({ env: {}, overrides: { mail: { transport: 'smtp', smtp: { host: 'h', pass_env: 'MAIL_PASS' } } } })).toThrow(/MAIL_PASS is not set/);
    expect(loadConfig({ env: { MAIL_PASS: 's3cret' }, overrides: { mail: { transport: 'smtp', smtp: { host: 'h', user: 'u', pass_env: 'MAIL_PASS' } } } }).mail.smtp.pass).toBe('s3cret');
    expect(() => loadConfig({ env: {}, overrides: { mail: { transport: 'carrier-pigeon' } } })).toThrow(/mail\.transport/);
    expect(() => loadConfig({ env: {}, overrides: { mail: { from: 'a@b\r\nBcc: x@y' } } })).toThrow(/mail\.from/);
    expect(() => loadConfig({ env: {}, overrides: { mail: { link_base: 'javascript:alert(1)' } } })).toThrow(/mail\.link_base/);
    expect(() => loadConfig({ env: {}, overrides: { mail: { retry: { base_delay_ms: 1000, max_delay_ms: 100 } } } })).toThrow(/mail\.retry\.max_delay_ms/);
  });
});
