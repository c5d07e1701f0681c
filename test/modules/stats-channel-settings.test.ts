/**
 * A creator's own channel in public statistics: reading and setting the opt-out and
 * `show_top_chatters` of the active account's connected channels (`public-stats:read|edit`),
 * REST and GraphQL twins; an opted-out channel is out of the directory (its pages answer 404), and a later crawler batch
 * does not undo the creator's choice.
 */
import { randomUUID } from 'node:crypto';
import { gql, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const crawler = systemKey('crawler', []);
const operatorEmail = `stats-ops-${randomUUID()}@example.test`;
const t = useTestApp({ rate_limits: { enabled: false }, auth: { system_keys: [crawler.config], bootstrap_admins: [operatorEmail] } });
/** The directory row's opt-out, as every public page reads it. */
const optedOut = async (id: string) => Boolean((await t.app.db.knex('ps_channels').where({ platform: 'platform_a', platform_channel_id: id }).first('opted_out'))?.opted_out);
const ingest = (body: unknown) => api(t, 'POST', '/internal/public-stats/samples', { token: crawler.key, body });

let ops: LoggedIn;
beforeAll(async () => {
  ops = await devLogin(t, operatorEmail);
});

async function creatorWithChannel(channelId: string): Promise<LoggedIn> {
  const owner = await devLogin(t);
  const connected = await api(t, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_a`, { token: ops.accessToken, body: { platform_channel_id: channelId } });
  expect(connected.status).toBeLessThan(300);
  return owner;
}

test('the creator reads and sets the opt-out and top chatters of their channel; the crawler does not undo it', async () => {
  const id = `ch-${randomUUID().slice(0, 8)}`;
  const login = `login${id.replace(/-/g, '')}`;
  expect((await ingest({ channels: [{ platform: 'platform_a', platform_channel_id: id, login }] })).status).toBe(200);
  const owner = await creatorWithChannel(id);

  const read = await api(t, 'GET', '/account/public-stats', { token: owner.accessToken });
  expect(read.status).toBe(200);
  expect(read.body.data).toEqual([{ platform: 'platform_a', platform_channel_id: id, opted_out: false, show_top_chatters: false }]);
  expect(await optedOut(id)).toBe(false);

  const set = await api(t, 'PATCH', '/account/public-stats/platform_a', { token: owner.accessToken, body: { opted_out: true } });
  expect(set.status).toBe(200);
  expect(set.body.data).toEqual({ platform: 'platform_a', platform_channel_id: id, opted_out: true, show_top_chatters: false });
  expect(await optedOut(id)).toBe(true);
  expect((await api(t, 'GET', `/public-stats/channels/platform_a/${login}/trends`, { query: { range: 'DAYS_30' } })).status).toBe(404);

  // A crawler batch that says nothing, or the opposite, leaves the creator's choice.
  expect((await ingest({ channels: [{ platform: 'platform_a', platform_channel_id: id, login, opted_out: false }] })).status).toBe(200);
  expect(await optedOut(id)).toBe(true);

  const g = await gql(t.url, 'mutation { updateAccountPublicStatsSettings(platform: "platform_a", input: { optedOut: false, showTopChatters: true }) { platformChannelId optedOut showTopChatters } }', {}, { authorization: `Bearer ${owner.accessToken}` });
  expect(g.body.data!.updateAccountPublicStatsSettings).toEqual({ platformChannelId: id, optedOut: false, showTopChatters: true });
  const gRead = await gql(t.url, '{ accountPublicStatsSettings { optedOut showTopChatters } }', {}, { authorization: `Bearer ${owner.accessToken}` });
  expect(gRead.body.data!.accountPublicStatsSettings).toEqual([{ optedOut: false, showTopChatters: true }]);
  expect(await optedOut(id)).toBe(false);

  const log = await api(t, 'GET', '/account/audit-log', { token: owner.accessToken, query: { type: 'account:public_stats_updated' } });
  expect(log.body.items).toHaveLength(2);
});

test('a channel the crawler does not know yet: the choice is kept and applies when it arrives', async () => {
  const id = `new-${randomUUID().slice(0, 8)}`;
  const owner = await creatorWithChannel(id);
  expect((await api(t, 'PATCH', '/account/public-stats/platform_a', { token: owner.accessToken, body: { opted_out: true } })).body.data.opted_out).toBe(true);
  const login = `l${id.replace(/-/g, '')}`;
  expect((await ingest({ channels: [{ platform: 'platform_a', platform_channel_id: id, login }] })).status).toBe(200);
  expect(await optedOut(id)).toBe(true);
});

test('no connected channel is 404; a bad platform 400; moderators read, only public-stats:edit writes', async () => {
  const owner = await devLogin(t);
  expect((await api(t, 'GET', '/account/public-stats', { token: owner.accessToken })).body.data).toEqual([]);
  const none = await api(t, 'PATCH', '/account/public-stats/platform_b', { token: owner.accessToken, body: { opted_out: true } });
  expect([none.status, none.body]).toEqual([404, { error: 'NOT_FOUND', message: 'No channel connected on platform_b' }]);
  const gNone = await gql(t.url, 'mutation { updateAccountPublicStatsSettings(platform: "platform_b", input: { optedOut: true }) { optedOut } }', {}, { authorization: `Bearer ${owner.accessToken}` });
  expect(gNone.body.errors?.[0]).toMatchObject({ message: 'No channel connected on platform_b', extensions: { code: 'NOT_FOUND' } });
  const bad = await gql(t.url, 'mutation { updateAccountPublicStatsSettings(platform: "platform_z", input: { optedOut: true }) { optedOut } }', {}, { authorization: `Bearer ${owner.accessToken}` });
  expect(bad.body.errors?.[0]).toMatchObject({ message: 'params.platform must be equal to one of the allowed values: platform_a, platform_b, platform_c', extensions: { code: 'VALIDATION_ERROR' } });
  expect((await api(t, 'PATCH', '/account/public-stats/platform_z', { token: owner.accessToken, body: {} })).status).toBe(400);

  const moderator = await joinAccount(t, owner, await devLogin(t), { role: 'moderator' });
  expect((await api(t, 'GET', '/account/public-stats', { token: moderator.accessToken })).status).toBe(200);
  const refused = await api(t, 'PATCH', '/account/public-stats/platform_a', { token: moderator.accessToken, body: { opted_out: true } });
  expect([refused.status, refused.body]).toEqual([403, { error: 'FORBIDDEN', message: 'Missing permission: public-stats:edit' }]);
});
