/** A pino logger whose JSON lines a test reads back (what an outage logs, and how often). */
import { Writable } from 'node:stream';
import pino from 'pino';

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export function captureLog(level: pino.Level = 'info'): { lines: LogLine[]; log: pino.Logger } {
  const lines: LogLine[] = [];
  const log = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
        done();
      },
    }),
  );
  return { lines, log };
}
