/**
 * The property-based edge test: generated requests for every REST operation and every
 * GraphQL field of the specs, valid, invalid and hostile, with every credential kind, against a
 * real service. Whatever is asked, the edge answers below 500, with a body valid against the
 * OpenAPI document, and with GraphQL error codes of src/errors.ts. A fixed seed and a bounded
 * count keep it reproducible and quick; `npm run fuzz` runs the long version with a fresh seed.
 * `FUZZ_SEED`, `FUZZ_RUNS`, `FUZZ_TARGET` and `FUZZ_PATH` override the defaults here too.
 */
import { useTestApp } from '../helpers/app';
import { createCast, fuzzAppOverrides, type Cast } from './cast';
import { formatReport, planRuns, runTarget } from './engine';

const SEED = Number(process.env.FUZZ_SEED ?? 7_2026_11);
const RUNS = Number(process.env.FUZZ_RUNS ?? 350);
const REPLAY = 'npm test -- --maxWorkers=1 test/fuzz/edge.test.ts';

describe('the edge under generated requests', () => {
  const t = useTestApp(fuzzAppOverrides);
  let cast: Cast;
  beforeAll(async () => {
    cast = await createCast(t);
  });

  const plan = planRuns(RUNS, process.env.FUZZ_TARGET);

  test.each(plan.map((p) => [p.target.name, p] as const))('%s: no 5xx, bodies valid against the specs, known error codes', async (_name, { target, runs }) => {
    const result = await runTarget(t, cast, target, runs, { seed: SEED, runs, path: process.env.FUZZ_PATH });
    if (result.failures.length > 0 || result.replayReport) throw new Error(formatReport([result], SEED, REPLAY));
  }, 120_000);
});
