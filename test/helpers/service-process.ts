/**
 * Service processes as operators run them, for the tests that need several real processes on one
 * database and one Redis: the built tree (`dist/main.js`, built first when the sources are newer,
 * as `npm start` does) or another release's tree, each with a config file of its own.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Everything the process printed so far, stdout and stderr. */
  output(): string;
}

/** What `npm start` runs first: a no-op when dist/ is current (CI builds it a step before the tests). */
export function buildIfStale(): void {
  execFileSync(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT, stdio: 'ignore' });
}

/**
 * The settings every node of one test shares (a sealing key, a JWT secret, a Redis prefix), so that
 * what one node writes the others read; `extra` is merged over them.
 */
export function sharedNodeConfig(prefix: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const auth = { jwt_secret: randomBytes(32).toString('hex'), ...((extra.auth as Record<string, unknown> | undefined) ?? {}) };
  return {
    host: '127.0.0.1',
    metrics: { port: 0 },
    log: { level: 'warn' },
    redis_prefix: `${prefix}:${randomBytes(4).toString('hex')}:`,
    secrets: { encryption_keys: [{ id: prefix, key: randomBytes(32).toString('base64') }] },
    ...extra,
    auth,
  };
}

/** Starts `node <args>` in `cwd` on a free port and resolves once it prints its URL; rejects with its output if it exits or takes `timeoutMs`. */
export function startServiceProcess(name: string, args: readonly string[], cwd: string, env: Record<string, string>, timeoutMs = 90_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, args, { cwd, env: { PATH: process.env.PATH ?? '', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`${name} node did not start:\n${output.slice(-3000)}`)), timeoutMs);
    const check = setInterval(() => {
      const url = /Service listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url || child.exitCode !== null) {
        clearInterval(check);
        clearTimeout(deadline);
        if (url) resolve({ child, url, output: () => output });
        else reject(new Error(`${name} node exited ${child.exitCode}:\n${output.slice(-3000)}`));
      }
    }, 50);
  });
}
