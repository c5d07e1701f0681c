/**
 * The accounts module (users, accounts, roles, members, invites). It reacts to two things other
 * modules own: invite answers in the notifications module, and audit rows that need display names.
 */
import { defineModule } from '../contract';
import { createAccountsResolvers } from './graphql';
import { accountMigrations } from './migrations';
import { createAccountsRepo } from './repo';
import { createAccountsRest } from './rest';
import { createAccountsService, type AccountsService } from './service';

declare module '../contract' {
  interface ModuleApis {
    accounts: AccountsService;
  }
}

export const accountsModule = defineModule({
  name: 'accounts',
  migrations: accountMigrations,
  build: ({ db, use }) => {
    const audit = use('audit');
    const notifications = use('notifications');
    const service = createAccountsService({ repo: createAccountsRepo(db.knex), knex: db.knex, audit, notifications, mail: use('mail'), features: use('features') });
    audit.resolveNamesWith(service.names);
    notifications.onAction('invite', 'accept_invite', 'accepted', (trx, userId, n) => service.acceptInvite(trx, userId, String(n.data.inviteId)));
    notifications.onAction('invite', 'decline_invite', 'declined', (trx, userId, n) => service.declineInvite(trx, userId, String(n.data.inviteId)));
    return { api: service, rest: createAccountsRest(service), resolvers: createAccountsResolvers(service) };
  },
});
