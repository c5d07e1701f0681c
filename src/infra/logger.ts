/**
 * pino JSON logs. Credentials never reach a log line: the Authorization header, cookies and the
 * `token` query parameter are redacted wherever a request is logged.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(options: { level: string; service: string; env: string; version: string }): Logger {
  return pino({
    level: options.level,
    base: { service: options.service, env: options.env, version: options.version },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["sec-websocket-protocol"]', 'res.headers["set-cookie"]', 'token', 'key'],
      censor: '[redacted]',
    },
  });
}

/** Drops `token` from a URL's query before it is logged. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}
