/**
 * The bench's floor for the cold events page: the same requests answered
 * with none of the service's pipeline. Bare `node:http`; the key's account found by its hash
 * (`tokenHash`) in the credentials table once and then from a map; the query string read by
 * URLSearchParams; the page through the service's own events domain (`list`: its filter, paging
 * bounds, statement, the database's JSON rendering and its parse); the items written in their
 * domain form under a small envelope. No authentication beyond that look-up, no rate limit,
 * validation, gates, wire mapping, ETag, access log or metrics.
 *
 * What the service adds to a cold page is the service's figure minus this one; what the machine
 * allows a page that runs this statement is this one's throughput, with PostgreSQL on the same two
 * cores. Prints `{ "port": n }` once it listens. Usage: `tsx scripts/bench/reference-page.ts
 * <port>` with DATABASE_URL naming the migrated database the service uses, or, for the embedded
 * store (whose database lives inside its process), FLOOR_PGLITE_DIR naming a copy of the service's
 * PGlite data directory: the floor then runs the same statements on its own PGlite, in its process.
 */
import http from 'node:http';
import { ANONYMOUS, type AuthContext } from '../../src/auth/context';
import { tokenHash } from '../../src/auth/credentials';
import { pageFor } from '../../src/http/paging';
import { createMemoryBus } from '../../src/infra/bus';
import { openDatabase } from '../../src/infra/db/database';
import { createLogger } from '../../src/infra/logger';
import { createEventsRepo } from '../../src/modules/events/repo';
import { createEventsService } from '../../src/modules/events/service';

async function main(): Promise<void> {
  const { DATABASE_URL: url, FLOOR_PGLITE_DIR: dataDir } = process.env;
  if (!url && !dataDir) throw new Error('reference-page: DATABASE_URL or FLOOR_PGLITE_DIR is required');
  const db = await openDatabase({ url: url ?? null, dataDir: dataDir ?? 'memory://', migrationSets: [] });
  const log = createLogger({ level: 'warn', service: 'bench-floor', env: 'bench', version: '0' });
  const events = createEventsService({ repo: createEventsRepo(db.knex), bus: createMemoryBus(), log });
  /** A key's context by its hash: the account alone, all `list` reads. */
  const contexts = new Map<string, AuthContext>();
  const contextOf = async (authorization: string | undefined): Promise<AuthContext | undefined> => {
    const hash = tokenHash((authorization ?? '').slice('Bearer '.length));
    let context = contexts.get(hash);
    if (context === undefined) {
      const row = (await db.knex('credentials').where({ token_hash: hash }).first('account_id')) as { account_id: string | null } | undefined;
      if (!row?.account_id) return undefined;
      contexts.set(hash, (context = { ...ANONYMOUS, kind: 'user_api_key', accountId: row.account_id, credentialId: hash }));
    }
    return context;
  };
  const answer = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    const auth = await contextOf(req.headers.authorization);
    if (!url.startsWith('/v1/events') || auth === undefined) {
      res.writeHead(404).end();
      return;
    }
    const query = Object.fromEntries(new URLSearchParams(url.slice(url.indexOf('?') + 1)));
    const filter = { types: query.types, platform: query.platform, userId: query.user_id, from: query.from, to: query.to };
    const page = await events.list(auth, filter, pageFor('events', query));
    const body = JSON.stringify({ data: page.items, meta: { total: page.total, page: page.page, limit: page.limit, pages: page.pages } });
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
