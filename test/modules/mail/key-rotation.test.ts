/**
 * Key rotation without loss (docs/guides/production.md, "Key rotation on several nodes"): key states (sealing, decrypt-only, retired);
 * with PostgreSQL, two nodes mid-rotation (one still sealing with the old key, one already with
 * the new, each listing the other's key as decrypt-only) deliver every mail either queued; the
 * reseal rewrites every value with the sealing key; a node keyed wrong refuses to start, naming
 * the key id. On either store: a node that meets a body sealed with a key it lacks leaves the
 * message for another try instead of failing it, and an operator re-queues a failed message
 * (POST /v1/admin/mail/outbox/{id}/retry, admin `mail:edit`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createApp, type App } from '../../../src/app';
import { checkSealedValues, resealAll, UnopenableSecretsError } from '../../../src/auth/sealed';
import { createSecretBox, SealedValueError } from '../../../src/auth/secrets';
import { loadConfig } from '../../../src/config/config';
import { isSealedValueError, toAppError } from '../../../src/errors';
import { services, startTestApp, type TestApp } from '../../helpers/app';
import { startTestSmtp, waitFor, type TestSmtp } from '../../helpers/smtp';
import { api, devLogin, type LoggedIn } from '../../helpers/users';

type Json = Record<string, any>;
const k1 = { id: 'k1', key: randomBytes(32).toString('base64') };
const k2 = { id: 'k2', key: randomBytes(32).toString('base64') };
const operatorEmail = `keys-operator-${randomUUID()}@example.test`;
const retry = { max_attempts: 5, base_delay_ms: 100, max_delay_ms: 400, sweep_seconds: 1, lease_ms: 30_000 };

let smtp: TestSmtp;
let t: TestApp;
let operator: LoggedIn;
const extra: App[] = [];

const nodeConfig = (node: string, keys: unknown[]) =>
  loadConfig({
    env: {},
    overrides: {
      env: 'test',
      port: 0,
      log: { level: 'silent' },
      database_url: t.app.config.database_url,
      data_dir: 'memory://',
      redis_url: process.env.REDIS_URL ?? null,
      redis_prefix: t.app.config.redis_prefix,
      jobs: { node_id: node, poll_interval_ms: 500 },
      secrets: { encryption_keys: keys },
      mail: { transport: 'smtp', smtp: { host: '127.0.0.1', port: smtp.port, ignore_tls: true, connection_timeout_ms: 2000, socket_timeout_ms: 5000 }, retry },
    },
  });

beforeAll(async () => {
  smtp = await startTestSmtp();
  // Node A: the new key added as decrypt-only (step one of the rotation), still sealing with k1.
  t = await startTestApp({
    rate_limits: { enabled: false },
    log: { level: 'silent' },
    auth: { bootstrap_admins: [operatorEmail] },
    secrets: { encryption_keys: [{ ...k1, state: 'sealing' }, { ...k2, state: 'decrypt-only' }] },
    jobs: { node_id: 'node-a', poll_interval_ms: 500 },
    mail: { transport: 'smtp', smtp: { host: '127.0.0.1', port: smtp.port, ignore_tls: true, connection_timeout_ms: 2000, socket_timeout_ms: 5000 }, retry },
  });
  operator = await devLogin(t, operatorEmail);
}, 120_000);

afterAll(async () => {
  for (const app of extra) await app.close();
  await t?.stop();
  await smtp?.close();
});

test('key states: a decrypt-only key opens and never seals; a retired one opens nothing and is named', () => {
  const during = createSecretBox([{ ...k1, state: 'decrypt-only' }, { ...k2, state: 'sealing' }]);
  expect(during.keyId).toBe('k2');
  const old = createSecretBox([k1]).seal('grant');
  expect(during.open(old)).toBe('grant');
  expect(during.seal('x')).toMatch(/^v1\.k2\./);
  const after = createSecretBox([{ ...k1, state: 'retired' }, { ...k2, state: 'sealing' }]);
  expect(() => after.open(old)).toThrow(SealedValueError);
  expect(() => after.open(old)).toThrow('names key k1, which this node has retired');
  expect(() => createSecretBox([k2]).open(old)).toThrow('names key k1, which this node does not have');
  expect(() => loadConfig({ env: {}, overrides: { secrets: { encryption_keys: [{ ...k1, state: 'decrypt-only' }] } } })).toThrow('no key seals');
  // A request meeting such a value: 503 with Retry-After (another node, or fixed keys, serve it), not a bare 500.
  expect(toAppError(new SealedValueError('k1', 'unknown-key'))).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  expect(isSealedValueError(new SealedValueError('k1', 'altered'))).toBe(true);
});

test('a body sealed with a key this node lacks is left for another try, not failed; an operator re-queues a failed message', async () => {
  const stranger = createSecretBox([{ id: 'k9', key: randomBytes(32).toString('base64') }]);
  const id = randomUUID();
  await t.app.db.knex('mail_outbox').insert({ id, kind: 'team_invite', to_address: `k9-${id}@example.test`, subject: 'Hello', text_body: stranger.seal('t'), html_body: stranger.seal('h'), max_attempts: 5 });
  await t.app.modules.mail.deliverDue();
  const row = await t.app.db.knex('mail_outbox').where({ id }).first();
  expect(row.status).toBe('pending');
  expect(row.last_error).toContain('names key k9');

  const user = await devLogin(t);
  expect(await api(t, 'POST', `/admin/mail/outbox/${id}/retry`, { token: user.accessToken })).toMatchObject({ status: 403, body: { error: 'FORBIDDEN', message: 'Missing permission: mail:edit' } });
  expect(await api(t, 'POST', `/admin/mail/outbox/${id}/retry`, { token: operator.accessToken })).toMatchObject({ status: 409, body: { error: 'CONFLICT', message: 'Only a failed message can be retried' } });
  expect(await api(t, 'POST', `/admin/mail/outbox/${randomUUID()}/retry`, { token: operator.accessToken })).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'Mail message not found' } });

  // Given up, then the key found its way back (here: sealed again with one this node has), and re-queued.
  const box = createSecretBox([k1]);
  await t.app.db.knex('mail_outbox').where({ id }).update({ status: 'failed', attempts: 5, text_body: box.seal('text'), html_body: box.seal('<p>html</p>') });
  const res = await api(t, 'POST', `/admin/mail/outbox/${id}/retry`, { token: operator.accessToken });
  expect(res.status).toBe(200);
  expect(res.body.data as Json).toMatchObject({ id, status: 'pending', attempts: 0 });
  expect((res.body._links as Json).self).toBe(`/v1/admin/mail/outbox/${id}/retry`);
  await waitFor(() => smtp.received.some((m) => m.envelopeTo.includes(`k9-${id}@example.test`)));
}, 60_000);

test('the start-up check names a key id whose values this configuration cannot open, or opens wrongly', async () => {
  const id = randomUUID();
  const sealedK2 = createSecretBox([k2]);
  await t.app.db.knex('mail_outbox').insert({ id, kind: 'team_invite', to_address: `check-${id}@example.test`, subject: 'Hi', text_body: sealedK2.seal('t'), html_body: sealedK2.seal('h'), max_attempts: 5, status: 'sent' });
  expect((await checkSealedValues(t.app.db.knex, createSecretBox([k1, k2]))).unopenable).toEqual([]);
  expect((await checkSealedValues(t.app.db.knex, createSecretBox([k1]))).unopenable).toContain('k2');
  expect((await checkSealedValues(t.app.db.knex, createSecretBox([k1, { id: 'k2', key: randomBytes(32).toString('base64') }]))).unopenable).toContain('k2');
  expect((await checkSealedValues(t.app.db.knex, createSecretBox([k1, { ...k2, state: 'retired' }]))).unopenable).toContain('k2');
  expect(new UnopenableSecretsError(['k2'], { k2: 2 }).message).toContain('sealed with key k2 (2 values), which this node cannot open');
});

(services.postgres ? test : test.skip)('two nodes mid-rotation deliver every mail; the reseal moves every value to the sealing key; a node keyed wrong refuses to start naming the key', async () => {
  // Node B: step two (k2 seals, k1 decrypt-only) while node A is still at step one.
  const b = await createApp(nodeConfig('node-b', [{ ...k1, state: 'decrypt-only' }, { ...k2, state: 'sealing' }]));
  extra.push(b);
  const run = randomUUID().slice(0, 8);
  const addresses: string[] = [];
  for (let i = 0; i < 8; i += 1) {
    const node = i % 2 === 0 ? t.app : b;
    const address = `rotation-${run}-${i}@example.test`;
    addresses.push(address);
    await node.modules.mail.queue('team_invite', { address, name: null }, { team_name: 'Rotation', code: `code-${i}`, expires_at: new Date().toISOString() });
  }
  await waitFor(() => addresses.every((address) => smtp.received.some((m) => m.envelopeTo.includes(address))));
  const rows = await t.app.db.knex('mail_outbox').whereIn('to_address', addresses);
  expect(rows.map((r: Json) => r.status)).toEqual(Array(8).fill('sent'));
  for (const address of addresses) expect(smtp.received.filter((m) => m.envelopeTo.includes(address))).toHaveLength(1);

  // The reseal (npm run secrets:reseal) with node B's keys, then k1 can be retired.
  const boxB = createSecretBox([{ ...k1, state: 'decrypt-only' }, { ...k2, state: 'sealing' }]);
  const result = await resealAll(b.db.knex, boxB);
  expect(result.failed).toEqual({});
  expect(result.resealed).toBeGreaterThanOrEqual(8);
  const retiredK1 = createSecretBox([{ ...k1, state: 'retired' }, { ...k2, state: 'sealing' }]);
  const report = await checkSealedValues(b.db.knex, retiredK1);
  expect(Object.keys(report.counts)).toEqual(['k2']);
  expect(report.unopenable).toEqual([]);

  // A node with a wrong key under the right id, and one without k2 at all: neither starts.
  const wrong = createApp(nodeConfig('node-c', [{ id: 'k2', key: randomBytes(32).toString('base64') }]));
  await expect(wrong).rejects.toBeInstanceOf(UnopenableSecretsError);
  await expect(wrong).rejects.toThrow(/sealed with key k2 \(\d+ values\), which this node cannot open/);
  await expect(createApp(nodeConfig('node-d', [k1]))).rejects.toThrow(/key k2/);
}, 120_000);
