/**
 * GET /v1/admin/workers lists every live node, with its heartbeat and release, even when no
 * platform ingest is configured (a node without owned work heartbeats as passive).
 */
import { randomUUID } from 'node:crypto';
import { useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

const operatorEmail = `workers-${randomUUID()}@example.test`;
const t = useTestApp({ rate_limits: { enabled: false }, auth: { bootstrap_admins: [operatorEmail] }, jobs: { node_id: 'passive-node' } });

test('a node without ingest is listed with its version and heartbeat', async () => {
  const operator = await devLogin(t, operatorEmail);
  const res = await api(t, 'GET', '/admin/workers', { token: operator.accessToken });
  expect(res.status).toBe(200);
  const data = res.body.data as { node_id: string; nodes: Record<string, unknown>[] };
  expect(data.node_id).toBe('passive-node');
  expect(data.nodes).toEqual([expect.objectContaining({ node_id: 'passive-node', version: t.app.config.version, channels: 0 })]);
  expect(Date.parse(data.nodes[0]!.last_seen_at as string)).toBeGreaterThan(Date.now() - 60_000);
});
