/**
 * A rolling upgrade: the previous release (the commit spec/released/COMMIT records, materialised
 * from git with its own dependencies) and today's code serve side by side on one PostgreSQL
 * database and one Redis, as they do while a load balancer drains the old nodes one by one. The
 * old node creates the schema, today's node migrates it forward while the old one keeps serving;
 * then mixed traffic goes to both: sign-ins whose tokens are used on the other node, global
 * feature flags switched on either node and seen by both, events emitted, overlay settings changed
 * and chat and automation messages broadcast on each node, each heard exactly once by sockets on
 * both. Any 5xx, any live message a socket never hears (or hears twice), any error logged fails it.
 * PostgreSQL and Redis only: the embedded store belongs to one process.
 *
 * The previous release is installed once per commit under node_modules/.cache/release-<commit>
 * (`npm ci --prefer-offline`); a clone without that commit fails with what to fetch.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { startNodeArgs } from '../../scripts/bench/lib';
import { createScratchDatabase, type ScratchDatabase } from '../../src/infra/db/scratch';
import { services } from '../helpers/app';
import { buildIfStale, ROOT as root, sharedNodeConfig, startServiceProcess, type ServiceProcess } from '../helpers/service-process';

const OPERATOR = 'rolling-ops@example.test';
/** What `npm run spec:release` writes (scripts/spec-diff.ts, RELEASED_COMMIT_FILE); not imported: that script loads every diff tool. */
const RELEASED_COMMIT_FILE = 'spec/released/COMMIT';

/** The previous release's tree with its dependencies installed, made once per commit. */
function previousRelease(): string {
  const commit = readFileSync(path.join(root, RELEASED_COMMIT_FILE), 'utf8').trim();
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: root, stdio: 'ignore' });
  } catch {
    throw new Error(
      `the previous release ${commit} (${RELEASED_COMMIT_FILE}) is not in this clone: the rolling-upgrade test needs the history (git fetch --unshallow, or a checkout with fetch-depth 0)`,
    );
  }
  const dir = path.join(root, 'node_modules', '.cache', `release-${commit}`);
  if (existsSync(path.join(dir, '.installed'))) return dir;
  const staging = `${dir}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  execFileSync('sh', ['-c', `git -C "${root}" archive --format=tar ${commit} | tar -x -C "${staging}"`], { stdio: 'ignore' });
  execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: staging, stdio: 'ignore', env: { ...process.env, CI: 'true' } });
  writeFileSync(path.join(staging, '.installed'), `${commit}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return dir;
}

interface Node extends ServiceProcess {
  name: 'previous' | 'current';
}

async function startNode(name: Node['name'], args: string[], cwd: string, env: Record<string, string>): Promise<Node> {
  return { name, ...(await startServiceProcess(name, args, cwd, env)) };
}

/** Log lines at error level or above (pino's 50+), and anything on a node's output that is not a log line or the banner. */
function troubles(node: Node): string[] {
  return node
    .output()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .filter((line) => {
      if (!line.startsWith('{')) return !/^(Service listening|\s)/.test(line);
      try {
        return (JSON.parse(line) as { level?: number }).level! >= 50;
      } catch {
        return true;
      }
    });
}

interface Client {
  ws: WebSocket;
  got: Record<string, unknown>[];
}

function socket(node: Node, token: string): Promise<Client> {
  const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/v1/ws?token=${encodeURIComponent(token)}`);
  const got: Record<string, unknown>[] = [];
  ws.on('message', (data: Buffer) => got.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, got }));
    ws.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe() && Date.now() < deadline) await sleep(50);
}

(services.postgres && services.redis ? describe : describe.skip)('a rolling upgrade from the previous release', () => {
  const nodes: Node[] = [];
  const sockets: Client[] = [];
  let database: ScratchDatabase;
  let dir: string;
  /** Every answer of either node with a 5xx status. */
  const failures: string[] = [];

  async function call(node: Node, method: string, route: string, token?: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${node.url}/v1${route}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (res.status >= 500) failures.push(`${node.name} ${method} ${route}: ${res.status} ${text.slice(0, 300)}`);
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
  }

  const login = async (node: Node, email: string) => {
    const res = await call(node, 'POST', '/auth/dev/login', undefined, { email, display_name: email.split('@')[0] });
    expect(res.status).toBe(200);
    return res.body.data as { access_token: string; account_id: string };
  };

  beforeAll(async () => {
    const release = previousRelease();
    buildIfStale();
    dir = mkdtempSync(path.join(tmpdir(), 'rolling-'));
    // Empty: the previous release creates the schema, as it did in production.
    database = await createScratchDatabase(process.env.DATABASE_URL!, 'up');
    const configFile = path.join(dir, 'svc.json');
    writeFileSync(
      configFile,
      JSON.stringify(sharedNodeConfig('rolling', { auth: { bootstrap_admins: [OPERATOR] } })),
    );
    const env = (name: string) => ({ SVC_CONFIG: configFile, SVC_DATA_DIR: path.join(dir, name), DATABASE_URL: database.url, REDIS_URL: process.env.REDIS_URL! });
    // The previous release as it ran: its own start command (TypeScript through tsx).
    const previousArgs = ['--max-old-space-size=256', '--no-warnings', '--import', 'tsx', 'src/main.ts'];
    const first = await startNode('previous', previousArgs, release, env('previous'));
    nodes.push(first);
    nodes.push(await startNode('current', [...startNodeArgs(), 'dist/main.js'], root, env('current')));
    // A node of the previous release restarted on the database today's node migrated (as a crash,
    // a reschedule or a scale-out does during the roll) starts, and serves the traffic below.
    first.child.kill('SIGTERM');
    await new Promise((resolve) => (first.child.exitCode !== null ? resolve(null) : first.child.once('exit', resolve)));
    nodes.splice(0, 1, await startNode('previous', previousArgs, release, env('previous')));
  }, 240_000);

  afterAll(async () => {
    for (const s of sockets) s.ws.terminate();
    for (const node of nodes) node.child.kill('SIGKILL');
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('both releases serve one database and one Redis: tokens, feature flags and live messages cross between them, no 5xx, nothing dropped', async () => {
    const [previous, current] = nodes as [Node, Node];
    const both = [previous, current];
    const ownerEmail = `rolling-owner-${randomBytes(4).toString('hex')}@example.test`;
    // Tokens minted on one release, used on the other.
    const owner = await login(previous, ownerEmail);
    const ownerOnCurrent = await login(current, ownerEmail);
    const tokenFor = new Map<Node, string>([
      [previous, ownerOnCurrent.access_token],
      [current, owner.access_token],
    ]);
    const ops = new Map<Node, string>();
    for (const node of both) ops.set(node, (await login(node === previous ? current : previous, OPERATOR)).access_token);
    for (const node of both) {
      expect((await call(node, 'GET', '/me', tokenFor.get(node))).status).toBe(200);
      expect((await call(node, 'GET', '/events', tokenFor.get(node))).status).toBe(200);
      expect((await call(node, 'GET', '/admin/workers', ops.get(node))).status).toBe(200);
    }

    // A global flag switched on either release: both gate on it at once, both read the cache entry.
    for (const switcher of both) {
      expect((await call(switcher, 'PUT', '/admin/feature-flags/feature:events', ops.get(switcher), { enabled: false })).status).toBe(200);
      for (const node of both) expect({ switcher: switcher.name, node: node.name, status: (await call(node, 'GET', '/events', tokenFor.get(node))).status }).toMatchObject({ status: 403 });
      expect((await call(switcher, 'PUT', '/admin/feature-flags/feature:events', ops.get(switcher), { enabled: true })).status).toBe(200);
      for (const node of both) expect({ switcher: switcher.name, node: node.name, status: (await call(node, 'GET', '/events', tokenFor.get(node))).status }).toMatchObject({ status: 200 });
    }

    // Sockets on both releases, on the events, chat, automations and overlay channels of one account.
    const account = owner.account_id;
    const overlay = await call(current, 'POST', '/overlays', tokenFor.get(current), { name: 'Rolling', settings: { n: 0 } });
    expect(overlay.status).toBe(201);
    const overlayId = (overlay.body.data as { id: string }).id;
    let version = (overlay.body.data as { version: number }).version;
    const overlayToken = ((await call(previous, 'POST', `/overlays/${overlayId}/token`, tokenFor.get(previous))).body.data as { token: string }).token;
    const clients = new Map<Node, Client>();
    for (const node of both) {
      const client = await socket(node, tokenFor.get(node)!);
      const source = await socket(node, overlayToken);
      sockets.push(client, source);
      for (const channel of [`events:${account}`, `chat:${account}`, `automations:${account}`]) client.ws.send(JSON.stringify({ type: 'subscribe', channel }));
      source.ws.send(JSON.stringify({ type: 'subscribe', channel: `overlay:${overlayId}` }));
      await until(() => client.got.filter((m) => m.type === 'subscribed').length === 3 && source.got.some((m) => m.type === 'subscribed'), 10_000);
      expect([...client.got, ...source.got].filter((m) => m.type !== 'welcome')).toEqual([
        ...[`events:${account}`, `chat:${account}`, `automations:${account}`].map((channel) => ({ type: 'subscribed', channel })),
        { type: 'subscribed', channel: `overlay:${overlayId}` },
      ]);
      // Overlay frames are collected with the client's.
      source.ws.removeAllListeners('message');
      source.ws.on('message', (data: Buffer) => client.got.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>));
      clients.set(node, client);
    }

    // Each release publishes every kind in turn.
    const tags: string[] = [];
    for (const node of [previous, current, previous, current]) {
      const tag = `${node.name}-${tags.length}`;
      tags.push(tag);
      const token = tokenFor.get(node);
      expect((await call(node, 'POST', '/events/emit', token, { type: 'platform_a:follower', platform: 'platform_a', raw: { tag } })).status).toBe(201);
      const patched = await call(node, 'PATCH', `/overlays/${overlayId}`, token, { version, settings: { tag } });
      expect(patched.status).toBe(200);
      version = (patched.body.data as { version: number }).version;
      clients.get(node)!.ws.send(JSON.stringify({ type: 'broadcast', channel: `chat:${account}`, payload: JSON.stringify({ tag }) }));
      clients.get(node)!.ws.send(JSON.stringify({ type: 'broadcast', channel: `automations:${account}`, payload: JSON.stringify({ tag }) }));
    }
    const kinds = {
      event: (m: any, tag: string) => m.type === 'event' && m.data?.raw?.tag === tag,
      overlay: (m: any, tag: string) => m.type === 'event' && m.channel === `overlay:${overlayId}` && m.data?.settings?.tag === tag,
      chat: (m: any, tag: string) => m.type === 'chat:message' && m.data?.tag === tag,
      automation: (m: any, tag: string) => m.type === 'automation' && m.data?.tag === tag,
    };
    const heard = () =>
      both.flatMap((node) => tags.flatMap((tag) => Object.entries(kinds).map(([kind, is]) => ({ on: node.name, kind, tag, times: clients.get(node)!.got.filter((m) => is(m, tag)).length }))));
    await until(() => heard().every((h) => h.times >= 1), 10_000);
    // A moment for duplicates to show.
    await sleep(500);
    expect(heard().filter((h) => h.times !== 1)).toEqual([]);
    for (const node of both) expect(clients.get(node)!.got.filter((m) => m.type === 'error')).toEqual([]);

    // Reads over what either release wrote.
    for (const node of both) {
      for (const route of ['/me', '/overlays', `/overlays/${overlayId}`, '/events', '/notifications', '/tokens/me']) expect({ node: node.name, route, status: (await call(node, 'GET', route, tokenFor.get(node))).status }).toMatchObject({ status: 200 });
      expect((await call(node, 'GET', '/admin/workers', ops.get(node))).status).toBe(200);
    }

    expect(failures).toEqual([]);
    for (const node of nodes) {
      expect(node.child.exitCode).toBeNull();
      expect({ node: node.name, troubles: troubles(node) }).toEqual({ node: node.name, troubles: [] });
    }
  }, 120_000);
});
