/**
 * `npm run fuzz`: the long run of the edge fuzzer (10,000 requests by default, multipart bodies
 * included, the process proven alive after each: engine.ts `stillAlive`) against a service
 * started as the tests start it (embedded storage, or DATABASE_URL / REDIS_URL when set). Picks
 * a fresh seed unless FUZZ_SEED is given, prints it first, prints every distinct failure with the
 * command that replays it, and exits 1 when there was any.
 *
 *   FUZZ_SEED=123 FUZZ_RUNS=2000 npm run fuzz              the same run again, shorter
 *   FUZZ_SEED=123 FUZZ_TARGET=rest:devLogin FUZZ_PATH=17 npm run fuzz   one case, shrunk on failure
 */
import { startTestApp } from '../helpers/app';
import { createCast, fuzzAppOverrides, type Cast } from './cast';
import { formatReport, liveness, planRuns, runTarget, type TargetResult } from './engine';

async function main(): Promise<number> {
  const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const runs = Number(process.env.FUZZ_RUNS ?? 10_000);
  const plan = planRuns(runs, process.env.FUZZ_TARGET);
  const path = process.env.FUZZ_PATH;
  const total = path !== undefined ? plan.length : plan.reduce((n, p) => n + p.runs, 0);
  process.stdout.write(
    path !== undefined
      ? `edge fuzz: replaying seed ${seed}, path ${path} of ${plan.map((p) => p.target.name).join(', ')} (shrunk on failure)\n`
      : `edge fuzz: seed ${seed}, ${total} requests over ${plan.length} targets (replay with FUZZ_SEED=${seed})\n`,
  );
  const t = await startTestApp(fuzzAppOverrides);
  const started = performance.now();
  const results: TargetResult[] = [];
  let cast: Cast | undefined;
  try {
    cast = await createCast(t);
    let done = 0;
    for (const { target, runs: n } of plan) {
      const result = await runTarget(t, cast, target, n, { seed, runs: n, path });
      results.push(result);
      done += result.runs;
      const slowest = result.slowest[0];
      process.stdout.write(
        `  ${target.name.padEnd(44)} ${String(result.runs).padStart(5)} requests  ${result.failures.length ? `${result.failures.length} failing` : 'ok'}` +
          `  [${Object.entries(result.statuses).map(([label, n]) => `${label}×${n}`).join(', ')}]` +
          `${slowest && slowest.ms > 1000 ? `  (slowest ${Math.round(slowest.ms)} ms, path ${slowest.path})` : ''}  ${done}/${total}\n`,
      );
    }
  } finally {
    await t.stop();
  }
  process.stdout.write(`\n${formatReport(results, seed, 'npm run fuzz')}\n`);
  process.stdout.write(`process alive after every request: ${liveness.checks - liveness.dead} of ${liveness.checks} checks (nothing reached the process, health answered)\n`);
  // Not a failure (speed belongs to benchmarks), but where the edge spends its time is worth a look.
  const slowest = results.flatMap((r) => r.slowest.map((s) => ({ ...s, target: r.target }))).sort((a, b) => b.ms - a.ms).slice(0, 5);
  process.stdout.write('\nslowest requests:\n');
  for (const s of slowest) {
    const body = s.outcome.sent.body ?? '';
    process.stdout.write(
      `  ${String(Math.round(s.ms)).padStart(6)} ms  ${s.target}  ${s.outcome.observed?.status ?? 'no answer'}  ${s.outcome.sent.method} ${s.outcome.sent.url.replace(/^https?:\/\/[^/]+/, '').slice(0, 80)}` +
        `${body ? `  body ${body.length} chars: ${JSON.stringify(body.slice(0, 100))}` : ''}\n      replay: FUZZ_SEED=${seed} FUZZ_TARGET=${s.target} FUZZ_PATH=${s.path} npm run fuzz\n`,
    );
  }
  process.stdout.write(
    `\nfinished in ${Math.round((performance.now() - started) / 1000)} s (${cast?.stats.probes ?? 0} cast probes, ${cast?.stats.rebuilds ?? 0} cast rebuilds besides the cases)\n`,
  );
  return results.some((r) => r.failures.length > 0 || r.replayReport) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
