/** Builds the accounts module (users, accounts, roles, members, invites) from its dependencies. */
import { createAccountsResolvers } from './graphql';
import { createAccountsRepo } from './repo';
import { createAccountsRest } from './rest';
import { createAccountsService, type AccountsDeps } from './service';

export { accountMigrations } from './migrations';

export function createAccountsModule(deps: Omit<AccountsDeps, 'repo'>) {
  const service = createAccountsService({ ...deps, repo: createAccountsRepo(deps.knex) });
  return { service, rest: createAccountsRest(service), resolvers: createAccountsResolvers(service) };
}
