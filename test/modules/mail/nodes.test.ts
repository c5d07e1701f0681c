/**
 * Several workers, one outbox: every row is sent exactly once. On PostgreSQL two app
 * nodes share one database (their own job systems and transports) and both work the outbox at
 * once, besides their own jobs; on the embedded store (one node by construction) several passes
 * of one node race instead. Against a real SMTP server (smtp-server).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createApp, type App } from '../../../src/app';
import { loadConfig } from '../../../src/config/config';
import type { ScratchDatabase } from '../../../src/infra/db/scratch';
import { createTestDatabase, services } from '../../helpers/app';
import { startTestSmtp, waitFor, type TestSmtp } from '../../helpers/smtp';

const MESSAGES = 40;
let smtp: TestSmtp;
let database: ScratchDatabase | null = null;
const nodes: App[] = [];
/** Nodes of one cluster share their secret keys (as production's configured keys): outbox bodies are sealed with them. */
const sharedKey = { id: 'nodes-test', key: randomBytes(32).toString('base64') };

beforeAll(async () => {
  smtp = await startTestSmtp();
  database = services.postgres ? await createTestDatabase() : null;
  const config = (node: string) =>
    loadConfig({
      env: {},
      overrides: {
        env: 'test',
        port: 0,
        log: { level: 'silent' },
        database_url: database?.url ?? null,
        data_dir: 'memory://',
        redis_url: process.env.REDIS_URL ?? null,
        redis_prefix: `test:${randomUUID().slice(0, 8)}:`,
        jobs: { node_id: node, poll_interval_ms: 500 },
        secrets: { encryption_keys: [sharedKey] },
        mail: {
          transport: 'smtp',
          smtp: { host: '127.0.0.1', port: smtp.port, ignore_tls: true, connection_timeout_ms: 2000, socket_timeout_ms: 5000 },
          retry: { max_attempts: 5, base_delay_ms: 100, max_delay_ms: 400, sweep_seconds: 1, lease_ms: 30_000 },
        },
      },
    });
  nodes.push(await createApp(config('node-a')));
  if (services.postgres) nodes.push(await createApp(config('node-b')));
});

afterAll(async () => {
  for (const node of nodes) await node.close();
  await database?.drop();
  await smtp?.close();
});

test(`${MESSAGES} messages, ${services.postgres ? 'two nodes' : 'three racing passes of one node'}: each delivered exactly once, marked sent by the node that sent it`, async () => {
  const [a] = nodes;
  const run = randomUUID().slice(0, 8);
  const user = await a!.db.knex('users').insert({ id: randomUUID(), email: `nodes-${run}@example.test`, display_name: 'Node Test' }).returning('id');
  const userId = (user[0] as { id: string }).id;
  // Queued in one transaction, as a burst of changes would.
  await a!.db.knex.transaction(async (trx) => {
    for (let i = 0; i < MESSAGES; i++) await a!.modules.mail.queue('fallback_notice', { address: `nodes-${run}-${i}@example.test`, name: `N${i}`, userId }, {}, trx);
  });
  const workers = services.postgres ? nodes : [a!, a!, a!];
  await Promise.all(workers.flatMap((node) => [node.modules.mail.deliverDue(), node.modules.mail.deliverDue()]));
  await waitFor(async () => (await a!.db.knex('mail_outbox').where({ user_id: userId, status: 'sent' })).length === MESSAGES);
  // Let every node's jobs (the kick and the sweep) run once more: nothing may go out twice.
  await Promise.all(nodes.map((node) => node.modules.mail.sweep()));

  const mine = smtp.received.filter((m) => m.envelopeTo.some((address) => address.startsWith(`nodes-${run}-`)));
  const perAddress = new Map<string, number>();
  for (const m of mine) for (const address of m.envelopeTo) perAddress.set(address, (perAddress.get(address) ?? 0) + 1);
  expect(perAddress.size).toBe(MESSAGES);
  expect([...perAddress.values()].every((n) => n === 1)).toBe(true);
  expect(mine).toHaveLength(MESSAGES);
  const rows = await a!.db.knex('mail_outbox').where({ user_id: userId });
  expect(rows.every((r) => r.status === 'sent' && r.attempts === 1 && r.message_id)).toBe(true);
  expect(new Set(mine.map((m) => m.parsed.messageId))).toEqual(new Set(rows.map((r) => r.message_id)));
  if (services.postgres) {
    const counts = nodes.map((node) => node.modules.mail.counts().sent);
    expect(counts.reduce((x, y) => x + y, 0)).toBe(MESSAGES);
  }
});
