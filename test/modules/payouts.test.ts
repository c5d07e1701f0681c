/**
 * Developer payouts over real HTTP: revenue from extension purchases the
 * payment-connect webhook records, payout settings, payout requests, and the payout-provider and
 * payment-connect webhooks moving payouts, connected accounts and extension subscriptions. The
 * payout provider's verification API is a local fake HTTP server; deliveries are signed here as
 * the providers sign them; nothing of ours is mocked.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

type Json = Record<string, any>;

const adminEmail = `ops-${randomUUID()}@example.test`;
const CONNECT_SECRET = 'whsec_connect_payouts';
const payments: Json = { connect_secret: CONNECT_SECRET, payout_webhook_id: 'WH-7', payout_cert_domain: 'payout.test' };

// ---------------------------------------------------------------- the fake payout provider

let payoutServer: Server;
beforeAll(async () => {
  payoutServer = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const parsed = JSON.parse(body) as Json;
      const ok = req.url === '/v1/notifications/verify-webhook-signature' && parsed.transmission_sig === 'good-sig' && parsed.webhook_id === 'WH-7';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ verification_status: ok ? 'SUCCESS' : 'FAILURE' }));
    });
  });
  await new Promise<void>((done) => payoutServer.listen(0, '127.0.0.1', done));
  payments.payout_api_url = `http://127.0.0.1:${(payoutServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => payoutServer.close(done));
});

const t = useTestApp({ auth: { bootstrap_admins: [adminEmail] }, payments });

// ---------------------------------------------------------------- helpers

const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

async function post(receiver: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: Json | null }> {
  const res = await fetch(`${t.url}/v1/webhooks/${receiver}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : null };
}

/** A payment-connect delivery signed with the connect secret (`t=,v1=` over `<t>.<body>`). */
function connect(event: Json) {
  const body = JSON.stringify(event);
  const ts = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', CONNECT_SECRET).update(`${ts}.${body}`).digest('hex');
  return post('payment-connect', body, { 'payment-provider-signature': `t=${ts},v1=${sig}` });
}

/** A payout-provider delivery the fake provider verifies. */
function payoutHook(event: Json, sig = 'good-sig') {
  return post('payout-provider', JSON.stringify(event), {
    'payout-provider-transmission-id': randomUUID(),
    'payout-provider-transmission-time': new Date().toISOString(),
    'payout-provider-transmission-sig': sig,
    'payout-provider-cert-url': 'https://api.payout.test/v1/notifications/certs/CERT-1',
    'payout-provider-auth-algo': 'SHA256withRSA',
  });
}

const itemEvent = (type: string, payout: Json, extra: Json = {}) => ({
  id: `WH-${randomUUID()}`,
  event_type: `PAYMENT.PAYOUTS-ITEM.${type}`,
  resource: { payout_item_id: `ITEM-${payout.id}`, payout_batch_id: `BATCH-${payout.id}`, transaction_status: type, payout_item: { sender_item_id: payout.id, receiver: payout.payout_email }, ...extra },
});
const batchEvent = (payout: Json) => ({
  id: `WH-${randomUUID()}`,
  event_type: 'PAYMENT.PAYOUTSBATCH.SUCCESS',
  resource: { batch_header: { payout_batch_id: `BATCH-${payout.id}`, batch_status: 'SUCCESS', sender_batch_header: { sender_batch_id: payout.id } } },
});

let admin: LoggedIn;

async function developer(): Promise<LoggedIn & { profileId: string }> {
  const user = await devLogin(t);
  const applied = await api(t, 'POST', '/developer/application', {
    token: user.accessToken,
    body: { application_type: 'solo', display_name: 'Payee', slug: slug('dev'), description: 'Builds', motivation: 'Fun', what_to_build: 'Bots' },
  });
  expect(applied.status).toBe(201);
  expect((await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: admin.accessToken, body: {} })).status).toBe(200);
  const ext = await api(t, 'POST', '/developer/extensions', { token: user.accessToken, body: { name: 'Probe', slug: slug('probe') } });
  expect(ext.status).toBe(201);
  return { ...user, profileId: (ext.body.data as Json).developer_id as string };
}

async function extensionOf(user: LoggedIn, teamId?: string): Promise<string> {
  const res = await api(t, 'POST', '/developer/extensions', { token: user.accessToken, body: { name: 'Paid', slug: slug('paid'), pricing_type: 'one_time', pricing_amount: 500, pricing_currency: 'USD', ...(teamId ? { team_id: teamId } : {}) } });
  expect(res.status).toBe(201);
  return (res.body.data as Json).id as string;
}

/** A completed purchase through the payment-connect webhook; answers its payment intent. */
async function purchase(extensionId: string, amount: number, currency: string, buyer: LoggedIn): Promise<string> {
  const intent = `pi_${randomUUID()}`;
  const res = await connect({ id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { id: `cs_${randomUUID()}`, payment_intent: intent, amount_total: amount, currency, metadata: { extension_id: extensionId, account_id: buyer.accountId, user_id: buyer.userId } } } });
  expect(res.status).toBe(200);
  return intent;
}

const revenue = async (user: LoggedIn, query: Record<string, string> = {}) => {
  const res = await api(t, 'GET', '/developer/revenue', { token: user.accessToken, query });
  expect(res.status).toBe(200);
  return res.body.data as Json[];
};
const setEmail = (user: LoggedIn, body: Json) => api(t, 'PUT', '/developer/payout-settings', { token: user.accessToken, body });
const requestPayout = (user: LoggedIn, body: Json) => api(t, 'POST', '/developer/payouts', { token: user.accessToken, body });
const payoutOf = async (user: LoggedIn, id: string) => {
  const res = await api(t, 'GET', `/developer/payouts/${id}`, { token: user.accessToken });
  expect(res.status).toBe(200);
  return res.body.data as Json;
};
const payoutNotices = async (user: LoggedIn) => {
  const res = await api(t, 'GET', '/notifications', { token: user.accessToken });
  expect(res.status).toBe(200);
  return (res.body.data as Json[]).filter((n) => n.type === 'payout');
};
const receipt = async (provider: string, eventId: string) => (await t.app.modules.webhooks.receipts(provider)).filter((r) => r.external_id === eventId);
const invalid = (message: string) => expect.objectContaining({ error: 'VALIDATION_ERROR', message });

let buyer: LoggedIn;
beforeAll(async () => {
  admin = await devLogin(t, adminEmail);
  buyer = await devLogin(t);
});

// ---------------------------------------------------------------- revenue and requests

describe('revenue and payout requests', () => {
  let dev: LoggedIn & { profileId: string };
  beforeAll(async () => {
    dev = await developer();
    const ext = await extensionOf(dev);
    await purchase(ext, 500, 'usd', buyer);
    const refunded = await purchase(ext, 300, 'usd', buyer);
    await purchase(ext, 200, 'eur', buyer);
    expect((await connect({ id: `evt_${randomUUID()}`, type: 'charge.refunded', data: { object: { id: `ch_${randomUUID()}`, payment_intent: refunded } } })).status).toBe(200);
  });

  test('revenue counts completed, unrefunded purchases per currency', async () => {
    expect(await revenue(dev)).toEqual([
      { currency: 'EUR', earned_cents: 200, paid_cents: 0, pending_cents: 0, available_cents: 200 },
      { currency: 'USD', earned_cents: 500, paid_cents: 0, pending_cents: 0, available_cents: 500 },
    ]);
  });

  test('a payout needs a payout e-mail; bad input is 400 and writes nothing', async () => {
    expect((await requestPayout(dev, { currency: 'USD' })).body).toEqual(invalid('Set a payout email before requesting a payout'));
    expect((await setEmail(dev, { payout_email: 'not-an-email' })).status).toBe(400);
    const settings = await setEmail(dev, { payout_email: 'dev@payee.test' });
    expect(settings.status).toBe(200);
    expect(settings.body.data).toEqual({
      developer_id: dev.profileId,
      team_id: null,
      payout_email: 'dev@payee.test',
      connect_account_id: null,
      connect_charges_enabled: false,
      connect_payouts_enabled: false,
      connect_details_submitted: false,
      connect_updated_at: null,
      updated_at: expect.any(String),
    });
    expect((await requestPayout(dev, { currency: 'USD', amount_cents: 501 })).body).toEqual(invalid('Amount exceeds the available revenue'));
    expect((await requestPayout(dev, { currency: 'GBP' })).body).toEqual(invalid('No available revenue in GBP'));
    expect((await requestPayout(dev, { currency: 'USD', amount_cents: 0 })).status).toBe(400);
    expect((await requestPayout(dev, { currency: 'US' })).status).toBe(400);
    expect((await api(t, 'GET', '/developer/payouts', { token: dev.accessToken })).body._meta).toMatchObject({ total: 0 });
  });

  test('pending → processing → paid by the provider; the requester is notified; a redelivery changes nothing', async () => {
    const created = await requestPayout(dev, { currency: 'usd', amount_cents: 200 });
    expect(created.status).toBe(201);
    const payout = created.body.data as Json;
    expect(payout).toMatchObject({ developer_id: dev.profileId, team_id: null, requested_by: dev.userId, amount_cents: 200, currency: 'USD', status: 'pending', payout_email: 'dev@payee.test', paid_at: null });
    expect((created.body._links as Json).self).toBe(`/v1/developer/payouts/${payout.id}`);
    expect((await revenue(dev)).find((b) => b.currency === 'USD')).toEqual({ currency: 'USD', earned_cents: 500, paid_cents: 0, pending_cents: 200, available_cents: 300 });

    const batch = batchEvent(payout);
    expect(await payoutHook(batch)).toEqual({ status: 200, body: { received: true } });
    expect(await payoutOf(dev, payout.id)).toMatchObject({ status: 'processing', provider_batch_id: `BATCH-${payout.id}` });

    const paid = itemEvent('SUCCEEDED', payout);
    expect((await payoutHook(paid)).status).toBe(200);
    expect(await payoutOf(dev, payout.id)).toMatchObject({ status: 'paid', provider_item_id: `ITEM-${payout.id}`, paid_at: expect.any(String) });
    const notices = await payoutNotices(dev);
    expect(notices.map((n) => n.data.status).sort()).toEqual(['paid', 'processing']);
    expect(notices.find((n) => n.data.status === 'paid')!.data).toMatchObject({ payoutId: payout.id, amountCents: 200, currency: 'USD' });

    // The same event again, and the same news under a new event id: 200, no change, nobody told twice.
    expect((await payoutHook(paid)).status).toBe(200);
    expect((await payoutHook({ ...paid, id: `WH-${randomUUID()}` })).status).toBe(200);
    expect((await payoutHook(itemEvent('FAILED', payout))).status).toBe(200);
    expect(await payoutOf(dev, payout.id)).toMatchObject({ status: 'paid' });
    expect(await payoutNotices(dev)).toHaveLength(2);
    expect(await t.app.modules.payouts.events(payout.id)).toEqual([
      { event_id: batch.id, event_type: 'PAYMENT.PAYOUTSBATCH.SUCCESS', from_status: 'pending', to_status: 'processing' },
      { event_id: paid.id, event_type: 'PAYMENT.PAYOUTS-ITEM.SUCCEEDED', from_status: 'processing', to_status: 'paid' },
    ]);
    expect(await receipt('payout-provider', paid.id)).toEqual([expect.objectContaining({ outcome: 'payout_paid' })]);
    expect((await revenue(dev)).find((b) => b.currency === 'USD')).toEqual({ currency: 'USD', earned_cents: 500, paid_cents: 200, pending_cents: 0, available_cents: 300 });
  });

  test('failed and unclaimed payouts give their amount back; the list shows them newest first', async () => {
    const first = (await requestPayout(dev, { currency: 'USD' })).body.data as Json;
    expect(first).toMatchObject({ amount_cents: 300, status: 'pending' });
    expect((await requestPayout(dev, { currency: 'USD' })).body).toEqual(invalid('No available revenue in USD'));
    // An item event without a batch event first: found by the provider's item through its sender id.
    expect((await payoutHook(itemEvent('FAILED', first, { errors: { name: 'RECEIVER_UNREGISTERED', message: 'Receiver is unregistered' } }))).status).toBe(200);
    expect(await payoutOf(dev, first.id)).toMatchObject({ status: 'failed', failure_reason: 'RECEIVER_UNREGISTERED' });
    expect((await revenue(dev)).find((b) => b.currency === 'USD')).toMatchObject({ paid_cents: 200, pending_cents: 0, available_cents: 300 });

    const second = (await requestPayout(dev, { currency: 'EUR' })).body.data as Json;
    expect((await payoutHook(itemEvent('UNCLAIMED', second))).status).toBe(200);
    expect(await payoutOf(dev, second.id)).toMatchObject({ status: 'canceled', failure_reason: 'UNCLAIMED' });
    expect((await payoutNotices(dev)).map((n) => n.data.status)).toEqual(expect.arrayContaining(['failed', 'canceled']));

    const list = await api(t, 'GET', '/developer/payouts', { token: dev.accessToken });
    expect(list.status).toBe(200);
    expect((list.body.data as Json[]).map((p) => p.id).slice(0, 2)).toEqual([second.id, first.id]);
    const failedOnly = await api(t, 'GET', '/developer/payouts', { token: dev.accessToken, query: { status: 'failed' } });
    expect((failedOnly.body.data as Json[]).map((p) => p.id)).toEqual([first.id]);
  });

  test('an unknown payout id is acknowledged and changes nothing', async () => {
    const ghost = { id: randomUUID(), payout_email: 'x@y.test' };
    const event = itemEvent('SUCCEEDED', ghost);
    expect(await payoutHook(event)).toEqual({ status: 200, body: { received: true } });
    expect(await receipt('payout-provider', event.id)).toEqual([expect.objectContaining({ outcome: 'payout_not_found' })]);
    const batch = batchEvent(ghost);
    expect((await payoutHook(batch)).status).toBe(200);
    expect(await receipt('payout-provider', batch.id)).toEqual([expect.objectContaining({ outcome: 'payout_not_found' })]);
    // A forged delivery is refused before anything moves.
    expect((await payoutHook(itemEvent('SUCCEEDED', ghost), 'forged')).status).toBe(401);
  });

  test('two requests at once cannot both take the same revenue', async () => {
    const solo = await developer();
    const ext = await extensionOf(solo);
    await purchase(ext, 700, 'usd', buyer);
    expect((await setEmail(solo, { payout_email: 'solo@payee.test' })).status).toBe(200);
    const results = await Promise.all([requestPayout(solo, { currency: 'USD' }), requestPayout(solo, { currency: 'USD' })]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 400]);
    expect((await revenue(solo))[0]).toMatchObject({ pending_cents: 700, available_cents: 0 });
  });

  test('another developer, a non-developer and a developer key cannot reach the payouts', async () => {
    const payout = (await api(t, 'GET', '/developer/payouts', { token: dev.accessToken })).body.data[0] as Json;
    const stranger = await developer();
    expect(await api(t, 'GET', `/developer/payouts/${payout.id}`, { token: stranger.accessToken })).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'Payout not found' } });
    expect(await api(t, 'GET', '/developer/payouts', { token: stranger.accessToken })).toMatchObject({ status: 200, body: { data: [] } });

    const plain = await devLogin(t);
    for (const [method, path, body] of [['GET', '/developer/revenue'], ['GET', '/developer/payouts'], ['POST', '/developer/payouts', { currency: 'USD' }], ['PUT', '/developer/payout-settings', { payout_email: 'a@b.test' }]] as const) {
      expect(await api(t, method, path, { token: plain.accessToken, body })).toMatchObject({ status: 403, body: { error: 'FORBIDDEN', message: 'You must be an approved developer to manage payouts' } });
    }

    const made = await api(t, 'POST', '/developer/api-keys', { token: dev.accessToken, body: { label: 'ci', permissions: ['extension-dev:payouts', 'extension-dev:read'] } });
    expect(made.status).toBe(201);
    const key = (made.body.data as Json).key as string;
    // The key does reach the publishing surface, and is refused on every first-party payout route.
    expect((await api(t, 'GET', '/developer/extensions', { token: key })).status).toBe(200);
    for (const [method, path, body] of [
      ['GET', '/developer/revenue'],
      ['GET', '/developer/payouts'],
      ['GET', `/developer/payouts/${payout.id}`],
      ['POST', '/developer/payouts', { currency: 'USD' }],
      ['GET', '/developer/payout-settings'],
      ['PUT', '/developer/payout-settings', { payout_email: 'k@b.test' }],
    ] as const) {
      const res = await api(t, method, path, { token: key, body });
      expect(res).toMatchObject({ status: 403, body: { error: 'FORBIDDEN' } });
    }
    expect(await api(t, 'GET', '/developer/revenue')).toMatchObject({ status: 401, body: { error: 'UNAUTHORIZED' } });
  });
});

// ---------------------------------------------------------------- teams

describe('team payouts', () => {
  test('a team payee: owner requests, a member without team-payouts is 403, a non-member 404', async () => {
    const owner = await developer();
    const team = await api(t, 'POST', '/developer/teams', { token: owner.accessToken, body: { name: 'Payout team', slug: slug('team') } });
    expect(team.status).toBe(201);
    const teamId = (team.body.data as Json).id as string;
    const ext = await extensionOf(owner, teamId);
    await purchase(ext, 900, 'usd', buyer);
    expect(await revenue(owner)).toEqual(expect.not.arrayContaining([expect.objectContaining({ earned_cents: 900 })]));
    expect(await revenue(owner, { team_id: teamId })).toEqual([{ currency: 'USD', earned_cents: 900, paid_cents: 0, pending_cents: 0, available_cents: 900 }]);
    expect((await setEmail(owner, { team_id: teamId, payout_email: 'team@payee.test' })).body.data).toMatchObject({ team_id: teamId, developer_id: null, payout_email: 'team@payee.test' });
    const created = await requestPayout(owner, { team_id: teamId, currency: 'USD', amount_cents: 400 });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ team_id: teamId, developer_id: null, amount_cents: 400 });

    // A team-member role holds no team-payouts permission.
    const member = await devLogin(t);
    const roles = (await api(t, 'GET', `/developer/teams/${teamId}/roles`, { token: owner.accessToken })).body.data as Json[];
    const invite = await api(t, 'POST', `/developer/teams/${teamId}/invites`, { token: owner.accessToken, body: { role_id: roles.find((r) => r.name === 'team-member')!.id } });
    expect(invite.status).toBe(201);
    expect((await api(t, 'POST', `/developer/team-invites/${(invite.body.data as Json).code}/accept`, { token: member.accessToken })).status).toBe(200);
    expect(await api(t, 'GET', '/developer/revenue', { token: member.accessToken, query: { team_id: teamId } })).toMatchObject({ status: 403, body: { error: 'FORBIDDEN', message: 'Missing team permission: team-payouts:read' } });
    expect(await requestPayout(member, { team_id: teamId, currency: 'USD' })).toMatchObject({ status: 403, body: { message: 'Missing team permission: team-payouts:edit' } });
    expect(await api(t, 'GET', `/developer/payouts/${(created.body.data as Json).id}`, { token: member.accessToken })).toMatchObject({ status: 403 });

    const outsider = await developer();
    expect(await api(t, 'GET', '/developer/payouts', { token: outsider.accessToken, query: { team_id: teamId } })).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'Team not found' } });
    expect(await api(t, 'GET', `/developer/payouts/${(created.body.data as Json).id}`, { token: outsider.accessToken })).toMatchObject({ status: 404, body: { message: 'Payout not found' } });
  });
});

// ---------------------------------------------------------------- payment-connect state

describe('payment-connect events change what they describe', () => {
  test('account.updated links the connected account to the developer and keeps its state; a redelivery is a no-op', async () => {
    const dev = await developer();
    const acct = `acct_${randomUUID().slice(0, 12)}`;
    const first = { id: `evt_${randomUUID()}`, type: 'account.updated', data: { object: { id: acct, charges_enabled: true, payouts_enabled: false, details_submitted: true, metadata: { developer_id: dev.profileId } } } };
    expect(await connect(first)).toEqual({ status: 200, body: { received: true } });
    const settings = async () => (await api(t, 'GET', '/developer/payout-settings', { token: dev.accessToken })).body.data as Json;
    expect(await settings()).toMatchObject({ developer_id: dev.profileId, connect_account_id: acct, connect_charges_enabled: true, connect_payouts_enabled: false, connect_details_submitted: true, connect_updated_at: expect.any(String) });
    // Later events name the account only.
    const second = { id: `evt_${randomUUID()}`, type: 'account.updated', data: { object: { id: acct, charges_enabled: true, payouts_enabled: true, details_submitted: true } } };
    expect((await connect(second)).status).toBe(200);
    expect(await settings()).toMatchObject({ connect_payouts_enabled: true });
    // The first event again: already processed, so the account does not go back.
    expect((await connect(first)).status).toBe(200);
    expect(await settings()).toMatchObject({ connect_payouts_enabled: true });
    expect(await receipt('payment-connect', first.id)).toEqual([expect.objectContaining({ outcome: 'connect_account_updated' })]);
    // An account nobody claims: 200, nothing stored.
    const stray = { id: `evt_${randomUUID()}`, type: 'account.updated', data: { object: { id: `acct_${randomUUID()}`, metadata: { developer_id: randomUUID() } } } };
    expect((await connect(stray)).status).toBe(200);
    expect(await receipt('payment-connect', stray.id)).toEqual([expect.objectContaining({ outcome: 'no_developer' })]);
  });

  test('transfer.paid marks the payout it names paid (once); an unknown payout changes nothing', async () => {
    const dev = await developer();
    await purchase(await extensionOf(dev), 650, 'usd', buyer);
    expect((await setEmail(dev, { payout_email: 'transfer@payee.test' })).status).toBe(200);
    const payout = (await requestPayout(dev, { currency: 'USD' })).body.data as Json;
    const transfer = { id: `evt_${randomUUID()}`, type: 'transfer.paid', data: { object: { id: `tr_${randomUUID()}`, amount: 650, currency: 'usd', metadata: { payout_id: payout.id } } } };
    expect((await connect(transfer)).status).toBe(200);
    expect(await payoutOf(dev, payout.id)).toMatchObject({ status: 'paid' });
    expect((await connect(transfer)).status).toBe(200);
    expect(await payoutNotices(dev)).toHaveLength(1);
    const unknown = { id: `evt_${randomUUID()}`, type: 'transfer.paid', data: { object: { id: 'tr_x', metadata: { payout_id: randomUUID() } } } };
    expect((await connect(unknown)).status).toBe(200);
    expect(await receipt('payment-connect', unknown.id)).toEqual([expect.objectContaining({ outcome: 'payout_not_found' })]);
  });

  test('subscription created, invoice failed and succeeded, subscription deleted move the extension subscription', async () => {
    const dev = await developer();
    const ext = await extensionOf(dev);
    const sub = `sub_${randomUUID()}`;
    const status = () => t.app.modules.payouts.subscriptionStatus(ext, buyer.accountId!);
    const send = async (type: string, object: Json) => {
      const event = { id: `evt_${randomUUID()}`, type, data: { object } };
      expect((await connect(event)).status).toBe(200);
      return event;
    };
    const created = await send('customer.subscription.created', { id: sub, customer: 'cus_1', status: 'active', current_period_end: 1893456000, metadata: { extension_id: ext, account_id: buyer.accountId } });
    expect(await status()).toBe('active');
    expect(await receipt('payment-connect', created.id)).toEqual([expect.objectContaining({ outcome: 'subscription_recorded', account_id: buyer.accountId })]);
    await send('invoice.payment_failed', { id: 'in_1', subscription: sub });
    expect(await status()).toBe('past_due');
    await send('invoice.payment_succeeded', { id: 'in_2', subscription: sub });
    expect(await status()).toBe('active');
    await send('customer.subscription.deleted', { id: sub, customer: 'cus_1', status: 'canceled' });
    expect(await status()).toBe('canceled');
    // Redelivering the creation does not revive it; an invoice of an unknown subscription changes nothing.
    expect((await connect(created)).status).toBe(200);
    expect(await status()).toBe('canceled');
    const stray = await send('invoice.payment_succeeded', { id: 'in_3', subscription: `sub_${randomUUID()}` });
    expect(await receipt('payment-connect', stray.id)).toEqual([expect.objectContaining({ outcome: 'subscription_not_found' })]);
  });
});
