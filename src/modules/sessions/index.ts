/**
 * The sessions module: login sessions (its own table), JWTs minted from them, and popout sessions.
 * It offers the session rows to the auth layer (`sessionSource`), which checks them on every JWT.
 */
import type { SessionSource } from '../../auth/verifiers';
import { createPopoutGrant } from '../../auth/verifiers';
import { defineModule } from '../contract';
import { createSessionsResolvers } from './graphql';
import { sessionMigrations } from './migrations';
import { createSessionsRepo } from './repo';
import { createSessionsRest } from './rest';
import { createSessionsService, type SessionsService } from './service';

export type { Client, SessionTokens } from './service';

export interface SessionsApi extends SessionsService {
  readonly sessionSource: SessionSource;
}

declare module '../contract' {
  interface ModuleApis {
    sessions: SessionsApi;
  }
}

export const sessionsModule = defineModule({
  name: 'sessions',
  migrations: sessionMigrations,
  build: ({ config, db, jwt, credentials, revocations, use }) => {
    const accounts = use('accounts');
    const repo = createSessionsRepo(db.knex);
    const service = createSessionsService({
      config,
      jwt,
      store: credentials,
      repo,
      principals: accounts.principals,
      accounts,
      audit: use('audit'),
      revocations,
      popoutGrant: createPopoutGrant(accounts.principals),
    });
    return {
      api: { ...service, sessionSource: repo },
      rest: createSessionsRest(service),
      resolvers: createSessionsResolvers(service),
    };
  },
});
