/**
 * The process as an operator runs it: `src/main.ts` in a child process. It prints its URL and docs
 * links, serves health, drains WebSocket sessions on SIGTERM and exits 0; a bad SVC_CONFIG stops it
 * with every problem listed and exit code 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from '../helpers/ws';
import { createTestDatabase, services } from '../helpers/app';

const root = path.resolve(__dirname, '../..');

function start(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'src/main.ts'], {
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
