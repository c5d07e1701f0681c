/**
 * Public statistics (Part 2, "Public statistics", "Emote (directory)") over real HTTP, GraphQL
 * and WebSocket: the crawler ingestion (system key only, all-or-nothing), trends for the four
 * ranges, panel history, the stream summary with every field, top chatters only on opt-in and
 * shared chat sources, the 90-day GIF erasure, metadata history bounds, browse metrics,
 * clamping and headers, games, the emote directory with its exact Cache-Control, opt-outs, the
 * `system:public_stats` kill-switch on every surface, the monthly sample partitions, and the
 * `bootstrap` snapshot on `public-stats:{platform}:{broadcast_id}`.
 */
import { gql, systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const crawler = systemKey('crawler', []);
const t = useTestApp({ auth: { system_keys: [crawler.config] } });
const opened = closeSocketsAfterEach();

const DAY = 86_400_000;
const now = Date.now();
const today = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
/** Noon UTC `n` days ago, plus `minutes`. */
const dayAt = (n: number, minutes = 0) => new Date(today - n * DAY + 12 * 3_600_000 + minutes * 60_000).toISOString();
const date = (n: number) => new Date(today - n * DAY).toISOString().slice(0, 10);
const recent = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();

const ingest = (body: unknown, token = crawler.key) => api(t, 'POST', '/internal/public-stats/samples', { token, body });
const KILL = "Feature 'system:public_stats' is not available";

let user: LoggedIn;

beforeAll(async () => {
  user = await devLogin(t);
  const seeded = await ingest({
    channels: [
      {
        platform: 'platform_a',
        platform_channel_id: 'a1',
        login: 'AlphaTV',
        display_name: 'Alpha TV',
        broadcaster_type: 'partner',
        follower_count: 900,
        sampled_at: dayAt(40),
        panels: [
          { panel_id: 'p1', ad: true, title: 'Old sponsor', description: 'Buy it', image_url: 'https://img.test/p1a.png', link_url: 'https://shop.test' },
          { panel_id: 'p2', ad: true, title: 'Gone soon', image_url: 'https://img.test/p2.png' },
          { panel_id: 'p3', ad: false, title: 'About me' },
        ],
      },
      { platform: 'platform_a', platform_channel_id: 'b1', login: 'betacast', display_name: 'Beta', opted_out: true, show_top_chatters: true },
      { platform: 'platform_a', platform_channel_id: 'g1', login: 'gammaLive', display_name: 'Gamma', broadcaster_type: 'affiliate', show_top_chatters: true },
      { platform: 'platform_b', platform_channel_id: 'UCdelta', login: 'delta', display_name: 'Delta Videos' },
      { platform: 'platform_a', platform_channel_id: 'e1', login: 'emptychan', display_name: 'No streams' },
    ],
    streams: [
      { platform: 'platform_a', broadcast_id: 'a-old', platform_channel_id: 'a1', started_at: dayAt(40, -5), ended_at: dayAt(40, 30), title: 'Old stream', category: 'Chess', samples: [{ at: dayAt(40), viewers: 50, messages: 5 }] },
      {
        platform: 'platform_a',
        broadcast_id: 'a-s1',
        platform_channel_id: 'a1',
        started_at: dayAt(2, -10),
        ended_at: dayAt(2, 30),
        title: 'First title',
        category: 'Chess',
        tags: ['english', 'chess'],
        samples: [
          { at: dayAt(2), viewers: 100, messages: 40, new_followers: 3, new_paid_subs: 2, gifted_subs: 5 },
          { at: dayAt(2, 10), viewers: 200, messages: 60, new_followers: 1, new_paid_subs: 1, gifted_subs: 0 },
        ],
        chatters: [{ login: 'fan1', display_name: 'Fan1', messages: 30 }],
        emotes: [{ id: 'e-kappa', name: 'Kappa', provider: 'platform_a', url: 'https://cdn.test/kappa.png', count: 12 }],
      },
      { platform: 'platform_a', broadcast_id: 'b-s1', platform_channel_id: 'b1', started_at: dayAt(1), samples: [{ at: dayAt(1), viewers: 99999, messages: 10 }] },
      {
        platform: 'platform_a',
        broadcast_id: 'g-live',
        platform_channel_id: 'g1',
        started_at: recent(40),
        title: 'Speedrun',
        category: 'Speedrunning',
        tags: ['any%'],
        samples: [
          { at: recent(30), viewers: 10, messages: 3 },
          { at: recent(20), viewers: 30, messages: 7, new_followers: 2 },
        ],
        chatters: [
          { login: 'Zed', display_name: 'Zed', messages: 4 },
          { login: 'amy', display_name: 'Amy', messages: 6 },
        ],
        shared_chat: [
          { platform_channel_id: 'g1', messages: 6 },
          { platform_channel_id: 'partner-room', messages: 4, display_name: 'Partner', avatar_url: 'https://img.test/partner.png' },
        ],
        emotes: [
          { id: 'e-kappa', name: 'Kappa', provider: 'platform_a', url: 'https://cdn.test/kappa.png', count: 3 },
          { id: '7-pepe', name: 'PepeLaugh', provider: '7tv', url: 'https://cdn.7tv.test/pepe.webp', animated: true, owner_id: 'o7', channel_id: 'g1', count: 5 },
        ],
        gifs: [{ id: 'gif-1', url: 'https://gifs.test/1.gif', count: 2 }],
      },
      { platform: 'platform_b', broadcast_id: 'vid-1', platform_channel_id: 'UCdelta', started_at: dayAt(3), ended_at: dayAt(3, 60), category: 'chess', samples: [{ at: dayAt(3), viewers: 1000 }, { at: dayAt(3, 1), viewers: 1000, messages: 500 }] },
    ],
    emote_sets: [
      { platform: 'platform_a', provider: 'platform_a', emotes: [{ id: 'e-kappa', name: 'Kappa', url: 'https://cdn.test/kappa-api.png' }, { id: 'e-lul', name: 'LUL', url: 'https://cdn.test/lul.png' }] },
      { platform: 'platform_a', provider: 'bttv', channel_id: 'a1', emotes: [{ id: 'b-cat', name: 'catJAM', url: 'https://cdn.bttv.test/cat.gif', animated: true, owner_id: 'own-b' }] },
    ],
  });
  expect(seeded.status).toBe(200);
  // Follower samples on two later days (the last one of a day counts).
  for (const [n, minutes, count] of [
    [2, 0, 1000],
    [2, 60, 1010],
    [1, 0, 1020],
  ] as const) {
    expect((await ingest({ channels: [{ platform: 'platform_a', platform_channel_id: 'a1', login: 'AlphaTV', follower_count: count, sampled_at: dayAt(n, minutes) }] })).status).toBe(200);
  }
  // Metadata changes: a new title, emptied category, changed tags.
  expect((await ingest({ streams: [{ platform: 'platform_a', broadcast_id: 'a-s1', platform_channel_id: 'a1', started_at: dayAt(2, -10), title: 'Second title', category: null, tags: ['english'] }] })).status).toBe(200);
  // The next crawl no longer sees panel p2, and p1 shows a new image.
  expect(
    (
      await ingest({
        channels: [{ platform: 'platform_a', platform_channel_id: 'a1', login: 'AlphaTV', panels: [{ panel_id: 'p1', ad: true, title: 'New sponsor', description: 'Buy it', image_url: 'https://img.test/p1b.png', link_url: 'https://shop.test' }] }],
      })
    ).status,
  ).toBe(200);
});

describe('ingestion', () => {
  test('a system key only: anonymous 401, a user session 403', async () => {
    expect((await api(t, 'POST', '/internal/public-stats/samples', { body: {} })).status).toBe(401);
    const res = await ingest({}, user.accessToken);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('FORBIDDEN');
  });

  test('refused values write nothing: unsupported platform, unknown channel, sample out of range', async () => {
    const platform = await ingest({ channels: [{ platform: 'platform_x', platform_channel_id: 'x', login: 'x' }] });
    expect(platform.status).toBe(400);
    expect(platform.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'Unsupported platform: platform_x' });

    const unknown = await ingest({ streams: [{ platform: 'platform_a', broadcast_id: 'nope', platform_channel_id: 'ghost', started_at: recent(5) }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toBe('Unknown channel: platform_a/ghost');

    const old = new Date(now - 500 * DAY).toISOString();
    const range = await ingest({
      channels: [{ platform: 'platform_a', platform_channel_id: 'partial', login: 'partialchan' }],
      streams: [{ platform: 'platform_a', broadcast_id: 'partial-s', platform_channel_id: 'partial', started_at: old, samples: [{ at: old, viewers: 1 }] }],
    });
    expect(range.status).toBe(400);
    expect(range.body.message).toBe(`Sample time out of range: ${old}`);
    // Nothing of the refused batch was written: the directory does not know the channel (a watchlist add stays pending).
    const watch = await api(t, 'POST', '/watchlist', { token: user.accessToken, body: { platform: 'platform_a', channel: 'partialchan' } });
    expect(watch.body.data).toMatchObject({ pending: true });

    const shape = await ingest({ streams: [{ platform: 'platform_a' }] });
    expect(shape.status).toBe(400);
  });

  test('a repeated sample is ignored: figures do not change', async () => {
    const before = await api(t, 'GET', '/public-stats/streams/platform_a/a-s1');
    const again = await ingest({ streams: [{ platform: 'platform_a', broadcast_id: 'a-s1', platform_channel_id: 'a1', started_at: dayAt(2, -10), samples: [{ at: dayAt(2), viewers: 100, messages: 40 }] }] });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ channels: 0, streams: 1, samples: 0, emotes: 0 });
    const after = await api(t, 'GET', '/public-stats/streams/platform_a/a-s1');
    expect(after.body.data).toEqual(before.body.data);
  });

  test('samples live in monthly partitions of the time-series tables', async () => {
    const knex = t.app.timeseries.knex;
    const month = new Date(now);
    const name = `ps_viewer_samples_y${month.getUTCFullYear()}m${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
    const parts = await knex.raw("select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent where p.relname = 'ps_viewer_samples'");
    expect(((parts.rows ?? parts) as { name: string }[]).map((r) => r.name)).toContain(name);
    const kind = await knex.raw("select relkind from pg_class where relname = 'ps_viewer_samples'");
    expect(((kind.rows ?? kind) as { relkind: string }[])[0]?.relkind).toBe('p');
  });
});

describe('channel trends', () => {
  test('the four ranges: one point per UTC day, oldest first, from the stored samples', async () => {
    const d30 = await api(t, 'GET', '/public-stats/channels/platform_a/alphatv/trends', { query: { range: 'DAYS_30' } });
    expect(d30.status).toBe(200);
    expect(d30.body.data).toEqual({
      platform: 'platform_a',
      platform_channel_id: 'a1',
      channel_login: 'AlphaTV',
      range: 'DAYS_30',
      follower_series: [
        { date: date(2), follower_count: 1010 },
        { date: date(1), follower_count: 1020 },
      ],
      avg_viewer_series: [{ date: date(2), avg_viewers: 150 }],
    });
    for (const range of ['DAYS_90', 'DAYS_180', 'DAYS_365']) {
      const res = await api(t, 'GET', '/public-stats/channels/platform_a/a1/trends', { query: { range } });
      expect(res.status).toBe(200);
      expect(res.body.data.range).toBe(range);
      expect(res.body.data.follower_series[0]).toEqual({ date: date(40), follower_count: 900 });
      expect(res.body.data.avg_viewer_series).toEqual([
        { date: date(40), avg_viewers: 50 },
        { date: date(2), avg_viewers: 150 },
      ]);
    }
  });

  test('400 for an unknown range or platform, 404 for unknown, opted-out or stream-less channels', async () => {
    const range = await api(t, 'GET', '/public-stats/channels/platform_a/alphatv/trends', { query: { range: 'DAYS_7' } });
    expect(range.status).toBe(400);
    expect(range.body.message).toBe('range must be one of DAYS_30, DAYS_90, DAYS_180, DAYS_365');
    expect((await api(t, 'GET', '/public-stats/channels/platform_a/alphatv/trends')).status).toBe(400);
    const platform = await api(t, 'GET', '/public-stats/channels/platform_z/alphatv/trends', { query: { range: 'DAYS_30' } });
    expect(platform.status).toBe(400);
    expect(platform.body.message).toBe('Unsupported platform: platform_z');
    for (const channel of ['nobody', 'betacast', 'emptychan']) {
      const res = await api(t, 'GET', `/public-stats/channels/platform_a/${channel}/trends`, { query: { range: 'DAYS_30' } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'NOT_FOUND', message: 'Channel not found' });
    }
  });

  test('GraphQL publicChannelTrends answers the same series and the same failures', async () => {
    const q = 'query($p: String!, $c: String!, $r: String!) { publicChannelTrends(platform: $p, channel: $c, range: $r) { channelLogin followerSeries { date followerCount } avgViewerSeries { date avgViewers } } }';
    const ok = await gql(t.url, q, { p: 'platform_a', c: 'AlphaTV', r: 'DAYS_30' });
    expect(ok.body.data?.publicChannelTrends).toEqual({
      channelLogin: 'AlphaTV',
      followerSeries: [
        { date: date(2), followerCount: 1010 },
        { date: date(1), followerCount: 1020 },
      ],
      avgViewerSeries: [{ date: date(2), avgViewers: 150 }],
    });
    const bad = await gql(t.url, q, { p: 'platform_a', c: 'AlphaTV', r: 'WEEK' });
    expect(bad.body.errors?.[0]).toMatchObject({ message: 'range must be one of DAYS_30, DAYS_90, DAYS_180, DAYS_365', extensions: { code: 'VALIDATION_ERROR' } });
    const hidden = await gql(t.url, q, { p: 'platform_a', c: 'betacast', r: 'DAYS_30' });
    expect(hidden.body.errors?.[0]).toMatchObject({ message: 'Channel not found', extensions: { code: 'NOT_FOUND' } });
  });
});

describe('panel history', () => {
  test('ad-marked panels only, most recently active first, removed ones with removed_at, images oldest first', async () => {
    const res = await api(t, 'GET', '/public-stats/channels/platform_a/AlphaTV/panel-history');
    expect(res.status).toBe(200);
    const panels = res.body.data as Record<string, unknown>[];
    expect(panels.map((p) => p.panel_id)).toEqual(['p1', 'p2']);
    expect(panels[0]).toMatchObject({ title: 'New sponsor', description: 'Buy it', image_url: 'https://img.test/p1b.png', link_url: 'https://shop.test', status: 'active', removed_at: null });
    expect((panels[0]!.images as { image_url: string }[]).map((i) => i.image_url)).toEqual(['https://img.test/p1a.png', 'https://img.test/p1b.png']);
    expect(panels[1]).toMatchObject({ panel_id: 'p2', status: 'removed', removed_at: expect.any(String), images: [{ image_url: 'https://img.test/p2.png', first_seen_at: expect.any(String), last_seen_at: expect.any(String) }] });
  });

  test('no panels gives an empty list; opted-out 404; GraphQL twin', async () => {
    const none = await api(t, 'GET', '/public-stats/channels/platform_a/gammalive/panel-history');
    expect(none.status).toBe(200);
    expect(none.body.data).toEqual([]);
    expect((await api(t, 'GET', '/public-stats/channels/platform_a/betacast/panel-history')).status).toBe(404);
    expect((await api(t, 'GET', '/public-stats/channels/nowhere/alphatv/panel-history')).status).toBe(400);
    const g = await gql(t.url, '{ publicChannelPanelHistory(platform: "platform_a", channel: "alphatv") { panelId status images { imageUrl } } }');
    expect(g.body.data?.publicChannelPanelHistory).toEqual([
      { panelId: 'p1', status: 'active', images: [{ imageUrl: 'https://img.test/p1a.png' }, { imageUrl: 'https://img.test/p1b.png' }] },
      { panelId: 'p2', status: 'removed', images: [{ imageUrl: 'https://img.test/p2.png' }] },
    ]);
  });
});

describe('stream summary', () => {
  test('every documented field, computed from the samples; top chatters null without opt-in', async () => {
    const res = await api(t, 'GET', '/public-stats/streams/platform_a/a-s1');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      platform: 'platform_a',
      broadcast_id: 'a-s1',
      platform_channel_id: 'a1',
      channel_login: 'AlphaTV',
      channel_display_name: 'Alpha TV',
      title: 'Second title',
      category: null,
      tags: ['english'],
      is_live: false,
      started_at: dayAt(2, -10),
      ended_at: dayAt(2, 30),
      duration_seconds: 40 * 60,
      peak_viewers: 200,
      avg_viewers: 150,
      watch_seconds: 100 * 600,
      total_messages: 100,
      emote_count: 12,
      top_emotes: [{ id: 'e-kappa', name: 'Kappa', provider: 'platform_a', url: 'https://cdn.test/kappa.png', count: 12 }],
      gif_count: 0,
      top_gifs: [],
      new_paid_subs: 3,
      gifted_subs: 5,
      new_followers: 4,
      viewer_curve: [
        { at: dayAt(2), viewers: 100 },
        { at: dayAt(2, 10), viewers: 200 },
      ],
      top_chatters: null,
      shared_chat_sources: [],
    });
  });

  test('an opted-in channel shows top chatters; shared chat sources carry names when captured', async () => {
    const res = await api(t, 'GET', '/public-stats/streams/platform_a/g-live');
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data.is_live).toBe(true);
    expect(data.ended_at).toBeNull();
    expect(data.top_chatters).toEqual([
      { login: 'amy', display_name: 'Amy', message_count: 6 },
      { login: 'zed', display_name: 'Zed', message_count: 4 },
    ]);
    expect(data.shared_chat_sources).toEqual([
      { platform_channel_id: 'g1', message_count: 6, display_name: null, avatar_url: null },
      { platform_channel_id: 'partner-room', message_count: 4, display_name: 'Partner', avatar_url: 'https://img.test/partner.png' },
    ]);
    expect(data.top_emotes.map((e: { id: string; count: number }) => [e.id, e.count])).toEqual([
      ['7-pepe', 5],
      ['e-kappa', 3],
    ]);
    expect(data.top_gifs).toEqual([{ id: 'gif-1', url: 'https://gifs.test/1.gif', provider: null, alt: null, count: 2 }]);
    expect(data.gif_count).toBe(2);
    expect(data.watch_seconds).toBe(10 * 600);
  });

  test('404 for an unknown broadcast or an opted-out channel, 400 for an unsupported platform; GraphQL twin', async () => {
    expect(await api(t, 'GET', '/public-stats/streams/platform_a/nope').then((r) => r.body)).toEqual({ error: 'NOT_FOUND', message: 'Stream not found' });
    expect((await api(t, 'GET', '/public-stats/streams/platform_a/b-s1')).status).toBe(404);
    expect((await api(t, 'GET', '/public-stats/streams/platform_q/a-s1')).status).toBe(400);
    const g = await gql(t.url, '{ publicStreamSummary(platform: "platform_a", broadcastId: "g-live") { broadcastId topChatters { login messageCount } sharedChatSources { platformChannelId } } }');
    expect(g.body.data?.publicStreamSummary).toEqual({
      broadcastId: 'g-live',
      topChatters: [
        { login: 'amy', messageCount: 6 },
        { login: 'zed', messageCount: 4 },
      ],
      sharedChatSources: [{ platformChannelId: 'g1' }, { platformChannelId: 'partner-room' }],
    });
    const hidden = await gql(t.url, '{ publicStreamSummary(platform: "platform_a", broadcastId: "b-s1") { broadcastId } }');
    expect(hidden.body.errors?.[0]).toMatchObject({ message: 'Stream not found', extensions: { code: 'NOT_FOUND' } });
  });

  test('opting out later hides the channel everywhere; opting back in shows it again', async () => {
    const flip = (opted_out: boolean) => ingest({ channels: [{ platform: 'platform_b', platform_channel_id: 'UCdelta', login: 'delta', opted_out }] });
    expect((await flip(true)).status).toBe(200);
    expect((await api(t, 'GET', '/public-stats/streams/platform_b/vid-1')).status).toBe(404);
    const browse = await api(t, 'GET', '/public-stats/browse', { query: { platform: 'platform_b' } });
    expect(browse.body.data.channels).toEqual([]);
    const games = await api(t, 'GET', '/public-stats/games', { query: { platform: 'platform_b' } });
    expect(games.body.data.games).toEqual([]);
    expect((await flip(false)).status).toBe(200);
    expect((await api(t, 'GET', '/public-stats/streams/platform_b/vid-1')).status).toBe(200);
  });

  test('top-GIF content is erased 90 days after first seen; gif_count stays', async () => {
    await ingest({ streams: [{ platform: 'platform_a', broadcast_id: 'a-s1', platform_channel_id: 'a1', started_at: dayAt(2, -10), gifs: [{ id: 'old-gif', url: 'https://gifs.test/old.gif', count: 4 }] }] });
    expect((await api(t, 'GET', '/public-stats/streams/platform_a/a-s1')).body.data.top_gifs).toHaveLength(1);
    await t.app.db.knex('ps_stream_gifs').where({ gif_id: 'old-gif' }).update({ first_seen_at: new Date(now - 91 * DAY) });
    // Past the retention it is no longer served, even before the sweep runs.
    const hidden = await api(t, 'GET', '/public-stats/streams/platform_a/a-s1');
    expect(hidden.body.data.top_gifs).toEqual([]);
    expect(hidden.body.data.gif_count).toBe(4);
    const swept = await t.app.modules.stats.stats.sweep();
    expect(swept.gifs).toBe(1);
    expect(await t.app.db.knex('ps_stream_gifs').where({ gif_id: 'old-gif' }).first()).toBeUndefined();
    expect((await api(t, 'GET', '/public-stats/streams/platform_a/a-s1')).body.data.gif_count).toBe(4);
  });
});

describe('metadata history', () => {
  test('most recent first; null old is the initial capture, null new an emptied value; tags as arrays', async () => {
    const res = await api(t, 'GET', '/public-stats/streams/platform_a/a-s1/metadata-history');
    expect(res.status).toBe(200);
    const { entries, total, limit, offset } = res.body.data;
    expect({ total, limit, offset }).toEqual({ total: 6, limit: 50, offset: 0 });
    const changes = (entries as Record<string, unknown>[]).map((e) => [e.change_type, e.old_value, e.new_value]);
    expect(changes.slice(0, 3)).toEqual(
      expect.arrayContaining([
        ['title', 'First title', 'Second title'],
        ['category', 'Chess', null],
        ['tags', ['english', 'chess'], ['english']],
      ]),
    );
    expect(changes.slice(3)).toEqual(
      expect.arrayContaining([
        ['title', null, 'First title'],
        ['category', null, 'Chess'],
        ['tags', null, ['english', 'chess']],
      ]),
    );
    const page = await api(t, 'GET', '/public-stats/streams/platform_a/a-s1/metadata-history', { query: { limit: '2', offset: '4' } });
    expect(page.body.data).toMatchObject({ total: 6, limit: 2, offset: 4 });
    expect(page.body.data.entries).toHaveLength(2);
  });

  test('limit 1 to 200 on both protocols; 404 for an unknown stream', async () => {
    for (const limit of ['0', '201']) {
      const res = await api(t, 'GET', '/public-stats/streams/platform_a/a-s1/metadata-history', { query: { limit } });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('limit must be >= 1 and <= 200');
    }
    expect((await api(t, 'GET', '/public-stats/streams/platform_a/a-s1/metadata-history', { query: { limit: '200' } })).status).toBe(200);
    const g = await gql(t.url, '{ publicStreamMetadataHistory(platform: "platform_a", broadcastId: "a-s1", limit: 201) { total } }');
    expect(g.body.errors?.[0]).toMatchObject({ message: 'limit must be >= 1 and <= 200', extensions: { code: 'VALIDATION_ERROR' } });
    const ok = await gql(t.url, '{ publicStreamMetadataHistory(platform: "platform_a", broadcastId: "a-s1", limit: 1) { total entries { changeType } } }');
    expect(ok.body.data?.publicStreamMetadataHistory).toMatchObject({ total: 6 });
    expect((await api(t, 'GET', '/public-stats/streams/platform_a/none/metadata-history')).status).toBe(404);
  });
});

describe('browse', () => {
  const logins = (res: { body: { data: { channels: { channel_login: string }[] } } }) => res.body.data.channels.map((c) => c.channel_login);

  test('every metric orders descending; opted-out and stream-less channels are left out; edge-cacheable', async () => {
    const res = await api(t, 'GET', '/public-stats/browse');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=30, s-maxage=60, stale-while-revalidate=300');
    expect(logins(res)).toEqual(['AlphaTV', 'delta', 'gammaLive']);
    expect(res.body.data.pagination).toEqual({ page: 1, limit: 50, total: 3, total_pages: 1 });
    const alpha = res.body.data.channels[0];
    expect(alpha).toEqual({
      platform: 'platform_a',
      platform_channel_id: 'a1',
      channel_login: 'AlphaTV',
      channel_display_name: 'Alpha TV',
      source: 'crawler',
      last_category: null,
      is_live: false,
      stream_count: 2,
      watch_seconds: 60000,
      avg_viewers: 100,
      peak_viewers: 200,
      total_messages: 105,
      follower_gain: 4,
      last_started_at: dayAt(2, -10),
      broadcaster_type: 'partner',
    });
    const order = async (metric: string) => logins(await api(t, 'GET', '/public-stats/browse', { query: { metric } }));
    expect(await order('watchtime')).toEqual(['AlphaTV', 'delta', 'gammaLive']);
    expect(await order('viewers')).toEqual(['delta', 'AlphaTV', 'gammaLive']);
    expect(await order('peak')).toEqual(['delta', 'AlphaTV', 'gammaLive']);
    expect(await order('messages')).toEqual(['delta', 'AlphaTV', 'gammaLive']);
    expect(await order('follower_gain')).toEqual(['AlphaTV', 'gammaLive', 'delta']);
    expect(await order('recent')).toEqual(['gammaLive', 'AlphaTV', 'delta']);
  });

  test('filters: platform, category, live, search (handle or display name)', async () => {
    expect(logins(await api(t, 'GET', '/public-stats/browse', { query: { platform: 'platform_b' } }))).toEqual(['delta']);
    expect(logins(await api(t, 'GET', '/public-stats/browse', { query: { live: 'true' } }))).toEqual(['gammaLive']);
    expect(logins(await api(t, 'GET', '/public-stats/browse', { query: { live: 'false' } }))).toEqual(['AlphaTV', 'delta']);
    expect(logins(await api(t, 'GET', '/public-stats/browse', { query: { category: 'SPEEDRUNNING' } }))).toEqual(['gammaLive']);
    expect(logins(await api(t, 'GET', '/public-stats/browse', { query: { search: 'videos' } }))).toEqual(['delta']);
    expect(logins(await api(t, 'GET', '/public-stats/browse', { query: { search: 'ALPHA' } }))).toEqual(['AlphaTV']);
    expect(logins(await api(t, 'GET', '/public-stats/browse', { query: { search: '%' } }))).toEqual([]);
    
  });

  test('limit is clamped 1 to 100; unknown metric or platform gives 400', async () => {
    const low = await api(t, 'GET', '/public-stats/browse', { query: { limit: '0' } });
    expect(low.status).toBe(200);
    expect(low.body.data.channels).toHaveLength(1);
    expect(low.body.data.pagination).toEqual({ page: 1, limit: 1, total: 3, total_pages: 3 });
    const high = await api(t, 'GET', '/public-stats/browse', { query: { limit: '5000', page: '1' } });
    expect(high.body.data.pagination.limit).toBe(100);
    const second = await api(t, 'GET', '/public-stats/browse', { query: { limit: '2', page: '2' } });
    expect(logins(second)).toEqual(['gammaLive']);
    const metric = await api(t, 'GET', '/public-stats/browse', { query: { metric: 'likes' } });
    expect(metric.status).toBe(400);
    expect(metric.body.message).toBe('metric must be one of watchtime, viewers, peak, follower_gain, messages, recent');
    expect((await api(t, 'GET', '/public-stats/browse', { query: { platform: 'platform_z' } })).status).toBe(400);
  });

  test('GraphQL publicChannelBrowse: same rows, clamping and failures', async () => {
    const q = 'query($f: PublicBrowseFilter) { publicChannelBrowse(filter: $f) { channels { channelLogin watchSeconds } pagination { page limit total totalPages } } }';
    const res = await gql(t.url, q, { f: { metric: 'viewers', limit: 500 } });
    expect(res.body.data?.publicChannelBrowse).toEqual({
      channels: [
        { channelLogin: 'delta', watchSeconds: 60000 },
        { channelLogin: 'AlphaTV', watchSeconds: 60000 },
        { channelLogin: 'gammaLive', watchSeconds: 6000 },
      ],
      pagination: { page: 1, limit: 100, total: 3, totalPages: 1 },
    });
    const bad = await gql(t.url, q, { f: { metric: 'likes' } });
    expect(bad.body.errors?.[0]).toMatchObject({ message: 'metric must be one of watchtime, viewers, peak, follower_gain, messages, recent', extensions: { code: 'VALIDATION_ERROR' } });
  });
});

describe('games', () => {
  test('categories with their figures, by watch time; search, clamping, Cache-Control; GraphQL twin', async () => {
    const res = await api(t, 'GET', '/public-stats/games');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=30, s-maxage=60, stale-while-revalidate=300');
    expect(res.body.data.games).toEqual([
      { category: 'chess', channel_count: 1, stream_count: 1, live_stream_count: 0, peak_viewers: 1000, watch_seconds: 60000, last_started_at: dayAt(3) },
      { category: 'Speedrunning', channel_count: 1, stream_count: 1, live_stream_count: 1, peak_viewers: 30, watch_seconds: 6000, last_started_at: recent(40) },
      { category: 'Chess', channel_count: 1, stream_count: 1, live_stream_count: 0, peak_viewers: 50, watch_seconds: 0, last_started_at: dayAt(40, -5) },
    ]);
    const search = await api(t, 'GET', '/public-stats/games', { query: { search: 'speed', limit: '0' } });
    expect(search.body.data).toEqual({ games: [expect.objectContaining({ category: 'Speedrunning' })], pagination: { page: 1, limit: 1, total: 1, total_pages: 1 } });
    expect((await api(t, 'GET', '/public-stats/games', { query: { platform: 'bad' } })).status).toBe(400);
    const g = await gql(t.url, '{ publicGames(filter: { platform: "platform_a", limit: 1000 }) { games { category liveStreamCount } pagination { limit total } } }');
    expect(g.body.data?.publicGames).toEqual({
      games: [
        { category: 'Speedrunning', liveStreamCount: 1 },
        { category: 'Chess', liveStreamCount: 0 },
      ],
      pagination: { limit: 100, total: 2 },
    });
  });
});

describe('emote directory', () => {
  const ids = (res: { body: { data: { emotes: { id: string }[] } } }) => res.body.data.emotes.map((e) => e.id);

  test('api_fetch and observed sources, by name; the exact Cache-Control header', async () => {
    const res = await api(t, 'GET', '/public-stats/emotes');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=60, s-maxage=300, stale-while-revalidate=600');
    const emotes = res.body.data.emotes as Record<string, unknown>[];
    expect(emotes.map((e) => [e.name, e.source])).toEqual([
      ['catJAM', 'api_fetch'],
      ['Kappa', 'api_fetch'],
      ['LUL', 'api_fetch'],
      ['PepeLaugh', 'observed'],
    ]);
    expect(emotes.find((e) => e.id === 'e-kappa')).toEqual({
      id: 'e-kappa',
      platform: 'platform_a',
      provider: 'platform_a',
      channel_id: null,
      name: 'Kappa',
      url: 'https://cdn.test/kappa-api.png',
      animated: false,
      owner_id: null,
      source: 'api_fetch',
      first_seen_at: expect.any(String),
      last_seen_at: expect.any(String),
    });
    expect(emotes.find((e) => e.id === '7-pepe')).toMatchObject({ provider: '7tv', channel_id: 'g1', animated: true, owner_id: 'o7', source: 'observed' });
    expect(res.body.data.pagination).toEqual({ page: 1, limit: 50, total: 4, total_pages: 1 });
  });

  test('filters (empty strings count as absent), clamping, and 400 for unknown values', async () => {
    expect(ids(await api(t, 'GET', '/public-stats/emotes', { query: { provider: '7tv' } }))).toEqual(['7-pepe']);
    expect(ids(await api(t, 'GET', '/public-stats/emotes', { query: { channel_id: 'a1' } }))).toEqual(['b-cat']);
    expect(ids(await api(t, 'GET', '/public-stats/emotes', { query: { animated: 'true' } }))).toEqual(['b-cat', '7-pepe']);
    expect(ids(await api(t, 'GET', '/public-stats/emotes', { query: { animated: 'false', search: 'L' } }))).toEqual(['e-lul']);
    expect(ids(await api(t, 'GET', '/public-stats/emotes', { query: { platform: '', provider: '', channel_id: '', animated: '', search: '' } }))).toHaveLength(4);
    const clamped = await api(t, 'GET', '/public-stats/emotes', { query: { limit: '-5' } });
    expect(clamped.body.data.pagination).toEqual({ page: 1, limit: 1, total: 4, total_pages: 4 });
    expect((await api(t, 'GET', '/public-stats/emotes', { query: { limit: '101' } })).body.data.pagination.limit).toBe(100);
    const provider = await api(t, 'GET', '/public-stats/emotes', { query: { provider: 'giphy' } });
    expect(provider.status).toBe(400);
    expect(provider.body.message).toBe('Unsupported provider: giphy');
    const animated = await api(t, 'GET', '/public-stats/emotes', { query: { animated: 'maybe' } });
    expect(animated.status).toBe(400);
    expect(animated.body.message).toBe('animated must be true or false');
    expect((await api(t, 'GET', '/public-stats/emotes', { query: { platform: '7tv' } })).status).toBe(400);
    const g = await gql(t.url, '{ publicEmotes(filter: { provider: "", animated: true, limit: 0 }) { emotes { id source } pagination { limit total } } }');
    expect(g.body.data?.publicEmotes).toEqual({ emotes: [{ id: 'b-cat', source: 'api_fetch' }], pagination: { limit: 1, total: 2 } });
  });
});

describe('bootstrap on public-stats:{platform}:{broadcast_id}', () => {
  async function socket(): Promise<TestSocket> {
    const s = await connect(t.wsUrl);
    opened.push(s);
    expect((await s.next()).type).toBe('welcome');
    return s;
  }

  test('subscribe answers subscribed, then a bootstrap event carrying the REST summary', async () => {
    const s = await socket();
    const channel = 'public-stats:platform_a:g-live';
    s.send({ type: 'subscribe', channel });
    expect(await s.next()).toEqual({ type: 'subscribed', channel });
    const rest = await api(t, 'GET', '/public-stats/streams/platform_a/g-live');
    expect(await s.next()).toEqual({ type: 'event', channel, event_type: 'bootstrap', data: rest.body.data });
  });

  test('a crawler batch that changes the broadcast sends its summary again as public-stats:update', async () => {
    const s = await socket();
    const channel = 'public-stats:platform_a:g-live';
    s.send({ type: 'subscribe', channel });
    expect(await s.next()).toEqual({ type: 'subscribed', channel });
    expect(await s.next()).toMatchObject({ type: 'event', channel, event_type: 'bootstrap' });
    const batch = { batch_id: `live-${Date.now()}`, streams: [{ platform: 'platform_a', broadcast_id: 'g-live', platform_channel_id: 'g1', started_at: recent(40), samples: [{ at: recent(10), viewers: 20, messages: 1 }] }] };
    expect((await ingest(batch)).status).toBe(200);
    const update = (await s.nextMatching((m) => m.type === 'event', 10_000)) as unknown as { event_type: string; data: unknown; cursor?: string };
    const rest = await api(t, 'GET', '/public-stats/streams/platform_a/g-live');
    expect(update).toMatchObject({ type: 'event', channel, event_type: 'public-stats:update', data: rest.body.data });
    // The same batch again changes nothing and sends nothing; an opted-out channel's broadcast sends nothing either.
    expect((await ingest(batch)).status).toBe(200);
    expect((await ingest({ streams: [{ platform: 'platform_a', broadcast_id: 'b-s1', platform_channel_id: 'b1', started_at: dayAt(1), samples: [{ at: dayAt(1, 5), viewers: 5 }] }] })).status).toBe(200);
    await t.app.modules.stats.live.idle();
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
  });

  test('no snapshot for an unknown broadcast or an opted-out channel', async () => {
    const s = await socket();
    for (const channel of ['public-stats:platform_a:nope', 'public-stats:platform_a:b-s1', 'public-stats:platform_x:g-live']) {
      s.send({ type: 'subscribe', channel });
      expect(await s.next()).toEqual({ type: 'subscribed', channel });
    }
    s.send({ type: 'ping' });
    expect(await s.next()).toEqual({ type: 'pong' });
  });
});

describe('the system:public_stats kill-switch', () => {
  test('every public surface answers 403 FEATURE_DISABLED with the spec message; ingestion and the watchlist keep working', async () => {
    const features = t.app.modules.features;
    await features.setGlobal('system:public_stats', false);
    try {
      for (const path of [
        '/public-stats/channels/platform_a/alphatv/trends?range=DAYS_30',
        '/public-stats/channels/platform_a/alphatv/panel-history',
        '/public-stats/streams/platform_a/a-s1',
        '/public-stats/streams/platform_a/a-s1/metadata-history',
        '/public-stats/browse',
        '/public-stats/games',
        '/public-stats/emotes',
      ]) {
        const res = await fetch(`${t.url}/v1${path}`);
        expect(res.status).toBe(403);
        expect(await res.json()).toEqual({ error: 'FEATURE_DISABLED', message: KILL });
      }
      for (const query of [
        '{ publicEmotes { pagination { total } } }',
        '{ publicChannelBrowse { pagination { total } } }',
        '{ publicGames { pagination { total } } }',
        '{ publicStreamSummary(platform: "platform_a", broadcastId: "a-s1") { broadcastId } }',
        '{ publicStreamMetadataHistory(platform: "platform_a", broadcastId: "a-s1") { total } }',
        '{ publicChannelTrends(platform: "platform_a", channel: "alphatv", range: "DAYS_30") { range } }',
        '{ publicChannelPanelHistory(platform: "platform_a", channel: "alphatv") { panelId } }',
      ]) {
        const res = await gql(t.url, query);
        expect(res.body.errors?.[0]).toMatchObject({ message: KILL, extensions: { code: 'FEATURE_DISABLED' } });
      }
      const s = await connect(t.wsUrl);
      opened.push(s);
      await s.next();
      s.send({ type: 'subscribe', channel: 'public-stats:platform_a:g-live' });
      expect(await s.next()).toMatchObject({ type: 'error', code: 'FEATURE_DISABLED', message: KILL });
      expect((await ingest({ channels: [{ platform: 'platform_a', platform_channel_id: 'k1', login: 'killtest' }] })).status).toBe(200);
      expect((await api(t, 'GET', '/watchlist', { token: user.accessToken })).status).toBe(200);
    } finally {
      await features.setGlobal('system:public_stats', true);
    }
    expect((await api(t, 'GET', '/public-stats/emotes')).status).toBe(200);
  });
});

// Last: it adds a channel with streams, which the listings above do not expect.
describe('ingestion, resent batches', () => {
  test('a resent batch counts once: by batch_id, or by its content without one; concurrent resends too', async () => {
    const chatterCount = async (broadcastId: string) =>
      Number(((await t.app.db.knex('ps_stream_chatters').where({ platform: 'platform_a', broadcast_id: broadcastId, login: 'resender' }).first('message_count')) as { message_count: number | string } | undefined)?.message_count ?? 0);
    const batch = (broadcastId: string, extra: Record<string, unknown> = {}) => ({
      ...extra,
      streams: [{ platform: 'platform_a', broadcast_id: broadcastId, platform_channel_id: 'r1', started_at: recent(30), chatters: [{ login: 'resender', messages: 7 }], emotes: [{ id: 'em-r', name: 'Resent', provider: 'platform_a', count: 3 }] }],
    });
    expect((await ingest({ channels: [{ platform: 'platform_a', platform_channel_id: 'r1', login: 'resendchan' }] })).status).toBe(200);
    const first = await ingest(batch('resend-1'));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ channels: 0, streams: 1, samples: 0, emotes: 1 });
    const again = await ingest(batch('resend-1'));
    expect(again.body).toEqual({ channels: 0, streams: 1, samples: 0, emotes: 1, duplicate: true });
    expect(await chatterCount('resend-1')).toBe(7);
    // With a batch_id the id decides: the same id is applied once, a new id adds up.
    expect((await ingest(batch('resend-2', { batch_id: 'crawl-42' }))).body).not.toHaveProperty('duplicate');
    expect((await ingest(batch('resend-2', { batch_id: 'crawl-42' }))).body).toMatchObject({ duplicate: true });
    expect(await chatterCount('resend-2')).toBe(7);
    expect((await ingest(batch('resend-2', { batch_id: 'crawl-43' }))).body).not.toHaveProperty('duplicate');
    expect(await chatterCount('resend-2')).toBe(14);
    const both = await Promise.all([ingest(batch('resend-3', { batch_id: 'crawl-44' })), ingest(batch('resend-3', { batch_id: 'crawl-44' }))]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(both.filter((r) => r.body.duplicate === true)).toHaveLength(1);
    expect(await chatterCount('resend-3')).toBe(7);
  });
});
