/**
 * Chat storage, pipeline and reads (Part 2, "Chat") over real HTTP,
 * GraphQL and WebSocket: the ingest pipeline (idempotent per platform message id, shared-chat
 * fields, sender profiles), the moderation log and the chat sub-types on `chat:{account_id}`,
 * every history filter rule, the chatter search, and the retention sweep.
 */
import { randomUUID } from 'node:crypto';
import { openapiDocument } from '../../generated/openapi-document';
import { wsDocument } from '../../generated/ws-document';
import type { ChatIngest } from '../../src/modules/chat/api';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const opsEmail = `ops-${randomUUID()}@example.test`;
const t = useTestApp({ auth: { bootstrap_admins: [opsEmail] } });
const opened = closeSocketsAfterEach();

type Row = Record<string, unknown>;
const bearer = (user: LoggedIn) => ({ authorization: `Bearer ${user.accessToken}` });
const HOUR = 3600_000;

function ingest(user: LoggedIn, overrides: Partial<ChatIngest> = {}): Promise<void> {
  return t.app.modules.chat.ingestMessage({
    accountId: user.accountId!,
    platform: 'platform_a',
    platformMessageId: `m-${randomUUID()}`,
    platformUserId: 'u-1',
    username: 'alice',
    displayName: 'Alice',
    message: 'hello there',
    ...overrides,
  });
}

async function subscribed(user: LoggedIn): Promise<TestSocket> {
  const s = await connect(t.wsUrl, { headers: bearer(user) });
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  s.send({ type: 'subscribe', channel: `chat:${user.accountId}` });
  expect(await s.next()).toEqual({ type: 'subscribed', channel: `chat:${user.accountId}` });
  return s;
}

const chatData = async (s: TestSocket) => {
  const m = (await s.nextMatching((x) => x.type === 'chat:message')) as { data: Row };
  return m.data;
};

const history = (user: LoggedIn, query: Record<string, string> = {}) => api(t, 'GET', '/chat/history', { token: user.accessToken, query });

describe('pipeline', () => {
  test('a stored message is broadcast as chat:message with the full row; a redelivery stores and broadcasts nothing', async () => {
    const owner = await devLogin(t);
    const s = await subscribed(owner);
    const sentAt = new Date(Date.now() - 60_000);
    const input: Partial<ChatIngest> = {
      platformMessageId: 'msg-1',
      platformUserId: 'u-42',
      username: 'bob',
      displayName: 'Bob',
      avatarUrl: 'https://cdn.example/bob.png',
      message: 'first!',
      emotes: [{ id: 'e1', name: 'Kappa' }],
      badges: { subscriber: '12' },
      raw: { tags: { color: '#fff' } },
      sentAt,
    };
    await ingest(owner, input);
    const data = await chatData(s);
    expect(data).toEqual({
      id: expect.any(String),
      account_id: owner.accountId,
      platform: 'platform_a',
      platform_message_id: 'msg-1',
      platform_user_id: 'u-42',
      username: 'bob',
      display_name: 'Bob',
      avatar_url: 'https://cdn.example/bob.png',
      message: 'first!',
      emotes: [{ id: 'e1', name: 'Kappa' }],
      badges: { subscriber: '12' },
      reply_to_message_id: null,
      reply_to_username: null,
      reply_to_message: null,
      live_chat_id: null,
      is_shared_chat: false,
      source_channel: null,
      is_deleted: false,
      deleted_at: null,
      deleted_by: null,
      raw: { tags: { color: '#fff' } },
      sent_at: sentAt.toISOString(),
      created_at: expect.any(String),
    });
    await ingest(owner, input);
    await ingest(owner, { platformMessageId: 'msg-2', platformUserId: 'u-42', username: 'bob', displayName: null, message: 'second' });
    // The next broadcast is the second message: the redelivery published nothing.
    expect((await chatData(s)).platform_message_id).toBe('msg-2');
    const listed = await history(owner);
    expect(listed.status).toBe(200);
    expect((listed.body.data as Row[]).map((r) => r.platform_message_id)).toEqual(['msg-2', 'msg-1']);
    expect(listed.body.data[1]).toEqual(data);
    // The sender's profile: two messages, last seen at the newest; a message without a display name keeps the known one.
    const found = await api(t, 'GET', '/chat/users/search', { token: owner.accessToken, query: { q: 'bo' } });
    expect(found.body.data).toEqual([{ platform: 'platform_a', platform_user_id: 'u-42', username: 'bob', display_name: 'Bob', avatar_url: 'https://cdn.example/bob.png', last_seen_at: expect.any(String), message_count: 2 }]);
    expect(Date.parse(found.body.data[0].last_seen_at)).toBeGreaterThan(sentAt.getTime());
  });

  test('shared-chat messages carry is_shared_chat and source_channel on REST, GraphQL and the socket', async () => {
    const owner = await devLogin(t);
    const s = await subscribed(owner);
    await ingest(owner, {
      platformMessageId: 'shared-1',
      isSharedChat: true,
      sourceChannel: { platformChannelId: 'chan-other', login: 'otherstreamer', displayName: 'Other Streamer', avatarUrl: null },
    });
    expect(await chatData(s)).toMatchObject({ is_shared_chat: true, source_channel: { platform_channel_id: 'chan-other', login: 'otherstreamer', display_name: 'Other Streamer', avatar_url: null } });
    // A source channel without the shared flag is a normal message.
    await ingest(owner, { platformMessageId: 'normal-1', isSharedChat: false, sourceChannel: { platformChannelId: 'x', login: 'x', displayName: null, avatarUrl: null } });
    expect(await chatData(s)).toMatchObject({ platform_message_id: 'normal-1', is_shared_chat: false, source_channel: null });
    const g = await gql(t.url, '{ chatHistory { items { platformMessageId isSharedChat sourceChannel { platformChannelId login displayName avatarUrl } } total } }', {}, bearer(owner));
    expect(g.body.data!.chatHistory).toEqual({
      items: [
        { platformMessageId: 'normal-1', isSharedChat: false, sourceChannel: null },
        { platformMessageId: 'shared-1', isSharedChat: true, sourceChannel: { platformChannelId: 'chan-other', login: 'otherstreamer', displayName: 'Other Streamer', avatarUrl: null } },
      ],
      total: 2,
    });
  });

  test('moderation: ban and timeout broadcast chat:clear_user, delete soft-deletes and broadcasts chat:delete, each logged once', async () => {
    const owner = await devLogin(t);
    const chat = t.app.modules.chat;
    await ingest(owner, { platformMessageId: 'bad-1', platformUserId: 'troll', username: 'troll', message: 'spam' });
    const s = await subscribed(owner);
    const base = { accountId: owner.accountId!, platform: 'platform_c' as const, moderatorUserId: 'mod-1', moderatorName: 'ModOne' };
    await chat.recordModeration({ ...base, action: 'ban', platformActionId: 'act-1', targetUserId: 'troll', targetUsername: 'troll', reason: 'spam' });
    expect(await chatData(s)).toEqual({ type: 'chat:clear_user', platform: 'platform_c', platform_user_id: 'troll', deleted_by: 'ModOne', action: 'ban', duration_secs: null });
    // Exactly the frame's data members, in the spec's order: the stored-only columns (account_id, platform_action_id, raw) stay off the wire.
    const logged = await chatData(s);
    expect(logged).toEqual({
      type: 'chat:moderation_log',
      data: {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        action: 'ban',
        platform: 'platform_c',
        target_user_id: 'troll',
        target_username: 'troll',
        platform_message_id: null,
        moderator_user_id: 'mod-1',
        moderator_name: 'ModOne',
        duration_secs: null,
        reason: 'spam',
        source: 'platform',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
    });
    expect(Object.keys((logged as { data: object }).data)).toEqual(Object.keys(wsDocument.components.schemas.ChatModerationLog.properties.data.properties));
    // Redelivery of the same platform action: nothing logged, nothing broadcast.
    await chat.recordModeration({ ...base, action: 'ban', platformActionId: 'act-1', targetUserId: 'troll', targetUsername: 'troll' });
    await chat.recordModeration({ ...base, action: 'timeout', platformActionId: 'act-2', targetUserId: 'troll', durationSecs: 600 });
    expect(await chatData(s)).toEqual({ type: 'chat:clear_user', platform: 'platform_c', platform_user_id: 'troll', deleted_by: 'ModOne', action: 'timeout', duration_secs: 600 });
    expect((await chatData(s)).type).toBe('chat:moderation_log');
    await chat.recordModeration({ ...base, platform: 'platform_a', action: 'delete', platformActionId: 'act-3', targetUserId: 'troll', raw: { message_id: 'bad-1' } });
    expect(await chatData(s)).toEqual({ type: 'chat:delete', platform_message_id: 'bad-1', deleted_by: 'ModOne' });
    expect(await chatData(s)).toMatchObject({ type: 'chat:moderation_log', data: { action: 'delete', platform: 'platform_a', platform_message_id: 'bad-1' } });
    const row = (await history(owner)).body.data[0] as Row;
    expect(row).toMatchObject({ platform_message_id: 'bad-1', message: 'spam', is_deleted: true, deleted_by: 'ModOne', deleted_at: expect.any(String) });
    // Without a platform action id every record is logged; unban only logs.
    await chat.recordModeration({ ...base, action: 'unban', targetUserId: 'troll' });
    expect(await chatData(s)).toMatchObject({ type: 'chat:moderation_log', data: { action: 'unban', target_user_id: 'troll' } });
  });

  test('user treatment updates are broadcast as chat:user_treatment_update', async () => {
    const owner = await devLogin(t);
    const s = await subscribed(owner);
    await t.app.modules.chat.updateUserTreatment({ accountId: owner.accountId!, platform: 'platform_a', platformUserId: 'sus', username: 'sus', treatment: 'restricted' });
    expect(await chatData(s)).toEqual({ type: 'chat:user_treatment_update', platform: 'platform_a', platform_user_id: 'sus', user_treatment: 'restricted' });
  });

  test('invalid ingest input is refused without a write', async () => {
    const owner = await devLogin(t);
    await expect(ingest(owner, { platform: 'nope' as never })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(ingest(owner, { platformMessageId: '' })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(t.app.modules.chat.recordModeration({ accountId: owner.accountId!, platform: 'platform_a', action: 'explode' as never })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await history(owner)).body._meta).toMatchObject({ total: 0 });
  });

  test('another account neither reads the history nor subscribes to the channel', async () => {
    const owner = await devLogin(t);
    const other = await devLogin(t);
    await ingest(owner, { message: 'private' });
    expect((await history(other)).body.data).toEqual([]);
    const s = await connect(t.wsUrl, { headers: bearer(other) });
    opened.push(s);
    await s.next();
    s.send({ type: 'subscribe', channel: `chat:${owner.accountId}` });
    expect(await s.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' });
  });
});

describe('history filters', () => {
  let owner: LoggedIn;
  const now = Date.now();
  const at = (hoursAgo: number) => new Date(now - hoursAgo * HOUR);
  beforeAll(async () => {
    owner = await devLogin(t);
    const rows: Partial<ChatIngest>[] = [
      { platformMessageId: 'a1', platform: 'platform_a', platformUserId: 'u1', message: 'Hello World', sentAt: at(1) },
      { platformMessageId: 'a2', platform: 'platform_a', platformUserId: 'u2', message: 'good morning', sentAt: at(2) },
      { platformMessageId: 'b1', platform: 'platform_b', platformUserId: 'u1', message: 'HELLO from b', liveChatId: 'live-1', sentAt: at(3) },
      { platformMessageId: 'b2', platform: 'platform_b', platformUserId: 'u3', message: '100% sure_thing', liveChatId: 'live-2', sentAt: at(4) },
      { platformMessageId: 'c1', platform: 'platform_c', platformUserId: 'u1', message: 'old hello', sentAt: at(13) },
      { platformMessageId: 'c2', platform: 'platform_c', platformUserId: 'u4', message: 'a, b and c', sentAt: at(5) },
    ];
    for (const r of rows) await ingest(owner, r);
  });
  const ids = (res: { body: { data: Row[] } }) => res.body.data.map((r) => r.platform_message_id);

  test('newest first, with platform, platform_user_id and live_chat_id filters', async () => {
    expect(ids(await history(owner))).toEqual(['a1', 'a2', 'b1', 'b2', 'c2', 'c1']);
    expect(ids(await history(owner, { platform: 'platform_b' }))).toEqual(['b1', 'b2']);
    expect(ids(await history(owner, { platform_user_id: 'u1' }))).toEqual(['a1', 'b1', 'c1']);
    expect(ids(await history(owner, { live_chat_id: 'live-2' }))).toEqual(['b2']);
    const bad = await history(owner, { platform: 'platform_x' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'platform must be one of platform_a, platform_b, platform_c' });
    const g = await gql(t.url, 'query($f: ChatFilterInput) { chatHistory(filter: $f) { items { platformMessageId } } }', { f: { platform: 'platform_x' } }, bearer(owner));
    expect(g.body.errors?.[0]).toMatchObject({ message: 'platform must be one of platform_a, platform_b, platform_c', extensions: { code: 'VALIDATION_ERROR' } });
  });

  test('from and to are inclusive; an unparseable time is a 400', async () => {
    expect(ids(await history(owner, { from: at(3).toISOString(), to: at(1).toISOString() }))).toEqual(['a1', 'a2', 'b1']);
    const bad = await history(owner, { to: 'tomorrow' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'to must be an RFC 3339 timestamp' });
  });

  test('keyword search: comma separated, case-insensitive, any keyword, blanks dropped, % and _ literal, last 12 hours without from', async () => {
    expect(ids(await history(owner, { search: 'hello' }))).toEqual(['a1', 'b1']);
    expect(ids(await history(owner, { search: ' MORNING , , world ' }))).toEqual(['a1', 'a2']);
    expect(ids(await history(owner, { search: '0%' }))).toEqual(['b2']);
    // As wildcards, `re%t` would match "sure_thing" and `ood_m` "good morning": they match literally.
    expect(ids(await history(owner, { search: 're%t' }))).toEqual([]);
    expect(ids(await history(owner, { search: 'ood_m' }))).toEqual([]);
    expect(ids(await history(owner, { search: 'sure_' }))).toEqual(['b2']);
    // Without from, only the last 12 hours; with from, the older message too.
    expect(ids(await history(owner, { search: 'hello', from: at(24).toISOString() }))).toEqual(['a1', 'b1', 'c1']);
    // Only blanks: no keyword search at all (and no 12-hour bound).
    expect(ids(await history(owner, { search: ' , ' }))).toHaveLength(6);
    // A keyword with a comma needs GraphQL's list.
    const g = await gql(t.url, 'query($f: ChatFilterInput) { chatHistory(filter: $f) { items { platformMessageId } total } }', { f: { search: ['a, b'] } }, bearer(owner));
    expect(g.body.data!.chatHistory).toEqual({ items: [{ platformMessageId: 'c2' }], total: 1 });
    expect(ids(await history(owner, { search: 'a, b' }))).toEqual(['b1', 'c2']);
  });

  test('at most 20 keywords of at most 100 characters, on both protocols', async () => {
    const twenty = Array.from({ length: 20 }, (_, i) => `kw${i}`);
    expect((await history(owner, { search: [...twenty, ' ', ''].join(',') })).status).toBe(200);
    const tooMany = await history(owner, { search: [...twenty, 'one-more'].join(',') });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'search may hold at most 20 keywords' });
    expect((await history(owner, { search: ` ${'x'.repeat(100)} ` })).status).toBe(200);
    const tooLong = await history(owner, { search: 'x'.repeat(101) });
    expect(tooLong.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'search keywords may be at most 100 characters' });
    const q = 'query($f: ChatFilterInput) { chatHistory(filter: $f) { total } }';
    const g1 = await gql(t.url, q, { f: { search: [...twenty, 'one-more'] } }, bearer(owner));
    expect(g1.body.errors?.[0]).toMatchObject({ message: 'search may hold at most 20 keywords', extensions: { code: 'VALIDATION_ERROR' } });
    const g2 = await gql(t.url, q, { f: { search: ['y'.repeat(101)] } }, bearer(owner));
    expect(g2.body.errors?.[0]).toMatchObject({ message: 'search keywords may be at most 100 characters', extensions: { code: 'VALIDATION_ERROR' } });
  });

  test('the keyword rules are the spec\'s: the search parameter\'s patterns agree with the service on every case', async () => {
    const parameters = (openapiDocument.paths['/chat/history'].get as { parameters: { name: string; schema: { allOf?: { pattern: string }[] } }[] }).parameters;
    const patterns = (parameters.find((p) => p.name === 'search')?.schema.allOf ?? []).map((rule) => new RegExp(rule.pattern, 'u'));
    expect(patterns).toHaveLength(2);
    const twenty = Array.from({ length: 20 }, (_, i) => `kw${i}`);
    const cases = [[...twenty, ' ', ''].join(','), [...twenty, 'one-more'].join(','), ` ${'x'.repeat(100)} `, 'x'.repeat(101), 'a b,,c', ',,,', `${'é'.repeat(100)},${'é'.repeat(101)}`];
    for (const search of cases) {
      const res = await history(owner, { search });
      expect([search.slice(0, 30), res.status]).toEqual([search.slice(0, 30), patterns.every((p) => p.test(search)) ? 200 : 400]);
    }
  });

  test('pagination: default 50, at most 100, pages on both protocols', async () => {
    const busy = await devLogin(t);
    for (let i = 0; i < 55; i++) await ingest(busy, { platformMessageId: `p-${String(i).padStart(2, '0')}`, sentAt: new Date(now - i * 1000) });
    const first = await history(busy);
    expect(first.body.data).toHaveLength(50);
    expect(first.body._meta).toEqual({ total: 55, page: 1, limit: 50, pages: 2 });
    const second = await history(busy, { page: '2' });
    expect(ids(second)).toEqual(['p-50', 'p-51', 'p-52', 'p-53', 'p-54']);
    expect((await history(busy, { limit: '100' })).body.data).toHaveLength(55);
    const over = await history(busy, { limit: '101' });
    expect(over.status).toBe(400);
    expect(over.body.error).toBe('VALIDATION_ERROR');
    const g = await gql(t.url, 'query($f: ChatFilterInput) { chatHistory(filter: $f) { items { platformMessageId } total page limit pages } }', { f: { page: 2, limit: 20 } }, bearer(busy));
    expect(g.body.data!.chatHistory).toMatchObject({ total: 55, page: 2, limit: 20, pages: 3 });
    const gOver = await gql(t.url, 'query($f: ChatFilterInput) { chatHistory(filter: $f) { total } }', { f: { limit: 101 } }, bearer(busy));
    expect(gOver.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
  });

  test('the gate: chat:read (a viewer is refused on both protocols)', async () => {
    const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    const rest = await history(viewer);
    expect(rest.status).toBe(403);
    expect(rest.body).toMatchObject({ error: 'FORBIDDEN', message: 'Missing permission: chat:read' });
    const g = await gql(t.url, '{ chatHistory { total } }', {}, bearer(viewer));
    expect(g.body.errors?.[0]).toMatchObject({ message: 'Missing permission: chat:read', extensions: { code: 'FORBIDDEN' } });
  });
});

describe('chatter search', () => {
  let owner: LoggedIn;
  const search = (query: Record<string, string>) => api(t, 'GET', '/chat/users/search', { token: owner.accessToken, query });
  const names = (res: { body: { data: Row[] } }) => res.body.data.map((r) => r.username);
  beforeAll(async () => {
    owner = await devLogin(t);
    const base = Date.now() - HOUR;
    const seen = async (user: { platform?: ChatIngest['platform']; id: string; username: string; displayName?: string | null; messages?: number; at: number }) => {
      for (let i = 0; i < (user.messages ?? 1); i++) {
        await ingest(owner, { platform: user.platform ?? 'platform_a', platformUserId: user.id, username: user.username, displayName: user.displayName ?? null, sentAt: new Date(user.at) });
      }
    };
    await seen({ id: '1', username: 'StreamFan', displayName: 'Mister Fan', at: base + 1000 });
    await seen({ id: '2', username: 'streamer_two', displayName: 'Two', at: base + 3000, messages: 1 });
    await seen({ id: '3', username: 'streamerXtwo', displayName: 'Three', at: base + 3000, messages: 3 });
    await seen({ id: '4', username: 'misc', displayName: 'Streak Holder', at: base + 2000, platform: 'platform_c' });
    await seen({ id: '5', username: '100%real', displayName: null, at: base + 500 });
    await seen({ id: '6', username: '100xreal', displayName: null, at: base + 400 });
    await seen({ id: '7', username: 'back\\slash', displayName: null, at: base + 300 });
    await seen({ id: '8', username: 'backxslash', displayName: null, at: base + 200 });
  });

  test('case-insensitive prefix over username and display name, ordered by last seen then message count', async () => {
    expect(names(await search({ q: 'STRE' }))).toEqual(['streamerXtwo', 'streamer_two', 'misc', 'StreamFan']);
    expect(names(await search({ q: 'mister' }))).toEqual(['StreamFan']);
    expect(names(await search({ q: 'ream' }))).toEqual([]);
    expect(names(await search({ q: 'stre', platform: 'platform_c' }))).toEqual(['misc']);
    expect(names(await search({ q: 'stre', platform: 'platform_a, platform_c' }))).toHaveLength(4);
    const g = await gql(t.url, 'query($q: String, $p: [String!], $l: Int) { searchPlatformUsers(query: $q, platforms: $p, limit: $l) { platform platformUserId username displayName avatarUrl lastSeenAt messageCount } }', { q: 'STRE', p: ['platform_a'], l: 2 }, bearer(owner));
    expect(g.body.data!.searchPlatformUsers).toEqual([
      { platform: 'platform_a', platformUserId: '3', username: 'streamerXtwo', displayName: 'Three', avatarUrl: null, lastSeenAt: expect.any(String), messageCount: 3 },
      { platform: 'platform_a', platformUserId: '2', username: 'streamer_two', displayName: 'Two', avatarUrl: null, lastSeenAt: expect.any(String), messageCount: 1 },
    ]);
  });

  test('%, _ and backslash match literally', async () => {
    expect(names(await search({ q: 'streamer_' }))).toEqual(['streamer_two']);
    expect(names(await search({ q: '100%' }))).toEqual(['100%real']);
    expect(names(await search({ q: 'back\\' }))).toEqual(['back\\slash']);
  });

  test('under 2 characters after trimming answers an empty list', async () => {
    expect((await search({ q: ' s ' })).body.data).toEqual([]);
    expect((await search({})).body.data).toEqual([]);
    expect(names(await search({ q: ' st ' }))).toHaveLength(4);
  });

  test('limit defaults to 10 and is capped at 25', async () => {
    const crowd = await devLogin(t);
    for (let i = 0; i < 30; i++) await t.app.modules.chat.ingestMessage({ accountId: crowd.accountId!, platform: 'platform_b', platformMessageId: `c-${i}`, platformUserId: `c-${i}`, username: `crowd${i}`, message: 'hi' });
    const q = (query: Record<string, string>) => api(t, 'GET', '/chat/users/search', { token: crowd.accessToken, query: { q: 'crowd', ...query } });
    expect((await q({})).body.data).toHaveLength(10);
    expect((await q({ limit: '25' })).body.data).toHaveLength(25);
    expect((await q({ limit: '100' })).body.data).toHaveLength(25);
    expect((await q({ limit: '0' })).body.data).toHaveLength(1);
    const g = await gql(t.url, '{ searchPlatformUsers(query: "crowd", limit: 500) { username } }', {}, bearer(crowd));
    expect(g.body.data!.searchPlatformUsers).toHaveLength(25);
  });

  test('gate: chat:userinfo and feature:multichat', async () => {
    const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    const res = await api(t, 'GET', '/chat/users/search', { token: viewer.accessToken, query: { q: 'stre' } });
    expect(res.body).toMatchObject({ error: 'FORBIDDEN', message: 'Missing permission: chat:userinfo' });
  });
});

describe('retention', () => {
  test('the events retention run also deletes chat rows older than the effective chat_retention_days', async () => {
    const ops = await devLogin(t, opsEmail);
    const owner = await devLogin(t);
    const keeper = await devLogin(t);
    // The windows are set before the rows arrive: the app's own periodic retention job (offered when
    // the app starts) may run at any moment in between, and must see the windows this test means.
    const set = await api(t, 'PUT', `/admin/accounts/${owner.accountId}/retention`, { token: ops.accessToken, body: { chat_retention_days: 30 } });
    expect(set.status).toBe(200);
    expect((await api(t, 'PUT', `/admin/accounts/${keeper.accountId}/retention`, { token: ops.accessToken, body: { chat_retention_days: 0 } })).status).toBe(200);
    await ingest(owner, { platformMessageId: 'old', sentAt: new Date(Date.now() - 40 * 24 * HOUR) });
    await ingest(owner, { platformMessageId: 'recent', sentAt: new Date(Date.now() - 10 * 24 * HOUR) });
    await ingest(keeper, { platformMessageId: 'kept', sentAt: new Date(Date.now() - 400 * 24 * HOUR) });
    await t.app.modules.chat.recordModeration({ accountId: owner.accountId!, platform: 'platform_a', action: 'ban', targetUserId: 'x' });
    await t.app.modules.events.sweepRetention();
    expect((await history(owner)).body.data.map((r: Row) => r.platform_message_id)).toEqual(['recent']);
    expect((await history(keeper)).body.data.map((r: Row) => r.platform_message_id)).toEqual(['kept']);
    // The chat sweep on its own finds nothing more to delete.
    expect(await t.app.modules.chat.sweepRetention()).toBe(0);
  });
});
