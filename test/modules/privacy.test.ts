/**
 * Privacy erasure over real HTTP and GraphQL: `POST /v1/admin/privacy/chat/erase`
 * and `DELETE /v1/admin/privacy/platform_b/member/{id}` with their twins erase one platform user's
 * chat messages (and quotes of them), chatter profiles, moderation log entries, event payload
 * identifiers and top-chatter rows in every account, leave another user's data untouched, stop
 * every read (REST and GraphQL, a kept event page included) from showing them, audit without the
 * erased data, answer zeros on a repeat, 403 without `admin:privacy-erase` and 400 on a bad body.
 */
import { randomUUID } from 'node:crypto';
import { deidentify } from '../../src/modules/events/erase';
import { createPrivacyService } from '../../src/modules/privacy/service';
import { gql, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const opsEmail = `ops-${randomUUID()}@example.test`;
const crawler = systemKey('crawler', []);
const t = useTestApp({ auth: { bootstrap_admins: [opsEmail], system_keys: [crawler.config] } });

type Row = Record<string, unknown>;
const bearer = (user: LoggedIn) => ({ authorization: `Bearer ${user.accessToken}` });
const ERASE = 'mutation($i: AdminEraseChatSubjectInput!) { adminEraseChatSubject(input: $i) { platform subjectHash erased { chatMessages chatUsers moderationEntries events statsRows } } }';
const ERASE_B = 'mutation($id: String!) { adminErasePlatformBMember(id: $id) { platform subjectHash erased { chatMessages chatUsers moderationEntries events statsRows } } }';

let ops: LoggedIn;
let a: LoggedIn;
let b: LoggedIn;
let nobody: LoggedIn;

const erase = (body: unknown, user: LoggedIn = ops) => api(t, 'POST', '/admin/privacy/chat/erase', { token: user.accessToken, body });
const emit = (user: LoggedIn, body: Row) => api(t, 'POST', '/events/emit', { token: user.accessToken, body });
const events = async (user: LoggedIn, query: Record<string, string> = {}) => (await api(t, 'GET', '/events', { token: user.accessToken, query: { limit: '100', ...query } })).body;
const history = async (user: LoggedIn, query: Record<string, string> = {}) => (await api(t, 'GET', '/chat/history', { token: user.accessToken, query: { limit: '100', ...query } })).body.data as Row[];
const chatters = async (user: LoggedIn, q: string) => (await api(t, 'GET', '/chat/users/search', { token: user.accessToken, query: { q } })).body.data as Row[];

function say(user: LoggedIn, platform: 'platform_a' | 'platform_b', platformUserId: string, username: string, message: string, extra: Row = {}) {
  const platformMessageId = `m-${randomUUID()}`;
  return t.app.modules.chat.ingestMessage({ accountId: user.accountId!, platform, platformMessageId, platformUserId, username, displayName: username, message, ...extra }).then(() => platformMessageId);
}

beforeAll(async () => {
  ops = await devLogin(t, opsEmail);
  a = await devLogin(t);
  b = await devLogin(t);
  nobody = await devLogin(t);
});

describe('chat erasure', () => {
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    // The subject `u-sub` (SubjectGuy) chats in accounts A and B; `u-keep` (keeper) in A quotes them.
    const first = await say(a, 'platform_a', 'u-sub', 'SubjectGuy', 'my secret opinion');
    await say(a, 'platform_a', 'u-sub', 'SubjectGuy', 'second thought');
    await say(b, 'platform_a', 'u-sub', 'SubjectGuy', 'hello from b');
    const kept = await say(a, 'platform_a', 'u-keep', 'keeper', 'keeper speaks');
    await t.app.modules.chat.ingestMessage({
      accountId: a.accountId!,
      platform: 'platform_a',
      platformMessageId: `m-${randomUUID()}`,
      platformUserId: 'u-keep',
      username: 'keeper',
      message: 'replying',
      reply: { messageId: first, username: 'SubjectGuy', message: 'my secret opinion' },
    } as Parameters<typeof t.app.modules.chat.ingestMessage>[0]);
    // The moderation log: the subject timed out (target) and deleting keeper's message (moderator).
    await t.app.modules.chat.recordModeration({ accountId: a.accountId!, platform: 'platform_a', action: 'timeout', platformActionId: `x-${randomUUID()}`, targetUserId: 'u-sub', targetUsername: 'SubjectGuy', moderatorUserId: 'u-keep', moderatorName: 'keeper', durationSecs: 60, raw: { target: 'SubjectGuy' } });
    await t.app.modules.chat.recordModeration({ accountId: a.accountId!, platform: 'platform_a', action: 'delete', platformActionId: `x-${randomUUID()}`, targetUserId: 'u-keep', targetUsername: 'keeper', moderatorUserId: 'u-sub', moderatorName: 'SubjectGuy', raw: { platform_message_id: kept, by: 'SubjectGuy' } });

    const cheer = await emit(a, { type: 'platform_a:cheer', platform: 'platform_a', raw: { user_id: 'u-sub', user_name: 'SubjectGuy', display_name: 'SubjectGuy', message: 'cheer100 my secret', bits: 100 } });
    ids.cheer = (cheer.body.data as Row).id as string;
    const raid = await emit(a, { type: 'platform_a:raid', platform: 'platform_a', raw: { from_broadcaster_user_login: 'subjectguy', from_broadcaster_user_name: 'SubjectGuy', viewers: 12 } });
    ids.raid = (raid.body.data as Row).id as string;
    const gift = await emit(b, { type: 'platform_a:subscription', platform: 'platform_a', raw: { user_id: 'u-keep', user_name: 'keeper', recipient_user_id: 'u-sub', recipient_user_name: 'SubjectGuy', tier: '1000' } });
    ids.gift = (gift.body.data as Row).id as string;
    const follow = await emit(a, { type: 'platform_a:follower', platform: 'platform_a', raw: { user_id: 'u-keep', user_name: 'keeper' } });
    ids.follow = (follow.body.data as Row).id as string;
    // Another platform's user who happens to have the same id is someone else.
    const other = await emit(a, { type: 'platform_c:follower', platform: 'platform_c', raw: { user_id: 'u-sub', user_name: 'SomeoneElse' } });
    ids.other = (other.body.data as Row).id as string;

    const stats = await api(t, 'POST', '/internal/public-stats/samples', {
      token: crawler.key,
      body: {
        channels: [{ platform: 'platform_a', platform_channel_id: 'priv-ch', login: 'privchan', show_top_chatters: true }],
        streams: [
          {
            platform: 'platform_a',
            broadcast_id: 'priv-live',
            platform_channel_id: 'priv-ch',
            started_at: new Date(Date.now() - 30 * 60_000).toISOString(),
            samples: [{ at: new Date(Date.now() - 20 * 60_000).toISOString(), viewers: 10, messages: 9 }],
            chatters: [
              { login: 'SubjectGuy', display_name: 'SubjectGuy', messages: 7 },
              { login: 'keeper', display_name: 'keeper', messages: 2 },
            ],
          },
        ],
      },
    });
    expect(stats.status).toBe(200);
  });

  test('before: every read shows the subject (and the event page is kept)', async () => {
    expect((await history(a, { platform_user_id: 'u-sub' })).length).toBe(2);
    expect((await chatters(a, 'subj')).map((c) => c.platform_user_id)).toEqual(['u-sub']);
    expect((await events(a, { user_id: 'u-sub' }))._meta.total).toBe(2);
    // Read twice: the second answer may come from the kept page.
    for (let i = 0; i < 2; i += 1) expect(((await events(a)).data as Row[]).find((e) => e.id === ids.cheer)!.raw).toMatchObject({ user_id: 'u-sub' });
    const summary = await api(t, 'GET', '/public-stats/streams/platform_a/priv-live');
    expect((summary.body.data as Row).top_chatters).toEqual([
      { login: 'subjectguy', display_name: 'SubjectGuy', message_count: 7 },
      { login: 'keeper', display_name: 'keeper', message_count: 2 },
    ]);
  });

  test('403 without admin:privacy-erase on both protocols; nothing erased', async () => {
    const res = await erase({ platform: 'platform_a', platform_user_id: 'u-sub' }, nobody);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('FORBIDDEN');
    const g = await gql(t.url, ERASE, { i: { platform: 'platform_a', platformUserId: 'u-sub' } }, bearer(nobody));
    expect(g.body.errors?.[0]).toMatchObject({ message: res.body.message, extensions: { code: 'FORBIDDEN' } });
    const del = await api(t, 'DELETE', '/admin/privacy/platform_b/member/UCx', { token: nobody.accessToken });
    expect(del.status).toBe(403);
    expect((await history(a, { platform_user_id: 'u-sub' })).length).toBe(2);
  });

  test('400 on a bad body, the same words on GraphQL; nothing erased', async () => {
    const platform = await erase({ platform: 'platform_x', platform_user_id: 'u-sub' });
    expect(platform.status).toBe(400);
    expect(platform.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Unsupported platform: platform_x' });
    const gPlatform = await gql(t.url, ERASE, { i: { platform: 'platform_x', platformUserId: 'u-sub' } }, bearer(ops));
    expect(gPlatform.body.errors?.[0]).toMatchObject({ message: 'Unsupported platform: platform_x', extensions: { code: 'VALIDATION_ERROR' } });

    const empty = await erase({ platform: 'platform_a', platform_user_id: '' });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ error: 'VALIDATION_ERROR', message: 'platform_user_id must be 1 to 200 characters' });
    const gEmpty = await gql(t.url, ERASE, { i: { platform: 'platform_a', platformUserId: '' } }, bearer(ops));
    expect(gEmpty.body.errors?.[0]).toMatchObject({ message: 'platform_user_id must be 1 to 200 characters', extensions: { code: 'VALIDATION_ERROR' } });
    const long = await erase({ platform: 'platform_a', platform_user_id: 'x'.repeat(201) });
    expect(long.body).toEqual({ error: 'VALIDATION_ERROR', message: 'platform_user_id must be 1 to 200 characters' });

    for (const body of [{ platform: 'platform_a' }, { platform_user_id: 'u-sub' }, { platform: 'platform_a', platform_user_id: 'u-sub', extra: 1 }, { platform: 'platform_a', platform_user_id: 7 }, []]) {
      const res = await erase(body);
      expect([body, res.status, res.body.error]).toEqual([body, 400, 'VALIDATION_ERROR']);
    }
    expect((await history(a, { platform_user_id: 'u-sub' })).length).toBe(2);
  });

  test('erases the subject everywhere in one request and answers the counts', async () => {
    const res = await erase({ platform: 'platform_a', platform_user_id: 'u-sub' });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      platform: 'platform_a',
      subject_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      // 3 messages deleted (A twice, B once) + keeper's reply unquoted; profiles in A and B;
      // the timeout naming them deleted and the delete they made unnamed; cheer, raid, gift.
      erased: { chat_messages: 4, chat_users: 2, moderation_entries: 2, events: 3, stats_rows: 1 },
    });
    ids.hash = (res.body.data as Row).subject_hash as string;
  });

  test('after: no read shows the subject; the other user is untouched', async () => {
    // Chat history (REST and GraphQL), chatter search, in both accounts.
    const rowsA = await history(a);
    expect(rowsA.map((m) => m.platform_user_id)).toEqual(['u-keep', 'u-keep']);
    expect(await history(b)).toEqual([]);
    const reply = rowsA.find((m) => m.message === 'replying')!;
    expect(reply).toMatchObject({ reply_to_username: null, reply_to_message: null });
    const deleted = rowsA.find((m) => m.message === 'keeper speaks')!;
    expect(deleted).toMatchObject({ is_deleted: true, deleted_by: null });
    const g = await gql(t.url, '{ chatHistory(filter: { limit: 100 }) { items { platformUserId username message replyToUsername } total } }', {}, bearer(a));
    expect(g.body.errors).toBeUndefined();
    const gItems = (g.body.data!.chatHistory as { items: Row[] }).items;
    expect(gItems.map((m) => m.platformUserId)).toEqual(['u-keep', 'u-keep']);
    expect(JSON.stringify(g.body)).not.toMatch(/subject|secret/i);
    expect(await chatters(a, 'subj')).toEqual([]);
    expect(await chatters(b, 'subj')).toEqual([]);
    expect((await chatters(a, 'kee')).map((c) => c.platform_user_id)).toEqual(['u-keep']);
    const gSearch = await gql(t.url, '{ searchPlatformUsers(query: "subj") { platformUserId } }', {}, bearer(a));
    expect(gSearch.body.data!.searchPlatformUsers).toEqual([]);

    // Moderation log: the row naming them as target is gone, the row they made names nobody.
    const log = await t.app.db.knex('chat_moderation_log').where({ account_id: a.accountId });
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ action: 'delete', target_user_id: 'u-keep', moderator_user_id: null, moderator_name: null });
    expect(JSON.stringify(log)).not.toMatch(/subject/i);

    // Events: the rows stay, de-identified; the kept page is not served stale.
    const pageA = await events(a);
    const byId = new Map((pageA.data as Row[]).map((e) => [e.id, e.raw as Row]));
    expect(byId.get(ids.cheer)).toEqual({ user_id: null, user_name: null, display_name: null, message: null, bits: 100 });
    expect(byId.get(ids.raid)).toEqual({ from_broadcaster_user_login: null, from_broadcaster_user_name: null, viewers: 12 });
    expect(byId.get(ids.follow)).toEqual({ user_id: 'u-keep', user_name: 'keeper' });
    expect(byId.get(ids.other)).toEqual({ user_id: 'u-sub', user_name: 'SomeoneElse' });
    const pageB = await events(b);
    expect((pageB.data as Row[]).find((e) => e.id === ids.gift)!.raw).toEqual({ user_id: 'u-keep', user_name: 'keeper', recipient_user_id: null, recipient_user_name: null, tier: '1000' });
    expect((await events(a, { user_id: 'u-sub', platform: 'platform_a' }))._meta.total).toBe(0);
    expect((await events(a, { search: 'SubjectGuy' }))._meta.total).toBe(0);
    const gEvents = await gql(t.url, '{ events(filter: { platform: "platform_a", limit: 100 }) { items { id raw } } }', {}, bearer(a));
    expect(gEvents.body.errors).toBeUndefined();
    expect(JSON.stringify(gEvents.body)).not.toMatch(/subject|u-sub|secret/i);

    // Public statistics: top chatters without them, REST and GraphQL.
    const summary = await api(t, 'GET', '/public-stats/streams/platform_a/priv-live');
    expect((summary.body.data as Row).top_chatters).toEqual([{ login: 'keeper', display_name: 'keeper', message_count: 2 }]);
    const gSummary = await gql(t.url, '{ publicStreamSummary(platform: "platform_a", broadcastId: "priv-live") { topChatters { login } } }');
    expect(gSummary.body.data!.publicStreamSummary).toEqual({ topChatters: [{ login: 'keeper' }] });
  });

  test('the audit row carries the counts and the subject hash, never the erased data', async () => {
    const log = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken, query: { type: 'system:privacy_erased' } });
    expect(log.status).toBe(200);
    const items = log.body.items as Row[];
    const mine = items.filter((i) => (i.metadata as Row).subject_hash === ids.hash);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      scope: 'system',
      type: 'system:privacy_erased',
      actor_id: ops.userId,
      metadata: { route: 'chat', platform: 'platform_a', subject_hash: ids.hash, username_given: false, erased: { chat_messages: 4, chat_users: 2, moderation_entries: 2, events: 3, stats_rows: 1 } },
    });
    expect(JSON.stringify(items)).not.toMatch(/subjectguy|u-sub|secret/i);
  });

  test('a repeat is a no-op answering zeros, on REST and GraphQL; the body username reaches a login never seen in chat', async () => {
    const zeros = { chat_messages: 0, chat_users: 0, moderation_entries: 0, events: 0, stats_rows: 0 };
    const again = await erase({ platform: 'platform_a', platform_user_id: 'u-sub' });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ platform: 'platform_a', subject_hash: ids.hash, erased: zeros });
    const g = await gql(t.url, ERASE, { i: { platform: 'platform_a', platformUserId: 'u-sub' } }, bearer(ops));
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data!.adminEraseChatSubject).toEqual({
      platform: 'platform_a',
      subjectHash: ids.hash,
      erased: { chatMessages: 0, chatUsers: 0, moderationEntries: 0, events: 0, statsRows: 0 },
    });
    // keeper untouched so far; erased by login alone through the body's username (statistics know logins only).
    const byName = await erase({ platform: 'platform_a', platform_user_id: 'u-keep-unknown', username: 'KEEPER' });
    expect(byName.body.data).toMatchObject({ erased: { chat_messages: 0, chat_users: 0, stats_rows: 1 } });
    const summary = await api(t, 'GET', '/public-stats/streams/platform_a/priv-live');
    expect((summary.body.data as Row).top_chatters).toEqual([]);
  });
});

describe('platform_b member erasure', () => {
  test('DELETE erases the member everywhere on platform_b only; a repeat and the GraphQL twin answer zeros', async () => {
    await say(a, 'platform_b', 'UCmember', 'MemberName', 'member text');
    await say(b, 'platform_b', 'UCmember', 'MemberName', 'member text b');
    await say(a, 'platform_a', 'UCmember', 'samename', 'same id elsewhere');
    await say(a, 'platform_b', 'UCstays', 'Stays', 'staying');
    const ev = await emit(a, { type: 'platform_b:superchat', platform: 'platform_b', raw: { user_id: 'UCmember', display_name: 'MemberName', amount: 5 } });
    const evId = (ev.body.data as Row).id as string;

    const res = await api(t, 'DELETE', '/admin/privacy/platform_b/member/UCmember', { token: ops.accessToken });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      platform: 'platform_b',
      subject_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      erased: { chat_messages: 2, chat_users: 2, moderation_entries: 0, events: 1, stats_rows: 0 },
    });
    expect((await history(a, { platform: 'platform_b' })).map((m) => m.platform_user_id)).toEqual(['UCstays']);
    expect(await history(b, { platform: 'platform_b' })).toEqual([]);
    expect((await history(a, { platform: 'platform_a', platform_user_id: 'UCmember' })).length).toBe(1);
    expect(((await events(a)).data as Row[]).find((e) => e.id === evId)!.raw).toEqual({ user_id: null, display_name: null, amount: 5 });

    const again = await api(t, 'DELETE', '/admin/privacy/platform_b/member/UCmember', { token: ops.accessToken });
    expect(again.body.data).toMatchObject({ erased: { chat_messages: 0, chat_users: 0, moderation_entries: 0, events: 0, stats_rows: 0 } });
    const g = await gql(t.url, ERASE_B, { id: 'UCmember' }, bearer(ops));
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data!.adminErasePlatformBMember).toMatchObject({ platform: 'platform_b', subjectHash: (res.body.data as Row).subject_hash, erased: { chatMessages: 0, events: 0 } });

    const gForbidden = await gql(t.url, ERASE_B, { id: 'UCmember' }, bearer(nobody));
    expect(gForbidden.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const long = await api(t, 'DELETE', `/admin/privacy/platform_b/member/${'x'.repeat(201)}`, { token: ops.accessToken });
    expect(long.body).toEqual({ error: 'VALIDATION_ERROR', message: 'id must be 1 to 200 characters' });
    const gLong = await gql(t.url, ERASE_B, { id: 'x'.repeat(201) }, bearer(ops));
    expect(gLong.body.errors?.[0]).toMatchObject({ message: 'id must be 1 to 200 characters', extensions: { code: 'VALIDATION_ERROR' } });

    const log = await api(t, 'GET', '/admin/audit-log', { token: ops.accessToken, query: { type: 'system:privacy_erased' } });
    const rows = (log.body.items as Row[]).filter((i) => (i.metadata as Row).route === 'platform_b_member');
    expect(rows).toHaveLength(3);
    expect(JSON.stringify(rows)).not.toMatch(/UCmember|MemberName|member text/);
  });
});

describe('one transaction', () => {
  test('a failing step leaves every module as it was, and no audit row', async () => {
    await say(a, 'platform_a', 'u-atomic', 'atomicguy', 'still here');
    const audit = async () => Number(((await t.app.db.knex('audit_log').where({ type: 'system:privacy_erased' }).count({ n: '*' }).first()) as { n: string | number }).n);
    const before = await audit();
    const failing = createPrivacyService({
      knex: t.app.db.knex,
      chat: t.app.modules.chat,
      events: t.app.modules.events,
      stats: {
        eraseChatters: async () => {
          throw new Error('statistics store down');
        },
      },
      audit: t.app.modules.audit,
      mail: t.app.modules.mail,
    });
    await expect(failing.eraseChatSubject({ userId: ops.userId } as never, { platform: 'platform_a', platformUserId: 'u-atomic' })).rejects.toThrow('statistics store down');
    expect((await history(a, { platform_user_id: 'u-atomic' })).map((m) => m.message)).toEqual(['still here']);
    expect((await chatters(a, 'atom')).length).toBe(1);
    expect(await audit()).toBe(before);
  });
});

describe('deidentify', () => {
  const subject = { platformUserId: '42', logins: new Set(['neo']) };
  test('clears each group naming the subject (snake or camel case, nested, numeric ids) and leaves the rest', () => {
    const raw = {
      userId: 42,
      userName: 'Neo',
      text: 'hi',
      amount: 3,
      gifter: { user_login: 'trinity', display_name: 'Trinity' },
      giftRecipients: [
        { user_id: '42', user_name: 'neo', display_name: 'Neo' },
        { user_id: '7', user_name: 'morpheus', display_name: 'Morpheus' },
      ],
      toBroadcasterUserLogin: 'NEO',
      toBroadcasterUserId: null,
    };
    expect(deidentify(raw, subject)).toEqual({
      userId: null,
      userName: null,
      text: null,
      amount: 3,
      gifter: { user_login: 'trinity', display_name: 'Trinity' },
      giftRecipients: [
        { user_id: null, user_name: null, display_name: null },
        { user_id: '7', user_name: 'morpheus', display_name: 'Morpheus' },
      ],
      toBroadcasterUserLogin: null,
      toBroadcasterUserId: null,
    });
    expect(raw.userName).toBe('Neo');
  });

  test('answers null when the payload does not name the subject (a display name alone does not)', () => {
    expect(deidentify({ user_id: '420', display_name: 'neo', note: 'neo 42' }, subject)).toBeNull();
    expect(deidentify({}, subject)).toBeNull();
  });
});
