/**
 * Extensions end to end over real HTTP and WebSocket: version review by
 * operators holding `extension-review:*` with the developer notified; paid installs after a
 * purchase recorded by the payment-connect webhook, and a refund that disables the install and
 * revokes its token; subscription-priced installs that need an active subscription and are
 * disabled (token revoked) when it is canceled or past due; the install's `lm_ext_` token
 * (shown once, holding the granted permissions, revoked on uninstall); storage and log changes published on `ext-storage:`, `ext-logs:` and
 * `ext-install-logs:`; `grantExtensionAccess` / `createExtensionAccessInvite` on REST and GraphQL
 * with the first-party gate.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { gql, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const CONNECT_SECRET = 'whsec_ext_connect';
const runtimeKey = systemKey('extension-runtime', []);
const adminEmail = `ops-${randomUUID()}@example.test`;
const t = useTestApp({ auth: { system_keys: [runtimeKey.config], bootstrap_admins: [adminEmail] }, payments: { connect_secret: CONNECT_SECRET } });
const opened = closeSocketsAfterEach();

type Json = Record<string, any>;
const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
const MANIFEST = { handlers: ['run'], commands: [{ name: '!x', handler: 'run' }], permissions: ['events:read', 'chat:read'] };

let admin: LoggedIn;
let dev: LoggedIn;
let creator: LoggedIn;
let stranger: LoggedIn;

async function becomeDeveloper(user: LoggedIn): Promise<void> {
  const profileSlug = slug('studio');
  const applied = await api(t, 'POST', '/developer/application', {
    token: user.accessToken,
    body: { application_type: 'solo', display_name: `Dev ${profileSlug}`, slug: profileSlug, description: 'Builds things', motivation: 'Fun', what_to_build: 'Bots' },
  });
  expect(applied.status).toBe(201);
  expect((await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: admin.accessToken, body: {} })).status).toBe(200);
}

async function createExtension(body: Json = {}): Promise<Json> {
  const res = await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Flow', slug: slug('ext'), ...body } });
  expect(res.status).toBe(201);
  return res.body.data as Json;
}

/** A version created and uploaded (not submitted). */
async function uploadVersion(extensionId: string, version: string, manifest: Json = MANIFEST): Promise<string> {
  const created = await api(t, 'POST', `/developer/extensions/${extensionId}/versions`, { token: dev.accessToken, body: { version } });
  expect(created.status).toBe(201);
  const versionId = (created.body.data as Json).id as string;
  const uploaded = await api(t, 'PUT', `/developer/extensions/${extensionId}/versions/${versionId}/bundle`, { token: dev.accessToken, body: { manifest, handler_code: 'export function run() {}' } });
  expect(uploaded.status).toBe(200);
  return versionId;
}

async function publishApproved(extensionId: string, version = '1.0.0'): Promise<string> {
  const versionId = await uploadVersion(extensionId, version);
  expect((await api(t, 'POST', `/developer/extensions/${extensionId}/versions/${versionId}/publish`, { token: dev.accessToken })).body.data.status).toBe('pending_review');
  expect((await api(t, 'POST', `/admin/extension-reviews/${versionId}/approve`, { token: admin.accessToken, body: {} })).status).toBe(200);
  return versionId;
}

async function socket(token?: string): Promise<TestSocket> {
  const s = await connect(t.wsUrl, token ? { headers: { Authorization: `Bearer ${token}` } } : {});
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  return s;
}

async function subscribe(s: TestSocket, channel: string) {
  s.send({ type: 'subscribe', channel });
  return s.nextMatching((m) => m.type === 'subscribed' || m.type === 'error');
}

async function refusedUpgrade(token: string): Promise<number> {
  try {
    const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${token}` } });
    opened.push(s);
    return 101;
  } catch (error) {
    return (error as { status: number }).status;
  }
}

function connectWebhook(event: Json) {
  const body = JSON.stringify({ created: Math.floor(Date.now() / 1000), ...event });
  const ts = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', CONNECT_SECRET).update(`${ts}.${body}`).digest('hex');
  return fetch(`${t.url}/v1/webhooks/payment-connect`, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-provider-signature': `t=${ts},v1=${signature}` }, body });
}

beforeAll(async () => {
  admin = await devLogin(t, adminEmail);
  dev = await devLogin(t);
  creator = await devLogin(t);
  stranger = await devLogin(t);
  await becomeDeveloper(dev);
});

describe('version review', () => {
  test('a submitted version waits for an operator; rejection needs notes; approval publishes; the developer is notified of both', async () => {
    const ext = await createExtension();
    const versionId = await uploadVersion(ext.id as string, '1.0.0');
    const submitted = await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${versionId}/publish`, { token: dev.accessToken });
    expect(submitted.body.data).toEqual(expect.objectContaining({ status: 'pending_review', published_at: null }));
    // Not public while in review.
    expect((await api(t, 'POST', '/extension-installs', { token: stranger.accessToken, body: { extension_id: ext.id } })).status).toBe(404);

    const queue = await api(t, 'GET', '/admin/extension-reviews', { token: admin.accessToken });
    expect(queue.status).toBe(200);
    expect((queue.body.data as Json[]).find((r) => r.id === versionId)).toEqual(expect.objectContaining({ extension_id: ext.id, extension_name: 'Flow', status: 'pending_review', submitted_at: expect.any(String) }));
    const notOperator = await api(t, 'GET', '/admin/extension-reviews', { token: dev.accessToken });
    expect(notOperator.status).toBe(403);
    expect((await api(t, 'POST', `/admin/extension-reviews/${versionId}/approve`, { token: dev.accessToken, body: {} })).status).toBe(403);

    const blank = await api(t, 'POST', `/admin/extension-reviews/${versionId}/reject`, { token: admin.accessToken, body: { notes: '   ' } });
    expect(blank.status).toBe(400);
    expect(blank.body.message).toBe('Notes are required to reject a version');
    const rejected = await api(t, 'POST', `/admin/extension-reviews/${versionId}/reject`, { token: admin.accessToken, body: { notes: 'Handler crashes' } });
    expect(rejected.status).toBe(200);
    expect(rejected.body.data).toEqual(expect.objectContaining({ status: 'rejected', review_notes: 'Handler crashes', reviewed_by: admin.userId }));
    const again = await api(t, 'POST', `/admin/extension-reviews/${versionId}/approve`, { token: admin.accessToken, body: {} });
    expect(again.status).toBe(409);
    expect(again.body.message).toBe('Version is not awaiting review');
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: dev.accessToken })).body.data.status).toBe('draft');

    // Resubmitted after a fix, then approved.
    expect((await api(t, 'PUT', `/developer/extensions/${ext.id}/versions/${versionId}/bundle`, { token: dev.accessToken, body: { manifest: MANIFEST, handler_code: 'export function run() { return 1; }' } })).body.data.status).toBe('uploaded');
    expect((await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${versionId}/publish`, { token: dev.accessToken })).body.data.status).toBe('pending_review');
    const approved = await api(t, 'POST', `/admin/extension-reviews/${versionId}/approve`, { token: admin.accessToken, body: { notes: 'Looks good' } });
    expect(approved.body.data).toEqual(expect.objectContaining({ status: 'published', review_notes: 'Looks good' }));
    const extension = (await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: dev.accessToken })).body.data as Json;
    expect(extension).toEqual(expect.objectContaining({ status: 'published', published_at: expect.any(String) }));
    expect((await api(t, 'POST', '/extension-installs', { token: stranger.accessToken, body: { extension_id: ext.id } })).status).toBe(201);

    const notes = ((await api(t, 'GET', '/notifications', { token: dev.accessToken })).body.data as Json[]).filter((n) => n.type === 'extension_review' && n.data.versionId === versionId);
    expect(notes.map((n) => n.data.status).sort()).toEqual(['approved', 'rejected']);
    expect(notes.find((n) => n.data.status === 'rejected')!.data.notes).toBe('Handler crashes');
    expect((await api(t, 'POST', `/admin/extension-reviews/${randomUUID()}/approve`, { token: admin.accessToken, body: {} })).status).toBe(404);
  });
});

describe('install tokens', () => {
  test('installing mints an lm_ext_ token with the granted permissions; it opens those channels only; uninstall revokes it', async () => {
    const ext = await createExtension();
    await publishApproved(ext.id as string);
    const user = await devLogin(t);
    const notRequested = await api(t, 'POST', '/extension-installs', { token: user.accessToken, body: { extension_id: ext.id, permissions: ['sounds:read'] } });
    expect(notRequested.status).toBe(400);
    expect(notRequested.body.message).toBe('Permission not requested by the extension: sounds:read');
    const installed = await api(t, 'POST', '/extension-installs', { token: user.accessToken, body: { extension_id: ext.id, permissions: ['events:read'] } });
    expect(installed.status).toBe(201);
    const install = installed.body.data as Json;
    expect(install.permissions).toEqual(['events:read']);
    expect(install.token).toEqual({ token: expect.stringMatching(/^lm_ext_[0-9a-f]{64}$/), expires_at: expect.any(String), permissions: ['events:read'] });
    const token = install.token.token as string;
    // Shown once: the list does not carry it.
    expect(((await api(t, 'GET', '/extension-installs', { token: user.accessToken })).body.data as Json[])[0]!.token).toBeUndefined();

    const s = await socket(token);
    expect(await subscribe(s, `events:${user.accountId}`)).toEqual({ type: 'subscribed', channel: `events:${user.accountId}` });
    expect(await subscribe(s, `ext-storage:${install.id}`)).toEqual({ type: 'subscribed', channel: `ext-storage:${install.id}` });
    expect(await subscribe(s, `chat:${user.accountId}`)).toEqual(expect.objectContaining({ type: 'error', code: 'UNAUTHORIZED' }));
    expect(await subscribe(s, `events:${creator.accountId}`)).toEqual(expect.objectContaining({ type: 'error', code: 'UNAUTHORIZED' }));
    // Never REST or GraphQL (Part 1).
    expect((await api(t, 'GET', '/extension-installs', { token })).status).toBeGreaterThanOrEqual(401);

    // A fresh token revokes the previous one.
    const renewed = await api(t, 'POST', `/extension-installs/${install.id}/token`, { token: user.accessToken });
    expect(renewed.status).toBe(200);
    expect(renewed.body.data.permissions).toEqual(['events:read']);
    expect(await refusedUpgrade(token)).toBe(401);
    const fresh = renewed.body.data.token as string;
    const live = await socket(fresh);
    expect((await subscribe(live, `events:${user.accountId}`)).type).toBe('subscribed');

    expect((await api(t, 'DELETE', `/extension-installs/${install.id}`, { token: user.accessToken })).status).toBe(200);
    expect((await live.closed).code).toBe(4002);
    expect(await refusedUpgrade(fresh)).toBe(401);
    expect((await api(t, 'POST', `/extension-installs/${install.id}/token`, { token: user.accessToken })).status).toBe(404);
  });

  test('an install cannot grant what the installer does not hold', async () => {
    const ext = await createExtension({ name: 'Greedy' });
    await publishApproved(ext.id as string);
    const invited = await devLogin(t);
    // A viewer of the creator's account holds events:read but not chat:read.
    const invite = await api(t, 'POST', '/account/invites', { token: creator.accessToken, body: { user_id: invited.userId, role: 'viewer' } });
    expect(invite.status).toBe(201);
    const notification = ((await api(t, 'GET', '/notifications', { token: invited.accessToken })).body.data as Json[]).find((n) => n.type === 'invite')!;
    expect((await api(t, 'POST', `/notifications/${notification.id}/action`, { token: invited.accessToken, body: { action: 'accept_invite' } })).status).toBe(200);
    const switched = await api(t, 'POST', '/auth/switch-account', { token: invited.accessToken, body: { account_id: creator.accountId } });
    const viewerToken = (switched.body.data as Json).access_token as string;
    const refused = await api(t, 'POST', '/extension-installs', { token: viewerToken, body: { extension_id: ext.id } });
    // A viewer lacks extension-store:install altogether: the declared gate answers first.
    expect(refused.status).toBe(403);
  });
});

describe('paid extensions', () => {
  test('install needs a completed purchase; a refund through the webhook disables the install and revokes its token', async () => {
    const ext = await createExtension({ name: 'Paid', pricing_type: 'one_time', pricing_amount: 499, pricing_currency: 'USD' });
    await publishApproved(ext.id as string);
    const buyer = await devLogin(t);
    const unpaid = await api(t, 'POST', '/extension-installs', { token: buyer.accessToken, body: { extension_id: ext.id } });
    expect(unpaid.status).toBe(403);
    expect(unpaid.body).toEqual({ error: 'FORBIDDEN', message: 'Purchase this extension before installing it' });

    const paymentIntent = `pi_${randomUUID()}`;
    const checkout = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { id: 'cs_x', payment_intent: paymentIntent, amount_total: 499, currency: 'usd', metadata: { extension_id: ext.id, account_id: buyer.accountId, user_id: buyer.userId } } } };
    expect((await connectWebhook(checkout)).status).toBe(200);
    // Another account's purchase does not count for this one.
    expect((await api(t, 'POST', '/extension-installs', { token: stranger.accessToken, body: { extension_id: ext.id } })).status).toBe(403);
    const installed = await api(t, 'POST', '/extension-installs', { token: buyer.accessToken, body: { extension_id: ext.id } });
    expect(installed.status).toBe(201);
    const install = installed.body.data as Json;
    const token = install.token.token as string;
    const s = await socket(token);
    expect((await subscribe(s, `events:${buyer.accountId}`)).type).toBe('subscribed');

    expect((await connectWebhook({ id: `evt_${randomUUID()}`, type: 'charge.refunded', data: { object: { id: 'ch_x', payment_intent: paymentIntent } } })).status).toBe(200);
    expect((await s.closed).code).toBe(4002);
    expect(await refusedUpgrade(token)).toBe(401);
    const after = ((await api(t, 'GET', '/extension-installs', { token: buyer.accessToken })).body.data as Json[]).find((i) => i.id === install.id)!;
    expect(after).toEqual(expect.objectContaining({ enabled: false, disabled_reason: 'refunded' }));
    const reenable = await api(t, 'PATCH', `/extension-installs/${install.id}`, { token: buyer.accessToken, body: { enabled: true } });
    expect(reenable.status).toBe(409);
    expect((await api(t, 'POST', `/extension-installs/${install.id}/token`, { token: buyer.accessToken })).status).toBe(409);
    const bot = await api(t, 'GET', '/internal/bot-modules/handlers', { token: runtimeKey.key, query: { install_id: install.id } });
    expect((bot.body as Json).installs[0].enabled).toBe(false);
    // Bought again: the install may be enabled and gets tokens again.
    const rebuy = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { payment_intent: `pi_${randomUUID()}`, amount_total: 499, currency: 'usd', metadata: { extension_id: ext.id, account_id: buyer.accountId } } } };
    expect((await connectWebhook(rebuy)).status).toBe(200);
    const enabled = await api(t, 'PATCH', `/extension-installs/${install.id}`, { token: buyer.accessToken, body: { enabled: true } });
    expect(enabled.body.data).toEqual(expect.objectContaining({ enabled: true, disabled_reason: null }));
    expect((await api(t, 'POST', `/extension-installs/${install.id}/token`, { token: buyer.accessToken })).status).toBe(200);
  });
});

describe('subscription extensions', () => {
  test('install needs an active subscription; a failed invoice and a cancellation through the webhook disable the install and revoke its token', async () => {
    const ext = await createExtension({ name: 'Monthly', pricing_type: 'subscription', pricing_amount: 299, pricing_currency: 'USD' });
    await publishApproved(ext.id as string);
    const subscriber = await devLogin(t);
    const installs = async () => (await api(t, 'GET', '/extension-installs', { token: subscriber.accessToken })).body.data as Json[];
    const enable = () => api(t, 'PATCH', `/extension-installs/${install.id}`, { token: subscriber.accessToken, body: { enabled: true } });
    const newToken = () => api(t, 'POST', `/extension-installs/${install.id}/token`, { token: subscriber.accessToken });
    const event = (type: string, object: Json) => connectWebhook({ id: `evt_${randomUUID()}`, type, data: { object } });

    const unsubscribed = await api(t, 'POST', '/extension-installs', { token: subscriber.accessToken, body: { extension_id: ext.id } });
    expect(unsubscribed.status).toBe(403);
    expect(unsubscribed.body).toEqual({ error: 'FORBIDDEN', message: 'Subscribe to this extension before installing it' });
    // A one-time purchase does not stand in for a subscription.
    const checkout = { payment_intent: `pi_${randomUUID()}`, amount_total: 299, currency: 'usd', metadata: { extension_id: ext.id, account_id: subscriber.accountId } };
    expect((await event('checkout.session.completed', checkout)).status).toBe(200);
    expect((await api(t, 'POST', '/extension-installs', { token: subscriber.accessToken, body: { extension_id: ext.id } })).status).toBe(403);

    const sub = `sub_${randomUUID()}`;
    const meta = { extension_id: ext.id, account_id: subscriber.accountId };
    expect((await event('customer.subscription.created', { id: sub, customer: 'cus_sub', status: 'active', metadata: meta })).status).toBe(200);
    // Another account's subscription does not count for this one.
    expect((await api(t, 'POST', '/extension-installs', { token: stranger.accessToken, body: { extension_id: ext.id } })).status).toBe(403);
    const installed = await api(t, 'POST', '/extension-installs', { token: subscriber.accessToken, body: { extension_id: ext.id } });
    expect(installed.status).toBe(201);
    const install = installed.body.data as Json;
    const first = install.token.token as string;
    const s1 = await socket(first);
    expect((await subscribe(s1, `events:${subscriber.accountId}`)).type).toBe('subscribed');

    // Past due: disabled, token revoked (its socket ends), no way back until an invoice is paid.
    expect((await event('invoice.payment_failed', { id: `in_${randomUUID()}`, subscription: sub })).status).toBe(200);
    expect((await s1.closed).code).toBe(4002);
    expect(await refusedUpgrade(first)).toBe(401);
    expect((await installs()).find((i) => i.id === install.id)).toEqual(expect.objectContaining({ enabled: false, disabled_reason: 'subscription_past_due' }));
    const pastDue = await enable();
    expect(pastDue.status).toBe(409);
    expect(pastDue.body).toEqual({ error: 'CONFLICT', message: 'The subscription to this extension is not active; renew it to enable it' });
    expect((await newToken()).status).toBe(409);
    const bot = await api(t, 'GET', '/internal/bot-modules/handlers', { token: runtimeKey.key, query: { install_id: install.id } });
    expect((bot.body as Json).installs[0].enabled).toBe(false);

    // Paid again: enabled by itself; the next token request mints a token.
    expect((await event('invoice.payment_succeeded', { id: `in_${randomUUID()}`, subscription: sub })).status).toBe(200);
    expect((await installs()).find((i) => i.id === install.id)).toEqual(expect.objectContaining({ enabled: true, disabled_reason: null }));
    const renewed = await newToken();
    expect(renewed.status).toBe(200);
    const second = renewed.body.data.token as string;
    const s2 = await socket(second);
    expect((await subscribe(s2, `events:${subscriber.accountId}`)).type).toBe('subscribed');

    // Canceled: disabled and revoked; a later paid invoice of the canceled subscription revives nothing.
    expect((await event('customer.subscription.deleted', { id: sub, customer: 'cus_sub', status: 'canceled' })).status).toBe(200);
    expect((await s2.closed).code).toBe(4002);
    expect(await refusedUpgrade(second)).toBe(401);
    expect((await installs()).find((i) => i.id === install.id)).toEqual(expect.objectContaining({ enabled: false, disabled_reason: 'subscription_canceled' }));
    expect((await event('invoice.payment_succeeded', { id: `in_${randomUUID()}`, subscription: sub })).status).toBe(200);
    expect((await installs()).find((i) => i.id === install.id)).toEqual(expect.objectContaining({ enabled: false, disabled_reason: 'subscription_canceled' }));
    expect((await enable()).status).toBe(409);

    // A new subscription: the account enables the install itself, and it gets tokens again.
    expect((await event('customer.subscription.created', { id: `sub_${randomUUID()}`, customer: 'cus_sub', status: 'active', metadata: meta })).status).toBe(200);
    expect((await installs()).find((i) => i.id === install.id)).toEqual(expect.objectContaining({ enabled: false, disabled_reason: 'subscription_canceled' }));
    const back = await enable();
    expect(back.status).toBe(200);
    expect(back.body.data).toEqual(expect.objectContaining({ enabled: true, disabled_reason: null }));
    expect((await newToken()).status).toBe(200);
  });
});

describe('storage and log channels', () => {
  test('storage writes publish on ext-storage:{install_id}; runtime log lines on ext-logs:{extension_id} and ext-install-logs:{account_id}', async () => {
    const ext = await createExtension({ name: 'Chatty' });
    await publishApproved(ext.id as string);
    const owner = await devLogin(t);
    const install = (await api(t, 'POST', '/extension-installs', { token: owner.accessToken, body: { extension_id: ext.id } })).body.data as Json;

    const storage = await socket(owner.accessToken);
    expect((await subscribe(storage, `ext-storage:${install.id}`)).type).toBe('subscribed');
    const set = await api(t, 'PUT', `/extension-installs/${install.id}/storage/score`, { token: owner.accessToken, body: { value: { points: 3 } } });
    expect(set.status).toBe(200);
    expect(set.body.data).toEqual({ key: 'score', value: { points: 3 }, updated_at: expect.any(String) });
    expect(await storage.nextMatching((m) => m.type === 'event')).toEqual(
      expect.objectContaining({ type: 'event', channel: `ext-storage:${install.id}`, event_type: 'storage:update', data: { install_id: install.id, key: 'score', value: { points: 3 }, deleted: false } }),
    );
    await api(t, 'PUT', `/extension-installs/${install.id}/storage/title`, { token: owner.accessToken, body: { value: 'just a string' } });
    expect(((await storage.nextMatching((m) => m.type === 'event')) as Json).data).toEqual(expect.objectContaining({ key: 'title', value: 'just a string' }));
    expect(((await api(t, 'GET', `/extension-installs/${install.id}/storage`, { token: owner.accessToken })).body.data as Json[]).map((e) => [e.key, e.value])).toEqual([
      ['score', { points: 3 }],
      ['title', 'just a string'],
    ]);
    expect((await api(t, 'DELETE', `/extension-installs/${install.id}/storage/score`, { token: owner.accessToken })).status).toBe(200);
    expect(((await storage.nextMatching((m) => m.type === 'event')) as Json).data).toEqual({ install_id: install.id, key: 'score', value: null, deleted: true });
    expect((await api(t, 'DELETE', `/extension-installs/${install.id}/storage/score`, { token: owner.accessToken })).body.message).toBe('Storage entry not found');
    const tooLarge = await api(t, 'PUT', `/extension-installs/${install.id}/storage/big`, { token: owner.accessToken, body: { value: 'x'.repeat(70_000) } });
    expect(tooLarge.status).toBe(400);
    expect((await api(t, 'PUT', `/extension-installs/${install.id}/storage/x`, { token: stranger.accessToken, body: { value: 1 } })).status).toBe(404);

    const devLogs = await socket(dev.accessToken);
    expect((await subscribe(devLogs, `ext-logs:${ext.id}`)).type).toBe('subscribed');
    const accountLogs = await socket(owner.accessToken);
    expect((await subscribe(accountLogs, `ext-install-logs:${owner.accountId}`)).type).toBe('subscribed');
    expect((await api(t, 'POST', '/internal/extension-logs', { token: owner.accessToken, body: { install_id: install.id, level: 'info', message: 'x' } })).status).toBe(403);
    const written = await api(t, 'POST', '/internal/extension-logs', { token: runtimeKey.key, body: { install_id: install.id, level: 'warn', message: 'Rate limited', data: { retry_ms: 500 } } });
    expect(written.status).toBe(201);
    const line = { id: written.body.data.id, extension_id: ext.id, install_id: install.id, account_id: owner.accountId, level: 'warn', message: 'Rate limited', data: { retry_ms: 500 }, created_at: expect.any(String) };
    expect(await devLogs.nextMatching((m) => m.type === 'event')).toEqual(expect.objectContaining({ channel: `ext-logs:${ext.id}`, event_type: 'extension:log', data: line }));
    expect(await accountLogs.nextMatching((m) => m.type === 'event')).toEqual(expect.objectContaining({ channel: `ext-install-logs:${owner.accountId}`, event_type: 'extension:log', data: line }));
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}/logs`, { token: dev.accessToken })).body.data).toEqual([line]);
    expect((await api(t, 'GET', `/extension-installs/${install.id}/logs`, { token: owner.accessToken })).body.data).toEqual([line]);
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}/logs`, { token: stranger.accessToken })).status).toBe(404);
    expect((await api(t, 'POST', '/internal/extension-logs', { token: runtimeKey.key, body: { install_id: randomUUID(), level: 'info', message: 'x' } })).status).toBe(404);
  });
});

describe('extension access', () => {
  const GRANT = 'mutation($e: UUID!, $u: UUID!) { grantExtensionAccess(extensionId: $e, userId: $u) { extensionId userId grantedBy createdAt } }';
  const INVITE = 'mutation($e: UUID!, $i: CreateExtensionAccessInviteInput) { createExtensionAccessInvite(extensionId: $e, input: $i) { id extensionId code expiresAt maxUses createdAt } }';

  test('grantExtensionAccess and createExtensionAccessInvite let users install an unpublished extension, on REST and GraphQL alike', async () => {
    const ext = await createExtension({ name: 'Private' });
    await uploadVersion(ext.id as string, '0.1.0');
    const granted = await devLogin(t);
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    expect((await api(t, 'POST', '/extension-installs', { token: granted.accessToken, body: { extension_id: ext.id } })).status).toBe(404);

    const viaGql = await gql(t.url, GRANT, { e: ext.id, u: granted.userId }, bearer(dev.accessToken));
    expect(viaGql.body.data?.grantExtensionAccess).toEqual({ extensionId: ext.id, userId: granted.userId, grantedBy: dev.userId, createdAt: expect.any(String) });
    expect((await api(t, 'POST', '/extension-installs', { token: granted.accessToken, body: { extension_id: ext.id } })).status).toBe(201);
    const viaRest = await api(t, 'POST', `/developer/extensions/${ext.id}/access`, { token: dev.accessToken, body: { user_id: stranger.userId } });
    expect(viaRest.status).toBe(200);
    expect(viaRest.body.data).toEqual({ extension_id: ext.id, user_id: stranger.userId, granted_by: dev.userId, created_at: expect.any(String) });

    // Same failure, same answer.
    const missingRest = await api(t, 'POST', `/developer/extensions/${randomUUID()}/access`, { token: dev.accessToken, body: { user_id: stranger.userId } });
    const missingGql = await gql(t.url, GRANT, { e: randomUUID(), u: stranger.userId }, bearer(dev.accessToken));
    expect(missingRest.body).toEqual({ error: 'NOT_FOUND', message: 'Extension not found' });
    expect(missingGql.body.errors?.[0]).toEqual(expect.objectContaining({ message: 'Extension not found', extensions: expect.objectContaining({ code: 'NOT_FOUND' }) }));
    const notMine = await api(t, 'POST', `/developer/extensions/${ext.id}/access`, { token: stranger.accessToken, body: { user_id: stranger.userId } });
    expect(notMine.status).toBe(404);

    const invite = await api(t, 'POST', `/developer/extensions/${ext.id}/access-invites`, { token: dev.accessToken, body: { max_uses: 1 } });
    expect(invite.status).toBe(201);
    expect(invite.body.data).toEqual(expect.objectContaining({ extension_id: ext.id, code: expect.stringMatching(/^lm_inv_[0-9a-f]{32}$/), max_uses: 1, expires_at: null }));
    const joiner = await devLogin(t);
    const accepted = await api(t, 'POST', '/extension-access-invites/accept', { token: joiner.accessToken, body: { code: invite.body.data.code } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toEqual(expect.objectContaining({ extension_id: ext.id, user_id: joiner.userId }));
    expect((await api(t, 'POST', '/extension-installs', { token: joiner.accessToken, body: { extension_id: ext.id } })).status).toBe(201);
    const usedUp = await api(t, 'POST', '/extension-access-invites/accept', { token: (await devLogin(t)).accessToken, body: { code: invite.body.data.code } });
    expect(usedUp.body).toEqual({ error: 'NOT_FOUND', message: 'Invite not found' });

    const gqlInvite = await gql(t.url, INVITE, { e: ext.id, i: { expiresAt: new Date(Date.now() + 3_600_000).toISOString() } }, bearer(dev.accessToken));
    expect(gqlInvite.body.data?.createExtensionAccessInvite).toEqual(expect.objectContaining({ extensionId: ext.id, code: expect.stringMatching(/^lm_inv_/), maxUses: null, expiresAt: expect.any(String) }));
    const pastRest = await api(t, 'POST', `/developer/extensions/${ext.id}/access-invites`, { token: dev.accessToken, body: { expires_at: '2000-01-01T00:00:00Z' } });
    const pastGql = await gql(t.url, INVITE, { e: ext.id, i: { expiresAt: '2000-01-01T00:00:00Z' } }, bearer(dev.accessToken));
    expect(pastRest.body).toEqual(expect.objectContaining({ error: 'VALIDATION_ERROR', message: 'expires_at cannot be in the past' }));
    expect(pastGql.body.errors?.[0]).toEqual(expect.objectContaining({ message: 'expires_at cannot be in the past', extensions: expect.objectContaining({ code: 'VALIDATION_ERROR' }) }));
  });

  test('popout and extension tokens get FORBIDDEN on both protocols (first-party gate)', async () => {
    const ext = await createExtension({ name: 'Gated' });
    await publishApproved(ext.id as string);
    const popout = await api(t, 'POST', '/tokens', { token: dev.accessToken, body: { permissions: ['events:read'] } });
    expect(popout.status).toBe(201);
    const popoutToken = (popout.body.data as Json).token as string;
    const install = (await api(t, 'POST', '/extension-installs', { token: dev.accessToken, body: { extension_id: ext.id, permissions: ['events:read'] } })).body.data as Json;
    const extToken = install.token.token as string;

    const restExt = await api(t, 'POST', `/developer/extensions/${ext.id}/access`, { token: extToken, body: { user_id: stranger.userId } });
    const gqlExt = await gql(t.url, GRANT, { e: ext.id, u: stranger.userId }, { authorization: `Bearer ${extToken}` });
    expect(restExt.status).toBe(403);
    expect(restExt.body.error).toBe('FORBIDDEN');
    expect(gqlExt.body.errors?.[0]).toEqual(expect.objectContaining({ message: restExt.body.message, extensions: expect.objectContaining({ code: 'FORBIDDEN' }) }));

    const restPopout = await fetch(`${t.url}/v1/developer/extensions/${ext.id}/access-invites?token=${popoutToken}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const gqlPopout = await gql(t.url, INVITE, { e: ext.id }, {}, popoutToken);
    expect(restPopout.status).toBe(403);
    const restBody = (await restPopout.json()) as Json;
    expect(restBody.error).toBe('FORBIDDEN');
    expect(gqlPopout.body.errors?.[0]).toEqual(expect.objectContaining({ message: restBody.message, extensions: expect.objectContaining({ code: 'FORBIDDEN' }) }));
  });
});
