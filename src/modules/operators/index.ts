/**
 * The operators module: finding, inspecting, suspending, restoring and deleting users (the last
 * with the privacy module's erasure of their traces) and accounts, the
 * per-user overrides and user role assignments (admin permissions `users:*`, `accounts:*`,
 * `user-roles:*`). It holds credentials to a suspension (`guard`, applied by the auth module) and
 * reports an account's usage against its plan's quotas (to operators, and to the account's own
 * members with `plan:read`: `GET /v1/account/plan`). The tables are the accounts module's; it
 * must not write account roles, members or invites (a deleted user's go with their row's foreign
 * keys).
 */
import { defineModule } from '../contract';
import { createOperatorsResolvers } from './graphql';
import { createOperatorsRepo } from './repo';
import { createOperatorsRest } from './rest';
import { createOperatorsService, type OperatorsService } from './service';

declare module '../contract' {
  interface ModuleApis {
    operators: OperatorsService;
  }
}

export const operatorsModule = defineModule({
  name: 'operators',
  build: ({ db, use, revocations }) => {
    const service = createOperatorsService({
      repo: createOperatorsRepo(db.knex),
      knex: db.knex,
      audit: use('audit'),
      accounts: use('accounts'),
      sessions: use('sessions'),
      features: use('features'),
      quotas: use('plans').quotas,
      sounds: use('sounds'),
      revocations,
      privacy: use('privacy'),
    });
    return { api: service, rest: createOperatorsRest(service), resolvers: createOperatorsResolvers(service) };
  },
});
