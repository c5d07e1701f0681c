/**
 * Probes that measure the dependency, not the loop: a store whose answer arrives while the event
 * loop is blocked is not declared down (fairTimeout reads the sockets before it gives up, and gives
 * back the time a late timer lost); a store that does not answer still is; the loop's own delay is
 * a readiness reason named as such, and a metric.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { fairTimeout, loopDelay, watchLoopDelay } from '../../src/infra/loop-delay';
import { createSystemService, type Probe } from '../../src/modules/system/service';

/** Keeps the loop busy for `ms` (the hostile page's parse, in miniature). */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/** A loopback echo server: a "dependency" whose answer arrives over a real socket. */
let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.on('data', (data) => socket.write(data));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends a ping and resolves with the elapsed ms when the echo comes back. */
function echo(socket: Socket): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    socket.once('data', () => resolve(performance.now() - started));
    socket.write('ping');
  });
}

async function opened(): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

describe('fairTimeout', () => {
  test('an answer that arrived while the loop was blocked past the timeout counts: resolved, not timed out', async () => {
    const socket = await opened();
    try {
      const probe = fairTimeout(echo(socket), 100, 'echo');
      // The echo arrives within a millisecond or two, but the loop reads it only after 400 ms.
      block(400);
      await expect(probe).resolves.toBeGreaterThan(0);
    } finally {
      socket.destroy();
    }
  });

  test('a dependency that does not answer still times out (within four times its timeout, even on a loaded machine)', async () => {
    const started = performance.now();
    await expect(fairTimeout(new Promise(() => undefined), 100, 'silent')).rejects.toThrow('silent timed out after 100 ms');
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test('a failed call fails at once, as it is', async () => {
    await expect(fairTimeout(Promise.reject(new Error('ECONNREFUSED')), 1000, 'refused')).rejects.toThrow('ECONNREFUSED');
  });
});

describe('readiness under a busy loop', () => {
  const websocket = () => ({ sessions: 0, channels: 0 });

  test('stores that answer are healthy although the loop was blocked longer than the readiness timeout', async () => {
    const socket = await opened();
    try {
      const probe: Probe = async () => echo(socket);
      const service = createSystemService({ version: '1', startedAt: Date.now(), probes: { relational: probe, timeseries: probe, cache: probe }, websocket, readyTimeoutMs: 100, loopDelay: () => ({ p50Ms: 0, p99Ms: 0, maxMs: 0 }) });
      const ready = service.readiness();
      // The probes start a few promise turns later (never a turn of the loop, which would read the answer).
      for (let i = 0; i < 20; i += 1) await Promise.resolve();
      block(500);
      const result = await ready;
      expect(result.status).toBe('ready');
      expect(result.services.relational.status).toBe('healthy');
      service.stop();
    } finally {
      socket.destroy();
    }
  });

  test('a loop delay past the bound is its own reason: unavailable with event_loop unhealthy, stores healthy', async () => {
    const up: Probe = async () => 1;
    const service = createSystemService({ version: '1', startedAt: Date.now(), probes: { relational: up, timeseries: up, cache: up }, websocket, loopDelayBoundMs: 1000, loopDelay: () => ({ p50Ms: 900, p99Ms: 1500, maxMs: 2000 }) });
    const result = await service.readiness();
    expect(result).toEqual({
      status: 'unavailable',
      services: { relational: { status: 'healthy', latencyMs: expect.any(Number) }, timeseries: { status: 'healthy', latencyMs: expect.any(Number) } },
      eventLoop: { status: 'unhealthy', delayMs: 1500 },
    });
    service.stop();
  });

  test('the process loop delay is measured: a blocked loop shows in the figures', async () => {
    watchLoopDelay();
    await new Promise((resolve) => setTimeout(resolve, 50));
    block(300);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(loopDelay().maxMs).toBeGreaterThanOrEqual(250);
  });
});
