/**
 * The process's log destination (src/infra/logger.ts): lines gathered as bytes and written in
 * batches reach standard output whole and in order, multi-byte characters included, both those a
 * batch or the periodic flush writes and those still gathered when the process exits.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

const SCRIPT = `
const { createLogger } = require('./src/infra/logger');
const log = createLogger({ level: 'info', service: 'svc', env: 'test', version: '1' });
const burst = (from) => { for (let i = from; i < from + 2000; i++) log.info({ i, word: 'naïve ✓ 日本' }, 'line'); };
burst(0);
setTimeout(() => {
  burst(2000);
  process.exit(0);
}, 400);
`;

function run(): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', SCRIPT], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

describe('the log destination', () => {
  it('writes every line whole, in order, with its UTF-8 text, up to the exit', async () => {
    const { code, stdout } = await run();
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { i: number; word: string; msg: string });
    expect(lines).toHaveLength(4000);
    lines.forEach((line, index) => {
      expect(line.i).toBe(index);
      expect(line.word).toBe('naïve ✓ 日本');
    });
  }, 30_000);
});
