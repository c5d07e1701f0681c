/**
 * Chat through the platforms (Part 1 "chat/send", Part 2 "Chat") over real
 * HTTP, GraphQL and WebSocket against a fake platform server on 127.0.0.1: send with the acting
 * user's login grant and the 200-for-every-outcome rule, moderation with per-action permissions,
 * defaults and the platform_b duration range, the profile refresh and its cooldown, and the
 * platform_a socket worker and platform_b live chat poller feeding the pipeline.
 */
import { randomUUID } from 'node:crypto';
import { gql, startTestApp, type TestApp } from '../helpers/app';
import { startFakePlatform, type FakePlatform } from '../helpers/fake-platform';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

type Row = Record<string, unknown>;
const opsEmail = `ops-${randomUUID()}@example.test`;
const bearer = (user: LoggedIn) => ({ authorization: `Bearer ${user.accessToken}` });
const opened = closeSocketsAfterEach();

let fake: FakePlatform;
let t: TestApp;
let ops: LoggedIn;
beforeAll(async () => {
  fake = await startFakePlatform();
  t = await startTestApp({
    auth: { bootstrap_admins: [opsEmail] },
    chat: {
      request_timeout_ms: 2000,
      platforms: {
        platform_a: { api_url: fake.apiUrl('platform_a'), socket_url: fake.socketUrl, reconnect_ms: 50 },
        platform_b: { api_url: fake.apiUrl('platform_b'), poll_interval_ms: 50 },
        platform_c: { api_url: fake.apiUrl('platform_c') },
      },
    },
  });
  ops = await devLogin(t, opsEmail);
});
afterAll(async () => {
  await t?.stop();
  await fake?.close();
});
afterEach(() => {
  // No outbound call the fake does not know.
  expect(fake.unexpected).toEqual([]);
  fake.reset();
});

async function connectChannel(user: LoggedIn, platform: string, channelId = `chan-${randomUUID()}`, reconnect = false): Promise<string> {
  const res = await api(t, 'PUT', `/admin/accounts/${user.accountId}/connections/${platform}`, { token: ops.accessToken, body: { platform_channel_id: channelId, reconnect_required: reconnect } });
  expect(res.status).toBe(200);
  return channelId;
}

async function grantLogin(user: LoggedIn, provider: string, platformUserId: string, reconnect = false): Promise<void> {
  const recorded = await api(t, 'POST', `/admin/users/${user.userId}/login-connections`, { token: ops.accessToken, body: { provider, platform_user_id: platformUserId, display_name: `${platformUserId} display`, reconnect_required: reconnect } });
  expect([200, 201]).toContain(recorded.status);
  const assigned = await gql(t.url, 'mutation($c: UUID!, $p: String!) { assignLoginConnection(loginConnectionId: $c, provider: $p) { id } }', { c: recorded.body.data.id, p: provider }, bearer(user));
  expect(assigned.body.errors).toBeUndefined();
}

async function subscribed(user: LoggedIn): Promise<TestSocket> {
  const s = await connect(t.wsUrl, { headers: bearer(user) });
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  s.send({ type: 'subscribe', channel: `chat:${user.accountId}` });
  expect(await s.next()).toEqual({ type: 'subscribed', channel: `chat:${user.accountId}` });
  return s;
}
const chatData = async (s: TestSocket) => ((await s.nextMatching((x) => x.type === 'chat:message', 10_000)) as { data: Row }).data;

const send = (user: LoggedIn, body: Record<string, unknown>) => api(t, 'POST', '/chat/send', { token: user.accessToken, body });
const SEND = 'mutation($i: SendChatInput!) { sendChatToPlatform(input: $i) { sent messageId platform errorCode error } }';
const moderate = (user: LoggedIn, body: Record<string, unknown>) => api(t, 'POST', '/chat/moderate', { token: user.accessToken, body });
const MODERATE = 'mutation($i: ModerationInput!) { moderateChat(input: $i) { success action platform details } }';
const refresh = (user: LoggedIn, platform: string, id: string) => api(t, 'POST', `/chat/users/${platform}/${encodeURIComponent(id)}/refresh`, { token: user.accessToken });
const REFRESH = 'mutation($p: String!, $u: String!) { refreshPlatformUserProfile(platform: $p, platformUserId: $u) { platform platformUserId username displayName avatarUrl lastSeenAt messageCount userTreatment refreshedAt } }';

describe('send', () => {
  test('platform_a sends with the acting user login grant: 200 sent with the platform message id, on both protocols', async () => {
    const owner = await devLogin(t);
    const channel = await connectChannel(owner, 'platform_a');
    await grantLogin(owner, 'platform_a', 'pa-owner');
    const res = await send(owner, { platform: 'platform_a', message: '  hello chat  ', reply_to_message_id: 'parent-1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { sent: true, message_id: expect.stringMatching(/^platform_a-sent-/), platform: 'platform_a' } });
    expect(fake.sent('platform_a')).toEqual([
      { platform: 'platform_a', method: 'POST', path: `/channels/${channel}/chat/messages`, query: {}, body: { sender_id: 'pa-owner', message: 'hello chat', reply_to_message_id: 'parent-1' }, authorization: null },
    ]);
    const g = await gql(t.url, SEND, { i: { platform: 'platform_a', message: 'from graphql' } }, bearer(owner));
    expect(g.body.data!.sendChatToPlatform).toEqual({ sent: true, messageId: expect.stringMatching(/^platform_a-sent-/), platform: 'platform_a', errorCode: null, error: null });
  });

  test('every send failure is a 200 with error_code: no login grant or a flagged one, the platform refusing, the platform down', async () => {
    const owner = await devLogin(t);
    await connectChannel(owner, 'platform_c');
    const noGrant = await send(owner, { platform: 'platform_c', message: 'hi' });
    expect(noGrant.status).toBe(200);
    expect(noGrant.body.data).toEqual({ sent: false, error_code: 'login_reconnect_required', error: 'Connect your platform_c login to send chat as yourself', platform: 'platform_c' });
    await grantLogin(owner, 'platform_c', 'pc-owner', true);
    const flagged = await send(owner, { platform: 'platform_c', message: 'hi' });
    expect(flagged.body.data).toEqual({ sent: false, error_code: 'login_reconnect_required', error: 'Your platform_c login needs to be reconnected', platform: 'platform_c' });
    expect(fake.sent('platform_c')).toEqual([]);
    await grantLogin(owner, 'platform_c', 'pc-owner', false);
    fake.outcomes.send = 'refuse';
    const refused = await send(owner, { platform: 'platform_c', message: 'hi' });
    expect(refused.status).toBe(200);
    expect(refused.body.data).toEqual({ sent: false, error_code: 'send_failed', error: 'The platform refused the message', platform: 'platform_c' });
    fake.outcomes.send = 'fail';
    const down = await send(owner, { platform: 'platform_c', message: 'hi' });
    expect(down.status).toBe(200);
    expect(down.body.data).toEqual({ sent: false, error_code: 'internal_error', error: 'The platform could not be reached', platform: 'platform_c' });
    const g = await gql(t.url, SEND, { i: { platform: 'platform_c', message: 'hi' } }, bearer(owner));
    expect(g.body.data!.sendChatToPlatform).toEqual({ sent: false, messageId: null, platform: 'platform_c', errorCode: 'internal_error', error: 'The platform could not be reached' });
  });

  test('platform_b sends through the channel connection, resolving the live chat when not given', async () => {
    const owner = await devLogin(t);
    const channel = await connectChannel(owner, 'platform_b');
    const notLive = await send(owner, { platform: 'platform_b', message: 'hi' });
    expect(notLive.body.data).toMatchObject({ sent: false, error_code: 'send_failed' });
    fake.liveChats.set(`platform_b:${channel}`, 'live-xyz');
    const res = await send(owner, { platform: 'platform_b', message: 'hi' });
    expect(res.body.data).toMatchObject({ sent: true, platform: 'platform_b' });
    const explicit = await send(owner, { platform: 'platform_b', message: 'again', live_chat_id: 'live-given' });
    expect(explicit.body.data).toMatchObject({ sent: true });
    expect(fake.sent('platform_b').map((r) => r.body)).toEqual([
      { sender_id: null, message: 'hi', live_chat_id: 'live-xyz' },
      { sender_id: null, message: 'again', live_chat_id: 'live-given' },
    ]);
    fake.liveChats.delete(`platform_b:${channel}`);
  });

  test('hard validation errors are not 200: unsupported platform, bad message, no channel connection (same on GraphQL)', async () => {
    const owner = await devLogin(t);
    const bad = await send(owner, { platform: 'platform_z', message: 'hi' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'platform must be one of platform_a, platform_b, platform_c' });
    const g = await gql(t.url, SEND, { i: { platform: 'platform_z', message: 'hi' } }, bearer(owner));
    expect(g.body.errors?.[0]).toMatchObject({ message: 'platform must be one of platform_a, platform_b, platform_c', extensions: { code: 'VALIDATION_ERROR' } });
    for (const message of ['', '   ', 'x'.repeat(501)]) {
      const res = await send(owner, { platform: 'platform_a', message });
      expect(res.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'message must be 1 to 500 characters' });
    }
    const none = await send(owner, { platform: 'platform_a', message: 'hi' });
    // Part 1: a hard validation error (400 VALIDATION_ERROR naming the field), on both protocols.
    expect(none.status).toBe(400);
    expect(none.body).toEqual({
      error: 'VALIDATION_ERROR',
      message: 'No channel connection for platform_a',
      details: { fields: [{ field: 'platform', message: 'No channel connection for platform_a' }] },
    });
    const gNone = await gql(t.url, SEND, { i: { platform: 'platform_a', message: 'hi' } }, bearer(owner));
    expect(gNone.body.errors?.[0]).toMatchObject({ message: 'No channel connection for platform_a', extensions: { code: 'VALIDATION_ERROR' } });
    const wrongLiveChat = await send(owner, { platform: 'platform_a', message: 'hi', live_chat_id: 'x' });
    expect(wrongLiveChat.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'live_chat_id applies to platform_b only' });
  });

  test('the gate: chat:write (a viewer is refused)', async () => {
    const owner = await devLogin(t);
    const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    const res = await send(viewer, { platform: 'platform_a', message: 'hi' });
    expect(res.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: chat:write' });
  });
});

describe('moderate', () => {
  test('ban, timeout and delete go to the platform, are logged and broadcast (chat:clear_user, chat:delete, chat:moderation_log)', async () => {
    const owner = await devLogin(t);
    const channel = await connectChannel(owner, 'platform_c');
    await grantLogin(owner, 'platform_c', 'pc-mod');
    await t.app.modules.chat.ingestMessage({ accountId: owner.accountId!, platform: 'platform_c', platformMessageId: 'spam-1', platformUserId: 'troll', username: 'trolluser', message: 'spam' });
    const s = await subscribed(owner);

    const ban = await moderate(owner, { action: 'ban', platform: 'platform_c', user_id: 'troll', reason: 'spam links' });
    expect(ban.status).toBe(200);
    expect(ban.body).toEqual({ data: { success: true, action: 'ban', platform: 'platform_c' } });
    expect(await chatData(s)).toEqual({ type: 'chat:clear_user', platform: 'platform_c', platform_user_id: 'troll', deleted_by: 'pc-mod display', action: 'ban', duration_secs: null });
    expect(await chatData(s)).toEqual({
      type: 'chat:moderation_log',
      data: expect.objectContaining({ action: 'ban', platform: 'platform_c', target_user_id: 'troll', target_username: 'trolluser', moderator_name: 'pc-mod display', reason: 'spam links', source: 'service' }),
    });

    const timeout = await moderate(owner, { action: 'timeout', platform: 'platform_c', user_id: 'troll' });
    expect(timeout.body.data).toEqual({ success: true, action: 'timeout', platform: 'platform_c' });
    expect(await chatData(s)).toMatchObject({ type: 'chat:clear_user', action: 'timeout', duration_secs: 300 });
    expect((await chatData(s)).type).toBe('chat:moderation_log');

    const del = await gql(t.url, MODERATE, { i: { action: 'delete', platform: 'platform_c', messageId: 'spam-1' } }, bearer(owner));
    expect(del.body.data!.moderateChat).toEqual({ success: true, action: 'delete', platform: 'platform_c', details: null });
    expect(await chatData(s)).toEqual({ type: 'chat:delete', platform_message_id: 'spam-1', deleted_by: 'pc-mod display' });
    expect(await chatData(s)).toMatchObject({ type: 'chat:moderation_log', data: { action: 'delete', target_user_id: 'troll' } });
    const listed = await api(t, 'GET', '/chat/history', { token: owner.accessToken });
    expect(listed.body.data[0]).toMatchObject({ platform_message_id: 'spam-1', is_deleted: true, deleted_by: 'pc-mod display' });

    expect(fake.moderated('platform_c').map((r) => [r.path, r.body])).toEqual([
      [`/channels/${channel}/moderation`, { action: 'ban', user_id: 'troll', reason: 'spam links', moderator_id: 'pc-mod' }],
      [`/channels/${channel}/moderation`, { action: 'timeout', user_id: 'troll', duration_secs: 300, moderator_id: 'pc-mod' }],
      [`/channels/${channel}/moderation`, { action: 'delete', message_id: 'spam-1', moderator_id: 'pc-mod' }],
    ]);
  });

  test('each action needs its own permission', async () => {
    const owner = await devLogin(t);
    await connectChannel(owner, 'platform_b');
    const deleter = await joinAccount(t, owner, await devLogin(t), { roleName: 'deleter', permissions: ['chat:delete'] });
    const ban = await moderate(deleter, { action: 'ban', platform: 'platform_b', user_id: 'x' });
    expect(ban.status).toBe(403);
    expect(ban.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: chat:ban' });
    const g = await gql(t.url, MODERATE, { i: { action: 'timeout', platform: 'platform_b', userId: 'x' } }, bearer(deleter));
    expect(g.body.errors?.[0]).toMatchObject({ message: 'Missing permission: chat:timeout', extensions: { code: 'FORBIDDEN' } });
    const del = await moderate(deleter, { action: 'delete', platform: 'platform_b', message_id: 'm-1', live_chat_id: 'live-1' });
    expect(del.body.data).toEqual({ success: true, action: 'delete', platform: 'platform_b' });
    const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    expect((await moderate(viewer, { action: 'delete', platform: 'platform_b', message_id: 'm-1' })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: chat:ban' });
  });

  test('required fields, the default duration and the platform_b range; platform failures answer success false', async () => {
    const owner = await devLogin(t);
    const channel = await connectChannel(owner, 'platform_b');
    const expectInvalid = async (body: Record<string, unknown>, message: string) => {
      const res = await moderate(owner, body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'VALIDATION_ERROR', message });
    };
    await expectInvalid({ action: 'ban', platform: 'platform_b' }, 'user_id is required for ban and timeout');
    await expectInvalid({ action: 'timeout', platform: 'platform_b', user_id: ' ' }, 'user_id must be 1 to 200 characters');
    await expectInvalid({ action: 'delete', platform: 'platform_b' }, 'message_id is required for delete');
    await expectInvalid({ action: 'kick', platform: 'platform_b', user_id: 'x' }, 'action must be one of ban, timeout, delete');
    await expectInvalid({ action: 'timeout', platform: 'platform_b', user_id: 'x', duration_secs: 0 }, 'duration_secs must be between 1 and 1209600, or 86400 on platform_b');
    await expectInvalid({ action: 'timeout', platform: 'platform_b', user_id: 'x', duration_secs: 86401 }, 'duration_secs must be between 1 and 1209600, or 86400 on platform_b');
    await expectInvalid({ action: 'ban', platform: 'platform_b', user_id: 'x', reason: 'r'.repeat(501) }, 'reason must be at most 500 characters');
    const g = await gql(t.url, MODERATE, { i: { action: 'timeout', platform: 'platform_b', userId: 'x', durationSecs: 86401 } }, bearer(owner));
    expect(g.body.errors?.[0]).toMatchObject({ message: 'duration_secs must be between 1 and 1209600, or 86400 on platform_b', extensions: { code: 'VALIDATION_ERROR' } });
    // Past the schema's bound on any platform: the same words from the REST validator and the service.
    await expectInvalid({ action: 'timeout', platform: 'platform_a', user_id: 'x', duration_secs: 1_209_601 }, 'duration_secs must be between 1 and 1209600, or 86400 on platform_b');
    const ga = await gql(t.url, MODERATE, { i: { action: 'timeout', platform: 'platform_a', userId: 'x', durationSecs: 1_209_601 } }, bearer(owner));
    expect(ga.body.errors?.[0]).toMatchObject({ message: 'duration_secs must be between 1 and 1209600, or 86400 on platform_b', extensions: { code: 'VALIDATION_ERROR' } });
    expect(fake.moderated('platform_b')).toEqual([]);

    fake.liveChats.set(`platform_b:${channel}`, 'live-b');
    expect((await moderate(owner, { action: 'timeout', platform: 'platform_b', user_id: 'x', duration_secs: 86400 })).body.data).toMatchObject({ success: true });
    expect(fake.moderated('platform_b').map((r) => r.body)).toEqual([{ action: 'timeout', user_id: 'x', duration_secs: 86400, live_chat_id: 'live-b' }]);
    fake.outcomes.moderate = 'refuse';
    const refused = await moderate(owner, { action: 'ban', platform: 'platform_b', user_id: 'x' });
    expect(refused.status).toBe(200);
    expect(refused.body.data).toEqual({ success: false, action: 'ban', platform: 'platform_b', details: { error_code: 'moderation_failed', message: 'The platform refused the moderation action' } });
    fake.outcomes.moderate = 'fail';
    const down = await moderate(owner, { action: 'ban', platform: 'platform_b', user_id: 'x' });
    expect(down.body.data).toEqual({ success: false, action: 'ban', platform: 'platform_b', details: { error_code: 'internal_error', message: 'The platform could not be reached' } });
    fake.liveChats.delete(`platform_b:${channel}`);
    const noChannel = await moderate(owner, { action: 'ban', platform: 'platform_a', user_id: 'x' });
    expect(noChannel.body).toEqual({ error: 'NOT_FOUND', message: 'No channel connection for platform_a' });
  });
});

describe('profile refresh', () => {
  test('answers the refreshed profile, then 429 REFRESH_COOLDOWN with retry_after_seconds per account, platform and user', async () => {
    const owner = await devLogin(t);
    await t.app.modules.chat.ingestMessage({ accountId: owner.accountId!, platform: 'platform_a', platformMessageId: 'r-1', platformUserId: 'viewer-1', username: 'oldname', message: 'hi' });
    fake.users.set('platform_a:viewer-1', { login: 'newname', display_name: 'New Name', avatar_url: 'https://cdn.example/new.png' });
    const res = await refresh(owner, 'platform_a', 'viewer-1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        platform: 'platform_a',
        platform_user_id: 'viewer-1',
        username: 'newname',
        display_name: 'New Name',
        avatar_url: 'https://cdn.example/new.png',
        last_seen_at: expect.any(String),
        message_count: 1,
        user_treatment: 'none',
        refreshed_at: expect.any(String),
      },
    });
    const again = await refresh(owner, 'platform_a', 'viewer-1');
    expect(again.status).toBe(429);
    expect(again.body).toEqual({ error: 'REFRESH_COOLDOWN', message: expect.any(String), retry_after_seconds: expect.any(Number) });
    expect(again.body.retry_after_seconds).toBeGreaterThanOrEqual(1);
    expect(again.body.retry_after_seconds).toBeLessThanOrEqual(600);
    expect(Number(again.headers.get('retry-after'))).toBe(again.body.retry_after_seconds);
    const g = await gql(t.url, REFRESH, { p: 'platform_a', u: 'viewer-1' }, bearer(owner));
    // Same code and wording on both; the seconds left may tick down by one between the two calls.
    expect(g.body.errors?.[0]).toMatchObject({ message: expect.stringMatching(/^Profile was refreshed recently; retry in \d+ seconds$/), extensions: { code: 'REFRESH_COOLDOWN', details: { retry_after_seconds: expect.any(Number) } } });
    const gqlSeconds = Number((g.body.errors![0]!.extensions as { details: { retry_after_seconds: number } }).details.retry_after_seconds);
    expect(again.body.retry_after_seconds - gqlSeconds).toBeGreaterThanOrEqual(0);
    expect(again.body.retry_after_seconds - gqlSeconds).toBeLessThanOrEqual(1);
    expect(g.body.errors![0]!.message).toBe(again.body.message.replace(/\d+ seconds$/, `${gqlSeconds} seconds`));
    expect(fake.requests.filter((r) => r.path === '/users/viewer-1')).toHaveLength(1);
    // Another platform, another user, another account: their own cooldowns.
    fake.users.set('platform_c:viewer-1', { login: 'cname', display_name: null, avatar_url: null });
    const other = await gql(t.url, REFRESH, { p: 'platform_c', u: 'viewer-1' }, bearer(owner));
    expect(other.body.data!.refreshPlatformUserProfile).toEqual({
      platform: 'platform_c',
      platformUserId: 'viewer-1',
      username: 'cname',
      displayName: null,
      avatarUrl: null,
      lastSeenAt: null,
      messageCount: 0,
      userTreatment: 'none',
      refreshedAt: expect.any(String),
    });
    const second = await devLogin(t);
    expect((await refresh(second, 'platform_a', 'viewer-1')).status).toBe(200);
    // The search sees the refreshed names.
    const found = await api(t, 'GET', '/chat/users/search', { token: owner.accessToken, query: { q: 'new' } });
    expect(found.body.data).toEqual([expect.objectContaining({ username: 'newname', display_name: 'New Name', message_count: 1 })]);
  });

  test('an unknown user is a 404 and starts no cooldown; an unsupported platform is a 400', async () => {
    const owner = await devLogin(t);
    const missing = await refresh(owner, 'platform_b', 'ghost');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'NOT_FOUND', message: 'Platform user not found' });
    fake.users.set('platform_b:ghost', { login: 'ghost', display_name: 'Ghost', avatar_url: null });
    expect((await refresh(owner, 'platform_b', 'ghost')).status).toBe(200);
    const bad = await refresh(owner, 'nowhere', 'x');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'platform must be one of platform_a, platform_b, platform_c' });
    const g = await gql(t.url, REFRESH, { p: 'nowhere', u: 'x' }, bearer(owner));
    expect(g.body.errors?.[0]).toMatchObject({ message: 'platform must be one of platform_a, platform_b, platform_c', extensions: { code: 'VALIDATION_ERROR' } });
  });
});

describe('ingest workers', () => {
  test('the platform_a socket worker stores chat, moderation and treatment frames and broadcasts them', async () => {
    const owner = await devLogin(t);
    const s = await subscribed(owner);
    const channel = await connectChannel(owner, 'platform_a');
    await fake.push(channel, {
      type: 'chat.message',
      id: 'pa-1',
      user_id: 'pa-user',
      login: 'pauser',
      display_name: 'PA User',
      message: 'hi from the socket',
      badges: [{ set: 'vip' }],
      reply: { message_id: 'pa-0', login: 'someone', message: 'question?' },
      shared_chat: { channel_id: 'chan-guest', login: 'guest', display_name: 'Guest' },
      sent_at: '2026-11-23T10:00:00.000Z',
    });
    expect(await chatData(s)).toMatchObject({
      platform: 'platform_a',
      platform_message_id: 'pa-1',
      username: 'pauser',
      reply_to_message_id: 'pa-0',
      reply_to_username: 'someone',
      reply_to_message: 'question?',
      is_shared_chat: true,
      source_channel: { platform_channel_id: 'chan-guest', login: 'guest', display_name: 'Guest', avatar_url: null },
      sent_at: '2026-11-23T10:00:00.000Z',
    });
    await fake.push(channel, { type: 'moderation', id: 'pa-act-1', action: 'timeout', target_user_id: 'pa-user', target_login: 'pauser', moderator_login: 'modA', duration_secs: 60 });
    expect(await chatData(s)).toEqual({ type: 'chat:clear_user', platform: 'platform_a', platform_user_id: 'pa-user', deleted_by: 'modA', action: 'timeout', duration_secs: 60 });
    expect((await chatData(s)).type).toBe('chat:moderation_log');
    await fake.push(channel, { type: 'user.treatment', user_id: 'pa-user', login: 'pauser', treatment: 'active_monitoring' });
    expect(await chatData(s)).toEqual({ type: 'chat:user_treatment_update', platform: 'platform_a', platform_user_id: 'pa-user', user_treatment: 'active_monitoring' });
  });

  test('the platform_b poller reads each live chat message once, with its live_chat_id', async () => {
    const owner = await devLogin(t);
    const s = await subscribed(owner);
    const channel = `chan-${randomUUID()}`;
    const live = `live-${randomUUID()}`;
    fake.liveChats.set(`platform_b:${channel}`, live);
    fake.liveChatItems.set(
      live,
      [1, 2, 3].map((n) => ({ id: `pb-${n}`, author: { channel_id: `author-${n}`, name: `author${n}`, display_name: `Author ${n}` }, message: `message ${n}`, published_at: `2026-11-23T09:0${n}:00.000Z` })),
    );
    await connectChannel(owner, 'platform_b', channel);
    const seen = [await chatData(s), await chatData(s), await chatData(s)];
    expect(seen.map((m) => [m.platform_message_id, m.live_chat_id, m.username])).toEqual([
      ['pb-1', live, 'author1'],
      ['pb-2', live, 'author2'],
      ['pb-3', live, 'author3'],
    ]);
    fake.liveChatItems.get(live)!.push({ id: 'pb-4', author: { channel_id: 'author-1', name: 'author1' }, message: 'message 4' });
    expect((await chatData(s)).platform_message_id).toBe('pb-4');
    const listed = await api(t, 'GET', '/chat/history', { token: owner.accessToken, query: { live_chat_id: live } });
    expect(listed.body._meta.total).toBe(4);
    fake.liveChats.delete(`platform_b:${channel}`);
    await api(t, 'DELETE', `/admin/accounts/${owner.accountId}/connections/platform_b`, { token: ops.accessToken });
  });

  test('GET /v1/admin/workers: this node holds each connected channel\'s ingest lease, beside the job queues', async () => {
    const owner = await devLogin(t);
    const channel = await connectChannel(owner, 'platform_a');
    await fake.socketFor(channel);
    const res = await api(t, 'GET', '/admin/workers', { token: ops.accessToken });
    expect(res.status).toBe(200);
    const { node_id: nodeId, nodes, channels, jobs } = res.body.data;
    expect(nodes).toEqual([expect.objectContaining({ node_id: nodeId, channels: channels.length })]);
    expect(channels).toContainEqual(expect.objectContaining({ platform: 'platform_a', account_id: owner.accountId, platform_channel_id: channel, node_id: nodeId, fence: 1 }));
    expect(jobs.map((j: { name: string }) => j.name)).toEqual(expect.arrayContaining(['events.gift-sweep', 'events.retention', 'sounds.orphan-sweep', 'stats.sweep']));
    expect((await api(t, 'GET', '/admin/workers', { token: owner.accessToken })).status).toBe(403);
  });
});
