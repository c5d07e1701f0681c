/**
 * GET /v1/health: the documented shape, dependency probes (healthy, degraded when the cache is
 * unreachable), the status rules of the specification ("Health response shape"), and the
 * background probe loop: requests serve the last round and never wait on a dependency.
 */
import { ANONYMOUS } from '../../src/auth/context';
import { createLogger } from '../../src/infra/logger';
import { createSystemRest } from '../../src/modules/system/rest';
import { createSystemService, overallStatus, type Probe } from '../../src/modules/system/service';
import { useTestApp } from '../helpers/app';

interface HealthBody {
  data: {
    status: string;
    version: string;
    uptime_seconds: number;
    services: Record<'relational' | 'timeseries' | 'cache', { status: string; latency_ms: number }>;
    websocket: { sessions: number; channels: number };
  };
  _links: { self: string };
}

function expectDependency(dep: unknown, status: 'healthy' | 'unhealthy') {
  expect(dep).toEqual({ status, latency_ms: expect.any(Number) });
  const { latency_ms } = dep as { latency_ms: number };
  expect(Number.isInteger(latency_ms)).toBe(true);
  expect(latency_ms).toBeGreaterThanOrEqual(0);
}

describe('GET /v1/health', () => {
  const t = useTestApp();

  test('200 with exactly the documented shape, every dependency healthy', async () => {
    const res = await fetch(`${t.url}/v1/health`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as HealthBody;
    expect(Object.keys(body).sort()).toEqual(['_links', 'data']);
    expect(body._links).toEqual({ self: '/v1/health' });
    expect(Object.keys(body.data).sort()).toEqual(['services', 'status', 'uptime_seconds', 'version', 'websocket']);
    expect(body.data.status).toBe('healthy');
    expect(body.data.version).toBe(t.app.config.version);
    expect(Number.isInteger(body.data.uptime_seconds)).toBe(true);
    expect(body.data.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(Object.keys(body.data.services).sort()).toEqual(['cache', 'relational', 'timeseries']);
    for (const name of ['relational', 'timeseries', 'cache'] as const) expectDependency(body.data.services[name], 'healthy');
    expect(body.data.websocket).toEqual({ sessions: expect.any(Number), channels: expect.any(Number) });
    expect(Number.isInteger(body.data.websocket.sessions) && body.data.websocket.sessions >= 0).toBe(true);
    expect(Number.isInteger(body.data.websocket.channels) && body.data.websocket.channels >= 0).toBe(true);
  });

  test('is public: works without credentials and ignores an invalid one', async () => {
    const res = await fetch(`${t.url}/v1/health`, { headers: { authorization: 'Bearer lm_sys_nope' } });
    expect(res.status).toBe(200);
  });
});

describe('GET /v1/health with the cache unreachable', () => {
  const t = useTestApp({ redis_url: 'redis://127.0.0.1:1' });

  test('degraded with HTTP 200, cache unhealthy, relational and timeseries healthy, answered without waiting', async () => {
    const res = await fetch(`${t.url}/v1/health`);
    // It used to take 2.3–2.5 s per request (three live probes each, one waiting on the dead
    // cache); now every request serves the last background round.
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      expect((await fetch(`${t.url}/v1/health`)).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1000);
    }
    expect(res.status).toBe(200);
    const body = (await res.json()) as HealthBody;
    expect(body.data.status).toBe('degraded');
    expectDependency(body.data.services.cache, 'unhealthy');
    expectDependency(body.data.services.relational, 'healthy');
    expectDependency(body.data.services.timeseries, 'healthy');
    expect(body._links).toEqual({ self: '/v1/health' });
  }, 20_000);
});

describe('health status rules (unit)', () => {
  const log = createLogger({ level: 'silent', service: 'x', env: 'test', version: '0' });
  const up: Probe = async () => 3;
  const down: Probe = async () => {
    throw new Error('connection refused');
  };

  test('overallStatus: all up healthy, some up degraded, none up unhealthy', () => {
    expect(overallStatus(['healthy', 'healthy', 'healthy'])).toBe('healthy');
    expect(overallStatus(['healthy', 'unhealthy', 'healthy'])).toBe('degraded');
    expect(overallStatus(['unhealthy', 'unhealthy', 'healthy'])).toBe('degraded');
    expect(overallStatus(['unhealthy', 'unhealthy', 'unhealthy'])).toBe('unhealthy');
  });

  test('createSystemService reports unhealthy when every probe rejects', async () => {
    const service = createSystemService({
      version: '9.9.9',
      startedAt: 0,
      now: () => 61_500,
      probes: { relational: down, timeseries: down, cache: down },
      websocket: () => ({ sessions: 2, channels: 1 }),
    });
    const health = await service.health();
    expect(health.status).toBe('unhealthy');
    expect(health.version).toBe('9.9.9');
    expect(health.uptimeSeconds).toBe(61);
    expect(health.websocket).toEqual({ sessions: 2, channels: 1 });
    for (const dep of Object.values(health.services)) {
      expect(dep.status).toBe('unhealthy');
      expect(dep.latencyMs).toBeGreaterThanOrEqual(0);
    }
  });

  test('createSystemService: healthy and degraded mixes', async () => {
    const make = (relational: Probe, timeseries: Probe, cache: Probe) =>
      createSystemService({ version: '1', startedAt: Date.now(), probes: { relational, timeseries, cache }, websocket: () => ({ sessions: 0, channels: 0 }) });
    expect((await make(up, up, up).health()).status).toBe('healthy');
    expect((await make(up, up, down).health()).status).toBe('degraded');
    expect((await make(down, up, down).health()).status).toBe('degraded');
  });

  test('the REST handler answers 503 with the same body shape when every probe rejects', async () => {
    const service = createSystemService({
      version: '1.2.3',
      startedAt: Date.now(),
      probes: { relational: down, timeseries: down, cache: down },
      websocket: () => ({ sessions: 0, channels: 0 }),
    });
    const rest = createSystemRest(service);
    const result = await rest.getHealth({ params: {}, query: {}, body: undefined } as never, { auth: ANONYMOUS, requestId: 'r1', arrivedAt: performance.now(), log, selfUrl: '/v1/health', client: { ip: null, userAgent: null }, setCookie: () => undefined });
    expect(result.status).toBe(503);
    const body = result.body as HealthBody;
    expect(body._links).toEqual({ self: '/v1/health' });
    expect(body.data.status).toBe('unhealthy');
    expect(body.data.services.cache).toEqual({ status: 'unhealthy', latency_ms: expect.any(Number) });
  });

  test('the REST handler answers 200 when degraded', async () => {
    const service = createSystemService({
      version: '1.2.3',
      startedAt: Date.now(),
      probes: { relational: up, timeseries: up, cache: down },
      websocket: () => ({ sessions: 0, channels: 0 }),
    });
    const result = await createSystemRest(service).getHealth({ params: {}, query: {}, body: undefined } as never, {
      auth: ANONYMOUS,
      requestId: 'r2',
      arrivedAt: performance.now(),
      log,
      selfUrl: '/v1/health',
      client: { ip: null, userAgent: null },
      setCookie: () => undefined,
    });
    expect(result.status).toBe(200);
    expect((result.body as HealthBody).data.status).toBe('degraded');
  });

  describe('background probes', () => {
    const services: ReturnType<typeof createSystemService>[] = [];
    afterEach(() => {
      for (const service of services.splice(0)) service.stop();
    });

    /** Probes that count their calls and answer as `state` says at the time of the call. */
    function counted(state: { up: boolean; hang?: boolean }) {
      const calls = { relational: 0, timeseries: 0, cache: 0 };
      const make =
        (name: keyof typeof calls): Probe =>
        async () => {
          calls[name] += 1;
          if (state.hang) await new Promise(() => undefined);
          if (!state.up) throw new Error('down');
          return 1;
        };
      return { calls, probes: { relational: make('relational'), timeseries: make('timeseries'), cache: make('cache') } };
    }

    function make(probes: Record<'relational' | 'timeseries' | 'cache', Probe>, intervalMs = 60_000) {
      const service = createSystemService({
        version: '1',
        startedAt: Date.now(),
        probes,
        websocket: () => ({ sessions: 0, channels: 0 }),
        probeIntervalMs: intervalMs,
        probeTimeoutMs: 50,
        firstProbeTimeoutMs: 100,
      });
      services.push(service);
      return service;
    }

    test('requests serve the last round: no probe runs per request', async () => {
      const { calls, probes } = counted({ up: true });
      const service = make(probes);
      await service.start();
      expect(calls.relational).toBe(1);
      for (let i = 0; i < 5; i++) expect((await service.health()).status).toBe('healthy');
      expect(calls.relational).toBe(1);
    });

    test('the loop re-probes on its interval; probeNow re-probes at once', async () => {
      const state = { up: true };
      const { calls, probes } = counted(state);
      const service = make(probes, 100);
      await service.start();
      expect((await service.health()).status).toBe('healthy');
      state.up = false;
      service.probeNow();
      await new Promise((r) => setTimeout(r, 20));
      expect((await service.health()).status).toBe('unhealthy');
      const before = calls.cache;
      await new Promise((r) => setTimeout(r, 350));
      expect(calls.cache).toBeGreaterThan(before);
    });

    test('a hung dependency: the first round gives up after its timeout, requests never wait, and no probe piles up', async () => {
      const { calls, probes } = counted({ up: true, hang: true });
      const up: Probe = async () => 1;
      const service = make({ relational: up, timeseries: up, cache: probes.cache }, 30);
      const started = performance.now();
      await service.start();
      expect(performance.now() - started).toBeLessThan(1000);
      const health = await service.health();
      expect(health.status).toBe('degraded');
      expect(health.services.cache.status).toBe('unhealthy');
      await new Promise((r) => setTimeout(r, 200));
      const asked = performance.now();
      expect((await service.health()).services.cache.status).toBe('unhealthy');
      expect(performance.now() - asked).toBeLessThan(100);
      // Several rounds ran, but the hung probe was never started a second time.
      expect(calls.cache).toBe(1);
    });

    test('stop() ends the loop', async () => {
      const { calls, probes } = counted({ up: true });
      const service = make(probes, 30);
      await service.start();
      service.stop();
      const after = calls.cache;
      await new Promise((r) => setTimeout(r, 150));
      expect(calls.cache).toBe(after);
    });
  });
});
