/**
 * Shared pieces of the bench (scripts/bench.ts): child processes that announce readiness with one
 * JSON line on stdout, free loopback ports, percentiles and the resident-memory sampler. Every
 * process the bench starts runs on 127.0.0.1 only.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { build, type Plugin } from 'esbuild';

export const ROOT = path.resolve(__dirname, '..', '..');
export const HOST = '127.0.0.1';

/**
 * The Node options of `npm start` (package.json's start script: `exec node <flags> dist/main.js`),
 * so the bench and the process tests run the service with the heap settings a deployment gets.
 */
export function startNodeArgs(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.split(/\s+/);
  const node = words.indexOf('node');
  if (node < 0) return [];
  const flags: string[] = [];
  for (let i = node + 1; i < words.length && words[i]!.startsWith('--'); i += 1) {
    // `--import <module>` is how a script loads TypeScript, not a runtime setting.
    if (words[i] === '--import') i += 1;
    else flags.push(words[i]!);
  }
  return flags;
}

/**
 * The production build (`npm run build`, built only when a source is newer than it): the service
 * the bench measures is `node <start flags> dist/main.js`, what `npm start` runs. Through tsx the
 * code is the same, but esbuild's kept names wrap every function a request creates in a
 * `__name()` call (a property definition per closure), which a deployed process never pays.
 */
export function productionBuild(): string {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
  return path.join(ROOT, 'dist', 'main.js');
}

/** Imports of the service's own code (src/, generated/) resolve to its production build (dist/), as built. */
const fromProductionBuild: Plugin = {
  name: 'production-build',
  setup(builder) {
    builder.onResolve({ filter: /^\.\.?\// }, (args) => {
      const relative = path.relative(ROOT, path.resolve(args.resolveDir, args.path));
      if (!/^(src|generated)\//.test(relative)) return undefined;
      return { path: path.join(ROOT, 'dist', relative.replace(/\.ts$/, '')), external: true };
    });
  },
};

/**
 * A reference script compiled as a team would deploy it: plain JavaScript by esbuild (its
 * packages required from node_modules, no TypeScript loader at run time; what it uses of the
 * service, the floor's events domain, from the production build), so references and the service's
 * production build are compared as built code on both sides. Returns the file to run; call
 * `productionBuild` first.
 */
export async function compiledScript(file: string): Promise<string> {
  const outfile = path.join(ROOT, 'node_modules', '.cache', 'bench', `${path.basename(file, '.ts')}.cjs`);
  await build({ entryPoints: [path.join(ROOT, file)], outfile, bundle: true, platform: 'node', format: 'cjs', target: 'node20', packages: 'external', plugins: [fromProductionBuild], logLevel: 'error' });
  return outfile;
}

/** A child process running a JavaScript file (the production build, a compiled reference). */
export function spawnJs(file: string, args: string[], options: { env?: NodeJS.ProcessEnv; stdout?: 'pipe' | 'ignore' | number; nodeArgs?: string[] } = {}): ChildProcess {
  return spawn(process.execPath, [...(options.nodeArgs ?? []), file, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', options.stdout ?? 'pipe', 'inherit'],
  });
}

/** A child process running a TypeScript file through tsx (the bench's load and socket clients). */
export function spawnTs(file: string, args: string[], options: { env?: NodeJS.ProcessEnv; stdout?: 'pipe' | 'ignore' | number; nodeArgs?: string[] } = {}): ChildProcess {
  return spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', path.join(ROOT, file), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', options.stdout ?? 'pipe', 'inherit'],
  });
}

/** Waits for the first stdout line that parses as a JSON object, or fails after `timeoutMs`. */
export function firstJsonLine<T>(child: ChildProcess, timeoutMs: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    if (!child.stdout) return reject(new Error(`${what}: no stdout`));
    const lines = readline.createInterface({ input: child.stdout });
    const timer = setTimeout(() => {
      lines.close();
      reject(new Error(`${what}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`${what}: exited with ${code} before answering`));
    };
    child.once('exit', onExit);
    lines.on('line', (line) => {
      if (!line.startsWith('{')) return;
      try {
        const value = JSON.parse(line) as T;
        clearTimeout(timer);
        child.off('exit', onExit);
        lines.close();
        resolve(value);
      } catch {
        // not ours: keep reading
      }
    });
  });
}

/** Runs a child to completion and answers its last JSON line (its result). */
export async function runJson<T>(file: string, input: unknown, timeoutMs: number, what: string): Promise<T> {
  const child = spawnTs(file, [JSON.stringify(input)]);
  const result = new Promise<T>((resolve, reject) => {
    let last: string | null = null;
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('{')) last = line;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what}: still running after ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0 || last === null) return reject(new Error(`${what}: exited with ${code}`));
      resolve(JSON.parse(last) as T);
    });
  });
  return result;
}

/** Stops a child (SIGTERM, then SIGKILL after `graceMs`) and waits for it to exit. */
export function stop(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** A port the kernel says is free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Resident memory of a process in MiB: current (VmRSS) and the kernel's peak (VmHWM). Linux only. */
export function residentMemory(pid: number): { rssMiB: number; peakMiB: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/** Samples a process's resident memory every `everyMs` and remembers the highest value seen. */
export function memorySampler(pid: number, everyMs = 250) {
  let peak = 0;
  const sample = () => {
    const m = residentMemory(pid);
    if (m) peak = Math.max(peak, m.rssMiB, Number.isFinite(m.peakMiB) ? m.peakMiB : 0);
  };
  const timer = setInterval(sample, everyMs);
  timer.unref();
  return {
    peakMiB: () => {
      sample();
      return peak;
    },
    stop: () => clearInterval(timer),
  };
}

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** CPU time (user + system) a process has used so far, in milliseconds. Linux only. */
export function cpuMillis(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}
