/**
 * The developer module: developer applications and their review, developer profiles, developer
 * verification and its review, developer keys (`lm_dev_`, credentials rows with an owner row
 * here) and teams (roles, members, invite codes, cached team-scope permission checks). It offers
 * later modules (extensions: public profiles, team-owned extensions) the profile and team look-ups
 * below; it tells the accounts module whether a user is a developer (`me.isDeveloper`). Must not
 * touch extension rows (the extensions module's).
 */
import { defineModule } from '../contract';
import { createDeveloperResolvers } from './graphql';
import { developerMigrations } from './migrations';
import { createDeveloperRepo } from './repo';
import { createDeveloperRest } from './rest';
import { createDeveloperService, type DeveloperProfile, type Team, type TeamMemberSummary } from './service';

export type { DeveloperProfile, Team, TeamMemberSummary } from './service';

export interface DeveloperApi {
  /** The developer profile of a user (approved developer), or null. */
  profileOfUser(userId: string): Promise<DeveloperProfile | null>;
  profileById(id: string): Promise<DeveloperProfile | null>;
  profileBySlug(slug: string): Promise<DeveloperProfile | null>;
  teamById(id: string): Promise<Team | null>;
  teamBySlug(slug: string): Promise<Team | null>;
  /** Members with display names and avatar urls and their team role name. */
  teamMembers(teamId: string): Promise<TeamMemberSummary[]>;
  /** True when the user is a member of the team whose role grants `permission` (team scope, e.g. 'team-extensions:edit'). Cached per team and user. */
  hasTeamPermission(teamId: string, userId: string, permission: string): Promise<boolean>;
  /** Teams the user belongs to. */
  teamsOfUser(userId: string): Promise<Team[]>;
}

declare module '../contract' {
  interface ModuleApis {
    developer: DeveloperApi;
  }
}

export const developerModule = defineModule({
  name: 'developer',
  migrations: developerMigrations,
  build: ({ db, cache, bus, log, credentials, use }) => {
    const service = createDeveloperService({
      knex: db.knex,
      repo: createDeveloperRepo(db.knex),
      cache,
      bus,
      log,
      store: credentials,
      audit: use('audit'),
      notifications: use('notifications'),
      apikeys: use('apikeys'),
      mail: use('mail'),
    });
    use('accounts').provideDeveloperStatus(service.isDeveloper);
    const api: DeveloperApi = {
      profileOfUser: service.profileOfUser,
      profileById: service.profileById,
      profileBySlug: service.profileBySlug,
      teamById: service.teamById,
      teamBySlug: service.teamBySlug,
      teamMembers: service.teamMembers,
      hasTeamPermission: service.hasTeamPermission,
      teamsOfUser: service.teamsOfUser,
    };
    return { api, rest: createDeveloperRest(service), resolvers: createDeveloperResolvers(service) };
  },
});
