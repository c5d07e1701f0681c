/**
 * pino JSON logs. Credentials never reach a log line: the Authorization header, cookies, the
 * `token` query parameter and a sign-in's authorization `code` are redacted wherever a request is logged.
 *
 * Lines go to standard output through one buffered destination per process: written once 12 KiB
 * have gathered (under sonic-boom's 16 KiB write) or 250 ms have passed, and synchronously when the
 * process exits. A line per request written on its own cost more than the rest of a
 * `GET /v1/health` (docs/guides/performance.md); at 4 KiB, the writes were still 2-3 % of a cold page's CPU.
 * The destination gathers each line as its UTF-8 bytes (sonic-boom's buffer mode): in its text mode
 * it appends each line to one growing string and measures that string's UTF-8 length again on
 * every line, which copies the whole gathered text once a line (3.5 µs and about 6 KiB of heap per
 * line at 12 KiB, against 1.6 µs and none in buffer mode).
 */
import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** Bytes gathered before a write, and the longest a line waits. */
const BUFFER_BYTES = 12_288;
const FLUSH_EVERY_MS = 250;

let stdout: (DestinationStream & { flush(): void; flushSync(): void }) | null = null;

function standardOutput(): DestinationStream {
  if (stdout) return stdout;
  const bytes = pino.destination({ dest: 1, sync: false, minLength: BUFFER_BYTES, contentMode: 'buffer' });
  // pino writes each line as a string; buffer mode takes bytes (sonic-boom's types know only text).
  const destination = { write: (line: string) => bytes.write(Buffer.from(line) as unknown as string), flush: () => bytes.flush(), flushSync: () => bytes.flushSync() };
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

/** `destination` (tests) replaces standard output; the redaction is the same. */
export function createLogger(options: { level: string; service: string; env: string; version: string }, destination?: DestinationStream): Logger {
  return pino({
    level: options.level,
    base: { service: options.service, env: options.env, version: options.version },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["sec-websocket-protocol"]', 'res.headers["set-cookie"]', 'token', 'key', 'access_token', 'refresh_token', 'id_token', 'login_code', 'client_secret'],
      censor: '[redacted]',
    },
  }, destination ?? (options.level === 'silent' ? undefined : standardOutput()));
}

/** Drops credentials (`token`, a sign-in's authorization `code`) from a URL's query before it is logged. */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:token|code|access_token|refresh_token|id_token|login_code)=)[^&#]*/gi, '$1[redacted]');
}
