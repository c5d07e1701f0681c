/**
 * The SDK's generated part is checked like generated/: codegen:check on a scratch copy fails when
 * an SDK operation changes without regenerating, and codegen refuses an SDK operation the schema
 * does not have (so a breaking schema change fails before a consumer sees it).
 */
import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

function scratchCopy(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'codegen-sdk-'));
  for (const entry of ['spec', 'scripts', 'src', 'generated', 'codegen.yml', 'package.json', 'test/contract/parity.generated.test.ts', 'sdk/graphql', 'sdk/src/generated']) {
    cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

async function codegen(dir: string, ...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'scripts/codegen.ts', ...args], { cwd: dir });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

describe('SDK codegen', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const fresh = () => {
    const dir = scratchCopy();
    dirs.push(dir);
    return dir;
  };

  test('codegen:check fails when an SDK operation changes without regenerating', async () => {
    const dir = fresh();
    appendFileSync(path.join(dir, 'sdk/graphql/dashboard.graphql'), '\nquery MyAccountIds {\n  myAccounts {\n    id\n  }\n}\n');
    const result = await codegen(dir, '--check');
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('sdk/src/generated/graphql.ts differs from what spec/ produces');
    expect(result.output).not.toContain('generated/openapi.ts differs');
  });

  test('codegen refuses an SDK operation that selects a field the schema does not have', async () => {
    const dir = fresh();
    appendFileSync(path.join(dir, 'sdk/graphql/dashboard.graphql'), '\nquery Broken {\n  me {\n    noSuchField\n  }\n}\n');
    const result = await codegen(dir);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/noSuchField/);
  });
});
