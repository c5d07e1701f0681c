/**
 * Payout requests submitted to the payout provider over real HTTP: the service's own adapter
 * (src/modules/payouts/provider.ts) talks to a local fake of the provider's API (token, payout
 * creation with idempotency by request id and sender batch id, webhook verification) started
 * here on 127.0.0.1; the submit job runs on the real job system, and the provider's events come
 * back through the signed payout-provider receiver. Nothing of ours is mocked.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decimalAmount } from '../../src/modules/payouts/provider';
import { gql, services, startTestApp, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

type Json = Record<string, any>;

const adminEmail = `ops-${randomUUID()}@example.test`;
const CONNECT_SECRET = 'whsec_connect_payout_submission';
const CLIENT_ID = 'client-payouts';
const CLIENT_SECRET = 'client-secret-payouts';
const payments: Json = { connect_secret: CONNECT_SECRET, payout_webhook_id: 'WH-9', payout_cert_domain: 'payout.test' };

// ---------------------------------------------------------------- the fake payout provider

/**
 * The provider's API as the adapter uses it. The receiver's local part scripts the answer:
 * `flaky` 503 once (nothing created), `lost` creates the batch but answers 503 once (the answer
 * is lost), `refuse` 422 RECEIVER_UNREGISTERED, `down` 503 always; anything else 201. A request id
 * seen before answers the first answer again; a sender batch id seen before under another request
 * id is refused as the real provider refuses it. `batches` is what would really be paid.
 */
const fake = {
  batches: new Map<string, Json>(),
  byRequestId: new Map<string, { status: number; body: Json }>(),
  calls: [] as { requestId: string | undefined; receiver: string }[],
  failedOnce: new Set<string>(),
  tokens: 0,
  callsFor(payoutId: string) {
    return this.calls.filter((c) => c.requestId === payoutId).length;
  },
};
const TOKEN = `tok-${randomUUID()}`;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((done) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => done(body));
  });
}

function createPayout(body: Json): { status: number; body: Json } {
  const batchId = body.sender_batch_header?.sender_batch_id as string;
  if (fake.batches.has(batchId)) return { status: 400, body: { name: 'SENDER_BATCH_ID_ALREADY_USED', message: 'Batch with given sender_batch_id already exists' } };
  const batch = { batch_header: { payout_batch_id: `PB-${randomUUID().slice(0, 8)}`, batch_status: 'PENDING', sender_batch_header: body.sender_batch_header }, items: body.items };
  fake.batches.set(batchId, batch);
  return { status: 201, body: { batch_header: batch.batch_header } };
}

let providerServer: Server;
beforeAll(async () => {
  providerServer = createServer(async (req, res) => {
    const raw = await readBody(req);
    const send = (status: number, body: Json) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url === '/v1/notifications/verify-webhook-signature') {
      const parsed = JSON.parse(raw) as Json;
      return send(200, { verification_status: parsed.transmission_sig === 'good-sig' && parsed.webhook_id === 'WH-9' ? 'SUCCESS' : 'FAILURE' });
    }
    if (req.url === '/v1/oauth2/token') {
      const ok = req.headers.authorization === `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}` && raw === 'grant_type=client_credentials';
      if (!ok) return send(401, { error: 'invalid_client' });
      fake.tokens += 1;
      return send(200, { access_token: TOKEN, token_type: 'Bearer', expires_in: 3600 });
    }
    if (req.url === '/v1/payments/payouts' && req.method === 'POST') {
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { name: 'AUTHENTICATION_FAILURE', message: 'Authentication failed' });
      const body = JSON.parse(raw) as Json;
      const requestId = req.headers['payout-provider-request-id'] as string | undefined;
      const item = body.items?.[0] as Json;
      const kind = String(item?.receiver ?? '').split('@')[0]!;
      fake.calls.push({ requestId, receiver: item?.receiver });
      const known = requestId ? fake.byRequestId.get(requestId) : undefined;
      if (known) return send(known.status, known.body);
      if (kind === 'down') return send(503, { name: 'SERVICE_UNAVAILABLE', message: 'Try later' });
      if (kind === 'flaky' && !fake.failedOnce.has(requestId!)) {
        fake.failedOnce.add(requestId!);
        return send(503, { name: 'SERVICE_UNAVAILABLE', message: 'Try later' });
      }
      if (kind === 'refuse') return send(422, { name: 'RECEIVER_UNREGISTERED', message: 'Receiver is unregistered' });
      const answer = createPayout(body);
      if (requestId && answer.status === 201) fake.byRequestId.set(requestId, answer);
      if (kind === 'lost' && !fake.failedOnce.has(requestId!)) {
        fake.failedOnce.add(requestId!);
        return send(503, { name: 'SERVICE_UNAVAILABLE', message: 'Gateway lost the answer' });
      }
      return send(answer.status, answer.body);
    }
    send(404, { name: 'NOT_FOUND' });
  });
  await new Promise<void>((done) => providerServer.listen(0, '127.0.0.1', done));
  payments.payout_api_url = `http://127.0.0.1:${(providerServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => providerServer.close(done));
});

const submissionConfig = {
  auth: { bootstrap_admins: [adminEmail] },
  payments,
  payouts: { enabled: true, client_id: CLIENT_ID, client_secret: CLIENT_SECRET, request_timeout_ms: 5000, batch_size: 2, retry: { max_attempts: 3, base_delay_ms: 10, max_delay_ms: 40, sweep_seconds: 1, lease_ms: 5000 } },
};
const t = useTestApp(submissionConfig);

// ---------------------------------------------------------------- helpers

const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

async function post(receiver: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: Json | null }> {
  const res = await fetch(`${t.url}/v1/webhooks/${receiver}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : null };
}

function connect(event: Json) {
  const body = JSON.stringify(event);
  const ts = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', CONNECT_SECRET).update(`${ts}.${body}`).digest('hex');
  return post('payment-connect', body, { 'payment-provider-signature': `t=${ts},v1=${sig}` });
}

/** A payout-provider delivery the fake provider verifies (`sig` other than good-sig: forged). */
function payoutHook(event: Json, sig = 'good-sig') {
  return post('payout-provider', JSON.stringify(event), {
    'payout-provider-transmission-id': randomUUID(),
    'payout-provider-transmission-time': new Date().toISOString(),
    'payout-provider-transmission-sig': sig,
    'payout-provider-cert-url': 'https://api.payout.test/v1/notifications/certs/CERT-1',
    'payout-provider-auth-algo': 'SHA256withRSA',
  });
}

let admin: LoggedIn;
let buyer: LoggedIn;
let dev: LoggedIn;

async function developer(): Promise<LoggedIn> {
  const user = await devLogin(t);
  const applied = await api(t, 'POST', '/developer/application', {
    token: user.accessToken,
    body: { application_type: 'solo', display_name: 'Payee', slug: slug('dev'), description: 'Builds', motivation: 'Fun', what_to_build: 'Bots' },
  });
  expect(applied.status).toBe(201);
  expect((await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: admin.accessToken, body: {} })).status).toBe(200);
  return user;
}

async function earn(user: LoggedIn, amount: number, currency: string): Promise<void> {
  const ext = await api(t, 'POST', '/developer/extensions', { token: user.accessToken, body: { name: 'Paid', slug: slug('paid'), pricing_type: 'one_time', pricing_amount: amount, pricing_currency: currency.toUpperCase() } });
  expect(ext.status).toBe(201);
  const res = await connect({
    id: `evt_${randomUUID()}`,
    type: 'checkout.session.completed',
    data: { object: { id: `cs_${randomUUID()}`, payment_intent: `pi_${randomUUID()}`, amount_total: amount, currency, metadata: { extension_id: (ext.body.data as Json).id, account_id: buyer.accountId, user_id: buyer.userId } } },
  });
  expect(res.status).toBe(200);
}

/** A payout of `amount` cents to `<kind>@payee.test` (the fake provider's script). */
async function requestTo(kind: string, amount: number): Promise<Json> {
  expect((await api(t, 'PUT', '/developer/payout-settings', { token: dev.accessToken, body: { payout_email: `${kind}@payee.test` } })).status).toBe(200);
  const created = await api(t, 'POST', '/developer/payouts', { token: dev.accessToken, body: { currency: 'USD', amount_cents: amount } });
  expect(created.status).toBe(201);
  expect(created.body.data).toMatchObject({ status: 'pending', payout_email: `${kind}@payee.test`, provider_batch_id: null });
  return created.body.data as Json;
}

const payoutOf = async (id: string): Promise<Json> => {
  const res = await api(t, 'GET', `/developer/payouts/${id}`, { token: dev.accessToken });
  expect(res.status).toBe(200);
  return res.body.data as Json;
};

/** Runs submission passes (besides the job's own) until the payout leaves `pending`. */
async function untilSettled(id: string, timeoutMs = 10_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await t.app.modules.payouts.submitDue();
    const payout = await payoutOf(id);
    if (payout.status !== 'pending' || Date.now() > deadline) return payout;
    await new Promise((done) => setTimeout(done, 30));
  }
}

const usd = async () => {
  const res = await api(t, 'GET', '/developer/revenue', { token: dev.accessToken });
  return (res.body.data as Json[]).find((b) => b.currency === 'USD');
};

const PAYOUT_FIELDS = 'id status amountCents currency payoutEmail providerBatchId providerItemId failureReason paidAt';

beforeAll(async () => {
  admin = await devLogin(t, adminEmail);
  buyer = await devLogin(t);
  dev = await developer();
  await earn(dev, 100_000, 'usd');
});

// ---------------------------------------------------------------- submission

describe('submitting payout requests to the provider', () => {
  test('a request reaches the provider exactly once, even when the job runs twice at once, and the provider\'s event settles it', async () => {
    const payout = await requestTo('ok', 1234);
    await Promise.all([t.app.modules.payouts.submitDue(), t.app.modules.payouts.submitDue()]);
    const submitted = await untilSettled(payout.id);
    const batch = fake.batches.get(payout.id)!;
    expect(batch).toBeDefined();
    expect(batch.items).toEqual([{ recipient_type: 'EMAIL', amount: { value: '12.34', currency: 'USD' }, receiver: 'ok@payee.test', sender_item_id: payout.id }]);
    expect(submitted).toMatchObject({ status: 'processing', provider_batch_id: batch.batch_header.payout_batch_id, failure_reason: null });
    // More passes change nothing: it is no longer pending.
    await t.app.modules.payouts.submitDue();
    await t.app.modules.payouts.submitDue();
    expect(fake.callsFor(payout.id)).toBe(1);
    expect((await usd())).toMatchObject({ pending_cents: 1234 });

    // The provider's item event names its own batch and item only: matched by the stored reference.
    const batchId = batch.batch_header.payout_batch_id as string;
    const forged = { id: `WH-${randomUUID()}`, event_type: 'PAYMENT.PAYOUTS-ITEM.SUCCEEDED', resource: { payout_batch_id: batchId, payout_item_id: `PI-${randomUUID().slice(0, 8)}`, transaction_status: 'SUCCESS' } };
    expect((await payoutHook(forged, 'forged')).status).toBe(401);
    expect(await payoutOf(payout.id)).toMatchObject({ status: 'processing' });
    const event = { ...forged, id: `WH-${randomUUID()}` };
    expect(await payoutHook(event)).toEqual({ status: 200, body: { received: true } });
    expect(await payoutOf(payout.id)).toMatchObject({ status: 'paid', provider_item_id: event.resource.payout_item_id, paid_at: expect.any(String) });
    expect(await t.app.modules.payouts.events(payout.id)).toEqual([
      { event_id: `submitted:${payout.id}`, event_type: 'PAYOUT.SUBMITTED', from_status: 'pending', to_status: 'processing' },
      { event_id: event.id, event_type: 'PAYMENT.PAYOUTS-ITEM.SUCCEEDED', from_status: 'processing', to_status: 'paid' },
    ]);
    const notices = (await api(t, 'GET', '/notifications', { token: dev.accessToken })).body.data as Json[];
    expect(notices.filter((n) => n.type === 'payout' && n.data.payoutId === payout.id).map((n) => n.data.status).sort()).toEqual(['paid', 'processing']);
    expect(fake.tokens).toBe(1);
  });

  test('a 503 from the provider is retried with the same idempotency key and pays once', async () => {
    const payout = await requestTo('flaky', 200);
    const submitted = await untilSettled(payout.id);
    expect(submitted).toMatchObject({ status: 'processing', provider_batch_id: fake.batches.get(payout.id)!.batch_header.payout_batch_id });
    expect(fake.callsFor(payout.id)).toBe(2);
    expect([...fake.batches.keys()].filter((k) => k === payout.id)).toHaveLength(1);
  });

  test('an accepted try whose answer was lost is repeated without paying twice', async () => {
    const payout = await requestTo('lost', 300);
    const submitted = await untilSettled(payout.id);
    expect(fake.callsFor(payout.id)).toBe(2);
    expect(submitted).toMatchObject({ status: 'processing', provider_batch_id: fake.batches.get(payout.id)!.batch_header.payout_batch_id });
    // The provider's batch event afterwards changes nothing but is acknowledged.
    const event = { id: `WH-${randomUUID()}`, event_type: 'PAYMENT.PAYOUTSBATCH.SUCCESS', resource: { batch_header: { payout_batch_id: submitted.provider_batch_id, batch_status: 'SUCCESS', sender_batch_header: { sender_batch_id: payout.id } } } };
    expect((await payoutHook(event)).status).toBe(200);
    expect(await payoutOf(payout.id)).toMatchObject({ status: 'processing' });
    // Its failure event (matched by our id, named back as the sender item id) fails it with the provider's reason.
    const failed = { id: `WH-${randomUUID()}`, event_type: 'PAYMENT.PAYOUTS-ITEM.FAILED', resource: { payout_item_id: `PI-${randomUUID().slice(0, 8)}`, transaction_status: 'FAILED', payout_item: { sender_item_id: payout.id }, errors: { name: 'RECEIVER_ACCOUNT_LOCKED', message: 'Receiver account locked' } } };
    expect((await payoutHook(failed)).status).toBe(200);
    expect(await payoutOf(payout.id)).toMatchObject({ status: 'failed', failure_reason: 'RECEIVER_ACCOUNT_LOCKED' });
  });

  test('a provider refusal fails the payout with its reason and gives the amount back', async () => {
    const before = await usd();
    const payout = await requestTo('refuse', 500);
    const failed = await untilSettled(payout.id);
    expect(failed).toMatchObject({ status: 'failed', failure_reason: 'RECEIVER_UNREGISTERED: Receiver is unregistered', provider_batch_id: null });
    expect(fake.callsFor(payout.id)).toBe(1);
    expect(fake.batches.has(payout.id)).toBe(false);
    expect(await usd()).toEqual(before);
    const notices = (await api(t, 'GET', '/notifications', { token: dev.accessToken })).body.data as Json[];
    expect(notices.find((n) => n.type === 'payout' && n.data.payoutId === payout.id)?.data).toMatchObject({ status: 'failed', failureReason: 'RECEIVER_UNREGISTERED: Receiver is unregistered' });
  });

  test('a provider that stays unavailable is tried a bounded number of times, then the payout fails with the last error', async () => {
    const payout = await requestTo('down', 400);
    const failed = await untilSettled(payout.id);
    expect(failed.status).toBe('failed');
    expect(failed.failure_reason).toBe('The payout provider could not be reached after 3 attempts (last: SERVICE_UNAVAILABLE: Try later)');
    expect(fake.callsFor(payout.id)).toBe(3);
    await t.app.modules.payouts.submitDue();
    expect(fake.callsFor(payout.id)).toBe(3);
  });

  test(`a burst of requests, ${services.postgres ? 'two nodes on one database' : 'racing passes of one node'}: each payout reaches the provider once`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await requestTo('ok', 10 + i)).id as string);
    let second: TestApp | null = null;
    try {
      if (services.postgres) second = await startTestApp({ ...submissionConfig, database_url: t.app.config.database_url, redis_prefix: t.app.config.redis_prefix, jobs: { node_id: 'payouts-node-b' } });
      const passes = [t.app, t.app, second?.app ?? t.app].flatMap((node) => [node.modules.payouts.submitDue(), node.modules.payouts.submitDue()]);
      await Promise.all(passes);
      for (const id of ids) expect(await untilSettled(id)).toMatchObject({ status: 'processing', provider_batch_id: fake.batches.get(id)!.batch_header.payout_batch_id });
      expect(ids.map((id) => fake.callsFor(id))).toEqual(ids.map(() => 1));
    } finally {
      await second?.stop();
    }
  });

  test('REST and GraphQL read the same states', async () => {
    const list = await api(t, 'GET', '/developer/payouts', { token: dev.accessToken, query: { limit: '50' } });
    expect(list.status).toBe(200);
    const rest = list.body.data as Json[];
    expect(new Set(rest.map((p) => p.status))).toEqual(new Set(['paid', 'processing', 'failed']));
    const res = await gql(t.url, `query { developerPayouts(limit: 50) { items { ${PAYOUT_FIELDS} } total } }`, {}, { authorization: `Bearer ${dev.accessToken}` });
    expect(res.body.errors).toBeUndefined();
    const page = (res.body.data as Json).developerPayouts as Json;
    expect(page.total).toBe(rest.length);
    expect(page.items.map((p: Json) => [p.id, p.status, p.providerBatchId, p.failureReason])).toEqual(rest.map((p) => [p.id, p.status, p.provider_batch_id, p.failure_reason]));
    // A status filter: the same page on both; a status that is none of the states, the same 400 on both.
    const failedRest = (await api(t, 'GET', '/developer/payouts', { token: dev.accessToken, query: { status: 'failed' } })).body.data as Json[];
    const failedGql = await gql(t.url, 'query { developerPayouts(status: "failed") { items { id } total } }', {}, { authorization: `Bearer ${dev.accessToken}` });
    expect(((failedGql.body.data as Json).developerPayouts.items as Json[]).map((p) => p.id)).toEqual(failedRest.map((p) => p.id));
    const badRest = await api(t, 'GET', '/developer/payouts', { token: dev.accessToken, query: { status: 'settled' } });
    const badGql = await gql(t.url, 'query { developerPayouts(status: "settled") { total } }', {}, { authorization: `Bearer ${dev.accessToken}` });
    expect(badRest.status).toBe(400);
    expect({ error: badGql.body.errors?.[0]?.extensions?.code, message: badGql.body.errors?.[0]?.message }).toEqual({ error: badRest.body.error, message: badRest.body.message });
    const refused = rest.find((p) => p.payout_email === 'refuse@payee.test')!;
    const one = await gql(t.url, `query ($id: UUID!) { developerPayout(id: $id) { ${PAYOUT_FIELDS} } }`, { id: refused.id }, { authorization: `Bearer ${dev.accessToken}` });
    expect((one.body.data as Json).developerPayout).toMatchObject({ id: refused.id, status: 'failed', failureReason: 'RECEIVER_UNREGISTERED: Receiver is unregistered' });
  });
});

describe('amounts as the provider reads them', () => {
  test('minor units become the currency\'s decimal string', () => {
    expect(decimalAmount(1234, 'USD')).toBe('12.34');
    expect(decimalAmount(5, 'EUR')).toBe('0.05');
    expect(decimalAmount(1234, 'JPY')).toBe('1234');
    expect(decimalAmount(9_007_199_254_740_991, 'USD')).toBe('90071992547409.91');
  });
});
