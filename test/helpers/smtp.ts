/**
 * A real SMTP server (smtp-server) on a loopback port for mail tests: it keeps every message it
 * accepts (raw, and parsed by mailparser), can refuse messages with a reply of the test's choosing
 * (a 4xx for a while), and can go down and come back on the same port (an outage).
 */
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  envelopeTo: string[];
  raw: string;
  parsed: ParsedMail;
}

export interface TestSmtp {
  port: number;
  received: ReceivedMail[];
  /** Called for each message; a number answers with that SMTP reply code instead of accepting. */
  refuse: (() => number | null) | null;
  /** Stops listening (and drops open connections) until `up()`. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestSmtp(): Promise<TestSmtp> {
  let server: SMTPServer | null = null;
  const state: TestSmtp = {
    port: 0,
    received: [],
    refuse: null,
    async down() {
      const s = server;
      server = null;
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async up() {
      server = create();
      const s = server;
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(state.port, '127.0.0.1', () => resolve());
      });
      state.port = (s.server.address() as AddressInfo).port;
    },
    close() {
      return state.down();
    },
  };
  function create(): SMTPServer {
    return new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      // Lets a closing server drop its idle pooled connections at once.
      closeTimeout: 100,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const code = state.refuse?.() ?? null;
          if (code !== null) {
            callback(Object.assign(new Error(`Refused for the test (${code})`), { responseCode: code }));
            return;
          }
          const raw = Buffer.concat(chunks).toString('utf8');
          simpleParser(raw).then(
            (parsed) => {
              state.received.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), raw, parsed });
              callback();
            },
            (error: Error) => callback(error),
          );
        });
      },
    });
  }
  await state.up();
  return state;
}

/** Polls until `check` holds (no timing assertion: jest's timeout bounds it). */
export async function waitFor(check: () => boolean | Promise<boolean>, intervalMs = 50): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, intervalMs));
}

/** The service's `mail` config pointed at a test SMTP server, with short retry delays. */
export function smtpMailConfig(port: number, maxAttempts: number) {
  return {
    transport: 'smtp',
    from: 'Creator Backend <no-reply@example.test>',
    link_base: 'https://dash.example.test/',
    smtp: { host: '127.0.0.1', port, ignore_tls: true, connection_timeout_ms: 2000, socket_timeout_ms: 5000 },
    retry: { max_attempts: maxAttempts, base_delay_ms: 100, max_delay_ms: 400, sweep_seconds: 1, lease_ms: 10_000 },
  } as const;
}
