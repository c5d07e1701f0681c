/**
 * The process as an operator runs it: `src/main.ts` in a child process. It prints its URL and docs
 * links, serves health, drains WebSocket sessions on SIGTERM and exits 0; on SIGTERM it also stops
 * accepting, closes idle keep-alive sockets at once, lets a large response in flight arrive whole
 * and cuts what is left at `http.shutdown_grace_ms`; a bad SVC_CONFIG stops it with every problem
 * listed and exit code 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from '../helpers/ws';
import { createTestDatabase, services, systemKey } from '../helpers/app';
import { startNodeArgs } from '../../scripts/bench/lib';

const root = path.resolve(__dirname, '../..');

/**
 * `src/main.ts` in one process with `npm start`'s Node options, as `npm start` runs it. Not the
 * tsx command: it runs the service in a second process and, when that one is busy for 60 ms as a
 * signal arrives, SIGKILLs it and exits 143.
 */
function start(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [...startNodeArgs(), '--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function waitFor<T>(probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A raw HTTP/1.1 keep-alive request on its own socket, so the test decides when bytes are read.
 * `firstBytes` resolves once the first bytes are in; `split()` parses the response. With `stall`,
 * the socket stops reading at its first bytes (`socket.resume()` goes on): the kernel grows a
 * loopback reader's receive buffer with what the reader takes (up to net.ipv4.tcp_rmem's maximum,
 * 32 MiB here), so a reader that went on a while first could take a whole large response in.
 */
function rawGet(base: string, target: string, headers: Record<string, string> = {}, stall = false) {
  const { hostname, port } = new URL(base);
  const socket: Socket = connectTcp(Number(port), hostname);
  const chunks: Buffer[] = [];
  let closedAt: number | null = null;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closedAt = Date.now();
      resolve();
    }),
  );
  const firstBytes = new Promise<void>((resolve) =>
    socket.once('data', () => {
      if (stall) socket.pause();
      resolve();
    }),
  );
  const lines = Object.entries({ host: `${hostname}:${port}`, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(`GET ${target} HTTP/1.1\r\n${lines.join('')}\r\n`);
  const received = () => Buffer.concat(chunks);
  const split = () => {
    const all = received();
    const end = all.indexOf('\r\n\r\n');
    const head = end < 0 ? '' : all.subarray(0, end).toString('latin1');
    const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? NaN);
    return { status: Number(head.split(' ')[1]), length, body: end < 0 ? Buffer.alloc(0) : all.subarray(end + 4) };
  };
  return { socket, firstBytes, closed, closedAt: () => closedAt, received, split };
}

describe('the service process', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'process-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('prints its URL and docs links, serves health, and drains on SIGTERM', async () => {
    const database = services.postgres ? await createTestDatabase() : null;
    const configFile = path.join(dir, 'svc.json');
    writeFileSync(
      configFile,
      JSON.stringify({ host: '127.0.0.1', metrics: { port: 0 }, log: { level: 'warn' }, redis_prefix: `proc:${randomBytes(4).toString('hex')}:` }),
    );
    const env: Record<string, string> = { PORT: '0', SVC_CONFIG: configFile, SVC_DATA_DIR: path.join(dir, 'data') };
    if (database) env.DATABASE_URL = database.url;
    if (services.redis) env.REDIS_URL = process.env.REDIS_URL!;
    const proc = start(env);
    try {
      const url = await waitFor(() => /Service listening on (http:\/\/\S+)/.exec(proc.output())?.[1], 45_000);
      expect(proc.output()).toContain(`${url}/v1/swagger-ui/`);
      expect(proc.output()).toContain(`${url}/v1/graphiql`);
      const health = (await (await fetch(`${url}/v1/health`)).json()) as { data: { status: string } };
      expect(health.data.status).toBe('healthy');

      const socket = await connect(`${url.replace('http', 'ws')}/v1/ws`);
      expect((await socket.next()).type).toBe('welcome');
      proc.child.kill('SIGTERM');
      expect((await socket.closed).code).toBe(1001);
      expect(await proc.exited).toBe(0);
      await expect(fetch(`${url}/v1/health`)).rejects.toThrow();
    } finally {
      proc.child.kill('SIGKILL');
      await database?.drop();
    }
  }, 60_000); // a cold start compiles PGlite and runs every migration; slow on a loaded machine

  test('SIGTERM drains: idle keep-alive sockets close at once, a large response in flight arrives whole, the rest is cut at the grace period', async () => {
    const database = services.postgres ? await createTestDatabase() : null;
    const ingest = systemKey('audit-ingest', ['audit:ingest']);
    const graceMs = 8000;
    const configFile = path.join(dir, 'drain.json');
    // No `host`: in development the listener binds 127.0.0.1 by default.
    writeFileSync(
      configFile,
      JSON.stringify({
        metrics: { port: 0 },
        log: { level: 'warn' },
        redis_prefix: `proc:${randomBytes(4).toString('hex')}:`,
        auth: { system_keys: [ingest.config] },
        http: { shutdown_grace_ms: graceMs },
        // Rows of 800 KB metadata (the bound is 64 KB unless an operator raises it).
        audit: { max_metadata_bytes: 1_048_576 },
      }),
    );
    const env: Record<string, string> = { PORT: '0', SVC_CONFIG: configFile, SVC_DATA_DIR: path.join(dir, 'drain-data') };
    if (database) env.DATABASE_URL = database.url;
    if (services.redis) env.REDIS_URL = process.env.REDIS_URL!;
    const proc = start(env);
    const sockets: Socket[] = [];
    try {
      const url = await waitFor(() => /Service listening on (http:\/\/\S+)/.exec(proc.output())?.[1], 45_000);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      // Not reachable on this machine's other addresses (when it has one).
      const external = Object.values(networkInterfaces())
        .flat()
        .find((a) => a && a.family === 'IPv4' && !a.internal);
      if (external) await expect(fetch(`http://${external.address}:${new URL(url).port}/v1/health`, { signal: AbortSignal.timeout(3000) })).rejects.toThrow();

      // A user with 20 audit rows of 800 KB metadata each: GET /v1/me/audit-log answers ~16 MB,
      // far more than the kernel's socket buffers hold for a client that is not reading.
      const login = await fetch(`${url}/v1/auth/dev/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `drain-${randomBytes(4).toString('hex')}@example.test`, display_name: 'Drain' }),
      });
      const { data: user } = (await login.json()) as { data: { access_token: string; user_id: string } };
      const blob = 'x'.repeat(800_000);
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${url}/v1/internal/audit-ingest`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${ingest.key}` },
          body: JSON.stringify({ user_id: user.user_id, type: 'user:login', metadata: { blob, i } }),
        });
        expect(res.status).toBe(201);
      }
      const auth = { authorization: `Bearer ${user.access_token}` };

      // An idle keep-alive connection: one small response read in full, then left open.
      const idle = rawGet(url, '/v1/health');
      sockets.push(idle.socket);
      await waitFor(() => (idle.split().body.length === idle.split().length ? true : undefined), 10_000);

      // Two large responses whose handlers have finished (the first bytes are out) but whose
      // clients stop reading there: `slow` resumes during the drain, `stalled` never does.
      const slow = rawGet(url, '/v1/me/audit-log?limit=50', auth, true);
      const stalled = rawGet(url, '/v1/me/audit-log?limit=50', auth, true);
      sockets.push(slow.socket, stalled.socket);
      await Promise.all([slow.firstBytes, stalled.firstBytes]);
      await new Promise((r) => setTimeout(r, 500));

      const signalledAt = Date.now();
      proc.child.kill('SIGTERM');
      const exitedAt = proc.exited.then((code) => ({ code, at: Date.now() }));

      await idle.closed;
      expect(idle.closedAt()! - signalledAt).toBeLessThan(3000);
      await new Promise((r) => setTimeout(r, 700));
      await expect(fetch(`${url}/v1/health`, { signal: AbortSignal.timeout(3000) })).rejects.toThrow();

      // The slow reader gets every byte, then the server closes its connection.
      await new Promise((r) => setTimeout(r, 800));
      slow.socket.resume();
      await slow.closed;
      const response = slow.split();
      expect(response.status).toBe(200);
      expect(response.length).toBeGreaterThan(16_000_000);
      expect(response.body.length).toBe(response.length);
      const page = JSON.parse(response.body.toString('utf8')) as { items: { metadata: { blob?: string } }[] };
      expect(page.items.filter((item) => item.metadata.blob === blob)).toHaveLength(20);

      // The stalled one holds the drain until the grace period, then is cut; the process exits 0.
      const exit = await exitedAt;
      expect(exit.code).toBe(0);
      expect(slow.closedAt()!).toBeLessThan(exit.at);
      expect(exit.at - signalledAt).toBeGreaterThanOrEqual(graceMs - 1000);
      expect(exit.at - signalledAt).toBeLessThan(graceMs + 15_000);
      stalled.socket.resume();
      await stalled.closed;
      const cut = stalled.split();
      expect(cut.status).toBe(200);
      expect(cut.body.length).toBeLessThan(cut.length);
    } finally {
      for (const socket of sockets) socket.destroy();
      proc.child.kill('SIGKILL');
      await database?.drop();
    }
  }, 120_000);

  test('a bad SVC_CONFIG stops it with every problem listed', async () => {
    const configFile = path.join(dir, 'bad.yaml');
    writeFileSync(configFile, 'port: nope\nmetrics:\n  host: 5\n');
    const proc = start({ SVC_CONFIG: configFile });
    expect(await proc.exited).toBe(1);
    expect(proc.output()).toContain('Invalid configuration');
    expect(proc.output()).toContain('port: must be integer');
    expect(proc.output()).toContain('metrics.host: must be string');
  });
});
