/**
 * CPU per request of request validation alone (src/http/validator.ts), outside any server: a cold
 * events page (every request a different page, filter and user, so nothing kept can answer), the
 * same URL repeated, a JSON body (`POST /v1/events/emit`) and a refused query. CPU time, not wall
 * time, so a shared machine skews it less; the best of `ROUNDS` rounds is reported.
 *
 *   npx tsx scripts/measure-validation.ts            (N=20000 requests per case, ROUNDS=5)
 */
import { routes } from '../generated/rest';
import { createOperationIndex } from '../src/http/operations';
import type { ApiRequest } from '../src/http/request';
import { prepareRequest } from '../src/http/request';
import { documentValidators } from '../src/http/validator';

const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const index = createOperationIndex(routes);
const validators = documentValidators(false);

function request(method: string, url: string, body?: unknown): ApiRequest {
  const headers: Record<string, string> = { host: 'localhost', accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const req = prepareRequest({ method, url, headers } as never);
  if (body !== undefined) req.body = structuredClone(body);
  return req;
}

const cases: Record<string, (i: number) => ApiRequest> = {
  'GET /v1/events, cold (random page, filter, user)': (i) => request('GET', `/v1/events?limit=25&page=${(i % 97) + 1}&platform=platform_${i % 3}&user_id=u${i}`),
  'GET /v1/events?limit=25, one URL repeated': () => request('GET', '/v1/events?limit=25'),
  'POST /v1/events/emit, JSON body': (i) => request('POST', '/v1/events/emit', { type: 'platform_a:follow', platform: 'platform_a', raw: { user_id: `u${i}`, n: i } }),
  'GET /v1/events?limit=abc, refused': () => request('GET', '/v1/events?limit=abc'),
};

function runCase(make: (i: number) => ApiRequest): number {
  const requests = Array.from({ length: N }, (_, i) => make(i));
  const start = process.cpuUsage();
  for (const req of requests) {
    const found = index.resolve(req.method!, req.path);
    if (!found || typeof found === 'symbol') throw new Error(`no operation for ${req.method} ${req.originalUrl}`);
    try {
      validators.request.check(req, found);
    } catch {
      // refused: counted like a passed one
    }
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / N;
}

for (const make of Object.values(cases)) runCase(make);
for (const [name, make] of Object.entries(cases)) {
  const best = Math.min(...Array.from({ length: ROUNDS }, () => runCase(make)));
  console.log(`${name}: ${best.toFixed(2)} µs CPU per request`);
}
