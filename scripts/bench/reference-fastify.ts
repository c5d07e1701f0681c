/**
 * The bench's peer of the events page: what a team would write instead of this service for
 * `GET /v1/events` with a personal API key, on common parts. Fastify 5 with its own Ajv query
 * validation (the operation's query parameters as a JSON schema, coerced as Fastify does), the
 * key found by its SHA-256 hash in the credentials table and kept 60 s in an LRU, pino at info
 * (Fastify's request and response lines, into PEER_LOG or nowhere), node-postgres, and two
 * statements: the page and a `count(*)` of the same filter. The answer is the service's collection
 * envelope, byte for byte (`{ data, _links, _meta }`; the bench compares a sample of answers before
 * the case counts). No rate limit, gates, ETag, security headers, metrics or byte budget (pages of
 * `offset` and truncated pages are not served: the bench never asks them).
 *
 * Prints `{ "port": n }` once it listens. Usage: `tsx scripts/bench/reference-fastify.ts <port>`
 * with DATABASE_URL naming the migrated database the service uses (PostgreSQL only: the embedded
 * store's database lives inside the service's process).
 */
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import { LRUCache } from 'lru-cache';
import { Pool } from 'pg';
import pino from 'pino';

interface EventsQuery {
  page: number;
  limit: number;
  types?: string;
  platform?: string;
  user_id?: string;
  search?: string;
  from?: string;
  to?: string;
}

/** The operation's query parameters (spec/openapi/modules/events.yaml), less `offset`. */
const querystring = {
  type: 'object',
  properties: {
    page: { type: 'integer', default: 1, minimum: -2147483648, maximum: 2147483647 },
    limit: { type: 'integer', default: 25, minimum: 1, maximum: 100 },
    types: { type: 'string', maxLength: 2000 },
    platform: { type: 'string', maxLength: 500 },
    user_id: { type: 'string', maxLength: 200 },
    search: { type: 'string', maxLength: 200 },
    from: { type: 'string', format: 'date-time', maxLength: 100 },
    to: { type: 'string', format: 'date-time', maxLength: 100 },
  },
} as const;

const commaList = (value: string | undefined): string[] | undefined => {
  const items = value?.split(',').map((s) => s.trim()).filter(Boolean);
  return items?.length ? items : undefined;
};

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('reference-fastify: DATABASE_URL is required');
  const pool = new Pool({ connectionString: url, max: 10 });
  const logger = pino({ level: 'info' }, pino.destination({ dest: process.env.PEER_LOG ?? '/dev/null' }));
  const app = Fastify({ loggerInstance: logger });

  const accounts = new LRUCache<string, string>({ max: 10_000, ttl: 60_000 });
  const accountOf = async (authorization: string | undefined): Promise<string | null> => {
    if (!authorization?.startsWith('Bearer ')) return null;
    const hash = createHash('sha256').update(authorization.slice(7)).digest('hex');
    const known = accounts.get(hash);
    if (known !== undefined) return known;
    const { rows } = await pool.query<{ account_id: string | null }>(
      'select account_id from credentials where token_hash = $1 and revoked_at is null and (expires_at is null or expires_at > now())',
      [hash],
    );
    const accountId = rows[0]?.account_id ?? null;
    if (accountId) accounts.set(hash, accountId);
    return accountId;
  };

  app.get<{ Querystring: EventsQuery }>('/v1/events', { schema: { querystring } }, async (request, reply) => {
    const accountId = await accountOf(request.headers.authorization);
    if (!accountId) return reply.code(401).send({ error: { code: 'UNAUTHORIZED', message: 'Authentication required' } });
    const q = request.query;
    const page = q.page < 1 ? 1 : q.page;
    const limit = q.limit;
    const where = ['account_id = $1', 'hidden = false'];
    const values: unknown[] = [accountId];
    const add = (sql: (n: string) => string, value: unknown) => {
      values.push(value);
      where.push(sql(`$${values.length}`));
    };
    const types = commaList(q.types);
    if (types) add((n) => `type = any(${n})`, types);
    const platforms = commaList(q.platform);
    if (platforms) add((n) => `platform = any(${n})`, platforms);
    if (q.user_id !== undefined) add((n) => `(raw ->> 'user_id') = ${n}`, q.user_id);
    if (q.search) add((n) => `(raw::text) ilike ${n} escape '\\'`, `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    if (q.from) add((n) => `created_at > ${n}`, new Date(q.from));
    if (q.to) add((n) => `created_at < ${n}`, new Date(q.to));
    const filter = where.join(' and ');
    const [items, counted] = await Promise.all([
      pool.query<{ id: string; account_id: string; type: string; platform: string; external_id: string | null; raw: unknown; created_at: Date }>(
        `select id, account_id, type, platform, external_id, raw, created_at from events where ${filter} order by created_at desc, id desc limit ${limit} offset ${(page - 1) * limit}`,
        values,
      ),
      pool.query<{ n: string }>(`select count(*) as n from events where ${filter}`, values),
    ]);
    const total = Number(counted.rows[0]!.n);
    const pages = total === 0 ? 0 : Math.ceil(total / limit);
    // The collection envelope's links (relative, the request's other parameters kept in place).
    const at = request.url.indexOf('?');
    const path = at < 0 ? request.url : request.url.slice(0, at);
    const params = new URLSearchParams(at < 0 ? '' : request.url.slice(at + 1));
    params.set('page', '1');
    params.set('limit', String(limit));
    const link = (n: number) => {
      params.set('page', String(n));
      return `${path}?${params.toString()}`;
    };
    const last = Math.max(pages, 1);
    const links: Record<string, string> = { self: link(page), first: link(1), last: link(last) };
    if (page > 1) links.prev = link(Math.min(page - 1, last));
    if (page < pages) links.next = link(page + 1);
    const data = items.rows.map((r) => ({ id: r.id, account_id: r.account_id, type: r.type, platform: r.platform, external_id: r.external_id, raw: r.raw, created_at: r.created_at.toISOString() }));
    return { data, _links: links, _meta: { total, page, limit, pages } };
  });

  const address = await app.listen({ port: Number(process.argv[2] ?? 0), host: '127.0.0.1' });
  console.log(JSON.stringify({ port: Number(new URL(address).port) }));
  process.once('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
