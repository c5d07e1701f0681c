/**
 * Three nodes (src/main.ts in three child processes, as `npm start` runs it) on one PostgreSQL
 * database and one Redis (docs/adr/005-background-jobs.md): 30 channels connected to the
 * fake platform get exactly one platform_a socket each, spread across the nodes and shown by GET
 * /v1/admin/workers; a periodic job runs once per period with the three up; SIGKILL one node and
 * its channels are reconnected by the two others within the lease bound, with every message
 * stored once. Short lease and period values keep it brief. PostgreSQL + Redis only: the embedded
 * store is one process by construction (test/infra/jobs.test.ts covers its job system).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { startNodeArgs } from '../../scripts/bench/lib';
import { createTestDatabase, services } from '../helpers/app';
import { startFakePlatform, type FakePlatform } from '../helpers/fake-platform';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import type { ScratchDatabase } from '../../src/infra/db/scratch';

const root = path.resolve(__dirname, '../..');
const LEASE_TTL_MS = 3000;
const LEASE_RENEW_MS = 500;
const RECONNECT_MS = 200;
/** Takeover bound: the lease runs out, the next renewal round takes it, the socket opens. */
const TAKEOVER_BOUND_MS = LEASE_TTL_MS + 2 * LEASE_RENEW_MS + RECONNECT_MS;
const CHANNELS = 30;

interface Node {
  id: string;
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const describeOnServers = services.postgres && services.redis ? describe : describe.skip;

describeOnServers('three nodes on PostgreSQL and Redis', () => {
  let dir: string;
  let fake: FakePlatform;
  let database: ScratchDatabase;
  let knex: Knex;
  const nodes: Node[] = [];
  const opsEmail = `ops-${randomBytes(4).toString('hex')}@example.test`;
  let ops: LoggedIn;
  /** Platform channel id → account id. */
  const channels = new Map<string, string>();

  function startNode(id: string): Promise<Node> {
    const configFile = path.join(dir, `${id}.json`);
    writeFileSync(
      configFile,
      JSON.stringify({
        env: 'test',
        host: '127.0.0.1',
        metrics: { port: 0 },
        log: { level: 'warn' },
        redis_prefix: `workers:${path.basename(dir)}:`,
        auth: { bootstrap_admins: [opsEmail] },
        chat: { platforms: { platform_a: { api_url: fake.apiUrl('platform_a'), socket_url: fake.socketUrl, reconnect_ms: RECONNECT_MS } } },
        jobs: { node_id: id, lease_ttl_ms: LEASE_TTL_MS, lease_renew_ms: LEASE_RENEW_MS, poll_interval_ms: 500, periods: { 'events.gift-sweep': 1 } },
      }),
    );
    const child = spawn(process.execPath, [...startNodeArgs(), '--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', PORT: '0', SVC_CONFIG: configFile, SVC_DATA_DIR: path.join(dir, id), DATABASE_URL: database.url, REDIS_URL: process.env.REDIS_URL! },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return waitFor(`${id} to listen`, () => {
      if (child.exitCode !== null) throw new Error(`${id} exited: ${output}`);
      const url = /Service listening on (http:\/\/\S+)/.exec(output)?.[1];
      return url ? { id, child, url, exited } : undefined;
    }, 90_000);
  }

  async function workers(node: Node) {
    const res = await api(node, 'GET', '/admin/workers', { token: ops.accessToken });
    expect(res.status).toBe(200);
    return res.body.data as { node_id: string; nodes: { node_id: string; channels: number }[]; channels: { platform: string; account_id: string; platform_channel_id: string; node_id: string; fence: number }[] };
  }

  const stored = async (): Promise<{ total: number; distinct: number }> => {
    const [row] = (await knex('chat_messages').where({ platform: 'platform_a' }).select(knex.raw('count(*)::int as total'), knex.raw('count(distinct (account_id, platform_message_id))::int as "distinct"'))) as {
      total: number;
      distinct: number;
    }[];
    return row!;
  };

  const message = (channel: string, n: number) => ({ type: 'chat.message', id: `${channel}-m${n}`, user_id: 'viewer-1', login: 'viewer', message: `message ${n} on ${channel}` });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'workers-'));
    fake = await startFakePlatform({ replay: true });
    database = await createTestDatabase();
    knex = knexFactory({ client: 'pg', connection: database.url, pool: { min: 0, max: 2 } });
    // One node first (it migrates pg-boss's schema), then the other two together.
    nodes.push(await startNode('node-1'));
    nodes.push(...(await Promise.all([startNode('node-2'), startNode('node-3')])));
    ops = await devLogin(nodes[0]!, opsEmail);
    for (let i = 0; i < CHANNELS; i += 1) {
      const owner = await devLogin(nodes[i % 3]!);
      const channel = `chan-${i}-${randomBytes(3).toString('hex')}`;
      const res = await api(nodes[i % 3]!, 'PUT', `/admin/accounts/${owner.accountId}/connections/platform_a`, { token: ops.accessToken, body: { platform_channel_id: channel } });
      expect(res.status).toBe(200);
      channels.set(channel, owner.accountId!);
    }
  }, 240_000);

  afterAll(async () => {
    for (const node of nodes) node.child.kill('SIGKILL');
    await Promise.all(nodes.map((n) => n.exited));
    await knex?.destroy();
    await database?.drop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('each channel has exactly one platform socket, the channels are spread over the three nodes, and GET /v1/admin/workers shows who holds which', async () => {
    const spread = await waitFor(
      'the channels to spread over three nodes',
      async () => {
        const view = await workers(nodes[0]!);
        const counts = view.nodes.map((n) => n.channels).sort();
        return view.channels.length === CHANNELS && counts.join() === '10,10,10' ? view : undefined;
      },
      60_000,
      250,
    );
    expect(spread.node_id).toBe('node-1');
    expect(spread.nodes.map((n) => n.node_id).sort()).toEqual(['node-1', 'node-2', 'node-3']);
    expect(new Set(spread.channels.map((c) => c.platform_channel_id))).toEqual(new Set(channels.keys()));
    for (const lease of spread.channels) {
      expect(lease).toMatchObject({ platform: 'platform_a', account_id: channels.get(lease.platform_channel_id) });
      expect(lease.fence).toBeGreaterThanOrEqual(1);
    }
    // Every node answers the same, and the platform sees one open socket per channel.
    expect((await workers(nodes[2]!)).channels.map((c) => [c.platform_channel_id, c.node_id]).sort()).toEqual(spread.channels.map((c) => [c.platform_channel_id, c.node_id]).sort());
    await waitFor('one socket per channel', () => ([...channels.keys()].every((c) => fake.openSockets(c) === 1) ? true : undefined), 10_000);
    for (const channel of channels.keys()) expect(fake.openSockets(channel)).toBe(1);

    // The operator permission gates it.
    const someone = await devLogin(nodes[1]!);
    expect((await api(nodes[1]!, 'GET', '/admin/workers', { token: someone.accessToken })).status).toBe(403);
    expect((await api(nodes[1]!, 'GET', '/admin/workers')).status).toBe(401);
  }, 120_000);

  test('a periodic job runs once per period with three nodes up', async () => {
    // events.gift-sweep every second on all three nodes: one job per one-second slot, each run once.
    const slots = async () =>
      (await knex.raw(
        `select singleton_on, count(*)::int as jobs, count(*) filter (where state = 'completed')::int as completed
           from pgboss.job where name = 'events.gift-sweep' group by singleton_on order by singleton_on`,
      )) as { rows: { singleton_on: Date; jobs: number; completed: number }[] };
    const rows = await waitFor('three completed periods', async () => {
      const { rows } = await slots();
      return rows.filter((r) => r.completed === 1).length >= 3 ? rows : undefined;
    }, 30_000, 250);
    for (const row of rows) expect(row.jobs).toBe(1);
  }, 60_000);

  test('SIGKILL one node: the two others take its channels over within the lease bound, and every message is stored once', async () => {
    for (const channel of channels.keys()) fake.deliver(channel, message(channel, 1));
    await waitFor('the first messages', async () => ((await stored()).total === CHANNELS ? true : undefined), 30_000);

    const before = await workers(nodes[0]!);
    const victim = nodes[2]!;
    const orphaned = before.channels.filter((c) => c.node_id === victim.id).map((c) => c.platform_channel_id);
    expect(orphaned.length).toBe(10);
    const openedBefore = new Map(orphaned.map((c) => [c, fake.openedAt(c).length]));

    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;
    nodes.splice(2, 1);
    // Sent while the channel has no node (or on the dead node's socket).
    for (const channel of channels.keys()) fake.deliver(channel, message(channel, 2));

    const reopened = await waitFor(
      'the orphaned channels to reconnect',
      () => (orphaned.every((c) => fake.openedAt(c).length > openedBefore.get(c)! && fake.openSockets(c) === 1) ? orphaned.map((c) => fake.openedAt(c).at(-1)!) : undefined),
      TAKEOVER_BOUND_MS + 15_000,
      50,
    );
    const takeoverMs = Math.max(...reopened) - killedAt;
    console.log(`takeover of ${orphaned.length} channels after SIGKILL: ${takeoverMs} ms (lease ${LEASE_TTL_MS} ms, renew ${LEASE_RENEW_MS} ms)`);

    const after = await waitFor(
      'the leases to move to the two live nodes',
      async () => {
        const view = await workers(nodes[0]!);
        return view.channels.length === CHANNELS && view.channels.every((c) => c.node_id !== victim.id) && view.nodes.length === 2 ? view : undefined;
      },
      15_000,
      250,
    );
    expect(after.nodes.map((n) => n.channels).sort()).toEqual([15, 15]);
    for (const lease of after.channels.filter((c) => orphaned.includes(c.platform_channel_id))) expect(lease.fence).toBeGreaterThanOrEqual(2);
    for (const channel of channels.keys()) expect(fake.openSockets(channel)).toBe(1);

    for (const channel of channels.keys()) fake.deliver(channel, message(channel, 3));
    const counts = await waitFor('every message', async () => {
      const now = await stored();
      return now.total === 3 * CHANNELS ? now : undefined;
    }, 30_000, 200);
    expect(counts).toEqual({ total: 3 * CHANNELS, distinct: 3 * CHANNELS });
    const perChannel = (await knex('chat_messages').where({ platform: 'platform_a' }).select('platform_message_id')) as { platform_message_id: string }[];
    const ids = perChannel.map((r) => r.platform_message_id).sort();
    expect(ids).toEqual([...channels.keys()].flatMap((c) => [1, 2, 3].map((n) => `${c}-m${n}`)).sort());
  }, 120_000);
});
