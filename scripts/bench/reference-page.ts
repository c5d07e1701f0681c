/**
 * The bench's floor for the cold events page (issue 27, PostgreSQL only): the same requests answered
 * with none of the service's pipeline. Bare `node:http`; the key's account found by its SHA-256 in
 * the credentials table once and then from a map; the query string read by URLSearchParams; the
 * page through the service's own events repo (its statement, the database's JSON rendering, its
 * parse); the items written in their domain form under a small envelope. No authentication beyond
 * that look-up, no rate limit, validation, gates, wire mapping, ETag, access log or metrics.
 *
 * What the service adds to a cold page is the service's figure minus this one; what the machine
 * allows a page that runs this statement is this one's throughput, with PostgreSQL on the same two
 * cores. Prints `{ "port": n }` once it listens. Usage: `tsx scripts/bench/reference-page.ts
 * <port>` with DATABASE_URL naming the migrated database the service uses.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { openDatabase } from '../../src/infra/db/database';
import { createEventsRepo, type EventQuery } from '../../src/modules/events/repo';

async function main(): Promise<void> {
  if (!process.env.DATABASE_URL) throw new Error('reference-page: DATABASE_URL is required (the floor reads PostgreSQL only)');
  const db = await openDatabase({ url: process.env.DATABASE_URL, dataDir: 'memory://', migrationSets: [] });
  const repo = createEventsRepo(db.knex);
  const accounts = new Map<string, string>();
  const accountOf = async (authorization: string | undefined): Promise<string | undefined> => {
    const hash = createHash('sha256')
      .update((authorization ?? '').slice('Bearer '.length))
      .digest('hex');
    let account = accounts.get(hash);
    if (account === undefined) {
      const row = (await db.knex('credentials').where({ token_hash: hash }).first('account_id')) as { account_id: string | null } | undefined;
      if (!row?.account_id) return undefined;
      accounts.set(hash, (account = row.account_id));
    }
    return account;
  };
  const answer = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    const account = await accountOf(req.headers.authorization);
    if (!url.startsWith('/v1/events') || account === undefined) {
      res.writeHead(404).end();
      return;
    }
    const query = new URLSearchParams(url.slice(url.indexOf('?') + 1));
    const q: EventQuery = {};
    const types = query.get('types');
    if (types) q.types = types.split(',');
    const platform = query.get('platform');
    if (platform) q.platforms = [platform];
    const userId = query.get('user_id');
    if (userId) q.userId = userId;
    const from = query.get('from');
    if (from) q.from = new Date(from);
    const to = query.get('to');
    if (to) q.to = new Date(to);
    const limit = Number(query.get('limit') ?? 25);
    const page = Number(query.get('page') ?? 1);
    const { items, total } = await repo.page(account, q, limit, (page - 1) * limit);
    const body = JSON.stringify({ data: items, meta: { total, page, limit, pages: Math.ceil(total / limit) } });
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
  };
  const server = http.createServer((req, res) => {
    answer(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
    const address = server.address();
    console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : null }));
  });
  process.once('SIGTERM', () => server.close(() => void db.knex.destroy().then(() => process.exit(0))));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
