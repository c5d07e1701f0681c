/**
 * codegen:check against a scratch copy of the project: it passes on the committed tree and fails
 * when spec/ changes without regenerating, when an operation or field has no gate, when twins
 * declare different gates, and when a channel pattern has no gate kind.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

function scratchCopy(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'codegen-'));
  for (const entry of ['spec', 'scripts', 'generated', 'codegen.yml', 'package.json', 'tsconfig.json', 'test/contract/parity.generated.test.ts']) {
    cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

async function check(dir: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'scripts/codegen.ts', '--check'], { cwd: dir });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

function edit(dir: string, file: string, change: (text: string) => string): void {
  const target = path.join(dir, file);
  const before = readFileSync(target, 'utf8');
  const after = change(before);
  if (after === before) throw new Error(`edit of ${file} changed nothing`);
  writeFileSync(target, after);
}

describe('npm run codegen:check', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = scratchCopy();
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test('passes on the committed tree', async () => {
    const result = await check(fresh());
    expect(result.output).toContain('match spec/');
    expect(result.code).toBe(0);
  });

  test('fails when spec/openapi.yaml changes without regenerating', async () => {
    const dir = fresh();
    edit(dir, 'spec/openapi.yaml', (s) => s.replace('summary: The caller\'s effective permissions.', 'summary: Effective permissions of the caller.'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/generated\/openapi.*differs from what spec\/ produces/);
  });

  test('fails when a generated file is edited by hand or a stray file appears', async () => {
    const dir = fresh();
    edit(dir, 'generated/parity.ts', (s) => `${s}\n// hand edit\n`);
    writeFileSync(path.join(dir, 'generated/extra.ts'), 'export {};\n');
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('generated/parity.ts differs');
    expect(result.output).toContain('generated/extra.ts is not produced by the specs');
  });

  test('fails when a REST operation declares no gate', async () => {
    const dir = fresh();
    edit(dir, 'spec/openapi.yaml', (s) => s.replace(/(operationId: getSchema\n(?:.*\n)*?)\s+x-auth: public\n/, '$1\n'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('(getSchema): no gate');
  });

  test('fails when a GraphQL field declares no gate', async () => {
    const dir = fresh();
    edit(dir, 'spec/schema.graphql', (s) => s.replace('myPermissions: TokenPermissions! @gate(auth: "authenticated")', 'myPermissions: TokenPermissions!'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('Query.myPermissions: no @gate directive');
  });

  test('fails when twins declare different gates', async () => {
    const dir = fresh();
    edit(dir, 'spec/schema.graphql', (s) => s.replace('@gate(auth: "authenticated")', '@gate(permission: "events:read")'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/myPermissions: REST gate .* differs from Query\.myPermissions gate/);
  });

  test('an operation marked x-internal is validated but left out of the published document', async () => {
    const dir = fresh();
    edit(dir, 'spec/openapi.yaml', (text) =>
      text.replace(
        'components:\n',
        [
          '  /internal/feed:',
          '    post:',
          '      operationId: internalFeed',
          '      x-auth: system-key',
          '      x-internal: true',
          '      responses:',
          "        '204': { description: Accepted. }",
          'components:',
          '',
        ].join('\n'),
      ),
    );
    await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'scripts/codegen.ts'], { cwd: dir });
    const { stdout } = await run(
      process.execPath,
      [
        path.join(root, 'node_modules/tsx/dist/cli.mjs'),
        '-e',
        "const d = require('./generated/openapi-document.ts'); console.log(JSON.stringify([Object.keys(d.openapiDocument.paths), Object.keys(d.publicOpenapiDocument.paths)]))",
      ],
      { cwd: dir },
    );
    const [all, published] = JSON.parse(stdout) as [string[], string[]];
    expect(all).toContain('/internal/feed');
    expect(published).not.toContain('/internal/feed');
    expect(published).toEqual(all.filter((p) => p !== '/internal/feed'));
  });

  test('fails when a channel pattern has no gate kind', async () => {
    const dir = fresh();
    edit(dir, 'spec/ws-protocol.json', (s) => s.replace('{ "pattern": "login-assignments:{id}", "gate": { "kind": "Public" }', '{ "pattern": "login-assignments:{id}", "gate": {}'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('ws channel login-assignments:{id}: no gate kind');
  });
});
