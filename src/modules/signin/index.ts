/**
 * The signin module: sign-in with the OAuth 2.0 / OpenID Connect providers of config
 * `auth.providers`. Owns `login_codes` and `signin_flows`; users, sessions and the stored grants
 * are the accounts, sessions and connections modules', used through their APIs.
 */
import { defineModule } from '../contract';
import { createFlowCodec } from './flow-cookie';
import { createSigninResolvers } from './graphql';
import { signinMigrations } from './migrations';
import { createProviderClient, type ProviderClient } from './providers';
import { createSigninRepo } from './repo';
import { createSigninRest } from './rest';
import { createSigninService, type SigninService } from './service';

export interface SigninApi {
  readonly service: SigninService;
  /** A login connection's access token for a platform call, refreshed when near expiry (service.ts). */
  readonly grantToken: SigninService['grantToken'];
  /** A channel or bot connection's access token, under the same refresh rule. */
  readonly accountGrantToken: SigninService['accountGrantToken'];
  /** The configured provider clients by slug (connections refresh and revoke through them). */
  readonly providers: ReadonlyMap<string, ProviderClient>;
}

declare module '../contract' {
  interface ModuleApis {
    signin: SigninApi;
  }
}

export const signinModule = defineModule({
  name: 'signin',
  migrations: signinMigrations,
  build: ({ config, log, db, jobs, use }) => {
    const accounts = use('accounts');
    const providers = new Map(config.auth.providers.map((p) => [p.slug, createProviderClient(p)]));
    const service = createSigninService({
      config,
      log,
      repo: createSigninRepo(db.knex),
      codec: createFlowCodec(config.auth.jwt_secret),
      providers,
      accounts,
      sessions: use('sessions'),
      connections: use('connections'),
      notifications: use('notifications'),
      accountOwner: (accountId) => accounts.principals.accountOwner(accountId),
    });
    // Grants are refreshed before they expire, not only when a platform call needs one (ADR 005).
    jobs.every('signin.grant-refresh', 60, async () => {
      await service.refreshDue();
    });
    return { api: { service, providers, grantToken: service.grantToken, accountGrantToken: service.accountGrantToken }, rest: createSigninRest(service), resolvers: createSigninResolvers(service) };
  },
});
