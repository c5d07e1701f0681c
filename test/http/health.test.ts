/**
 * GET /v1/health: the documented shape, live dependency probes (healthy, degraded when the cache
 * is unreachable) and the status rules of the specification ("Health response shape").
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

  test('degraded with HTTP 200, cache unhealthy, relational and timeseries healthy', async () => {
    const res = await fetch(`${t.url}/v1/health`);
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
    const result = await rest.getHealth({ params: {}, query: {}, body: undefined } as never, { auth: ANONYMOUS, requestId: 'r1', log, selfUrl: '/v1/health', client: { ip: null, userAgent: null }, setCookie: () => undefined });
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
      log,
      selfUrl: '/v1/health',
      client: { ip: null, userAgent: null },
      setCookie: () => undefined,
    });
    expect(result.status).toBe(200);
    expect((result.body as HealthBody).data.status).toBe('degraded');
  });
});
