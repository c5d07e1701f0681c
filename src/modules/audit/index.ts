/** Builds the audit module: `service.record()` is handed to every module that writes audit rows. */
import type { Knex } from 'knex';
import { createAuditResolvers } from './graphql';
import { createAuditRepo } from './repo';
import { createAuditRest } from './rest';
import { createAuditService, type NameResolver } from './service';

export { auditMigrations } from './migrations';

export function createAuditModule(deps: { knex: Knex; names: NameResolver }) {
  const service = createAuditService({ repo: createAuditRepo(deps.knex), names: deps.names });
  return { service, rest: createAuditRest(service), resolvers: createAuditResolvers(service) };
}
