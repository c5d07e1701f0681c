/**
 * One load run of the bench, in its own process: autocannon against one URL on 127.0.0.1,
 * bounded in count (`maxRequests`) and in time (`seconds`), whichever comes first. Input is one
 * JSON argument; the result is one JSON line on stdout. A run that sees any non-2xx answer or
 * socket error reports it, and the bench counts the case as failed. With `paths`, the run sends
 * each path of `url`'s origin once, in order (one connection makes it one at a time): a case of
 * distinct requests, none of which a kept result can answer. With `poolFile` (a JSON array of
 * `PoolRequest`), every request is drawn at random from that pool (the many-accounts case), or, with
 * `poolStart`, taken in order from that place on and around the end (the cold cases, whose pools
 * never repeat a request within COLD_REPEAT_DISTANCE places: cold.ts), until the count or the
 * time is reached.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/** One request of a pool: a path of `url`'s origin, its headers, and its method and body when not a GET. */
export interface PoolRequest {
  path: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadInput {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
  maxRequests: number;
  /** Each sent once, in order, instead of `url` over and over. */
  paths?: string[];
  /** A file holding a JSON array of PoolRequest: each request is drawn from it at random, or in order with `poolStart`. */
  poolFile?: string;
  /** Where in the pool to start sending its requests in order (the cold cases); unset: drawn at random. */
  poolStart?: number;
  /** Requests per second over all connections (autocannon's overallRate); unset: as fast as answered. */
  rate?: number;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** Filled in by the bench: CPU the measured server spent per request. */
  cpuMsPerRequest?: number;
  /** Filled in by the bench (service cases): CPU per request of the stores, and PostgreSQL transactions per request. */
  store?: { postgresMs: number; redisMs: number; transactions: number };
  /** Filled in by the bench (the live case): the emits its writer had accepted, and at what rate. */
  writer?: { accepted: number; refused: number; skipped: number; seconds: number; rate: number };
  /** Statements the service sent per answered request (its svc_db_statements_total, read before and after). */
  statements?: number;
  /** Event pages a kept result answered, per answered request (the service's svc_kept_answers_total{read="events.page"} and {read="events.text"}). */
  keptPages?: number;
}

const input = JSON.parse(process.argv[2] ?? '{}') as LoadInput;
const pool = input.poolFile ? (JSON.parse(readFileSync(input.poolFile, 'utf8')) as PoolRequest[]) : null;
let next = input.poolStart ?? 0;
const drawn: autocannon.Request[] | null = pool
  ? [
      {
        setupRequest: (request: autocannon.Request): autocannon.Request => {
          const r = pool[input.poolStart === undefined ? Math.floor(Math.random() * pool.length) : next++ % pool.length]!;
          return { ...request, path: r.path, method: r.method ?? 'GET', headers: { ...request.headers, ...r.headers }, ...(r.body !== undefined ? { body: r.body } : {}) };
        },
      },
    ]
  : null;
const started = performance.now();
const instance = autocannon(
  {
    url: input.url,
    method: input.method ?? 'GET',
    headers: input.headers ?? {},
    ...(input.body !== undefined ? { body: input.body } : {}),
    connections: input.connections,
    amount: input.paths ? input.paths.length : input.maxRequests,
    ...(input.paths ? { requests: input.paths.map((p) => ({ path: p })) } : {}),
    ...(drawn ? { requests: drawn } : {}),
    ...(input.rate ? { overallRate: input.rate } : {}),
    timeout: 10,
  },
  (error, result) => {
    clearTimeout(timer);
    if (error) {
      console.error(error);
      process.exit(1);
    }
    const seconds = (performance.now() - started) / 1000;
    const out: LoadResult = {
      requests: result.requests.total,
      seconds,
      rps: result.requests.total / seconds,
      p50Ms: result.latency.p50,
      p90Ms: result.latency.p90,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
    };
    console.log(JSON.stringify(out));
    process.exit(0);
  },
);
const timer = setTimeout(() => instance.stop(), input.seconds * 1000);
