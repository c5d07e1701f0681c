/**
 * The mail transport, through nodemailer only: `smtp` (host, port, implicit TLS or STARTTLS,
 * auth, pooled connections, timeouts shorter than the worker's hold on a message) or `log`
 * (nodemailer's JSON transport builds the message, and one log line records recipient, subject
 * and message id, never a body). Tests pass a transport of their own to `createMailModule`.
 */
import nodemailer from 'nodemailer';
import type { Config } from '../../config/config';
import type { Logger } from '../../infra/logger';

export interface OutgoingMail {
  from: string;
  to: { name: string | null; address: string };
  subject: string;
  text: string;
  html: string;
  /** What the message is about (the template kind), for the log line. */
  kind: string;
}

export interface MailTransport {
  readonly kind: 'smtp' | 'log';
  /** Sends one message; resolves with the transport's message id, rejects with its error. */
  send(message: OutgoingMail): Promise<{ messageId: string | null }>;
  close(): void;
}

const envelope = (m: OutgoingMail) => ({
  from: m.from,
  to: m.to.name ? { name: m.to.name, address: m.to.address } : m.to.address,
  subject: m.subject,
  text: m.text,
  html: m.html,
  // Nothing of ours goes into other headers: nodemailer encodes these values.
  disableFileAccess: true,
  disableUrlAccess: true,
});

export function createSmtpTransport(smtp: Readonly<Config['mail']['smtp']>): MailTransport {
  const transporter = nodemailer.createTransport({
    host: smtp.host ?? undefined,
    port: smtp.port,
    secure: smtp.secure,
    requireTLS: smtp.require_tls,
    ignoreTLS: smtp.ignore_tls,
    tls: { rejectUnauthorized: smtp.reject_unauthorized },
    ...(smtp.user ? { auth: { user: smtp.user, pass: smtp.pass ?? '' } } : {}),
    ...(smtp.pool ? { pool: true as const, maxConnections: smtp.max_connections } : {}),
    connectionTimeout: smtp.connection_timeout_ms,
    greetingTimeout: smtp.connection_timeout_ms,
    socketTimeout: smtp.socket_timeout_ms,
  });
  return {
    kind: 'smtp',
    async send(message) {
      const info = (await transporter.sendMail(envelope(message))) as { messageId?: string };
      return { messageId: info.messageId ?? null };
    },
    close() {
      transporter.close();
    },
  };
}

export function createLogTransport(log: Logger): MailTransport {
  const transporter = nodemailer.createTransport({ jsonTransport: true });
  return {
    kind: 'log',
    async send(message) {
      const info = (await transporter.sendMail(envelope(message))) as { messageId?: string };
      log.info({ mail: { to: message.to.address, subject: message.subject, kind: message.kind, message_id: info.messageId } }, 'mail written to the log (mail.transport: log)');
      return { messageId: info.messageId ?? null };
    },
    close() {
      transporter.close();
    },
  };
}

export function createMailTransport(config: Readonly<Config>, log: Logger): MailTransport {
  return config.mail.transport === 'smtp' ? createSmtpTransport(config.mail.smtp) : createLogTransport(log);
}
