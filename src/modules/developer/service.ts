/**
 * The developer portal (Part 2, "Developer portal"; Part 1, "Key rules" 4): developer applications
 * and their review, developer profiles, verification and its review, developer keys (`lm_dev_`)
 * and teams with their roles, members and invite codes. Keys are `credentials` rows minted through
 * src/auth's store with the apikeys module's shared rules (label, expiry, registry, creator subset,
 * retirement); this module adds the owner row (exactly one of profile and team). Team-scope
 * permissions are data-dependent, so they are checked here, against the member's team role,
 * cached per team and user in the shared cache and dropped on every role or member change.
 * Must not check declared gates (the bindings do). Multi-row changes run in one transaction with
 * their audit row and notification (in-app and mail, through `notifications.notify`).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { requireUserId, type AuthContext } from '../../auth/context';
import { defaultTeamRoles, isTeamPermission, sortByRegistry, teamPermissions } from '../../auth/registry';
import { invalidateKey, type CredentialStore } from '../../auth/store';
import { AppError, messages } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { Cache } from '../../infra/cache';
import { isoTime } from '../../infra/db/database';
import type { Logger } from '../../infra/logger';
import type { PageRequest } from '../../paging';
import type { OwnedKeyFields } from '../apikeys';
import type { ModuleApis } from '../contract';
import { developerMessages as M } from './errors';
import type {
  ApplicationListRow,
  ApplicationRow,
  DeveloperKeyRow,
  DeveloperRepo,
  ProfileRow,
  TeamInviteRow,
  TeamMemberRow,
  TeamRoleRow,
  TeamRow,
  VerificationFields,
  VerificationRow,
} from './repo';

// ---------------------------------------------------------------------------------------------
// Domain shapes (camelCase; the REST router maps them to the wire)
// ---------------------------------------------------------------------------------------------

/** An approved developer's public identity (one per user). */
export interface DeveloperProfile {
  readonly id: string;
  readonly userId: string;
  readonly displayName: string;
  readonly slug: string;
  readonly description: string | null;
  readonly githubUrl: string | null;
  readonly websiteUrl: string | null;
  readonly avatarKey: string | null;
  readonly createdAt: Date;
}

/** A developer team (created by an approved team application or by a developer). */
export interface Team {
  readonly id: string;
  readonly name: string;
  readonly slug: string;
  readonly description: string | null;
  readonly githubUrl: string | null;
  readonly websiteUrl: string | null;
  readonly avatarKey: string | null;
  readonly ownerUserId: string;
  readonly createdAt: Date;
}

export interface TeamMemberSummary {
  readonly userId: string;
  readonly displayName: string;
  readonly avatarUrl: string | null;
  readonly role: string;
}

export interface DeveloperApplication {
  id: string;
  userId: string;
  applicationType: 'solo' | 'team';
  displayName: string;
  slug: string;
  description: string;
  motivation: string;
  whatToBuild: string;
  githubUrl: string | null;
  websiteUrl: string | null;
  experience: string | null;
  avatarKey: string | null;
  status: 'pending' | 'approved' | 'rejected';
  reviewNotes: string | null;
  reviewedBy: string | null;
  reviewedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AdminDeveloperApplicationItem {
  id: string;
  userId: string;
  applicationType: 'solo' | 'team';
  displayName: string;
  slug: string;
  status: 'pending' | 'approved' | 'rejected';
  createdAt: string;
  userDisplayName: string;
  userAvatarUrl: string | null;
}

export interface DeveloperVerification {
  id: string;
  developerId: string;
  legalName: string;
  companyName: string | null;
  addressLine1: string;
  addressLine2: string | null;
  postalCode: string;
  city: string;
  country: string;
  taxId: string | null;
  tradeRegisterId: string | null;
  documentKey: string | null;
  status: 'pending' | 'verified' | 'rejected';
  reviewNotes: string | null;
  reviewedBy: string | null;
  reviewedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DeveloperApiKey extends OwnedKeyFields {
  id: string;
  developerId: string | null;
  teamId: string | null;
}

export interface TeamView {
  id: string;
  name: string;
  slug: string;
  description: string | null;
  githubUrl: string | null;
  websiteUrl: string | null;
  avatarKey: string | null;
  ownerUserId: string;
  /** The caller's role name in the team (null when not a member). */
  role: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface TeamMember {
  userId: string;
  displayName: string;
  avatarUrl: string | null;
  roleId: string;
  role: string;
  isOwner: boolean;
  joinedAt: string;
}

export interface TeamRole {
  id: string;
  teamId: string;
  name: string;
  isSystem: boolean;
  permissions: string[];
  memberCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface TeamInvite {
  id: string;
  teamId: string;
  codePrefix: string;
  roleId: string;
  role: string;
  invitedBy: string | null;
  createdAt: string;
  expiresAt: string;
}

export interface TeamInviteLookup {
  teamId: string;
  teamName: string;
  teamSlug: string;
  teamAvatarKey: string | null;
  role: string;
  expiresAt: string;
}

export interface ReviewResult {
  success: true;
  newStatus: 'approved' | 'rejected' | 'verified';
}

export interface SubmitApplicationInput {
  applicationType: string;
  displayName: string;
  slug: string;
  description: string;
  motivation: string;
  whatToBuild: string;
  githubUrl?: string | null;
  websiteUrl?: string | null;
  experience?: string | null;
}

export interface SubmitVerificationInput {
  legalName?: string | null;
  companyName?: string | null;
  addressLine1?: string | null;
  addressLine2?: string | null;
  postalCode?: string | null;
  city?: string | null;
  country?: string | null;
  taxId?: string | null;
  tradeRegisterId?: string | null;
  documentKey?: string | null;
}

export interface CreateDeveloperKeyInput {
  label: string;
  permissions: readonly string[];
  teamId?: string | null;
  expiresAt?: string | null;
}

// ---------------------------------------------------------------------------------------------
// Mapping
// ---------------------------------------------------------------------------------------------

const toApplication = (r: ApplicationRow): DeveloperApplication => ({
  id: r.id,
  userId: r.user_id,
  applicationType: r.application_type,
  displayName: r.display_name,
  slug: r.slug,
  description: r.description,
  motivation: r.motivation,
  whatToBuild: r.what_to_build,
  githubUrl: r.github_url,
  websiteUrl: r.website_url,
  experience: r.experience,
  avatarKey: r.avatar_key,
  status: r.status,
  reviewNotes: r.review_notes,
  reviewedBy: r.reviewed_by,
  reviewedAt: isoTime(r.reviewed_at),
  createdAt: isoTime(r.created_at),
  updatedAt: isoTime(r.updated_at),
});

const toApplicationItem = (r: ApplicationListRow): AdminDeveloperApplicationItem => ({
  id: r.id,
  userId: r.user_id,
  applicationType: r.application_type,
  displayName: r.display_name,
  slug: r.slug,
  status: r.status,
  createdAt: isoTime(r.created_at),
  userDisplayName: r.user_display_name,
  userAvatarUrl: r.user_avatar_url,
});

const toVerification = (r: VerificationRow): DeveloperVerification => ({
  id: r.id,
  developerId: r.developer_id,
  legalName: r.legal_name,
  companyName: r.company_name,
  addressLine1: r.address_line1,
  addressLine2: r.address_line2,
  postalCode: r.postal_code,
  city: r.city,
  country: r.country,
  taxId: r.tax_id,
  tradeRegisterId: r.trade_register_id,
  documentKey: r.document_key,
  status: r.status,
  reviewNotes: r.review_notes,
  reviewedBy: r.reviewed_by,
  reviewedAt: isoTime(r.reviewed_at),
  createdAt: isoTime(r.created_at),
  updatedAt: isoTime(r.updated_at),
});

const toProfile = (r: ProfileRow): DeveloperProfile => ({
  id: r.id,
  userId: r.user_id,
  displayName: r.display_name,
  slug: r.slug,
  description: r.description,
  githubUrl: r.github_url,
  websiteUrl: r.website_url,
  avatarKey: r.avatar_key,
  createdAt: new Date(r.created_at),
});

const toTeam = (r: TeamRow): Team => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  description: r.description,
  githubUrl: r.github_url,
  websiteUrl: r.website_url,
  avatarKey: r.avatar_key,
  ownerUserId: r.owner_user_id,
  createdAt: new Date(r.created_at),
});

const toTeamView = (r: TeamRow, role: string | null): TeamView => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  description: r.description,
  githubUrl: r.github_url,
  websiteUrl: r.website_url,
  avatarKey: r.avatar_key,
  ownerUserId: r.owner_user_id,
  role,
  createdAt: isoTime(r.created_at),
  updatedAt: isoTime(r.updated_at),
});

const toMember = (r: TeamMemberRow, ownerUserId: string): TeamMember => ({
  userId: r.user_id,
  displayName: r.display_name,
  avatarUrl: r.avatar_url,
  roleId: r.role_id,
  role: r.role,
  isOwner: r.user_id === ownerUserId,
  joinedAt: isoTime(r.joined_at),
});

const toRole = (r: TeamRoleRow): TeamRole => ({
  id: r.id,
  teamId: r.team_id,
  name: r.name,
  isSystem: r.is_system,
  permissions: sortByRegistry(r.permissions),
  memberCount: r.member_count,
  createdAt: isoTime(r.created_at),
  updatedAt: isoTime(r.updated_at),
});

const toInvite = (r: TeamInviteRow): TeamInvite => ({
  id: r.id,
  teamId: r.team_id,
  codePrefix: r.code_prefix,
  roleId: r.role_id,
  role: r.role,
  invitedBy: r.invited_by,
  createdAt: isoTime(r.created_at),
  expiresAt: isoTime(r.expires_at),
});

const toKey = (r: DeveloperKeyRow): DeveloperApiKey => ({
  id: r.id,
  developerId: r.developer_id,
  teamId: r.team_id,
  createdBy: r.created_by,
  keyPrefix: r.key_prefix,
  label: r.label,
  permissions: sortByRegistry(r.permissions),
  createdAt: isoTime(r.created_at),
  updatedAt: isoTime(r.updated_at),
  expiresAt: isoTime(r.expires_at),
  lastUsedAt: isoTime(r.last_used_at),
});

// ---------------------------------------------------------------------------------------------
// Input rules
// ---------------------------------------------------------------------------------------------

/** Trimmed text, or null when absent or blank. */
const text = (value: string | null | undefined): string | null => {
  const trimmed = (value ?? '').trim();
  return trimmed === '' ? null : trimmed;
};

/** Part 2's slug rules, in the order the messages are listed. */
function checkSlug(slug: string): string {
  if (slug.length < 3 || slug.length > 50) throw AppError.validation(M.slugLength);
  if (!/^[a-z]/.test(slug)) throw AppError.validation(M.slugStart);
  if (!/^[a-z0-9-]+$/.test(slug)) throw AppError.validation(M.slugCharacters);
  return slug;
}

function required(value: string | null | undefined, field: string, message = M.fieldRequired(field)): string {
  const v = text(value);
  if (v === null) throw AppError.validation(message);
  return v;
}

function reviewNotes(notes: string | null | undefined, mandatory: boolean): string | null {
  const v = text(notes);
  if (mandatory && v === null) throw AppError.validation(M.notesRequired);
  return v;
}

const isUniqueViolation = (error: unknown): boolean => (error as { code?: string })?.code === '23505';

const codeHash = (code: string): string => createHash('sha256').update(code, 'utf8').digest('hex');

/** How long a member's team permissions stay cached; every role or member change drops them at once. */
export const TEAM_PERMISSION_TTL_SECONDS = 30;
const teamAccessKey = (teamId: string, userId: string) => `devteam:access:${teamId}:${userId}`;
const OWNER_ROLE = defaultTeamRoles[0]!.name;
const MEMBER_ROLE = 'team-member';

interface TeamAccess {
  role: string;
  permissions: string[];
}

export interface DeveloperDeps {
  knex: Knex;
  repo: DeveloperRepo;
  cache: Cache;
  bus: Bus;
  log: Logger;
  store: CredentialStore;
  audit: Pick<ModuleApis['audit'], 'record'>;
  notifications: Pick<ModuleApis['notifications'], 'notify'>;
  apikeys: Pick<ModuleApis['apikeys'], 'validateKeyScopes' | 'keyLabel' | 'keyExpiry' | 'retireKey'>;
  /** Team invites mailed to an address (`email` on the request); the outbox seals the body. */
  mail: Pick<ModuleApis['mail'], 'queue'>;
}

export function createDeveloperService(deps: DeveloperDeps) {
  const { knex, repo, cache, audit, notifications, apikeys, store, mail } = deps;

  // ------------------------------------------------------------------ team access (cached)
  async function teamAccess(teamId: string, userId: string): Promise<TeamAccess | null> {
    const key = teamAccessKey(teamId, userId);
    const cached = await cache.get(key).catch(() => null);
    if (cached) {
      try {
        const parsed = JSON.parse(cached) as TeamAccess | { none: true };
        return 'none' in parsed ? null : parsed;
      } catch {
        // fall through to the database
      }
    }
    const member = await repo.member(teamId, userId);
    const access = member ? { role: member.role, permissions: member.permissions } : null;
    await cache.set(key, JSON.stringify(access ?? { none: true }), TEAM_PERMISSION_TTL_SECONDS).catch(() => undefined);
    return access;
  }

  /** Drops cached team access of these members (the shared cache, so every node reads afresh). */
  async function forgetAccess(teamId: string, userIds: readonly string[]): Promise<void> {
    await Promise.all(userIds.map((userId) => cache.del(teamAccessKey(teamId, userId)).catch(() => undefined)));
  }

  /** The team and the caller's access; a team the caller is not in is invisible (404). */
  async function memberOf(ctx: AuthContext, teamId: string): Promise<{ team: TeamRow; userId: string; access: TeamAccess }> {
    const userId = requireUserId(ctx);
    const [team, access] = await Promise.all([repo.teamById(teamId), teamAccess(teamId, userId)]);
    if (!team || !access) throw AppError.notFound(M.teamNotFound);
    return { team, userId, access };
  }

  /** A team-scope gate: member (404 otherwise) whose role grants `permission` (403 otherwise). */
  async function requireTeam(ctx: AuthContext, teamId: string, permission: string): Promise<{ team: TeamRow; userId: string; access: TeamAccess }> {
    const found = await memberOf(ctx, teamId);
    if (!found.access.permissions.includes(permission)) throw AppError.forbidden(messages.missingPermission(permission));
    return found;
  }

  /** A role offered or assigned by someone may not grant more than they hold themselves. */
  function checkGrantable(access: TeamAccess, role: TeamRoleRow): void {
    if (role.is_system) throw new AppError('CONFLICT', M.ownerRoleNotAssignable);
    const beyond = role.permissions.find((p) => !access.permissions.includes(p));
    if (beyond !== undefined) throw AppError.forbidden(M.cannotGrantTeam(beyond));
  }

  async function requireProfile(ctx: AuthContext, message: string = messages.developerOnly): Promise<ProfileRow> {
    const profile = await repo.profileOfUser(requireUserId(ctx));
    if (!profile) throw AppError.forbidden(message);
    return profile;
  }

  /** Creates a team, its default roles and its owner's membership, in the caller's transaction. */
  async function createTeamRows(trx: Knex.Transaction, input: { name: string; slug: string; description: string | null; githubUrl: string | null; websiteUrl: string | null; avatarKey: string | null }, ownerUserId: string): Promise<TeamRow> {
    const team = await repo.insertTeam(trx, {
      id: randomUUID(),
      name: input.name,
      slug: input.slug,
      description: input.description,
      github_url: input.githubUrl,
      website_url: input.websiteUrl,
      avatar_key: input.avatarKey,
      owner_user_id: ownerUserId,
    });
    const roles = defaultTeamRoles.map((r, position) => ({ id: randomUUID(), team_id: team.id, name: r.name, position, is_system: r.isSystem, permissions: r.permissions }));
    await repo.insertRoles(trx, roles);
    await repo.insertMember(trx, { team_id: team.id, user_id: ownerUserId, role_id: roles[0]!.id });
    return team;
  }

  /** A developer key the caller may manage: their profile's, or their team's with `team-secrets:edit`. */
  async function manageableKey(ctx: AuthContext, id: string): Promise<DeveloperKeyRow> {
    const userId = requireUserId(ctx);
    const row = await repo.key(id);
    if (!row || row.revoked_at !== null) throw AppError.notFound(M.developerKeyNotFound);
    if (row.developer_id !== null) {
      const profile = await repo.profileOfUser(userId);
      if (profile?.id !== row.developer_id) throw AppError.notFound(M.developerKeyNotFound);
      return row;
    }
    const access = await teamAccess(row.team_id!, userId);
    if (!access) throw AppError.notFound(M.developerKeyNotFound);
    if (!access.permissions.includes('team-secrets:edit')) throw AppError.forbidden(messages.missingPermission('team-secrets:edit'));
    return row;
  }

  const keyOwner = (row: Pick<DeveloperKeyRow, 'developer_id' | 'team_id'>) => (row.developer_id !== null ? { developer_id: row.developer_id } : { team_id: row.team_id });

  const service = {
    // ================================================================== API for later modules
    async profileOfUser(userId: string): Promise<DeveloperProfile | null> {
      const row = await repo.profileOfUser(userId);
      return row ? toProfile(row) : null;
    },
    async profileById(id: string): Promise<DeveloperProfile | null> {
      const row = await repo.profileById(id);
      return row ? toProfile(row) : null;
    },
    async profileBySlug(slug: string): Promise<DeveloperProfile | null> {
      const row = await repo.profileBySlug(slug);
      return row ? toProfile(row) : null;
    },
    async teamById(id: string): Promise<Team | null> {
      const row = await repo.teamById(id);
      return row ? toTeam(row) : null;
    },
    async teamBySlug(slug: string): Promise<Team | null> {
      const row = await repo.teamBySlug(slug);
      return row ? toTeam(row) : null;
    },
    async teamMembers(teamId: string): Promise<TeamMemberSummary[]> {
      const team = await repo.teamById(teamId);
      if (!team) return [];
      return (await repo.members(teamId, team.owner_user_id)).map((m) => ({ userId: m.user_id, displayName: m.display_name, avatarUrl: m.avatar_url, role: m.role }));
    },
    async hasTeamPermission(teamId: string, userId: string, permission: string): Promise<boolean> {
      return (await teamAccess(teamId, userId))?.permissions.includes(permission) ?? false;
    },
    async teamsOfUser(userId: string): Promise<Team[]> {
      return (await repo.teamsOfUser(userId)).map(toTeam);
    },
    /** `me.isDeveloper` (through the accounts module's `provideDeveloperStatus`). */
    async isDeveloper(userId: string): Promise<boolean> {
      return (await repo.profileOfUser(userId)) !== undefined;
    },

    // ================================================================== applications
    async myDeveloperApplication(ctx: AuthContext): Promise<DeveloperApplication> {
      const row = await repo.latestApplication(requireUserId(ctx));
      if (!row) throw AppError.notFound(M.noApplication);
      return toApplication(row);
    },

    async submitDeveloperApplication(ctx: AuthContext, input: SubmitApplicationInput): Promise<DeveloperApplication> {
      const userId = requireUserId(ctx);
      if (input.applicationType !== 'solo' && input.applicationType !== 'team') throw AppError.validation(M.invalidApplicationType);
      const slug = checkSlug(input.slug);
      const displayName = required(input.displayName, 'display_name');
      const description = required(input.description, 'description');
      const motivation = required(input.motivation, 'motivation');
      const whatToBuild = required(input.whatToBuild, 'what_to_build');
      try {
        const row = await knex.transaction(async (trx) => {
          // The user's row is the lock: two submissions at once cannot both pass the checks.
          await trx('users').where({ id: userId }).forUpdate().first('id');
          if (await repo.profileOfUser(userId, trx)) throw new AppError('CONFLICT', M.alreadyDeveloper);
          if (await repo.pendingApplication(userId, trx)) throw new AppError('CONFLICT', M.pendingApplication);
          if (await repo.slugTaken(slug, trx)) throw new AppError('CONFLICT', M.slugTaken);
          return repo.insertApplication(trx, {
            id: randomUUID(),
            user_id: userId,
            application_type: input.applicationType as 'solo' | 'team',
            display_name: displayName,
            slug,
            description,
            motivation,
            what_to_build: whatToBuild,
            github_url: text(input.githubUrl),
            website_url: text(input.websiteUrl),
            experience: text(input.experience),
          });
        });
        return toApplication(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', M.pendingApplication);
        throw error;
      }
    },

    async adminDeveloperApplications(status: string | undefined, request: PageRequest): Promise<{ items: AdminDeveloperApplicationItem[]; total: number }> {
      const { rows, total } = await repo.applications(status, request.limit, request.offset);
      return { items: rows.map(toApplicationItem), total };
    },

    async adminDeveloperApplication(id: string): Promise<DeveloperApplication> {
      const row = await repo.applicationById(id);
      if (!row) throw AppError.notFound(M.applicationNotFound);
      return toApplication(row);
    },

    /**
     * Creates the profile (and for a team application the team with its default roles, owned by
     * the applicant), notifies in-app in the same transaction, then e-mails.
     */
    async adminApproveDeveloperApplication(ctx: AuthContext, id: string, notes?: string | null): Promise<ReviewResult> {
      const note = reviewNotes(notes, false);
      try {
        await knex.transaction(async (trx) => {
          const app = await repo.applicationById(id, trx, true);
          if (!app) throw AppError.notFound(M.applicationNotFound);
          if (app.status !== 'pending') throw new AppError('CONFLICT', M.applicationNotPending);
          if (await repo.profileOfUser(app.user_id, trx)) throw new AppError('CONFLICT', M.alreadyDeveloper);
          if (await repo.slugTaken(app.slug, trx, app.id)) throw new AppError('CONFLICT', M.slugTaken);
          const details = { description: app.description, githubUrl: app.github_url, websiteUrl: app.website_url, avatarKey: app.avatar_key };
          const profile = await repo.insertProfile(trx, {
            id: randomUUID(),
            user_id: app.user_id,
            display_name: app.display_name,
            slug: app.slug,
            description: details.description,
            github_url: details.githubUrl,
            website_url: details.websiteUrl,
            avatar_key: details.avatarKey,
          });
          const team = app.application_type === 'team' ? await createTeamRows(trx, { name: app.display_name, slug: app.slug, ...details }, app.user_id) : null;
          await repo.reviewApplication(trx, app.id, { status: 'approved', review_notes: note, reviewed_by: ctx.userId });
          await notifications.notify(
            {
              userId: app.user_id,
              type: 'developer_application',
              data: { applicationId: app.id, status: 'approved', developerId: profile.id, teamId: team?.id ?? null },
              mail: { displayName: app.display_name, slug: app.slug, notes: note },
            },
            trx,
          );
          await audit.record(
            {
              scope: 'system',
              type: 'system:developer_application_approved',
              userId: app.user_id,
              actorId: ctx.userId,
              metadata: { application_id: app.id, developer_id: profile.id, team_id: team?.id ?? null },
            },
            trx,
          );
          return app;
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', M.slugTaken);
        throw error;
      }
      return { success: true, newStatus: 'approved' };
    },

    async adminRejectDeveloperApplication(ctx: AuthContext, id: string, notes?: string | null): Promise<ReviewResult> {
      const note = reviewNotes(notes, true)!;
      await knex.transaction(async (trx) => {
        const app = await repo.applicationById(id, trx, true);
        if (!app) throw AppError.notFound(M.applicationNotFound);
        if (app.status !== 'pending') throw new AppError('CONFLICT', M.applicationNotPending);
        await repo.reviewApplication(trx, app.id, { status: 'rejected', review_notes: note, reviewed_by: ctx.userId });
        await notifications.notify(
          { userId: app.user_id, type: 'developer_application', data: { applicationId: app.id, status: 'rejected', notes: note }, mail: { displayName: app.display_name, slug: app.slug } },
          trx,
        );
        await audit.record({ scope: 'system', type: 'system:developer_application_rejected', userId: app.user_id, actorId: ctx.userId, metadata: { application_id: app.id } }, trx);
        return app;
      });
      return { success: true, newStatus: 'rejected' };
    },

    // ================================================================== verification
    async developerVerificationStatus(ctx: AuthContext): Promise<DeveloperVerification | null> {
      const profile = await requireProfile(ctx, M.verificationNeedsDeveloper);
      const row = await repo.verificationOf(profile.id);
      return row ? toVerification(row) : null;
    },

    /** Upsert while none, pending or rejected; verified is terminal (409). */
    async submitDeveloperVerification(ctx: AuthContext, input: SubmitVerificationInput): Promise<DeveloperVerification> {
      const profile = await requireProfile(ctx, M.verificationNeedsDeveloper);
      const fields: VerificationFields = {
        legal_name: required(input.legalName, 'legal_name', M.legalNameRequired),
        address_line1: required(input.addressLine1, 'address_line1', M.addressLine1Required),
        postal_code: required(input.postalCode, 'postal_code', M.postalCodeRequired),
        city: required(input.city, 'city', M.cityRequired),
        country: required(input.country, 'country', M.countryRequired),
        company_name: text(input.companyName),
        address_line2: text(input.addressLine2),
        tax_id: text(input.taxId),
        trade_register_id: text(input.tradeRegisterId),
        document_key: text(input.documentKey),
      };
      if (!/^[A-Za-z]{2}$/.test(fields.country)) throw AppError.validation(M.countryFormat);
      fields.country = fields.country.toUpperCase();
      const userId = requireUserId(ctx);
      try {
        const row = await knex.transaction(async (trx) => {
          // The profile row is the lock: a first submission twice at once inserts once.
          await trx('developer_profiles').where({ id: profile.id }).forUpdate().first('id');
          const existing = await repo.verificationOf(profile.id, trx, true);
          if (existing?.status === 'verified') throw new AppError('CONFLICT', M.verificationApproved);
          const saved = existing ? await repo.resubmitVerification(trx, existing.id, fields) : await repo.insertVerification(trx, { id: randomUUID(), developer_id: profile.id, ...fields });
          // Ids and status only: the record's personal data never goes into the audit log.
          await audit.record(
            {
              scope: 'user',
              type: 'developer:verification_submitted',
              userId,
              actorId: userId,
              metadata: { verification_id: saved.id, developer_id: profile.id, status: saved.status, resubmission: existing !== undefined },
            },
            trx,
          );
          return saved;
        });
        return toVerification(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', M.verificationApproved);
        throw error;
      }
    },

    async adminDeveloperVerifications(status: string | undefined, request: PageRequest): Promise<{ items: DeveloperVerification[]; total: number }> {
      const { rows, total } = await repo.verifications(status, request.limit, request.offset);
      return { items: rows.map(toVerification), total };
    },

    async adminDeveloperVerification(id: string): Promise<DeveloperVerification> {
      const row = await repo.verificationById(id);
      if (!row) throw AppError.notFound(M.verificationNotFound);
      return toVerification(row);
    },

    async adminReviewDeveloperVerification(ctx: AuthContext, id: string, verdict: 'verified' | 'rejected', notes?: string | null): Promise<ReviewResult> {
      const note = reviewNotes(notes, verdict === 'rejected');
      await knex.transaction(async (trx) => {
        const row = await repo.verificationById(id, trx, true);
        if (!row) throw AppError.notFound(M.verificationNotFound);
        if (row.status !== 'pending') throw new AppError('CONFLICT', M.verificationNotPending);
        const profile = (await trx('developer_profiles').where({ id: row.developer_id }).first('user_id')) as { user_id: string };
        await repo.reviewVerification(trx, id, { status: verdict, review_notes: note, reviewed_by: ctx.userId });
        await notifications.notify(
          { userId: profile.user_id, type: 'developer_verification', data: { verificationId: id, status: verdict, ...(verdict === 'rejected' ? { notes: note } : {}) }, mail: { notes: note } },
          trx,
        );
        await audit.record(
          {
            scope: 'system',
            type: verdict === 'verified' ? 'system:developer_verification_approved' : 'system:developer_verification_rejected',
            userId: profile.user_id,
            actorId: ctx.userId,
            metadata: { verification_id: id, developer_id: row.developer_id },
          },
          trx,
        );
        return profile.user_id;
      });
      return { success: true, newStatus: verdict };
    },

    // ================================================================== developer keys
    /** Own profile keys plus the keys of every team the caller belongs to (Part 1 `developerApiKeys`; never the secret). */
    async developerApiKeys(ctx: AuthContext): Promise<DeveloperApiKey[]> {
      const userId = requireUserId(ctx);
      const [profile, teams] = await Promise.all([repo.profileOfUser(userId), repo.teamsOfUser(userId)]);
      if (!profile && teams.length === 0) throw AppError.forbidden(messages.developerOnly);
      return (await repo.keysOf(profile?.id ?? null, teams.map((team) => team.id))).map(toKey);
    },

    async createDeveloperApiKey(ctx: AuthContext, input: CreateDeveloperKeyInput): Promise<{ key: string; developerApiKey: DeveloperApiKey }> {
      const profile = await requireProfile(ctx);
      const userId = requireUserId(ctx);
      const label = apikeys.keyLabel(input.label);
      const teamId = input.teamId ?? null;
      if (teamId !== null) await requireTeam(ctx, teamId, 'team-secrets:edit');
      const expiresAt = apikeys.keyExpiry(input.expiresAt);
      const permissions = apikeys.validateKeyScopes(ctx, 'developer', input.permissions);
      const owner = teamId === null ? { developer_id: profile.id, team_id: null } : { developer_id: null, team_id: teamId };
      const id = await knex.transaction(async (trx) => {
        // A profile key names its developer's user; a team key has none (src/auth/verifiers.ts reads the binding so).
        const minted = await store.mint(
          { kind: 'developer_api_key', userId: teamId === null ? userId : null, subjectId: owner.developer_id ?? owner.team_id, createdBy: userId, label, permissions, expiresAt },
          trx,
        );
        await repo.insertKeyOwner(trx, { id: minted.row.id, ...owner });
        await audit.record(
          {
            scope: 'user',
            type: 'user:developer_api_key_created',
            userId,
            actorId: userId,
            metadata: { key_id: minted.row.id, key_prefix: minted.row.key_prefix, label, permissions, ...keyOwner(owner) },
          },
          trx,
        );
        return { id: minted.row.id, token: minted.token };
      });
      const row = (await repo.key(id.id))!;
      return { key: id.token, developerApiKey: toKey(row) };
    },

    /** Label only: scopes are immutable. */
    async updateDeveloperApiKey(ctx: AuthContext, id: string, label: string): Promise<DeveloperApiKey> {
      const name = apikeys.keyLabel(label);
      const before = await manageableKey(ctx, id);
      await knex.transaction(async (trx) => {
        await store.update(id, { label: name }, trx);
        await audit.record(
          {
            scope: 'user',
            type: 'user:developer_api_key_updated',
            userId: ctx.userId,
            actorId: ctx.userId,
            metadata: { key_id: id, key_prefix: before.key_prefix, old_label: before.label, label: name, ...keyOwner(before) },
          },
          trx,
        );
      });
      // The cached look-up carries the label (the context's display label).
      await invalidateKey(deps, before.token_hash);
      return toKey((await repo.key(id))!);
    },

    /** Soft revoke: the row stays (audit trail), authentication with it fails closed at once. */
    async revokeDeveloperApiKey(ctx: AuthContext, id: string): Promise<{ success: true; id: string }> {
      const before = await manageableKey(ctx, id);
      const revoked = await knex.transaction(async (trx) => {
        if (!(await store.revoke(id, trx))) return false;
        await audit.record(
          {
            scope: 'user',
            type: 'user:developer_api_key_revoked',
            userId: ctx.userId,
            actorId: ctx.userId,
            metadata: { key_id: id, key_prefix: before.key_prefix, label: before.label, ...keyOwner(before) },
          },
          trx,
        );
        return true;
      });
      if (!revoked) throw AppError.notFound(M.developerKeyNotFound);
      await apikeys.retireKey(before.token_hash);
      return { success: true, id };
    },

    // ================================================================== teams
    allTeamPermissions(): { permission: string; category: string }[] {
      return teamPermissions.map((permission) => ({ permission, category: permission.slice(0, permission.indexOf(':')) }));
    },

    async createDeveloperTeam(ctx: AuthContext, input: { name: string; slug: string; description?: string | null; githubUrl?: string | null; websiteUrl?: string | null }): Promise<TeamView> {
      await requireProfile(ctx);
      const userId = requireUserId(ctx);
      const name = required(input.name, 'name');
      const slug = checkSlug(input.slug);
      try {
        const team = await knex.transaction(async (trx) => {
          if (await repo.slugTaken(slug, trx)) throw new AppError('CONFLICT', M.slugTaken);
          const created = await createTeamRows(
            trx,
            { name, slug, description: text(input.description), githubUrl: text(input.githubUrl), websiteUrl: text(input.websiteUrl), avatarKey: null },
            userId,
          );
          await audit.record({ scope: 'user', type: 'user:developer_team_created', userId, actorId: userId, metadata: { team_id: created.id, slug } }, trx);
          return created;
        });
        return toTeamView(team, OWNER_ROLE);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', M.slugTaken);
        throw error;
      }
    },

    async myDeveloperTeams(ctx: AuthContext): Promise<TeamView[]> {
      return (await repo.teamsOfUser(requireUserId(ctx))).map((t) => toTeamView(t, t.role));
    },

    async developerTeam(ctx: AuthContext, teamId: string): Promise<TeamView> {
      const { team, access } = await requireTeam(ctx, teamId, 'team-settings:read');
      return toTeamView(team, access.role);
    },

    async updateDeveloperTeam(ctx: AuthContext, teamId: string, input: { name?: string | null; description?: string | null; githubUrl?: string | null; websiteUrl?: string | null }): Promise<TeamView> {
      const { access, userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      const patch: Partial<Pick<TeamRow, 'name' | 'description' | 'github_url' | 'website_url'>> = {};
      if (input.name !== undefined && input.name !== null) patch.name = required(input.name, 'name');
      if (input.description !== undefined) patch.description = text(input.description);
      if (input.githubUrl !== undefined) patch.github_url = text(input.githubUrl);
      if (input.websiteUrl !== undefined) patch.website_url = text(input.websiteUrl);
      await knex.transaction(async (trx) => {
        await repo.updateTeam(trx, teamId, patch);
        await audit.record({ scope: 'user', type: 'user:developer_team_updated', userId, actorId: userId, metadata: { team_id: teamId, fields: Object.keys(patch) } }, trx);
      });
      return toTeamView((await repo.teamById(teamId))!, access.role);
    },

    /** Owner only. The team's keys are revoked in the same transaction (then retired everywhere). */
    async deleteDeveloperTeam(ctx: AuthContext, teamId: string): Promise<{ success: true }> {
      const { team, userId } = await memberOf(ctx, teamId);
      if (team.owner_user_id !== userId) throw AppError.forbidden(M.ownerOnlyDelete);
      const { hashes, memberIds } = await knex.transaction(async (trx) => {
        const ids = await repo.liveTeamKeyIds(trx, teamId);
        const revokedHashes: string[] = [];
        for (const id of ids) {
          const row = await store.byId(id, trx);
          if (row && (await store.revoke(id, trx))) revokedHashes.push(row.token_hash);
        }
        const members = await repo.memberIds(teamId, trx);
        await repo.deleteTeam(trx, teamId);
        await audit.record({ scope: 'user', type: 'user:developer_team_deleted', userId, actorId: userId, metadata: { team_id: teamId, slug: team.slug, revoked_keys: ids.length } }, trx);
        return { hashes: revokedHashes, memberIds: members };
      });
      for (const hash of hashes) await apikeys.retireKey(hash);
      await forgetAccess(teamId, memberIds);
      return { success: true };
    },

    async developerTeamMembers(ctx: AuthContext, teamId: string): Promise<TeamMember[]> {
      const { team } = await requireTeam(ctx, teamId, 'team-members:read');
      return (await repo.members(teamId, team.owner_user_id)).map((m) => toMember(m, team.owner_user_id));
    },

    async updateDeveloperTeamMemberRole(ctx: AuthContext, teamId: string, memberId: string, roleId: string): Promise<TeamMember> {
      const { team, access, userId } = await requireTeam(ctx, teamId, 'team-members:edit');
      const target = await repo.member(teamId, memberId);
      if (!target) throw AppError.notFound(M.memberNotFound);
      if (memberId === team.owner_user_id) throw new AppError('CONFLICT', M.ownerRoleFixed);
      const role = await repo.role(teamId, roleId);
      if (!role) throw AppError.notFound(M.roleNotFound);
      checkGrantable(access, role);
      await knex.transaction(async (trx) => {
        await repo.setMemberRole(trx, teamId, memberId, roleId);
        await audit.record(
          { scope: 'user', type: 'user:developer_team_member_updated', userId, actorId: userId, metadata: { team_id: teamId, member_id: memberId, role_id: roleId, role: role.name } },
          trx,
        );
      });
      await forgetAccess(teamId, [memberId]);
      return toMember((await repo.member(teamId, memberId))!, team.owner_user_id);
    },

    /** The member's developer keys on the team survive with `created_by` cleared. */
    async removeDeveloperTeamMember(ctx: AuthContext, teamId: string, memberId: string): Promise<{ success: true }> {
      const { team, userId } = await requireTeam(ctx, teamId, 'team-members:remove');
      const target = await repo.member(teamId, memberId);
      if (!target) throw AppError.notFound(M.memberNotFound);
      if (memberId === team.owner_user_id) throw new AppError('CONFLICT', M.ownerNotRemovable);
      await knex.transaction(async (trx) => {
        await repo.clearTeamKeyCreator(trx, teamId, memberId);
        await repo.deleteMember(trx, teamId, memberId);
        await audit.record({ scope: 'user', type: 'user:developer_team_member_removed', userId, actorId: userId, metadata: { team_id: teamId, member_id: memberId } }, trx);
      });
      await forgetAccess(teamId, [memberId]);
      return { success: true };
    },

    // ------------------------------------------------------------------ invites
    /**
     * With `email`, the invite is mailed there too (in the invite's transaction). Invites are a
     * locked notification type, so no preference stops it; the address need not have an account,
     * and it is not kept on the invite (only in the outbox row, whose body is sealed).
     */
    async createDeveloperTeamInvite(ctx: AuthContext, teamId: string, input: { roleId?: string | null; expiresInDays?: number | null; email?: string | null }): Promise<TeamInvite & { code: string }> {
      const { access, userId, team } = await requireTeam(ctx, teamId, 'team-members:invite');
      const role = input.roleId ? await repo.role(teamId, input.roleId) : await repo.roleByName(teamId, MEMBER_ROLE);
      if (!role) throw AppError.notFound(M.roleNotFound);
      checkGrantable(access, role);
      const code = randomBytes(16).toString('hex');
      const id = randomUUID();
      const days = input.expiresInDays ?? 7;
      const expiresAt = new Date(Date.now() + days * 86_400_000);
      await knex.transaction(async (trx) => {
        await repo.insertInvite(trx, { id, team_id: teamId, code_hash: codeHash(code), code_prefix: code.slice(0, 8), role_id: role.id, invited_by: userId, expires_at: expiresAt });
        await audit.record({ scope: 'user', type: 'user:developer_team_invite_created', userId, actorId: userId, metadata: { team_id: teamId, invite_id: id, role: role.name, mailed: Boolean(input.email) } }, trx);
        if (input.email) {
          const inviter = await repo.userContact(userId, trx);
          await mail.queue(
            'team_invite',
            { address: input.email, name: null },
            { teamName: team.name, role: role.name, code, expiresAt: expiresAt.toISOString(), inviterName: inviter?.display_name ?? null },
            trx,
          );
        }
      });
      return { ...toInvite((await repo.invite(teamId, id))!), code };
    },

    async developerTeamInvites(ctx: AuthContext, teamId: string): Promise<TeamInvite[]> {
      await requireTeam(ctx, teamId, 'team-members:invite');
      return (await repo.openInvites(teamId)).map(toInvite);
    },

    async revokeDeveloperTeamInvite(ctx: AuthContext, teamId: string, inviteId: string): Promise<{ success: true }> {
      const { userId } = await requireTeam(ctx, teamId, 'team-members:invite');
      const done = await knex.transaction(async (trx) => {
        const invite = await repo.invite(teamId, inviteId, trx);
        if (!invite || new Date(invite.expires_at).getTime() <= Date.now()) return false;
        if (!(await repo.closeInvite(trx, inviteId, { revoked: true }))) return false;
        await audit.record({ scope: 'user', type: 'user:developer_team_invite_revoked', userId, actorId: userId, metadata: { team_id: teamId, invite_id: inviteId } }, trx);
        return true;
      });
      if (!done) throw AppError.notFound(M.inviteNotFound);
      return { success: true };
    },

    async developerTeamInvite(code: string): Promise<TeamInviteLookup> {
      const invite = await repo.inviteByHash(codeHash(code));
      if (!invite || invite.revoked_at !== null || invite.accepted_at !== null) throw AppError.notFound(M.inviteNotFound);
      if (new Date(invite.expires_at).getTime() <= Date.now()) throw new AppError('CONFLICT', M.inviteExpired);
      const team = (await repo.teamById(invite.team_id))!;
      return { teamId: team.id, teamName: team.name, teamSlug: team.slug, teamAvatarKey: team.avatar_key, role: invite.role, expiresAt: isoTime(invite.expires_at) };
    },

    async acceptDeveloperTeamInvite(ctx: AuthContext, code: string): Promise<TeamView> {
      const userId = requireUserId(ctx);
      const joined = await knex.transaction(async (trx) => {
        const invite = await repo.inviteByHash(codeHash(code), trx, true);
        if (!invite || invite.revoked_at !== null || invite.accepted_at !== null) throw AppError.notFound(M.inviteNotFound);
        if (new Date(invite.expires_at).getTime() <= Date.now()) throw new AppError('CONFLICT', M.inviteExpired);
        if (await repo.member(invite.team_id, userId, trx)) throw new AppError('CONFLICT', M.alreadyMember);
        await repo.insertMember(trx, { team_id: invite.team_id, user_id: userId, role_id: invite.role_id });
        await repo.closeInvite(trx, invite.id, { acceptedBy: userId });
        await audit.record({ scope: 'user', type: 'user:developer_team_joined', userId, actorId: userId, metadata: { team_id: invite.team_id, invite_id: invite.id, role: invite.role } }, trx);
        return { teamId: invite.team_id, role: invite.role };
      });
      await forgetAccess(joined.teamId, [userId]);
      return toTeamView((await repo.teamById(joined.teamId))!, joined.role);
    },

    // ------------------------------------------------------------------ roles
    async developerTeamRoles(ctx: AuthContext, teamId: string): Promise<TeamRole[]> {
      await requireTeam(ctx, teamId, 'team-members:read');
      return (await repo.roles(teamId)).map(toRole);
    },

    async createDeveloperTeamRole(ctx: AuthContext, teamId: string, input: { name: string; permissions: readonly string[] }): Promise<TeamRole> {
      const { userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      const name = required(input.name, 'name');
      const permissions = teamRolePermissions(input.permissions);
      const id = randomUUID();
      try {
        await knex.transaction(async (trx) => {
          if (await repo.roleByName(teamId, name, trx)) throw new AppError('CONFLICT', M.roleNameInUse);
          await repo.insertRoles(trx, [{ id, team_id: teamId, name, position: await repo.nextRolePosition(trx, teamId), is_system: false, permissions }]);
          await audit.record({ scope: 'user', type: 'user:developer_team_role_created', userId, actorId: userId, metadata: { team_id: teamId, role_id: id, name, permissions } }, trx);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', M.roleNameInUse);
        throw error;
      }
      return toRole((await repo.role(teamId, id))!);
    },

    async updateDeveloperTeamRole(ctx: AuthContext, teamId: string, roleId: string, input: { name?: string | null; permissions?: readonly string[] | null }): Promise<TeamRole> {
      const { userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      const role = await repo.role(teamId, roleId);
      if (!role) throw AppError.notFound(M.roleNotFound);
      if (role.is_system) throw new AppError('CONFLICT', M.ownerRoleImmutable);
      const name = input.name === undefined || input.name === null ? undefined : required(input.name, 'name');
      const permissions = input.permissions === undefined || input.permissions === null ? undefined : teamRolePermissions(input.permissions);
      try {
        await knex.transaction(async (trx) => {
          if (name !== undefined && name.toLowerCase() !== role.name.toLowerCase() && (await repo.roleByName(teamId, name, trx))) throw new AppError('CONFLICT', M.roleNameInUse);
          await repo.updateRole(trx, roleId, { name, permissions });
          await audit.record(
            { scope: 'user', type: 'user:developer_team_role_updated', userId, actorId: userId, metadata: { team_id: teamId, role_id: roleId, ...(name ? { name } : {}), ...(permissions ? { permissions } : {}) } },
            trx,
          );
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', M.roleNameInUse);
        throw error;
      }
      await forgetAccess(teamId, await repo.membersWithRole(roleId));
      return toRole((await repo.role(teamId, roleId))!);
    },

    async deleteDeveloperTeamRole(ctx: AuthContext, teamId: string, roleId: string): Promise<{ success: true }> {
      const { userId } = await requireTeam(ctx, teamId, 'team-settings:edit');
      await knex.transaction(async (trx) => {
        const role = await repo.role(teamId, roleId, trx);
        if (!role) throw AppError.notFound(M.roleNotFound);
        if (role.is_system) throw new AppError('CONFLICT', M.systemRoleUndeletable);
        if (role.member_count > 0) throw new AppError('CONFLICT', M.roleInUse(role.member_count));
        await repo.deleteRole(trx, roleId);
        await audit.record({ scope: 'user', type: 'user:developer_team_role_deleted', userId, actorId: userId, metadata: { team_id: teamId, role_id: roleId, name: role.name } }, trx);
      });
      return { success: true };
    },
  };

  /** Team role permissions: team-scope strings only (400 on the first other), once each, in registry order. */
  function teamRolePermissions(list: readonly string[]): string[] {
    const invalid = list.find((p) => !isTeamPermission(p));
    if (invalid !== undefined) throw AppError.validation(M.invalidPermission(invalid));
    return sortByRegistry([...new Set(list)]);
  }

  return service;
}

export type DeveloperService = ReturnType<typeof createDeveloperService>;

