/**
 * The e-mail adapter of the developer portal (application and verification decisions). The
 * service talks to a `Mailer`; the default one is a logging outbox (one log line per message,
 * recipient and subject only, never a body that could carry review notes into the log), and
 * `createRecordingMailer` is the SMTP-free double tests swap in (`developer.useMailer`). A real
 * transport (SMTP, a provider API) is another implementation of the same interface.
 */
import type { Logger } from '../../infra/logger';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** What the message is about, for routing and tests (`developer_application`, `developer_verification`). */
  topic: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/** The default transport: a log line per message (the outbox an operator can follow). */
export function createLogMailer(log: Logger): Mailer {
  return {
    async send(message) {
      log.info({ mail: { to: message.to, subject: message.subject, topic: message.topic } }, 'mail queued');
    },
  };
}

/** A test double that keeps every message it is given, in order. */
export function createRecordingMailer(): Mailer & { readonly sent: MailMessage[] } {
  const sent: MailMessage[] = [];
  return {
    sent,
    async send(message) {
      sent.push({ ...message });
    },
  };
}
