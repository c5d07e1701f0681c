/**
 * The edge fuzzer's engine, shared by the bounded run in `npm test` (edge.test.ts) and the long
 * one in `npm run fuzz` (run.ts): the target list (every REST operation and every GraphQL root
 * field of the generated tables, plus the free targets), the split of a run's requests over
 * them, sending each generated case over real HTTP, the oracle, and the report.
 *
 * A run collects every failure instead of stopping at the first: the edge is hardened by several
 * people at once and one failure must not hide the next. Each failure names the seed, target and
 * fast-check path that replay it (`FUZZ_SEED=… FUZZ_TARGET=… FUZZ_PATH=…`); a replay runs that
 * one case and lets fast-check shrink it.
 */
import fc from 'fast-check';
import type { TestApp } from '../helpers/app';
import { describeCredential, type Cast } from './cast';
import { graphqlTargets, type GraphqlCase } from './graphql-cases';
import { checkGraphql, checkPrototypes, checkRest, type Observed, type Violation } from './oracle';
import { encodeLoose, encodeStrict, restTargets, type RestCase } from './rest-cases';

export type FuzzCase = RestCase | GraphqlCase;

export interface FuzzTarget {
  name: string;
  arbitrary: fc.Arbitrary<FuzzCase>;
  /** Share of a run's requests, relative to the other targets. */
  weight: number;
}

export const targets: readonly FuzzTarget[] = [
  ...restTargets.map((t) => ({ name: t.name, arbitrary: t.arbitrary as fc.Arbitrary<FuzzCase>, weight: t.name === 'rest:stray' ? 2 : 1 })),
  ...graphqlTargets.map((t) => ({ name: t.name, arbitrary: t.arbitrary as fc.Arbitrary<FuzzCase>, weight: t.weight })),
];

/** Splits `total` requests over the targets by weight; every target gets at least one. */
export function planRuns(total: number, only?: string): { target: FuzzTarget; runs: number }[] {
  // An exact name picks one target (a replay); a prefix (`rest:`, `graphql:Mutation.`) picks a group.
  const exact = targets.filter((t) => t.name === only);
  const chosen = !only ? targets : exact.length ? exact : targets.filter((t) => t.name.startsWith(only));
  if (chosen.length === 0) throw new Error(`no fuzz target matches ${only}; targets: ${targets.map((t) => t.name).join(', ')}`);
  const weights = chosen.reduce((sum, t) => sum + t.weight, 0);
  return chosen.map((target) => ({ target, runs: Math.max(1, Math.round((total * target.weight) / weights)) }));
}

/** Each target draws from its own stream, so adding a target does not change the others' cases. */
export function targetSeed(seed: number, name: string): number {
  let h = seed | 0;
  for (let i = 0; i < name.length; i++) h = (Math.imul(h, 31) + name.charCodeAt(i)) | 0;
  return h;
}

// ------------------------------------------------------------------ sending

export interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** How `body` becomes bytes (multipart bodies are latin1, one byte per character). */
  encoding?: 'latin1';
  credential: string;
}

export interface Outcome {
  sent: Sent;
  observed: Observed | null;
  durationMs: number;
  violations: Violation[];
}

const REQUEST_TIMEOUT_MS = 30_000;

function renderRest(t: TestApp, cast: Cast, c: RestCase): Sent {
  const presented = cast.present(c.credential);
  const path = c.path.replace(/\{(\w+)\}/g, (_m, name: string) => c.pathParams[name] ?? '');
  const pieces = c.query.map((p) => (p.mode === 'raw' ? `${p.key}=${p.value}` : p.mode === 'strict' ? `${encodeStrict(p.key)}=${encodeStrict(p.value)}` : `${encodeLoose(p.key)}=${encodeLoose(p.value)}`));
  if (presented.queryToken !== undefined) pieces.push(`token=${encodeURIComponent(presented.queryToken)}`);
  const search = pieces.length ? `?${pieces.join('&')}` : '';
  const headers: Record<string, string> = { ...presented.headers };
  if (c.body?.contentType) headers['content-type'] = c.body.contentType;
  return {
    method: c.method,
    url: cast.resolve(`${t.url}${path}${search}`),
    headers,
    ...(c.body ? { body: cast.resolve(c.body.text), ...(c.body.encoding ? { encoding: c.body.encoding } : {}) } : {}),
    credential: describeCredential(c.credential),
  };
}

function renderGraphql(t: TestApp, cast: Cast, c: GraphqlCase): Sent {
  const presented = cast.present(c.credential);
  const pieces = [...(c.search ? [c.search] : []), ...(presented.queryToken !== undefined ? [`token=${encodeURIComponent(presented.queryToken)}`] : [])];
  const headers: Record<string, string> = { accept: 'application/json', ...presented.headers };
  if (c.contentType) headers['content-type'] = c.contentType;
  return { method: 'POST', url: `${t.url}/v1/gql${pieces.length ? `?${pieces.join('&')}` : ''}`, headers, body: cast.resolve(c.body), credential: describeCredential(c.credential) };
}

async function send(sent: Sent): Promise<Observed> {
  const res = await fetch(sent.url, {
    method: sent.method,
    headers: sent.headers,
    // Bytes, so that fetch adds no content type of its own when the case sends none.
    ...(sent.body !== undefined ? { body: Buffer.from(sent.body, sent.encoding ?? 'utf8') } : {}),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

// ------------------------------------------------------------------ the process stays alive

/**
 * Exceptions that reached the process: outside a test, any one of them would have ended it (and
 * every connection on it). The tripwire records them instead, so the run names the request.
 */
const escaped: unknown[] = [];
let tripwireSet = false;
function setTripwire(): void {
  if (tripwireSet) return;
  tripwireSet = true;
  process.on('uncaughtException', (error) => escaped.push(error));
  process.on('unhandledRejection', (error) => escaped.push(error));
}

/** How many times the process was proven alive after a request, and how many times it was not. */
export const liveness = { checks: 0, dead: 0 };

/**
 * After every request: nothing escaped to the process, and it still answers health on the
 * fuzzer's connection pool (200, or 503 while a dependency is down: either is a live process).
 */
async function stillAlive(t: TestApp): Promise<Violation[]> {
  const out: Violation[] = [];
  for (const error of escaped.splice(0)) {
    const e = error as Error;
    out.push({ kind: 'process', key: `uncaught ${e?.name ?? 'exception'}`, detail: `an exception reached the process (it would have ended it): ${e?.stack ?? String(error)}` });
  }
  try {
    const res = await fetch(`${t.url}/v1/health`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await res.arrayBuffer();
    if (res.status !== 200 && res.status !== 503) out.push({ kind: 'process', key: `health ${res.status}`, detail: `GET /v1/health answered ${res.status} after the request` });
  } catch (error) {
    out.push({ kind: 'process', key: 'not serving', detail: `GET /v1/health got no answer after the request: ${(error as Error).message}` });
  }
  liveness.checks += 1;
  if (out.length) liveness.dead += 1;
  return out;
}

/** A write that took effect may have dissolved, left or revoked something the cast relies on. */
function mayHaveDamaged(c: FuzzCase, observed: Observed): boolean {
  if (observed.status >= 300) return false;
  if (c.kind === 'rest') return c.method !== 'GET';
  return /\bmutation\b/.test(c.body) && /"data":\{/.test(observed.text);
}

export async function execute(t: TestApp, cast: Cast, c: FuzzCase): Promise<Outcome> {
  setTripwire();
  const sent = c.kind === 'rest' ? renderRest(t, cast, c) : renderGraphql(t, cast, c);
  const started = performance.now();
  let observed: Observed | null = null;
  const violations: Violation[] = [];
  try {
    observed = await send(sent);
  } catch (error) {
    const e = error as Error & { cause?: { code?: string; message?: string } };
    // No cause and no timeout: fetch refused the request itself, a bug of the generator, not a finding.
    if (e.name !== 'TimeoutError' && !e.cause) throw new Error(`the fuzzer built a request fetch cannot send: ${e.message}`, { cause: error });
    const reason = e.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS} ms` : `${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message})` : ''}`;
    violations.push({ kind: e.name === 'TimeoutError' ? 'timeout' : 'connection', key: e.name === 'TimeoutError' ? 'timeout' : String(e.cause?.code ?? e.message), detail: reason });
  }
  const durationMs = performance.now() - started;
  if (observed) {
    const pathname = new URL(sent.url).pathname;
    // A stray REST case may land on the GraphQL endpoint; judge the answer by what it is.
    const graphql = c.kind === 'graphql' || (sent.method === 'POST' && /^\/v1\/gql\/?$/i.test(pathname));
    violations.push(...(graphql ? checkGraphql(observed) : checkRest(sent.method, pathname, observed)));
  }
  violations.push(...checkPrototypes());
  violations.push(...(await stillAlive(t)));
  if (observed && mayHaveDamaged(c, observed) && !(await cast.healthy())) await cast.rebuild();
  return { sent, observed, durationMs, violations };
}

// ------------------------------------------------------------------ running and reporting

export interface Failure {
  /** target + violation kind + key: one entry per distinct failure. */
  signature: string;
  target: string;
  violation: Violation;
  outcome: Outcome;
  path: string;
  count: number;
}

export interface RunOptions {
  seed: number;
  runs: number;
  /** Replays one case (fast-check path) of the target and lets fast-check shrink it on failure. */
  path?: string;
  /** Rebuild the cast every this many requests, whatever happened (default 150). */
  rebuildEvery?: number;
  onCase?: (target: string, index: number, outcome: Outcome) => void;
}

export interface TargetResult {
  target: string;
  seed: number;
  runs: number;
  failures: Failure[];
  slowest: { ms: number; outcome: Outcome; path: string }[];
  /** How many answers of each kind (status and error code): shows whether cases reach the handlers. */
  statuses: Record<string, number>;
  /** Fast-check's report of a replay that failed (shrunk counterexample). */
  replayReport?: string;
}

/** `201`, `400 VALIDATION_ERROR`, `200 data`, `200 FORBIDDEN` (GraphQL), `none`. */
export function outcomeLabel(outcome: Outcome): string {
  const o = outcome.observed;
  if (!o) return 'none';
  let body: { error?: unknown; errors?: { extensions?: { code?: unknown } }[]; data?: unknown } | undefined;
  try {
    body = JSON.parse(o.text) as typeof body;
  } catch {
    body = undefined;
  }
  const code = body?.errors?.[0]?.extensions?.code ?? body?.error;
  if (typeof code === 'string') return `${o.status} ${code}`;
  return body?.data !== undefined && body.data !== null ? `${o.status} data` : String(o.status);
}

let sinceRebuild = 0;

export async function runTarget(t: TestApp, cast: Cast, target: FuzzTarget, runs: number, options: RunOptions): Promise<TargetResult> {
  const seed = targetSeed(options.seed, target.name);
  const failures = new Map<string, Failure>();
  const slowest: TargetResult['slowest'] = [];
  const statuses: Record<string, number> = {};
  let index = 0;
  const replay = options.path !== undefined;
  const property = fc.asyncProperty(target.arbitrary, async (c) => {
    if (++sinceRebuild > (options.rebuildEvery ?? 150)) {
      sinceRebuild = 0;
      await cast.rebuild();
    }
    const path = replay ? options.path! : String(index);
    index += 1;
    const outcome = await execute(t, cast, c);
    options.onCase?.(target.name, index - 1, outcome);
    const label = outcomeLabel(outcome);
    statuses[label] = (statuses[label] ?? 0) + 1;
    slowest.push({ ms: outcome.durationMs, outcome, path });
    slowest.sort((a, b) => b.ms - a.ms).splice(3);
    for (const violation of outcome.violations) {
      const signature = `${target.name} ${violation.kind} ${violation.key}`;
      const seen = failures.get(signature);
      if (seen) seen.count += 1;
      else failures.set(signature, { signature, target: target.name, violation, outcome, path, count: 1 });
    }
    return !replay || outcome.violations.length === 0;
  });
  const details = await fc.check(property, replay ? { seed, path: options.path, numRuns: 1 } : { seed, numRuns: runs });
  return {
    target: target.name,
    seed: options.seed,
    runs: index,
    failures: [...failures.values()],
    slowest,
    statuses,
    ...(replay && details.failed ? { replayReport: fc.defaultReportMessage(details) ?? undefined } : {}),
  };
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/** Printable: the request as sent (credential named, not shown), the answer, and how to replay it. */
export function formatFailure(f: Failure, seed: number, replayCommand: string): string {
  const { sent, observed } = f.outcome;
  const url = sent.url.replace(/^https?:\/\/[^/]+/, '');
  const headers = Object.entries(sent.headers)
    .filter(([k]) => k !== 'authorization' && k !== 'cookie')
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
  return [
    `✗ ${f.violation.kind} on ${f.target} (×${f.count})`,
    `  request:  ${sent.method} ${clip(url, 400)}`,
    `  as:       ${sent.credential}${headers ? `; ${headers}` : ''}`,
    ...(sent.body !== undefined ? [`  body:     ${clip(JSON.stringify(sent.body), 600)}`] : []),
    `  answer:   ${observed ? `${observed.status} ${clip(observed.text, 400)}` : '(none)'}`,
    `  problem:  ${f.violation.detail}`,
    `  replay:   FUZZ_SEED=${seed} FUZZ_TARGET=${f.target} FUZZ_PATH=${f.path} ${replayCommand}`,
  ].join('\n');
}

export function formatReport(results: TargetResult[], seed: number, replayCommand: string): string {
  const failures = results.flatMap((r) => r.failures);
  const requests = results.reduce((n, r) => n + r.runs, 0);
  const lines = [`edge fuzz: seed ${seed}, ${requests} requests over ${results.length} targets, ${failures.length} distinct failures`];
  for (const f of failures) lines.push('', formatFailure(f, seed, replayCommand));
  for (const r of results) if (r.replayReport) lines.push('', `fast-check (${r.target}):`, r.replayReport);
  return lines.join('\n');
}
