/**
 * pino JSON logs. Credentials never reach a log line: the Authorization header, cookies and the
 * `token` query parameter are redacted wherever a request is logged.
 *
 * Lines go to standard output through one buffered destination per process: written once 4 KiB
 * have gathered or 250 ms have passed, and synchronously when the process exits. A line per
 * request written on its own cost more than the rest of a `GET /v1/health` (README, "Performance").
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** Bytes gathered before a write, and the longest a line waits. */
const BUFFER_BYTES = 4096;
const FLUSH_EVERY_MS = 250;

let stdout: (DestinationStream & { flush(): void; flushSync(): void }) | null = null;

function standardOutput(): DestinationStream {
  if (stdout) return stdout;
  const destination = pino.destination({ dest: 1, sync: false, minLength: BUFFER_BYTES });
  stdout = destination;
  setInterval(() => destination.flush(), FLUSH_EVERY_MS).unref();
  process.once('exit', () => {
    try {
      destination.flushSync();
    } catch {
      // a write still in progress at exit: what it holds is already on its way
    }
  });
  return destination;
}

export function createLogger(options: { level: string; service: string; env: string; version: string }): Logger {
  return pino({
    level: options.level,
    base: { service: options.service, env: options.env, version: options.version },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["sec-websocket-protocol"]', 'res.headers["set-cookie"]', 'token', 'key'],
      censor: '[redacted]',
    },
  }, options.level === 'silent' ? undefined : standardOutput());
}

/** Drops `token` from a URL's query before it is logged. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}
