/**
 * GET /metrics: Prometheus text 0.0.4 on the loopback listener only, aggregate gauges, every
 * series labelled with `service` and `env`; never on the public port.
 */
import type { AddressInfo } from 'node:net';
import { useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('metrics listener', () => {
  const t = useTestApp();
  const scrape = async () => (await fetch(`${t.metricsUrl}/metrics`)).text();

  test('GET /metrics: 200 with Content-Type exactly text/plain; version=0.0.4', async () => {
    const res = await fetch(`${t.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4');
    expect((await res.text()).length).toBeGreaterThan(0);
  });

  test('carries the documented gauges', async () => {
    const text = await scrape();
    const samples = text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    const sample = (name: string) => samples.filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

    const build = sample('svc_build_info');
    expect(build).toHaveLength(1);
    expect(build[0]).toMatch(new RegExp(`^svc_build_info\\{.*\\bversion="${escape(t.app.config.version)}".*\\} 1$`));

    for (const name of ['svc_uptime_seconds', 'svc_websocket_sessions', 'svc_websocket_channels']) {
      const lines = sample(name);
      expect({ name, count: lines.length }).toEqual({ name, count: 1 });
      const value = Number(lines[0]!.split(' ').pop());
      expect(Number.isFinite(value) && value >= 0).toBe(true);
    }
    expect(sample('svc_pool_connections').some((l) => /^svc_pool_connections\{.*\bpool="relational".*\} \d+$/.test(l))).toBe(true);
    expect(sample('svc_pool_idle').some((l) => /^svc_pool_idle\{.*\bpool="relational".*\} \d+$/.test(l))).toBe(true);
    expect(text).toMatch(/^# TYPE svc_uptime_seconds gauge$/m);
    // The job queues (src/infra/jobs), one series per job kind.
    for (const name of ['svc_jobs_queued', 'svc_jobs_running', 'svc_jobs_failed', 'svc_jobs_dead_lettered', 'svc_jobs_oldest_queued_seconds']) {
      expect({ name, sweep: sample(name).some((l) => new RegExp(`^${name}\\{.*\\bjob="events\\.gift-sweep".*\\} [0-9.e+-]+$`).test(l)) }).toEqual({ name, sweep: true });
    }
  });

  test('svc_db_statements_total counts the statements sent: an events page adds at least its own, and the count never goes back', async () => {
    const statements = async () => {
      const line = (await scrape()).split('\n').find((l) => /^svc_db_statements_total\{.*\bpool="relational".*\} \d+$/.test(l));
      expect(line).toBeDefined();
      return Number(line!.split(' ').pop());
    };
    expect(await scrape()).toMatch(/^# TYPE svc_db_statements_total counter$/m);
    const owner = await devLogin(t);
    const before = await statements();
    expect(before).toBeGreaterThan(0);
    // A page no one asked for yet (a fresh filter): one named statement at least, on a lent connection on PostgreSQL.
    const res = await api(t, 'GET', `/events?limit=7&page=3&user_id=nobody-${before}`, { token: owner.accessToken });
    expect(res.status).toBe(200);
    const after = await statements();
    expect(after).toBeGreaterThanOrEqual(before + 1);
    expect(await statements()).toBeGreaterThanOrEqual(after);
  });

  test('svc_kept_answers_total{read="events.text"} counts the REST pages a kept page answered, not the ones loaded', async () => {
    const keptPages = async () => {
      const line = (await scrape()).split('\n').find((l) => /^svc_kept_answers_total\{.*\bread="events\.text".*\} \d+$/.test(l));
      return line === undefined ? 0 : Number(line.split(' ').pop());
    };
    const owner = await devLogin(t);
    const page = (filter: string) => api(t, 'GET', `/events?limit=5&user_id=${filter}`, { token: owner.accessToken });
    // Asked once: loaded, not kept, not counted.
    const before = await keptPages();
    expect((await page(`once-${before}`)).status).toBe(200);
    expect(await keptPages()).toBe(before);
    // Asked again it is kept (from its second load), and later asks are answered by it. The embedded
    // store drops kept reads on any other write, so a few asks may be loads; one must be a kept answer.
    const filter = `again-${before}`;
    for (let i = 0; i < 6; i += 1) expect((await page(filter)).status).toBe(200);
    expect(await keptPages()).toBeGreaterThan(before);
  });

  test('every sample line carries service="creator-backend" and env="test"', async () => {
    const text = await scrape();
    const samples = text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    expect(samples.length).toBeGreaterThanOrEqual(6);
    for (const line of samples) {
      const labels = /^[a-zA-Z_:][a-zA-Z0-9_:]*\{(.*)\} \S+$/.exec(line)?.[1];
      expect({ line, labelled: labels !== undefined }).toEqual({ line, labelled: true });
      expect({ line, service: /(^|,)service="creator-backend"(,|$)/.test(labels!) }).toEqual({ line, service: true });
      expect({ line, env: /(^|,)env="test"(,|$)/.test(labels!) }).toEqual({ line, env: true });
    }
  });

  test('the metrics listener answers 404 for other paths and methods', async () => {
    for (const path of ['/', '/v1/health', '/metricsx', '/metrics/extra']) {
      const res = await fetch(`${t.metricsUrl}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      await res.text();
    }
    const post = await fetch(`${t.metricsUrl}/metrics`, { method: 'POST' });
    expect(post.status).toBe(404);
    await post.text();
  });

  test('a query string on /metrics is ignored', async () => {
    const res = await fetch(`${t.metricsUrl}/metrics?x=1`);
    expect(res.status).toBe(200);
    await res.text();
  });

  test('GET /metrics on the public port is 404 NOT_FOUND', async () => {
    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: 'Resource not found' });
    const v1 = await fetch(`${t.url}/v1/metrics`);
    expect(v1.status).toBe(404);
    await v1.text();
  });

  test('the metrics listener binds loopback on its own port', () => {
    const address = t.running.metricsServer.address() as AddressInfo;
    expect(address.address).toBe('127.0.0.1');
    expect(address.port).not.toBe((t.running.server.address() as AddressInfo).port);
    expect(t.metricsUrl).toBe(`http://127.0.0.1:${address.port}`);
  });
});
