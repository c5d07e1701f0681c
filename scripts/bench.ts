/**
 * Benchmarks with targets (`npm run bench`): latency and throughput of the foundation's hot paths
 * over real loopback HTTP and WebSocket connections, and the process's resident memory. Request
 * loops are bounded in count and time. Storage follows the environment (DATABASE_URL, REDIS_URL),
 * embedded by default. Exits 1 when a target is missed.
 */
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/config';
import { createScratchDatabase } from '../src/infra/db/scratch';
import { startServer } from '../src/server';

interface Target {
  name: string;
  p99Ms: number;
  minRps?: number;
}

const REQUESTS = 2000;
const CONCURRENCY = 16;
const TIME_LIMIT_MS = 20_000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function load(run: () => Promise<void>): Promise<{ rps: number; p50: number; p99: number; count: number }> {
  const latencies: number[] = [];
  const deadline = Date.now() + TIME_LIMIT_MS;
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (issued < REQUESTS && Date.now() < deadline) {
        issued += 1;
        const t0 = performance.now();
        await run();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), count: latencies.length };
}

async function main(): Promise<void> {
  const key = `lm_sys_${randomBytes(32).toString('hex')}`;
  const scratch = process.env.DATABASE_URL ? await createScratchDatabase(process.env.DATABASE_URL, 'bench') : null;
  const config = loadConfig({
    overrides: {
      ...(scratch ? { database_url: scratch.url } : {}),
      env: 'test',
      host: '127.0.0.1',
      port: 0,
      data_dir: 'memory://',
      redis_prefix: `bench:${randomBytes(4).toString('hex')}:`,
      metrics: { host: '127.0.0.1', port: 0 },
      http: { validate_responses: false },
      auth: { system_keys: [{ label: 'bench', key, permissions: ['events:read'] }] },
      // Limits stay on, so their cost is measured, but high enough never to refuse the load.
      rate_limits: { anonymous: 1_000_000_000, jwt: 1_000_000_000 },
    },
  });
  const app = await createApp(config);
  const running = await startServer(app, { port: 0, host: '127.0.0.1', metricsPort: 0, metricsHost: '127.0.0.1' });
  const results: { target: Target; measured: { rps: number; p50: number; p99: number; count: number } }[] = [];
  const auth = { authorization: `Bearer ${key}` };

  const login = await fetch(`${running.url}/v1/auth/dev/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench@example.test', display_name: 'Bench' }),
  });
  const session = { authorization: `Bearer ${((await login.json()) as { data: { access_token: string } }).data.access_token}` };
  const expectOk = (res: Response) => {
    if (!res.ok) throw new Error(`unexpected ${res.status}`);
    return res.arrayBuffer();
  };
  const cases: [Target, () => Promise<void>][] = [
    [{ name: 'GET /v1/health (three live probes)', p99Ms: 100, minRps: 500 }, async () => void (await expectOk(await fetch(`${running.url}/v1/health`)))],
    [{ name: 'GET /v1/tokens/me (system key)', p99Ms: 50, minRps: 500 }, async () => void (await expectOk(await fetch(`${running.url}/v1/tokens/me`, { headers: auth })))],
    [
      { name: 'POST /v1/gql myPermissions', p99Ms: 60, minRps: 400 },
      async () =>
        void (await expectOk(
          await fetch(`${running.url}/v1/gql`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ query: '{ myPermissions { context permissions } }' }),
          }),
        )),
    ],
    [
      // Two indexed reads per request by design (session row, live roles): ADR 002.
      { name: 'GET /v1/tokens/me (JWT session: session row + live roles)', p99Ms: 150, minRps: 200 },
      async () => void (await expectOk(await fetch(`${running.url}/v1/tokens/me`, { headers: session }))),
    ],
    [
      { name: 'GET /v1/account/members (JWT session)', p99Ms: 200, minRps: 150 },
      async () => void (await expectOk(await fetch(`${running.url}/v1/account/members`, { headers: session }))),
    ],
  ];
  for (const [target, run] of cases) {
    await load(run); // warm-up pass
    results.push({ target, measured: await load(run) });
  }

  const socket = new WebSocket(`${running.url.replace('http', 'ws')}/v1/ws`);
  const pending: (() => void)[] = [];
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { type: string };
      if (message.type === 'welcome') resolve();
      if (message.type === 'pong') pending.shift()?.();
    });
  });
  const ping = () =>
    new Promise<void>((resolve) => {
      pending.push(resolve);
      socket.send('{"type":"ping"}');
    });
  const wsLatencies: number[] = [];
  for (let i = 0; i < 1000; i += 1) {
    const t0 = performance.now();
    await ping();
    wsLatencies.push(performance.now() - t0);
  }
  wsLatencies.sort((a, b) => a - b);
  results.push({
    target: { name: 'WebSocket ping → pong round trip', p99Ms: 10 },
    measured: { rps: 0, p50: percentile(wsLatencies, 50), p99: percentile(wsLatencies, 99), count: wsLatencies.length },
  });
  socket.close();

  const rssMb = process.memoryUsage().rss / 1024 / 1024;
  await running.stop();
  await scratch?.drop();

  let missed = 0;
  console.log(`storage: ${config.database_url ? 'PostgreSQL' : 'PGlite'}, cache/bus: ${config.redis_url ? 'Redis' : 'in-process'}`);
  for (const { target, measured } of results) {
    const ok = measured.p99 <= target.p99Ms && (target.minRps === undefined || measured.rps >= target.minRps);
    if (!ok) missed += 1;
    const rps = target.minRps === undefined ? '' : ` ${measured.rps.toFixed(0)} req/s (target >= ${target.minRps})`;
    console.log(`${ok ? 'ok  ' : 'MISS'} ${target.name}: n=${measured.count} p50 ${measured.p50.toFixed(2)} ms, p99 ${measured.p99.toFixed(2)} ms (target <= ${target.p99Ms})${rps}`);
  }
  // Embedded PGlite runs PostgreSQL compiled to WebAssembly in-process: about 450 MiB of it.
  const rssTarget = config.database_url ? 300 : 700;
  if (rssMb > rssTarget) missed += 1;
  console.log(`${rssMb <= rssTarget ? 'ok  ' : 'MISS'} resident memory after the run: ${rssMb.toFixed(0)} MiB (target <= ${rssTarget})`);
  process.exit(missed ? 1 : 0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
