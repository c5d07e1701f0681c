/**
 * The audit module: `record()` is what every module writes audit rows through (in the caller's
 * transaction). Display names are resolved at read time by whichever module knows them; it
 * registers itself with `resolveNamesWith` (the accounts module does).
 */
import { defineModule } from '../contract';
import { createAuditResolvers } from './graphql';
import { auditMigrations } from './migrations';
import { createAuditRepo } from './repo';
import { createAuditRest } from './rest';
import { createAuditService, type AuditService, type NameResolver } from './service';

export type { ResolvedNameRow } from './types';

export interface AuditApi extends AuditService {
  resolveNamesWith(resolver: NameResolver): void;
}

declare module '../contract' {
  interface ModuleApis {
    audit: AuditApi;
  }
}

export const auditModule = defineModule({
  name: 'audit',
  migrations: auditMigrations,
  build: ({ db, config }) => {
    const resolvers: NameResolver[] = [];
    const names: NameResolver = async (ids) => (await Promise.all(resolvers.map((resolve) => resolve(ids)))).flat();
    const service = createAuditService({ repo: createAuditRepo(db.knex), names, maxMetadataBytes: config.audit.max_metadata_bytes });
    return {
      api: { ...service, resolveNamesWith: (resolver: NameResolver) => void resolvers.push(resolver) },
      rest: createAuditRest(service),
      resolvers: createAuditResolvers(service),
    };
  },
});
