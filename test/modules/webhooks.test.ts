/**
 * The inbound webhook receivers (Part 2 "Inbound webhook receivers") over real HTTP: payloads are
 * signed here as each platform signs them (HMAC, RSA with a key pair made in the test, the
 * payment provider's `t=,v1=` header), and every status of the table is reached. The payout
 * provider's verification API is a local fake HTTP server; nothing else is faked.
 */
import { createHmac, createSign, generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import { gql, startTestApp, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const operatorEmail = `ops-${randomUUID()}@example.test`;
const B_SECRET = 'platform-b-secret';
const C_LEGACY_SECRET = 'platform-c-legacy-secret';
const PAY_SECRET = 'whsec_payment_provider';
const CONNECT_SECRET = 'whsec_connect';
const CONFIG_SHOP = 'config-shop.example.com';
const CONFIG_SHOP_SECRET = 'config-shop-secret';
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PUBLIC_PEM = publicKey.export({ type: 'spki', format: 'pem' }).toString();

// ---------------------------------------------------------------- the fake payout provider

interface VerifyCall {
  body: string;
  parsed: Record<string, unknown>;
}
const payoutCalls: VerifyCall[] = [];
let payoutServer: Server;
const payments: Record<string, unknown> = { webhook_secret: PAY_SECRET, connect_secret: CONNECT_SECRET, payout_webhook_id: 'WH-42', payout_cert_domain: 'payout.test' };

beforeAll(async () => {
  payoutServer = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const parsed = JSON.parse(body) as Record<string, unknown>;
      payoutCalls.push({ body, parsed });
      const ok = req.url === '/v1/notifications/verify-webhook-signature' && parsed.transmission_sig === 'good-sig' && parsed.webhook_id === 'WH-42';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ verification_status: ok ? 'SUCCESS' : 'FAILURE' }));
    });
  });
  await new Promise<void>((done) => payoutServer.listen(0, '127.0.0.1', done));
  payments.payout_api_url = `http://127.0.0.1:${(payoutServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => payoutServer.close(done));
});

// ---------------------------------------------------------------- signing helpers

const hmacOf = (algorithm: 'sha256' | 'sha1', secret: string, body: string, encoding: 'hex' | 'base64') => createHmac(algorithm, secret).update(body).digest(encoding);
const nowSeconds = () => Math.floor(Date.now() / 1000);
const providerHeader = (secret: string, body: string, t = nowSeconds()) => `t=${t},v1=${hmacOf('sha256', secret, `${t}.${body}`, 'hex')}`;
const rsaSign = (data: string) => createSign('sha256').update(data).sign(privateKey, 'base64');

interface Posted {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | null;
}

async function post(t: Pick<TestApp, 'url'>, receiver: string, body: string, headers: Record<string, string> = {}): Promise<Posted> {
  const res = await fetch(`${t.url}/v1/webhooks/${receiver}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

function atom(channelId: string | null, videoId: string, title = 'A new video & more') {
  return `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns:yt="http://www.youtube.com/xml/schemas/2015" xmlns="http://www.w3.org/2005/Atom">
  <link rel="hub" href="https://hub.example.test"/>
  <title>Channel feed</title>
  <entry>
    <id>yt:video:${videoId}</id>
    <yt:videoId>${videoId}</yt:videoId>
    ${channelId ? `<yt:channelId>${channelId}</yt:channelId>` : ''}
    <title>${title.replace('&', '&amp;')}</title>
    <published>2026-11-23T09:00:00+00:00</published>
    <updated>2026-11-23T09:00:05+00:00</updated>
  </entry>
</feed>`;
}

const UNAUTHORIZED = (message: string) => ({ error: 'UNAUTHORIZED', message });
const ACK = { received: true };

// ---------------------------------------------------------------- everything configured

describe('with every secret configured', () => {
  const t = useTestApp({
    auth: { bootstrap_admins: [operatorEmail] },
    webhooks: { require_signatures: true, platform_b_secret: B_SECRET, platform_c_public_key: PUBLIC_PEM, shop_platform_secrets: { [CONFIG_SHOP]: CONFIG_SHOP_SECRET } },
    payments,
  });
  let ops: LoggedIn;
  let owner: LoggedIn;
  const chanB = `UC${randomUUID().slice(0, 8)}`;
  const chanC = String(100000 + Math.floor(Math.random() * 100000));

  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
    owner = await devLogin(t);
    for (const [platform, id] of [['platform_b', chanB], ['platform_c', chanC]] as const) {
      const res = await api(t, 'PUT', `/admin/accounts/${owner.accountId}/connections/${platform}`, { token: ops.accessToken, body: { platform_channel_id: id } });
      expect(res.status).toBe(200);
    }
  });

  const eventsOf = async (user: LoggedIn, type: string) => {
    const res = await api(t, 'GET', '/events', { token: user.accessToken, query: { types: type, limit: '100' } });
    expect(res.status).toBe(200);
    return res.body.data as { type: string; platform: string; external_id: string | null; raw: Record<string, unknown> }[];
  };

  describe('platform_b', () => {
    test('GET echoes the WebSub challenge as text/plain; a missing challenge is 400', async () => {
      const res = await fetch(`${t.url}/v1/webhooks/platform_b?hub.mode=subscribe&hub.topic=${encodeURIComponent('https://feeds.example.test/x')}&hub.challenge=ch4ll3nge-123&hub.lease_seconds=432000`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await res.text()).toBe('ch4ll3nge-123');
      expect((await fetch(`${t.url}/v1/webhooks/platform_b?hub.mode=subscribe`)).status).toBe(400);
    });

    test('a signed Atom notification emits one platform_b:subscribe event; a redelivery adds none', async () => {
      const body = atom(chanB, 'vid-1');
      const headers = { 'content-type': 'application/atom+xml', 'x-hub-signature-256': `sha256=${hmacOf('sha256', B_SECRET, body, 'hex')}` };
      const first = await post(t, 'platform_b', body, headers);
      expect(first.status).toBe(200);
      expect(first.body).toEqual(ACK);
      expect((await post(t, 'platform_b', body, headers)).status).toBe(200);
      const events = (await eventsOf(owner, 'platform_b:subscribe')).filter((e) => e.raw.video_id === 'vid-1');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        platform: 'platform_b',
        external_id: 'platform_b:video:vid-1',
        raw: { channel_id: chanB, video_id: 'vid-1', title: 'A new video & more', published: '2026-11-23T09:00:00+00:00', updated: '2026-11-23T09:00:05+00:00' },
      });
    });

    test('the SHA-1 X-Hub-Signature is the fallback', async () => {
      const body = atom(chanB, 'vid-sha1');
      const res = await post(t, 'platform_b', body, { 'content-type': 'application/atom+xml', 'x-hub-signature': `sha1=${hmacOf('sha1', B_SECRET, body, 'hex')}` });
      expect(res.status).toBe(200);
      expect((await eventsOf(owner, 'platform_b:subscribe')).some((e) => e.raw.video_id === 'vid-sha1')).toBe(true);
    });

    test('missing or mismatched signatures are 401 (checked before the XML is parsed)', async () => {
      const body = atom(chanB, 'vid-forged');
      expect(await post(t, 'platform_b', body, { 'content-type': 'application/atom+xml' })).toMatchObject({ status: 401, body: UNAUTHORIZED('Missing webhook signature') });
      const forged = await post(t, 'platform_b', body, { 'x-hub-signature-256': `sha256=${hmacOf('sha256', 'wrong', body, 'hex')}` });
      expect(forged).toMatchObject({ status: 401, body: UNAUTHORIZED('Invalid webhook signature') });
      const forged1 = await post(t, 'platform_b', body, { 'x-hub-signature': `sha1=${hmacOf('sha1', 'wrong', body, 'hex')}` });
      expect(forged1.status).toBe(401);
      // A valid SHA-1 does not rescue a wrong SHA-256: the stronger header decides.
      const mixed = await post(t, 'platform_b', body, { 'x-hub-signature-256': 'sha256=00', 'x-hub-signature': `sha1=${hmacOf('sha1', B_SECRET, body, 'hex')}` });
      expect(mixed.status).toBe(401);
      const garbage = await post(t, 'platform_b', '<<<not xml', { 'x-hub-signature-256': 'sha256=00' });
      expect(garbage.status).toBe(401);
      expect((await eventsOf(owner, 'platform_b:subscribe')).some((e) => e.raw.video_id === 'vid-forged')).toBe(false);
    });

    test('malformed XML, a DTD or no channel id is 400; an unknown channel is acknowledged with no event', async () => {
      const sign = (body: string) => ({ 'x-hub-signature-256': `sha256=${hmacOf('sha256', B_SECRET, body, 'hex')}` });
      const malformed = '<feed><entry><yt:channelId>x</entry>';
      expect(await post(t, 'platform_b', malformed, sign(malformed))).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message: 'Malformed XML in request body' } });
      const dtd = `<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaa">]><feed><entry><channelId>&a;</channelId></entry></feed>`;
      expect((await post(t, 'platform_b', dtd, sign(dtd))).status).toBe(400);
      const noChannel = atom(null, 'vid-x');
      expect(await post(t, 'platform_b', noChannel, sign(noChannel))).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message: 'No channel id in the feed entry' } });
      const empty = '';
      expect((await post(t, 'platform_b', empty, sign(empty))).status).toBe(400);
      const stranger = atom('UC-nobody', 'vid-nobody');
      expect(await post(t, 'platform_b', stranger, sign(stranger))).toMatchObject({ status: 200, body: ACK });
      expect((await eventsOf(owner, 'platform_b:subscribe')).some((e) => e.raw.video_id === 'vid-nobody')).toBe(false);
    });
  });

  describe('platform_c', () => {
    const deliver = (type: string, payload: Record<string, unknown>, options: { id?: string; timestamp?: string; signature?: string; omit?: string[] } = {}) => {
      const body = JSON.stringify(payload);
      const id = options.id ?? randomUUID();
      const timestamp = options.timestamp ?? String(nowSeconds());
      const headers: Record<string, string> = {
        'platform-c-event-message-id': id,
        'platform-c-event-message-timestamp': timestamp,
        'platform-c-event-signature': options.signature ?? rsaSign(`${id}.${timestamp}.${body}`),
        'platform-c-event-type': type,
        'platform-c-event-version': '1',
      };
      for (const name of options.omit ?? []) delete headers[name];
      return post(t, 'platform_c', body, headers);
    };
    const broadcaster = () => ({ user_id: Number(chanC), username: 'streamer', channel_slug: 'streamer' });

    test('the mapped types become events; is_live picks online or offline; a redelivery adds none', async () => {
      const id = randomUUID();
      const sub = { broadcaster: broadcaster(), subscriber: { user_id: 7, username: 'fan' }, duration: 1, created_at: '2026-11-23T09:00:00Z' };
      expect(await deliver('channel.subscription.new', sub, { id })).toMatchObject({ status: 200, body: ACK });
      expect((await deliver('channel.subscription.new', sub, { id })).status).toBe(200);
      const subs = (await eventsOf(owner, 'platform_c:subscribe')).filter((e) => e.external_id === `platform_c:${id}`);
      expect(subs).toHaveLength(1);
      expect(subs[0]).toMatchObject({ platform: 'platform_c', raw: sub });

      await deliver('channel.subscription.gifts', { broadcaster: broadcaster(), gifter: { user_id: 8, username: 'gifter' }, giftees: [{ user_id: 9, username: 'lucky' }] });
      await deliver('channel.followed', { broadcaster: broadcaster(), follower: { user_id: 10, username: 'newbie' } });
      await deliver('livestream.status.updated', { broadcaster: broadcaster(), is_live: true, title: 'Live!', started_at: '2026-11-23T09:00:00Z', ended_at: null });
      await deliver('livestream.status.updated', { broadcaster: broadcaster(), is_live: false, title: 'Live!', started_at: '2026-11-23T09:00:00Z', ended_at: '2026-11-23T10:00:00Z' });
      expect(await eventsOf(owner, 'platform_c:gift')).toHaveLength(1);
      expect((await eventsOf(owner, 'platform_c:follower'))[0]!.raw).toMatchObject({ follower: { username: 'newbie' } });
      expect(await eventsOf(owner, 'platform_c:stream_online')).toHaveLength(1);
      expect(await eventsOf(owner, 'platform_c:stream_offline')).toHaveLength(1);
    });

    test('unhandled types and unknown channels are acknowledged without events', async () => {
      const before = (await api(t, 'GET', '/events', { token: owner.accessToken, query: { platform: 'platform_c', limit: '100' } })).body.data as unknown[];
      expect(await deliver('channel.reward.redemption.updated', { broadcaster: broadcaster() })).toMatchObject({ status: 200, body: ACK });
      expect(await deliver('channel.followed', { broadcaster: { user_id: 1, username: 'other' }, follower: { user_id: 2 } })).toMatchObject({ status: 200, body: ACK });
      const after = (await api(t, 'GET', '/events', { token: owner.accessToken, query: { platform: 'platform_c', limit: '100' } })).body.data as unknown[];
      expect(after).toHaveLength(before.length);
    });

    test('the ±300 s tolerance: exactly 300 s either way passes, 301 s fails', async () => {
      const frozen = nowSeconds() * 1000;
      const clock = jest.spyOn(Date, 'now').mockReturnValue(frozen);
      try {
        const at = (offset: number) => String(frozen / 1000 + offset);
        const follow = () => ({ broadcaster: broadcaster(), follower: { user_id: 11, username: 'edge' } });
        expect((await deliver('channel.followed', follow(), { timestamp: at(-300) })).status).toBe(200);
        expect((await deliver('channel.followed', follow(), { timestamp: at(300) })).status).toBe(200);
        expect(await deliver('channel.followed', follow(), { timestamp: at(-301) })).toMatchObject({ status: 401, body: UNAUTHORIZED('Webhook timestamp outside the tolerance') });
        expect((await deliver('channel.followed', follow(), { timestamp: at(301) })).status).toBe(401);
        // RFC 3339 timestamps count the same way.
        expect((await deliver('channel.followed', follow(), { timestamp: new Date(frozen - 300_000).toISOString() })).status).toBe(200);
        expect((await deliver('channel.followed', follow(), { timestamp: new Date(frozen - 301_000).toISOString() })).status).toBe(401);
      } finally {
        clock.mockRestore();
      }
    });

    test('forged, unsigned or tampered deliveries are 401', async () => {
      const payload = { broadcaster: broadcaster(), follower: { user_id: 12 } };
      expect(await deliver('channel.followed', payload, { signature: rsaSign('something else') })).toMatchObject({ status: 401, body: UNAUTHORIZED('Invalid webhook signature') });
      expect(await deliver('channel.followed', payload, { omit: ['platform-c-event-signature'] })).toMatchObject({ status: 401, body: UNAUTHORIZED('Missing webhook signature') });
      expect((await deliver('channel.followed', payload, { omit: ['platform-c-event-message-timestamp'] })).status).toBe(401);
      expect((await deliver('channel.followed', payload, { timestamp: 'yesterday' })).status).toBe(401);
      // The signature binds the message id: replaying it under another id fails.
      const body = JSON.stringify(payload);
      const ts = String(nowSeconds());
      const res = await post(t, 'platform_c', body, {
        'platform-c-event-message-id': 'other-id',
        'platform-c-event-message-timestamp': ts,
        'platform-c-event-signature': rsaSign(`orig-id.${ts}.${body}`),
        'platform-c-event-type': 'channel.followed',
      });
      expect(res.status).toBe(401);
      // A valid signature over a body that is not JSON is 400.
      const notJson = 'not json';
      const id = randomUUID();
      const bad = await post(t, 'platform_c', notJson, {
        'platform-c-event-message-id': id,
        'platform-c-event-message-timestamp': ts,
        'platform-c-event-signature': rsaSign(`${id}.${ts}.${notJson}`),
        'platform-c-event-type': 'channel.followed',
      });
      expect(bad).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message: 'Malformed JSON in request body' } });
    });

    test('chat messages go to the chat pipeline and bans to the moderation log', async () => {
      const chat = t.app.modules.chat;
      const messageId = randomUUID();
      const message = { message_id: messageId, broadcaster: broadcaster(), sender: { user_id: 77, username: 'chatter', identity: { username_color: '#fff', badges: [{ type: 'og' }] } }, content: 'hello from c', emotes: [], created_at: '2026-11-23T09:00:00Z' };
      const ban = { broadcaster: broadcaster(), moderator: { user_id: 5, username: 'mod' }, banned_user: { user_id: 77, username: 'chatter' }, metadata: { reason: 'spam', created_at: '2026-11-23T09:00:00Z', expires_at: null } };
      const ingest = jest.spyOn(chat, 'ingestMessage');
      const moderate = jest.spyOn(chat, 'recordModeration');
      try {
        expect((await deliver('chat.message.sent', message)).status).toBe(200);
        expect((await deliver('moderation.banned', ban)).status).toBe(200);
        expect(ingest).toHaveBeenCalledWith(
          expect.objectContaining({ accountId: owner.accountId, platform: 'platform_c', platformMessageId: messageId, platformUserId: '77', username: 'chatter', message: 'hello from c', badges: [{ type: 'og' }], raw: message, sentAt: new Date('2026-11-23T09:00:00Z') }),
        );
        expect(moderate).toHaveBeenCalledWith(
          expect.objectContaining({ accountId: owner.accountId, platform: 'platform_c', action: 'ban', targetUserId: '77', targetUsername: 'chatter', moderatorUserId: '5', moderatorName: 'mod', durationSecs: null, reason: 'spam', raw: ban }),
        );
      } finally {
        ingest.mockRestore();
        moderate.mockRestore();
      }
      // The stored message, through the chat history surface.
      const history = await api(t, 'GET', '/chat/history', { token: owner.accessToken, query: { platform: 'platform_c' } });
      expect(history.status).toBe(200);
      expect((history.body.data as { message: string }[]).filter((m) => m.message === 'hello from c')).toHaveLength(1);
      // A timed ban is a timeout with its duration.
      const timed = { ...ban, metadata: { reason: 'cool off', created_at: '2026-11-23T09:00:00Z', expires_at: '2026-11-23T09:10:00Z' } };
      const spy = jest.spyOn(chat, 'recordModeration');
      try {
        expect((await deliver('moderation.banned', timed)).status).toBe(200);
        expect(spy).toHaveBeenCalledWith(expect.objectContaining({ action: 'timeout', durationSecs: 600, reason: 'cool off' }));
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('shop_platform', () => {
    let shopOwner: LoggedIn;
    const shop = `shop-${randomUUID().slice(0, 8)}.example.com`;
    const SHOP_SECRET = 'per-shop-secret';
    beforeAll(async () => {
      shopOwner = await devLogin(t);
      const res = await api(t, 'PUT', `/admin/accounts/${shopOwner.accountId}/shops/${shop.toUpperCase()}.`, { token: ops.accessToken, body: { secret: SHOP_SECRET } });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ account_id: shopOwner.accountId, shop_domain: shop, has_secret: true, created_at: expect.any(String), updated_at: expect.any(String) });
    });
    const deliver = (topic: string, payload: unknown, options: { domain?: string; secret?: string; signature?: string | null; webhookId?: string } = {}) => {
      const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
      const headers: Record<string, string> = { 'x-shop-platform-topic': topic, 'x-shop-platform-shop-domain': options.domain ?? shop };
      const signature = options.signature === undefined ? hmacOf('sha256', options.secret ?? SHOP_SECRET, body, 'base64') : options.signature;
      if (signature !== null) headers['x-shop-platform-hmac-sha256'] = signature;
      if (options.webhookId) headers['x-shop-platform-webhook-id'] = options.webhookId;
      return post(t, 'shop_platform', body, headers);
    };

    test('the three topics map to events; the host matches after normalisation; redeliveries add none', async () => {
      const order = { id: 1001, total_price: '19.99', currency: 'EUR' };
      expect(await deliver('orders/create', order)).toMatchObject({ status: 200, body: ACK });
      expect((await deliver('orders/create', order, { domain: `https://${shop.toUpperCase()}/` })).status).toBe(200);
      expect((await deliver('orders/paid', order, { webhookId: 'hook-1' })).status).toBe(200);
      expect((await deliver('orders/paid', order, { webhookId: 'hook-1' })).status).toBe(200);
      expect((await deliver('products/create', { id: 55, title: 'Mug' })).status).toBe(200);
      expect(await eventsOf(shopOwner, 'shop_platform:order')).toEqual([expect.objectContaining({ platform: 'shop_platform', raw: order, external_id: 'shop_platform:orders/create:1001' })]);
      expect(await eventsOf(shopOwner, 'shop_platform:order_paid')).toEqual([expect.objectContaining({ external_id: 'shop_platform:hook-1' })]);
      expect(await eventsOf(shopOwner, 'shop_platform:product')).toHaveLength(1);
    });

    test('other topics are acknowledged and dropped; a host that only resembles the shop is not it', async () => {
      expect(await deliver('customers/create', { id: 1 })).toMatchObject({ status: 200, body: ACK });
      expect(await eventsOf(shopOwner, 'shop_platform:customer')).toHaveLength(0);
      // Not equal after normalisation: no secret for it, so 401 (never matched by suffix).
      expect((await deliver('orders/create', { id: 2 }, { domain: `evil.${shop}` })).status).toBe(401);
      expect((await deliver('orders/create', { id: 2 }, { domain: `${shop}.evil.com` })).status).toBe(401);
    });

    test('missing or mismatched signatures are 401; the config secret covers a shop with no connection (acknowledged, dropped)', async () => {
      expect(await deliver('orders/create', { id: 3 }, { signature: null })).toMatchObject({ status: 401, body: UNAUTHORIZED('Missing webhook signature') });
      expect(await deliver('orders/create', { id: 3 }, { secret: 'wrong' })).toMatchObject({ status: 401, body: UNAUTHORIZED('Invalid webhook signature') });
      expect(await deliver('orders/create', { id: 3 }, { domain: 'unknown-shop.example.com' })).toMatchObject({ status: 401, body: UNAUTHORIZED('Webhook secret not configured') });
      expect(await deliver('orders/create', { id: 4 }, { domain: CONFIG_SHOP, secret: CONFIG_SHOP_SECRET })).toMatchObject({ status: 200, body: ACK });
      expect(await deliver('orders/create', 'not json')).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST' } });
      expect(await eventsOf(shopOwner, 'shop_platform:order')).toHaveLength(1);
    });

    test('operator path: gates, 404, 409, secret kept, cleared and removed', async () => {
      const other = await devLogin(t);
      expect((await api(t, 'PUT', `/admin/accounts/${other.accountId}/shops/${shop}`, { token: ops.accessToken, body: {} })).body).toEqual({ error: 'CONFLICT', message: 'Shop already connected to another account' });
      expect((await api(t, 'PUT', `/admin/accounts/${randomUUID()}/shops/${shop}`, { token: ops.accessToken, body: {} })).body).toEqual({ error: 'NOT_FOUND', message: 'Account not found' });
      expect((await api(t, 'PUT', `/admin/accounts/${other.accountId}/shops/x.example.com`, { token: other.accessToken, body: {} })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: system-connections:edit' });
      expect((await api(t, 'PUT', `/admin/accounts/${shopOwner.accountId}/shops/${shop}`, { token: ops.accessToken, body: {} })).body.data).toMatchObject({ has_secret: true });
      const second = `second-${shop}`;
      expect((await api(t, 'PUT', `/admin/accounts/${other.accountId}/shops/${second}`, { token: ops.accessToken, body: { secret: null } })).body.data).toMatchObject({ shop_domain: second, has_secret: false });
      expect((await api(t, 'DELETE', `/admin/accounts/${other.accountId}/shops/${second}`, { token: ops.accessToken })).body).toEqual({ success: true });
      expect((await api(t, 'DELETE', `/admin/accounts/${other.accountId}/shops/${second}`, { token: ops.accessToken })).body).toEqual({ success: true });
      expect((await api(t, 'DELETE', `/admin/accounts/${other.accountId}/shops/${shop}`, { token: ops.accessToken })).body).toEqual({ success: true });
      // Another account's delete left the shop in place.
      expect((await deliver('products/create', { id: 56 })).status).toBe(200);
      expect(await eventsOf(shopOwner, 'shop_platform:product')).toHaveLength(2);
    });
  });

  describe('payment_provider (billing)', () => {
    let gold: { id: string; slug: string };
    let free: { id: string };
    const createPlan = async (slug: string, extra: Record<string, unknown> = {}) => {
      const res = await api(t, 'POST', '/admin/plans', {
        token: ops.accessToken,
        body: { slug, name: slug, price_monthly: 500, price_yearly: 5000, is_public: false, sort_order: 9, max_overlays: 5, max_storage_bytes: 1000, max_upload_size_bytes: 100, max_integrations: 5, chat_retention_days: 30, max_sounds: 5, max_sound_file_size: 100, max_sound_storage_bytes: 1000, max_setting_presets: 5, ...extra },
      });
      expect(res.status).toBe(201);
      return res.body.data as { id: string; slug: string };
    };
    beforeAll(async () => {
      const listed = await gql(t.url, '{ adminPlans { id slug } }', {}, { authorization: `Bearer ${ops.accessToken}` });
      free = (listed.body.data!.adminPlans as { id: string; slug: string }[]).find((p) => p.slug === 'free')!;
      gold = await createPlan(`gold-${randomUUID().slice(0, 6)}`, { stripe_monthly_price_id: 'price_gold_monthly', stripe_yearly_price_id: 'price_gold_yearly' });
    });
    const send = (event: Record<string, unknown>, options: { secret?: string; t?: number; header?: string | null } = {}) => {
      const body = JSON.stringify({ created: nowSeconds(), ...event });
      const header = options.header === undefined ? providerHeader(options.secret ?? PAY_SECRET, body, options.t) : options.header;
      return post(t, 'payment_provider', body, header === null ? {} : { 'payment-provider-signature': header });
    };
    const planOf = async (user: LoggedIn) => (await api(t, 'GET', '/account', { token: user.accessToken })).body.data.plan as string;

    test('checkout completed upgrades the named account; updated sets plan and period end; deleted downgrades to free', async () => {
      const buyer = await devLogin(t);
      expect(await planOf(buyer)).toBe('free');
      const checkout = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { id: 'cs_1', client_reference_id: buyer.accountId, customer: 'cus_1', subscription: 'sub_1', metadata: { price_id: 'price_gold_monthly' } } } };
      expect(await send(checkout)).toMatchObject({ status: 200, body: ACK });
      expect(await planOf(buyer)).toBe(gold.slug);
      const billing = () => t.app.modules.webhooks.billing(buyer.accountId!);
      expect(await billing()).toMatchObject({ customer_id: 'cus_1', subscription_id: 'sub_1', plan_id: gold.id, status: 'active' });

      const end = nowSeconds() + 30 * 86400;
      const updated = { id: `evt_${randomUUID()}`, type: 'customer.subscription.updated', data: { object: { id: 'sub_1', customer: 'cus_1', status: 'active', current_period_end: end, items: { data: [{ price: { id: 'price_gold_yearly' } }] } } } };
      expect((await send(updated)).status).toBe(200);
      expect((await billing())!.current_period_end!.getTime()).toBe(end * 1000);

      const deleted = { id: `evt_${randomUUID()}`, type: 'customer.subscription.deleted', data: { object: { id: 'sub_1', customer: 'cus_1', status: 'canceled' } } };
      expect((await send(deleted)).status).toBe(200);
      expect(await planOf(buyer)).toBe('free');
      expect(await billing()).toMatchObject({ plan_id: free.id, status: 'canceled' });

      // A subscription moved back to a paid price upgrades again (by the item's price id).
      const again = { id: `evt_${randomUUID()}`, type: 'customer.subscription.updated', data: { object: { id: 'sub_1', customer: 'cus_1', status: 'active', items: { data: [{ price: { id: 'price_gold_monthly' } }] } } } };
      expect((await send(again)).status).toBe(200);
      expect(await planOf(buyer)).toBe(gold.slug);
      const receipts = await t.app.modules.webhooks.receipts('payment_provider');
      expect(receipts.find((r) => r.external_id === deleted.id)).toMatchObject({ type: 'customer.subscription.deleted', outcome: 'downgraded', account_id: buyer.accountId });
    });

    test('a plan change drops the cached features of the account', async () => {
      const buyer = await devLogin(t);
      const flag = 'feature:connections';
      // The plan lacks one feature: the account loses it the moment the webhook moves it there.
      const limited = await createPlan(`limited-${randomUUID().slice(0, 6)}`);
      await api(t, 'PUT', `/admin/plans/${limited.id}/features`, { token: ops.accessToken, body: { features: [{ feature_key: flag, enabled: false }] } });
      expect((await api(t, 'GET', '/connections/status', { token: buyer.accessToken })).status).toBe(200);
      const event = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { client_reference_id: buyer.accountId, metadata: { plan_id: limited.id } } } };
      expect((await send(event)).status).toBe(200);
      expect((await api(t, 'GET', '/connections/status', { token: buyer.accessToken })).body).toEqual({ error: 'FEATURE_DISABLED', message: `Feature disabled: ${flag}` });
    });

    test('checkout without an account creates one: for a new e-mail, and for a known user', async () => {
      const email = `buyer-${randomUUID()}@example.test`;
      const event = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { customer: 'cus_new', subscription: 'sub_new', customer_details: { email, name: 'Buyer' }, metadata: { plan: 'pro' } } } };
      expect((await send(event)).status).toBe(200);
      const buyer = await devLogin(t, email);
      expect(await planOf(buyer)).toBe('pro');

      const known = await devLogin(t);
      const before = (await api(t, 'GET', '/accounts', { token: known.accessToken })).body.data as unknown[];
      const second = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { metadata: { plan: 'pro', user_id: known.userId, account_name: 'Paid studio' } } } };
      expect((await send(second)).status).toBe(200);
      const after = (await api(t, 'GET', '/accounts', { token: known.accessToken })).body.data as { name: string; plan: string }[];
      expect(after).toHaveLength(before.length + 1);
      expect(after.find((a) => a.name === 'Paid studio')).toMatchObject({ plan: 'pro' });
    });

    test('a redelivered event is processed once; unknown accounts, plans and types are acknowledged', async () => {
      const buyer = await devLogin(t);
      const event = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { client_reference_id: buyer.accountId, metadata: { plan: 'pro' } } } };
      expect((await send(event)).status).toBe(200);
      // An operator moves it back; the redelivery must not upgrade it again.
      await api(t, 'PUT', `/admin/accounts/${buyer.accountId}/plan`, { token: ops.accessToken, body: { plan_id: free.id } });
      expect((await send(event)).status).toBe(200);
      expect(await planOf(buyer)).toBe('free');
      expect((await t.app.modules.webhooks.receipts('payment_provider')).filter((r) => r.external_id === event.id)).toHaveLength(1);

      expect((await send({ id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { client_reference_id: randomUUID(), metadata: { plan: 'pro' } } } })).status).toBe(200);
      expect((await send({ id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { client_reference_id: buyer.accountId, metadata: { plan: 'no-such-plan' } } } })).status).toBe(200);
      expect(await planOf(buyer)).toBe('free');
      expect((await send({ id: `evt_${randomUUID()}`, type: 'customer.subscription.deleted', data: { object: { id: 'sub_unknown' } } })).status).toBe(200);
      const failed = { id: `evt_${randomUUID()}`, type: 'invoice.payment_failed', data: { object: { customer: 'cus_1', subscription: 'sub_1', attempt_count: 2 } } };
      expect((await send(failed)).status).toBe(200);
      expect((await t.app.modules.webhooks.receipts('payment_provider')).find((r) => r.external_id === failed.id)).toMatchObject({ outcome: 'logged' });
      expect(await send({ id: `evt_${randomUUID()}`, type: 'charge.dispute.created', data: { object: {} } })).toMatchObject({ status: 200, body: ACK });
    });

    test('stale, forged and unsigned deliveries are 401; the window edges are ±300 s', async () => {
      const frozen = nowSeconds() * 1000;
      const clock = jest.spyOn(Date, 'now').mockReturnValue(frozen);
      try {
        const t0 = frozen / 1000;
        const ignored = () => ({ id: `evt_${randomUUID()}`, type: 'ping' });
        expect((await send(ignored(), { t: t0 - 300 })).status).toBe(200);
        expect((await send(ignored(), { t: t0 + 300 })).status).toBe(200);
        expect(await send(ignored(), { t: t0 - 301 })).toMatchObject({ status: 401, body: UNAUTHORIZED('Webhook timestamp outside the tolerance') });
        expect((await send(ignored(), { t: t0 + 301 })).status).toBe(401);
      } finally {
        clock.mockRestore();
      }
      const event = { id: `evt_${randomUUID()}`, type: 'ping' };
      expect(await send(event, { secret: 'whsec_wrong' })).toMatchObject({ status: 401, body: UNAUTHORIZED('Invalid webhook signature') });
      expect(await send(event, { header: null })).toMatchObject({ status: 401, body: UNAUTHORIZED('Missing webhook signature') });
      expect((await send(event, { header: `t=${nowSeconds()}` })).status).toBe(401);
      expect((await send(event, { header: 'v1=abc' })).status).toBe(401);
      // A signature for another body does not carry over.
      const other = providerHeader(PAY_SECRET, '{"id":"evt_other","type":"ping"}');
      expect((await send(event, { header: other })).status).toBe(401);
      // Signed but not an event: 400.
      const notEvent = '{"hello":"world"}';
      expect(await post(t, 'payment_provider', notEvent, { 'payment-provider-signature': providerHeader(PAY_SECRET, notEvent) })).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message: 'Webhook event must have an id and a type' } });
    });
  });

  describe('payment-connect', () => {
    const send = (event: Record<string, unknown>, secret = CONNECT_SECRET) => {
      const body = JSON.stringify(event);
      return post(t, 'payment-connect', body, { 'payment-provider-signature': providerHeader(secret, body) });
    };

    test('checkout completed records an extension purchase and a refund marks it; other types go to the payouts module once', async () => {
      const extensions = t.app.modules.extensions;
      const record = jest.spyOn(extensions, 'recordPurchase').mockResolvedValue(undefined);
      const refund = jest.spyOn(extensions, 'refundPurchase').mockResolvedValue(undefined);
      try {
        const extensionId = randomUUID();
        const buyer = await devLogin(t);
        const checkout = { id: `evt_${randomUUID()}`, type: 'checkout.session.completed', data: { object: { id: 'cs_ext', payment_intent: 'pi_1', amount_total: 499, currency: 'eur', metadata: { extension_id: extensionId, account_id: buyer.accountId, user_id: buyer.userId } } } };
        expect(await send(checkout)).toMatchObject({ status: 200, body: ACK });
        expect((await send(checkout)).status).toBe(200);
        expect(record).toHaveBeenCalledTimes(1);
        expect(record).toHaveBeenCalledWith({ externalId: 'pi_1', extensionId, accountId: buyer.accountId, buyerUserId: buyer.userId, amountCents: 499, currency: 'EUR' });
        expect((await send({ id: `evt_${randomUUID()}`, type: 'charge.refunded', data: { object: { id: 'ch_1', payment_intent: 'pi_1' } } })).status).toBe(200);
        expect(refund).toHaveBeenCalledWith('pi_1');
      } finally {
        record.mockRestore();
        refund.mockRestore();
      }
      const types = ['transfer.paid', 'customer.subscription.created', 'customer.subscription.deleted', 'invoice.payment_succeeded', 'invoice.payment_failed', 'account.updated'];
      const ids = types.map(() => `evt_${randomUUID()}`);
      for (const [i, type] of types.entries()) expect((await send({ id: ids[i], type, data: { object: { id: `obj_${i}` } } })).status).toBe(200);
      expect((await send({ id: ids[0], type: 'transfer.paid', data: { object: { id: 'obj_0' } } })).status).toBe(200);
      const receipts = await t.app.modules.webhooks.receipts('payment-connect');
      // Each is handed to the payouts module (test/modules/payouts.test.ts), which finds nothing these name.
      const outcomes = ['ignored_no_payout', 'ignored_unknown_extension', 'subscription_not_found', 'ignored_no_subscription', 'ignored_no_subscription', 'no_developer'];
      for (const [i, type] of types.entries()) expect(receipts.filter((r) => r.external_id === ids[i])).toEqual([expect.objectContaining({ type, outcome: outcomes[i], payload: expect.objectContaining({ id: ids[i], type }) })]);
    });

    test('stale, forged or unsigned deliveries are 401 (the connect secret, not the billing one)', async () => {
      const event = { id: `evt_${randomUUID()}`, type: 'transfer.paid', data: { object: {} } };
      expect((await send(event, PAY_SECRET)).status).toBe(401);
      expect((await post(t, 'payment-connect', JSON.stringify(event))).status).toBe(401);
      const body = JSON.stringify(event);
      expect((await post(t, 'payment-connect', body, { 'payment-provider-signature': providerHeader(CONNECT_SECRET, body, nowSeconds() - 3600) })).status).toBe(401);
      expect((await t.app.modules.webhooks.receipts('payment-connect')).some((r) => r.external_id === event.id)).toBe(false);
    });
  });

  describe('payout-provider', () => {
    const deliver = (event: Record<string, unknown>, headers: Partial<Record<string, string>> = {}) => {
      const all: Record<string, string> = {
        'payout-provider-transmission-id': randomUUID(),
        'payout-provider-transmission-time': new Date().toISOString(),
        'payout-provider-transmission-sig': 'good-sig',
        'payout-provider-cert-url': 'https://api.payout.test/v1/notifications/certs/CERT-1',
        'payout-provider-auth-algo': 'SHA256withRSA',
      };
      for (const [k, v] of Object.entries(headers)) {
        if (v === '') delete all[k];
        else all[k] = v!;
      }
      return post(t, 'payout-provider', JSON.stringify(event), all);
    };

    test('verified events are handled once; the provider API gets the headers, the webhook id and the raw event', async () => {
      const types = ['PAYMENT.PAYOUTS-ITEM.SUCCEEDED', 'PAYMENT.PAYOUTS-ITEM.FAILED', 'PAYMENT.PAYOUTS-ITEM.UNCLAIMED', 'PAYMENT.PAYOUTSBATCH.SUCCESS'];
      const ids = types.map(() => `WH-EVT-${randomUUID()}`);
      payoutCalls.length = 0;
      for (const [i, type] of types.entries()) {
        expect(await deliver({ id: ids[i], event_type: type, resource: { payout_item_id: `item-${i}`, amount: { value: '1.00', currency: 'USD' } } })).toMatchObject({ status: 200, body: ACK });
      }
      expect((await deliver({ id: ids[0], event_type: types[0] })).status).toBe(200);
      expect(await deliver({ id: `WH-EVT-${randomUUID()}`, event_type: 'PAYMENT.SALE.COMPLETED' })).toMatchObject({ status: 200, body: ACK });
      const receipts = await t.app.modules.webhooks.receipts('payout-provider');
      // The payouts module moves the payout an event names; none of these names one (test/modules/payouts.test.ts).
      for (const [i, type] of types.entries()) expect(receipts.filter((r) => r.external_id === ids[i])).toEqual([expect.objectContaining({ type, outcome: 'payout_not_found' })]);
      expect(payoutCalls[0]!.parsed).toMatchObject({ auth_algo: 'SHA256withRSA', cert_url: 'https://api.payout.test/v1/notifications/certs/CERT-1', transmission_sig: 'good-sig', webhook_id: 'WH-42', webhook_event: { id: ids[0], event_type: types[0] } });
      expect(payoutCalls[0]!.body).toContain(`"webhook_event":${JSON.stringify({ id: ids[0], event_type: types[0], resource: { payout_item_id: 'item-0', amount: { value: '1.00', currency: 'USD' } } })}`);
    });

    test('a refused verdict, missing headers or a certificate off the provider domain are 401', async () => {
      const event = () => ({ id: `WH-EVT-${randomUUID()}`, event_type: 'PAYMENT.PAYOUTS-ITEM.SUCCEEDED' });
      expect(await deliver(event(), { 'payout-provider-transmission-sig': 'forged' })).toMatchObject({ status: 401, body: UNAUTHORIZED('Invalid webhook signature') });
      expect(await deliver(event(), { 'payout-provider-cert-url': '' })).toMatchObject({ status: 401, body: UNAUTHORIZED('Missing webhook signature') });
      const calls = payoutCalls.length;
      for (const url of ['https://payout.test.evil.com/cert', 'https://evilpayout.test/cert', 'http://api.payout.test/cert', 'https://user@evil.com/cert', 'not a url']) {
        expect(await deliver(event(), { 'payout-provider-cert-url': url })).toMatchObject({ status: 401, body: UNAUTHORIZED('Webhook certificate URL not on the provider domain') });
      }
      expect(payoutCalls.length).toBe(calls);
      expect((await deliver(event(), { 'payout-provider-cert-url': 'https://payout.test/cert' })).status).toBe(200);
      // A body that is not one JSON value never reaches the provider.
      const res = await post(t, 'payout-provider', '{"id":"x"},"webhook_id":"other"', {
        'payout-provider-transmission-id': 'x',
        'payout-provider-transmission-time': 'x',
        'payout-provider-transmission-sig': 'good-sig',
        'payout-provider-cert-url': 'https://api.payout.test/c',
        'payout-provider-auth-algo': 'SHA256withRSA',
      });
      expect(res.status).toBe(400);
    });
  });

  test('receivers are not rate limited and are left out of the published document only where Part 1 says so', async () => {
    const health = await fetch(`${t.url}/v1/health`);
    expect(health.headers.get('x-ratelimit-limit')).not.toBeNull();
    const res = await post(t, 'payment_provider', '{}', {});
    expect(res.status).toBe(401);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    const { publicOpenapiDocument: publishedDocument } = await import('../../generated/openapi-document');
    const paths = (publishedDocument as { paths: Record<string, unknown> }).paths;
    expect(paths['/webhooks/payout-provider']).toBeUndefined();
    for (const path of ['/webhooks/platform_b', '/webhooks/platform_c', '/webhooks/shop_platform', '/webhooks/payment_provider', '/webhooks/payment-connect']) expect(paths[path]).toBeDefined();
  });
});

// ---------------------------------------------------------------- nothing configured: fail closed

describe('with nothing configured and signatures required', () => {
  const t = useTestApp({ webhooks: { require_signatures: true }, payments: { allow_unsigned_webhooks: false } });

  test('platform_b 401, platform_c 403, shop 401, payment, connect and payout 401', async () => {
    const body = atom('UC-any', 'vid');
    expect(await post(t, 'platform_b', body, { 'x-hub-signature-256': `sha256=${hmacOf('sha256', 'x', body, 'hex')}` })).toMatchObject({ status: 401, body: UNAUTHORIZED('Webhook secret not configured') });
    expect(await post(t, 'platform_c', '{}', { 'platform-c-event-type': 'channel.followed' })).toMatchObject({ status: 403, body: { error: 'FORBIDDEN', message: 'Webhook secret not configured' } });
    expect(await post(t, 'shop_platform', '{}', { 'x-shop-platform-topic': 'orders/create', 'x-shop-platform-shop-domain': 'a.example.com', 'x-shop-platform-hmac-sha256': 'x' })).toMatchObject({ status: 401 });
    const event = JSON.stringify({ id: 'evt_1', type: 'ping' });
    for (const [receiver, secret] of [['payment_provider', ''], ['payment-connect', '']] as const) {
      expect(await post(t, receiver, event, { 'payment-provider-signature': providerHeader(secret || 'anything', event) })).toMatchObject({ status: 401, body: UNAUTHORIZED('Webhook secret not configured') });
    }
    expect(await post(t, 'payout-provider', JSON.stringify({ id: 'WH-1', event_type: 'PAYMENT.PAYOUTSBATCH.SUCCESS' }))).toMatchObject({ status: 401, body: UNAUTHORIZED('Webhook verification not configured') });
  });
});

describe('an empty payment secret fails closed too', () => {
  const t = useTestApp({ payments: { webhook_secret: '', connect_secret: '' } });
  test('401 even with a signature made with the empty key', async () => {
    const event = JSON.stringify({ id: 'evt_1', type: 'ping' });
    expect((await post(t, 'payment_provider', event, { 'payment-provider-signature': providerHeader('', event) })).status).toBe(401);
    expect((await post(t, 'payment-connect', event, { 'payment-provider-signature': providerHeader('', event) })).status).toBe(401);
  });
});

// ---------------------------------------------------------------- development: unsigned allowed, legacy platform_c HMAC

describe('with signatures not required, unsigned payments allowed and the legacy platform_c secret', () => {
  let app: TestApp;
  let owner: LoggedIn;
  const opsEmail = `ops-${randomUUID()}@example.test`;
  beforeAll(async () => {
    app = await startTestApp({ auth: { bootstrap_admins: [opsEmail] }, webhooks: { require_signatures: false, platform_c_secret: C_LEGACY_SECRET }, payments: { allow_unsigned_webhooks: true } });
    const ops = await devLogin(app, opsEmail);
    owner = await devLogin(app);
    await api(app, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_b`, { token: ops.accessToken, body: { platform_channel_id: 'UC-dev' } });
    await api(app, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_c`, { token: ops.accessToken, body: { platform_channel_id: '4242' } });
    await api(app, 'PUT', `/admin/accounts/${owner.accountId}/shops/dev-shop.example.com`, { token: ops.accessToken, body: {} });
  });
  afterAll(async () => {
    await app?.stop();
  });

  test('unsigned deliveries are accepted where nothing is configured', async () => {
    expect((await post(app, 'platform_b', atom('UC-dev', 'vid-dev'), { 'content-type': 'application/atom+xml' })).status).toBe(200);
    expect((await post(app, 'shop_platform', JSON.stringify({ id: 9 }), { 'x-shop-platform-topic': 'orders/create', 'x-shop-platform-shop-domain': 'dev-shop.example.com' })).status).toBe(200);
    const events = (await api(app, 'GET', '/events', { token: owner.accessToken })).body.data as { type: string }[];
    expect(events.map((e) => e.type).sort()).toEqual(['platform_b:subscribe', 'shop_platform:order']);
    expect((await post(app, 'payment_provider', JSON.stringify({ id: 'evt_dev', type: 'ping' }))).status).toBe(200);
    expect((await post(app, 'payment-connect', JSON.stringify({ id: 'evt_dev', type: 'transfer.paid' }))).status).toBe(200);
    expect((await post(app, 'payout-provider', JSON.stringify({ id: 'WH-dev', event_type: 'PAYMENT.PAYOUTSBATCH.SUCCESS' }))).status).toBe(200);
  });

  test('platform_c without a public key uses the legacy HMAC of the body', async () => {
    const body = JSON.stringify({ broadcaster: { user_id: 4242, username: 'dev' }, follower: { user_id: 1, username: 'f' } });
    const headers = { 'platform-c-event-type': 'channel.followed', 'platform-c-event-message-id': 'legacy-1' };
    expect(await post(app, 'platform_c', body, headers)).toMatchObject({ status: 401, body: UNAUTHORIZED('Missing webhook signature') });
    expect(await post(app, 'platform_c', body, { ...headers, 'platform-c-signature': hmacOf('sha256', 'wrong', body, 'hex') })).toMatchObject({ status: 401, body: UNAUTHORIZED('Invalid webhook signature') });
    expect((await post(app, 'platform_c', body, { ...headers, 'platform-c-signature': hmacOf('sha256', C_LEGACY_SECRET, body, 'hex') })).status).toBe(200);
    expect((await post(app, 'platform_c', body, { ...headers, 'platform-c-signature': hmacOf('sha256', C_LEGACY_SECRET, body, 'hex') })).status).toBe(200);
    const follows = (await api(app, 'GET', '/events', { token: owner.accessToken, query: { types: 'platform_c:follower' } })).body.data as unknown[];
    expect(follows).toHaveLength(1);
  });
});
