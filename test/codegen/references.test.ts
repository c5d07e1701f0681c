/**
 * docs/reference/ against a scratch copy of the project: `npm run codegen:check` fails when a
 * reference page is edited by hand, missing or stray, and codegen fails, naming the key and the
 * file, when a configuration key has no description. The registered metrics and metrics.md cannot
 * part: metrics.md is read from the registry src/infra/metrics.ts builds.
 */
import { rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { codegen, edit, scratchCopy } from '../helpers/codegen-scratch';

const check = (dir: string) => codegen(dir);

// Each test runs codegen in a child process; on a busy shared machine one run takes minutes.
jest.setTimeout(300_000);

describe('docs/reference/ under npm run codegen:check', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = scratchCopy('codegen-references-');
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test('fails when a reference page is edited by hand, missing or stray', async () => {
    const dir = fresh();
    edit(dir, 'docs/reference/metrics.md', (text) => text.replace('| `svc_uptime_seconds` |', '| `svc_uptime_secs` |'));
    unlinkSync(path.join(dir, 'docs/reference/channels.md'));
    writeFileSync(path.join(dir, 'docs/reference/stray.md'), '# Not generated\n');
    const result = await check(dir);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('docs/reference/metrics.md differs from what spec/ produces');
    expect(result.output).toContain('docs/reference/channels.md is missing');
    expect(result.output).toContain('docs/reference/stray.md is not produced by the specs');
  });

  test('fails, naming the key and the file, when a configuration key has no description', async () => {
    const dir = fresh();
    edit(dir, 'src/config/schema.ts', (text) => text.replace(/pool_max: \{ type: 'integer', minimum: 1, maximum: 200, description: '[^']*' \}/, "pool_max: { type: 'integer', minimum: 1, maximum: 200 }"));
    const result = await check(dir);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('src/config/schema.ts: configuration key db.pool_max has no description');
  });

  test('fails when a metric is registered that metrics.md lacks', async () => {
    const dir = fresh();
    edit(dir, 'src/infra/metrics.ts', (text) =>
      text.replace('  return { registry, render: () => registry.metrics() };', "  new Gauge({ name: 'svc_probe_gauge', help: 'A metric the reference does not list yet.', registers: [registry] });\n  return { registry, render: () => registry.metrics() };"),
    );
    const result = await check(dir);
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('docs/reference/metrics.md differs from what spec/ produces');
  });
});
