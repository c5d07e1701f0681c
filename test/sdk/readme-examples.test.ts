/**
 * The SDK guide's examples compile as a consumer writes them: every ```ts block of
 * docs/guides/sdk.md (and of the README) that imports `@creator-backend/sdk` is written to a
 * scratch project and type-checked
 * with `tsc --strict --noEmit`, the package names mapped onto sdk/src (the sources the package is
 * built from). An example that stops compiling after an SDK or spec change fails here, not in a
 * reader's editor.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

/** The ```ts blocks of a document that use the package. */
function sdkExamples(text: string): string[] {
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => code.includes("from '@creator-backend/sdk"));
}

describe('the SDK guide examples', () => {
  let dir = '';
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('compile with tsc --strict against the SDK', async () => {
    const examples = ['README.md', 'docs/guides/sdk.md'].flatMap((file) => sdkExamples(readFileSync(path.join(root, file), 'utf8')));
    expect(examples.length).toBeGreaterThanOrEqual(2);
    dir = mkdtempSync(path.join(tmpdir(), 'sdk-readme-'));
    const files = examples.map((code, i) => {
      const file = `example-${i + 1}.ts`;
      writeFileSync(path.join(dir, file), code);
      return file;
    });
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          moduleDetection: 'force',
          lib: ['ES2022', 'DOM'],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          esModuleInterop: true,
          typeRoots: [path.join(root, 'node_modules/@types')],
          types: ['node'],
          paths: {
            '@creator-backend/sdk': [path.join(root, 'sdk/src/index.ts')],
            '@creator-backend/sdk/node': [path.join(root, 'sdk/src/node.ts')],
          },
        },
        files,
      }),
    );
    let output = '';
    try {
      await run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', dir, '--pretty', 'false'], { cwd: dir });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      output = `${e.stdout ?? ''}${e.stderr ?? ''}` || String(error);
    }
    // The examples as numbered above, so a failure points at its block.
    expect(output).toBe('');
  });
});
