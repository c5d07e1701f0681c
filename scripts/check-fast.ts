/**
 * The inner loop after an edit: `npm run check:fast`.
 *
 *   1. codegen (the specs' problems are reported here first, naming the file to edit)
 *   2. then side by side:
 *      - an incremental typecheck (its build info kept in node_modules/.cache)
 *      - lint of the changed TypeScript files only, with ESLint's cache
 *      - the tests of the modules the change touches, and the contract tests (boundaries, twin
 *        parity, authorization matrix, links) narrowed to those modules' operations
 *
 * "The change" is what differs from HEAD (staged, unstaged and untracked files); with a clean tree,
 * the last commit. A file maps to a module by its place: spec/<kind>/modules/<m>.*,
 * src/modules/<m>/, test/modules/<m>*. A change outside any module (src/http, src/infra, ...) runs
 * the tests of test/<that folder>/ instead of the contract tests, since every operation would be
 * touched. `npm run check` (and CI) still runs everything; this is the quick answer, not the gate.
 *
 *   CHECK_FAST_BASE=<rev>   compare with that revision instead (a branch's whole change)
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..');
const CACHE = 'node_modules/.cache';

interface Step {
  name: string;
  command: string;
  args: string[];
}

interface Outcome {
  name: string;
  code: number;
  seconds: number;
  output: string;
}

function git(...args: string[]): string[] {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}

/** The files of the change, relative to the root; deleted files left out. */
export function changedFiles(): string[] {
  const base = process.env.CHECK_FAST_BASE;
  const files = base
    ? git('diff', '--name-only', `${base}...HEAD`).concat(git('diff', '--name-only', 'HEAD'), git('ls-files', '--others', '--exclude-standard'))
    : git('diff', '--name-only', 'HEAD').concat(git('ls-files', '--others', '--exclude-standard'));
  const chosen = files.length > 0 || base ? files : git('diff', '--name-only', 'HEAD~1', 'HEAD');
  return [...new Set(chosen)].filter((file) => existsSync(path.join(root, file)));
}

const MODULE_PLACES = [/^spec\/(?:openapi|graphql|ws-protocol)\/modules\/([a-z0-9-]+)\./, /^src\/modules\/([a-z0-9-]+)\//, /^test\/modules\/([a-z0-9]+)/];

/** The module a file belongs to, or undefined for shared code. */
export function moduleOf(file: string, modules: readonly string[]): string | undefined {
  for (const place of MODULE_PLACES) {
    const name = place.exec(file)?.[1];
    if (!name) continue;
    // test/modules/extensions-bundles.test.ts belongs to extensions: the longest module name that prefixes it
    const known = modules.filter((m) => name === m || name.startsWith(`${m}-`) || name.startsWith(m)).sort((a, b) => b.length - a.length)[0];
    if (known) return known;
  }
  return undefined;
}

/** Shared code outside the modules whose tests live in a folder of test/ of the same name. */
function sharedTestFolder(file: string): string | undefined {
  const match = /^src\/([a-z-]+)\//.exec(file);
  if (!match || match[1] === 'modules') return undefined;
  const folder = `test/${match[1]}`;
  return existsSync(path.join(root, folder)) ? folder : undefined;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Jest's --testNamePattern for the contract tests' names that speak of these operations and fields. */
export function contractPattern(operations: { operationId: string; method: string; path: string }[], fields: string[]): string {
  const names = [
    ...operations.flatMap((o) => [o.operationId, `${o.method.toUpperCase()} ${o.path}`]),
    ...fields,
  ];
  return `(${names.map(escape).join('|')})(\\b|$)`;
}

function run(step: Step): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(step.command, step.args, { cwd: root, env: process.env });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => resolve({ name: step.name, code: code ?? 1, seconds: (Date.now() - started) / 1000, output }));
    child.on('error', (error) => resolve({ name: step.name, code: 1, seconds: 0, output: String(error) }));
  });
}

function report(outcome: Outcome): void {
  const mark = outcome.code === 0 ? 'ok  ' : 'FAIL';
  console.log(`${mark} ${outcome.name} (${outcome.seconds.toFixed(1)} s)`);
  if (outcome.code !== 0) console.log(outcome.output.trimEnd().split('\n').slice(-60).join('\n'));
}

async function main(): Promise<number> {
  const started = Date.now();
  const node = process.execPath;
  const codegen = await run({ name: 'codegen', command: node, args: ['--import', 'tsx', 'scripts/codegen.ts'] });
  report(codegen);
  if (codegen.code !== 0) return 1;

  // Read after codegen, so a new operation is already in the generated tables.
  const { operationModules, graphqlFieldModules } = await import('../generated/parity');
  const { routes } = await import('../generated/rest');
  const modules = readdirSync(path.join(root, 'src/modules'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);

  const files = changedFiles();
  const touched = new Set<string>();
  const sharedFolders = new Set<string>();
  for (const file of files) {
    const module = moduleOf(file, modules);
    if (module) touched.add(module);
    const folder = sharedTestFolder(file);
    if (folder) sharedFolders.add(folder);
  }
  console.log(`change: ${files.length} files; modules: ${[...touched].join(', ') || 'none'}${sharedFolders.size ? `; shared: ${[...sharedFolders].join(', ')}` : ''}`);

  const steps: Step[] = [
    { name: 'typecheck (incremental)', command: node, args: ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit', '--incremental', '--tsBuildInfoFile', `${CACHE}/check-fast.tsbuildinfo`] },
  ];
  const lintable = files.filter((f) => /\.(ts|mjs|js)$/.test(f) && !f.startsWith('generated/') && !f.startsWith('spec/'));
  if (lintable.length > 0) {
    steps.push({ name: `lint (${lintable.length} files)`, command: node, args: ['node_modules/eslint/bin/eslint.js', '--cache', '--cache-location', `${CACHE}/eslint-check-fast`, ...lintable] });
  }

  const jest = ['--experimental-vm-modules', '--no-warnings=ExperimentalWarning', 'node_modules/jest/bin/jest.js', '--maxWorkers=1'];
  const moduleTests = readdirSync(path.join(root, 'test/modules'))
    .filter((name) => [...touched].some((m) => moduleOf(`test/modules/${name}`, modules) === m))
    .map((name) => `test/modules/${name}`);
  if (moduleTests.length > 0 || sharedFolders.size > 0) {
    steps.push({ name: `tests of ${[...touched, ...sharedFolders].join(', ')}`, command: node, args: [...jest, ...moduleTests, ...sharedFolders] });
  }
  const operations = routes.filter((r) => touched.has((operationModules as Record<string, string>)[r.operationId] ?? ''));
  const fields = Object.entries(graphqlFieldModules as Record<string, string>).filter(([, m]) => touched.has(m)).map(([field]) => field);
  if (operations.length + fields.length > 0) {
    steps.push({ name: `contract tests of ${operations.length} operations and ${fields.length} GraphQL fields`, command: node, args: [...jest, 'test/contract', '--testNamePattern', contractPattern(operations, fields)] });
  }

  const outcomes = await Promise.all(steps.map(run));
  outcomes.forEach(report);
  const failed = outcomes.filter((o) => o.code !== 0).length;
  console.log(`check:fast ${failed === 0 ? 'passed' : `failed (${failed} of ${outcomes.length + 1} steps)`} in ${((Date.now() - started) / 1000).toFixed(1)} s; \`npm run check\` runs everything`);
  return failed === 0 ? 0 : 1;
}

if (require.main === module) {
  main().then((code) => process.exit(code), (error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
