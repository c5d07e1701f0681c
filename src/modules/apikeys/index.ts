/**
 * The apikeys module: personal and service keys, operator management of both, admin-provisioned
 * system keys and the assignable-scope registry. Keys are rows of src/auth's `credentials` table;
 * verification stays in src/auth (verifiers.ts, system-keys.ts) behind the key cache this module
 * invalidates. It holds members' keys, so it reacts to a member leaving an account (the accounts
 * module's hook): their personal keys are purged, `created_by` is cleared on what they created.
 */
import { defineModule } from '../contract';
import { createApiKeysResolvers } from './graphql';
import { createApiKeysRest } from './rest';
import { createApiKeysService, type ApiKeysService } from './service';

export type { OwnedKeyFields } from './service';

declare module '../contract' {
  interface ModuleApis {
    apikeys: ApiKeysService;
  }
}

export const apiKeysModule = defineModule({
  name: 'apikeys',
  build: ({ db, cache, bus, credentials, revocations, use }) => {
    const accounts = use('accounts');
    const service = createApiKeysService({ knex: db.knex, store: credentials, cache, bus, revocations, accounts, audit: use('audit') });
    accounts.onMemberLeaving((trx, accountId, userId) => service.purgeMember(trx, accountId, userId));
    return { api: service, rest: createApiKeysRest(service), resolvers: createApiKeysResolvers(service) };
  },
});
