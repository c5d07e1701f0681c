/**
 * A scratch copy of what codegen reads and writes, for the codegen tests that doctor a spec, a
 * migration or a generated file and run `scripts/codegen.ts` on the copy: `scratchCopy()` copies
 * every input and output of codegen (node_modules is linked), `codegen()` runs it in a child
 * process (`--check` unless told otherwise) and answers its exit code and output, `edit()` changes
 * one file and refuses a change that changes nothing (a doctored case that tests nothing).
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const root = path.resolve(__dirname, '../..');

/** Everything codegen reads (specs, its scripts, the migrations under src/) and writes. */
const CODEGEN_TREE = ['spec', 'scripts', 'src', 'generated', 'docs/reference', 'codegen.yml', 'package.json', 'tsconfig.json', 'test/contract/parity.generated.test.ts', 'sdk/graphql', 'sdk/src/generated'];

export function scratchCopy(prefix = 'codegen-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  for (const entry of CODEGEN_TREE) cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

export async function codegen(dir: string, args: readonly string[] = ['--check']): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'scripts/codegen.ts', ...args], { cwd: dir });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

export function edit(dir: string, file: string, change: (text: string) => string): void {
  const target = path.join(dir, file);
  const before = readFileSync(target, 'utf8');
  const after = change(before);
  if (after === before) throw new Error(`edit of ${file} changed nothing`);
  writeFileSync(target, after);
}
