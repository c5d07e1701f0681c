/**
 * The mail module: the outbox (`mail_outbox`), its worker on the job system, the
 * transport (nodemailer: SMTP, or a log line in development), the templates, and
 * GET /v1/admin/mail/outbox. Other modules send mail only through `queue` / `queueForUser` inside
 * their own transaction; notifications decide from the user's preferences whether to call it.
 * Must not send anything outside the worker.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { bindRest } from '../../http/rest';
import { defineModule } from '../contract';
import { mailMigrations } from './migrations';
import { createMailRepo } from './repo';
import { createMailService, DELIVER_JOB, SWEEP_JOB, type MailService } from './service';
import { createMailTransport } from './transport';

export type { MailCounts, MailRecipient, MailService, OutboxItem } from './service';
export { renderMail, singleLine } from './templates';

export type MailApi = Pick<MailService, 'queue' | 'queueForUser' | 'deliverDue' | 'sweep' | 'counts' | 'eraseRecipient'>;

declare module '../contract' {
  interface ModuleApis {
    mail: MailApi;
  }
}

export const mailModule = defineModule({
  name: 'mail',
  migrations: mailMigrations,
  build: ({ db, log, config, jobs, secrets }) => {
    const transport = createMailTransport(config, log);
    const nodeId = config.jobs.node_id ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    const service = createMailService({ repo: createMailRepo(db.knex), jobs, log, config: config.mail, transport, nodeId, secrets });
    jobs.define(DELIVER_JOB, async () => {
      await service.deliverDue();
    });
    jobs.every(SWEEP_JOB, config.mail.retry.sweep_seconds, () => service.sweep(), { retryLimit: 0 });
    return {
      api: service,
      rest: bindRest({
        adminMailOutbox: ({ query, paging }) => service.outbox(query.status, paging),
        adminRetryMail: ({ params }) => service.retry(params.id),
      }),
      async close() {
        transport.close();
      },
    };
  },
});
