/**
 * Users, accounts, roles, members and invites. Owns the default roles every new account gets
 * (from the permission registry), ownership rules (the owner role is fixed; only the owner
 * dissolves; the owner cannot leave or be removed), and the live grants the auth layer reads.
 * Multi-row changes run in one transaction together with their audit row.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { requireAccountId, requireUserId, type AuthContext } from '../../auth/context';
import { checkGrantable } from '../../auth/grants';
import { defaultAccountRoles, sortByRegistry } from '../../auth/registry';
import type { PrincipalSource } from '../../auth/verifiers';
import { AppError } from '../../errors';
import type { ModuleApis } from '../contract';
import type { LoginConnection } from '../connections';
import { accountMessages } from './errors';
import { type AccountRecord, type AccountsRepo } from './repo';
import type { Account, AccountInvite, AccountMember, AccountRole, Me, User } from './types';
import { UUID_RE } from '../../infra/ids';

export type { Account, AccountInvite, AccountMember, AccountRole, Me, User } from './types';

/** An account as its caller sees it: the stored account with the caller's role there. */
const withRole = (account: AccountRecord, role: string | null): Account => ({ ...account, role });
/** Permissions in registry order, as Part 1 shows them. */
const shown = (role: AccountRole): AccountRole => ({ ...role, permissions: sortByRegistry(role.permissions) });

const OWNER_ROLE = defaultAccountRoles[0]!.name;
/** How long an invite mailed to an unknown address can be taken. */
const EMAIL_INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === '23505';
}

export interface AccountsDeps {
  repo: AccountsRepo;
  knex: Knex;
  audit: Pick<ModuleApis['audit'], 'record'>;
  notifications: Pick<ModuleApis['notifications'], 'notify' | 'withdraw'>;
  /** Mails invites to addresses no user has yet; optional so the service can be built without mail. */
  mail?: Pick<ModuleApis['mail'], 'queue'>;
  /** Feature statuses for `me`; optional so the service can be built without the flag layer. */
  features?: Pick<ModuleApis['features'], 'statuses'>;
}

/**
 * Runs inside the transaction that removes a member (leave or removal), before the membership row
 * goes: modules that hold the member's credentials register one (`onMemberLeaving`).
 */
export type MemberLeavingHook = (trx: Knex.Transaction, accountId: string, userId: string) => Promise<void>;

/** Column widths of `users.display_name` and `accounts.name` (characters). */
const DISPLAY_NAME_MAX = 100;
const ACCOUNT_NAME_MAX = 100;
const ACCOUNT_SUFFIX = "'s account";

/** At most `max` characters (code points, as the column counts them), trailing space dropped. */
export function fitText(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : chars.slice(0, max).join('').trimEnd();
}

/**
 * A first account's name, `<owner>'s account`: a display name as long as the spec allows (100)
 * is shortened so the whole name fits the account name column, keeping the suffix.
 */
export function derivedAccountName(owner: string): string {
  return `${fitText(owner, ACCOUNT_NAME_MAX - ACCOUNT_SUFFIX.length)}${ACCOUNT_SUFFIX}`;
}

export function createAccountsService(deps: AccountsDeps) {
  const { repo, knex, audit, notifications, features, mail } = deps;

  /** The `invite` notification of a user invite (its in-app row and, by the type's channel, its mail). */
  function notifyInvite(trx: Knex.Transaction, invite: AccountInvite, accountName: string): Promise<string | null> {
    return notifications.notify(
      {
        userId: invite.userId!,
        type: 'invite',
        data: { accountId: invite.accountId, accountName, inviteId: invite.id, role: invite.role, roleId: invite.roleId, invitedBy: invite.invitedBy },
      },
      trx,
    );
  }
  const memberLeavingHooks: MemberLeavingHook[] = [];
  let loginConnectionsOf: (userId: string) => Promise<LoginConnection[]> = async () => [];
  let hasDeveloperProfile: (userId: string) => Promise<boolean> = async () => false;

  async function createAccountRows(trx: Knex.Transaction, ownerId: string, name: string): Promise<string> {
    const accountId = randomUUID();
    await repo.insertAccount(trx, { id: accountId, name, owner_id: ownerId, plan_id: await repo.defaultPlanId(trx) });
    const roles = defaultAccountRoles.map((r, position) => ({
      id: randomUUID(),
      account_id: accountId,
      name: r.name,
      position,
      is_system: r.isSystem,
      permissions: [...r.permissions],
    }));
    await repo.insertRoles(trx, roles);
    await repo.insertMember(trx, { account_id: accountId, user_id: ownerId, role_id: roles[0]!.id });
    return accountId;
  }

  /** A new user (dev login, provider sign-in) with an account it owns on the default plan, audited. */
  function createUserRows(email: string | null, displayName: string): Promise<{ user: User; accountId: string; created: true }> {
    const shown = fitText(displayName.trim() || email || 'New user', DISPLAY_NAME_MAX);
    return knex.transaction(async (trx) => {
      const id = randomUUID();
      await repo.insertUser(trx, { id, email, display_name: shown });
      const accountId = await createAccountRows(trx, id, derivedAccountName(shown));
      // Invites mailed to this (verified) address before the user existed wait in their notifications.
      if (email) {
        for (const invite of await repo.claimEmailInvites(trx, id, email)) {
          await notifyInvite(trx, invite, (await repo.accountById(invite.accountId, trx))?.name ?? '');
        }
      }
      await audit.record({ scope: 'user', type: 'user:account_created', userId: id, actorId: id, metadata: { account_id: accountId } }, trx);
      const user = (await repo.userById(id, trx))!;
      return { user, accountId, created: true as const };
    });
  }

  /** `member_joined` to the account's owner and the inviter (never the one who joined), per their preferences. */
  async function notifyJoined(trx: Knex.Transaction, accountId: string, userId: string, invitedBy: string | null, role: string): Promise<void> {
    // One after the other: a transaction's one connection runs one query at a time.
    const account = await repo.accountById(accountId, trx);
    const joiner = await repo.userById(userId, trx);
    if (!account) return;
    const recipients = new Set([account.ownerId, invitedBy].filter((id): id is string => Boolean(id) && id !== userId));
    for (const recipient of recipients) {
      await notifications.notify(
        { userId: recipient, type: 'member_joined', data: { accountId, accountName: account.name, userId, displayName: joiner?.displayName ?? null, role } },
        trx,
      );
    }
  }

  async function roleByNameOrId(accountId: string, ref: string, db?: Knex.Transaction): Promise<AccountRole> {
    const role = UUID_RE.test(ref) ? await repo.role(accountId, ref, db) : await repo.roleByName(accountId, ref, db);
    if (!role) throw AppError.notFound(accountMessages.roleNotFound);
    return role;
  }

  /** Removes a membership after the hooks (personal keys go with it); leave and removal share this. */
  async function dropMember(trx: Knex.Transaction, accountId: string, userId: string): Promise<void> {
    for (const hook of memberLeavingHooks) await hook(trx, accountId, userId);
    await repo.deleteMember(trx, accountId, userId);
  }

  /** A suspended user cannot sign in (the operators module suspends). */
  async function refuseSuspended(userId: string): Promise<void> {
    if (await repo.isSuspended(userId)) throw AppError.forbidden(accountMessages.userSuspended);
  }

  const principals: PrincipalSource = {
    principal: (userId, accountId) => repo.principal(userId, accountId),
    memberPermissions: (userId, accountId) => repo.memberPermissions(userId, accountId),
    async accountOwner(accountId) {
      return (await repo.accountById(accountId))?.ownerId ?? null;
    },
  };

  return {
    principals,

    /**
     * Development login: finds the user by e-mail or creates it with an account it owns on the
     * default plan. Answers the account the session should start in.
     */
    /**
     * A new user without a known e-mail address (a provider sign-in whose address is not verified:
     * linking by it would let that provider's user take over an existing user), with an owned account.
     */
    async createUser(displayName: string): Promise<{ user: User; accountId: string | null }> {
      return createUserRows(null, displayName);
    },

    async findOrCreateUser(email: string, displayName: string): Promise<{ user: User; accountId: string | null; created: boolean }> {
      const normalised = email.trim().toLowerCase();
      const existing = await repo.userByEmail(normalised);
      if (existing) {
        await refuseSuspended(existing.id);
        return { user: existing, accountId: await repo.firstAccountOfUser(existing.id), created: false };
      }
      try {
        return await createUserRows(normalised, displayName);
      } catch (error) {
        // Two first logins with one e-mail at once: the loser reads the winner's row.
        if (!isUniqueViolation(error)) throw error;
        const user = (await repo.userByEmail(normalised))!;
        return { user, accountId: await repo.firstAccountOfUser(user.id), created: false };
      }
    },

    /** A user who signed in before (provider sign-in), with the account a new session starts in; null when gone. */
    async signInUser(userId: string): Promise<{ user: User; accountId: string | null } | null> {
      const row = await repo.userById(userId);
      if (row) await refuseSuspended(userId);
      return row ? { user: row, accountId: await repo.firstAccountOfUser(userId) } : null;
    },

    /**
     * A new account owned by an existing user, inside the caller's transaction (a completed
     * payment checkout creates it: a purchase is not held to the plan's account limit). Answers
     * its id; it starts on the default plan.
     */
    async createAccountFor(trx: Knex.Transaction, userId: string, name: string): Promise<string> {
      // The name comes from a payment provider's checkout, not from a caller who could be told it is too long.
      const accountId = await createAccountRows(trx, userId, fitText(name, ACCOUNT_NAME_MAX));
      await audit.record({ scope: 'user', type: 'user:account_created', userId, actorId: null, metadata: { account_id: accountId } }, trx);
      return accountId;
    },

    async isMember(userId: string, accountId: string): Promise<boolean> {
      return (await repo.memberPermissions(userId, accountId)) !== null;
    },

    async me(ctx: AuthContext): Promise<Me> {
      const userId = requireUserId(ctx);
      const [user, settings, owned, maxAccounts, featureStatuses] = await Promise.all([
        repo.userById(userId),
        repo.userSettings(userId),
        repo.ownedCount(userId),
        repo.maxAccounts(userId),
        features ? features.statuses(ctx) : Promise.resolve([]),
      ]);
      const [loginConnections, developerProfile] = await Promise.all([loginConnectionsOf(userId), hasDeveloperProfile(userId)]);
      if (!user || !settings) throw AppError.unauthorized();
      return {
        ...user,
        // The verifier clears the account of a token whose user is no longer a member there.
        activeAccountId: ctx.accountId,
        ownedAccountCount: owned,
        maxAccounts,
        // A developer profile row (the developer module tells, `provideDeveloperStatus`) or the operator override.
        isDeveloper: developerProfile || Boolean(settings.developer_override),
        extensionDevMode: Boolean(settings.extension_dev_mode),
        featureStatuses,
        loginConnections,
      };
    },

    async updateMe(ctx: AuthContext, input: { displayName?: string | null; extensionDevMode?: boolean | null }): Promise<Me> {
      const userId = requireUserId(ctx);
      const displayName = input.displayName === undefined || input.displayName === null ? undefined : input.displayName.trim();
      if (displayName === '') throw AppError.validation(accountMessages.displayNameBlank);
      const patch = {
        ...(displayName !== undefined ? { display_name: displayName } : {}),
        ...(input.extensionDevMode !== undefined && input.extensionDevMode !== null ? { extension_dev_mode: input.extensionDevMode } : {}),
      };
      await knex.transaction(async (trx) => {
        await repo.updateUser(trx, userId, patch);
        await audit.record({ scope: 'user', type: 'user:profile_updated', userId, actorId: userId, metadata: patch }, trx);
      });
      return this.me(ctx);
    },

    async myAccounts(ctx: AuthContext): Promise<Account[]> {
      return repo.accountsOfUser(requireUserId(ctx));
    },

    async createAccount(ctx: AuthContext, input: { name: string }): Promise<Account> {
      const userId = requireUserId(ctx);
      const name = input.name.trim();
      if (!name) throw AppError.validation('name must not be blank');
      const accountId = await knex.transaction(async (trx) => {
        // The user's row is the lock: two creates at once cannot both pass the limit.
        await trx('users').where({ id: userId }).forUpdate().first('id');
        const max = await repo.maxAccounts(userId, trx);
        if ((await repo.ownedCountIn(trx, userId)) >= max) throw new AppError('PLAN_LIMIT_REACHED', accountMessages.accountLimitReached(max));
        const id = await createAccountRows(trx, userId, name);
        await audit.record({ scope: 'user', type: 'user:account_created', userId, actorId: userId, metadata: { account_id: id } }, trx);
        return id;
      });
      return withRole((await repo.accountById(accountId))!, OWNER_ROLE);
    },

    async account(ctx: AuthContext): Promise<Account> {
      const accountId = requireAccountId(ctx);
      const account = await repo.accountById(accountId);
      if (!account) throw AppError.notFound(accountMessages.accountNotFound);
      const member = ctx.userId ? await repo.member(accountId, ctx.userId) : undefined;
      return withRole(account, member?.role ?? null);
    },

    async updateAccount(ctx: AuthContext, input: { name: string }): Promise<Account> {
      const accountId = requireAccountId(ctx);
      const name = input.name.trim();
      if (!name) throw AppError.validation('name must not be blank');
      const account = await repo.accountById(accountId);
      if (!account) throw AppError.notFound(accountMessages.accountNotFound);
      await knex.transaction(async (trx) => {
        await repo.renameAccount(trx, accountId, name);
        await audit.record({ scope: 'account', type: 'account:updated', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { name, previous_name: account.name } }, trx);
      });
      return this.account(ctx);
    },

    async dissolveAccount(ctx: AuthContext): Promise<void> {
      const accountId = requireAccountId(ctx);
      const userId = requireUserId(ctx);
      const account = await repo.accountById(accountId);
      if (!account) throw AppError.notFound(accountMessages.accountNotFound);
      if (account.ownerId !== userId) throw AppError.forbidden(accountMessages.ownerOnlyDissolve);
      await knex.transaction(async (trx) => {
        await repo.deleteAccount(trx, accountId);
        await audit.record({ scope: 'user', type: 'user:account_dissolved', userId, actorId: userId, metadata: { account_id: accountId, account_name: account.name } }, trx);
      });
    },

    async leaveAccount(ctx: AuthContext): Promise<void> {
      const accountId = requireAccountId(ctx);
      const userId = requireUserId(ctx);
      const account = await repo.accountById(accountId);
      if (!account) throw AppError.notFound(accountMessages.accountNotFound);
      if (account.ownerId === userId) throw new AppError('CONFLICT', accountMessages.ownerCannotLeave);
      await knex.transaction(async (trx) => {
        await dropMember(trx, accountId, userId);
        await audit.record({ scope: 'account', type: 'account:member_left', accountId, userId, actorId: userId }, trx);
      });
    },

    async members(ctx: AuthContext): Promise<AccountMember[]> {
      return repo.members(requireAccountId(ctx));
    },

    async updateMember(ctx: AuthContext, userId: string, roleId: string): Promise<AccountMember> {
      const accountId = requireAccountId(ctx);
      const member = await repo.member(accountId, userId);
      if (!member) throw AppError.notFound(accountMessages.memberNotFound);
      const role = await repo.role(accountId, roleId);
      if (!role) throw AppError.notFound(accountMessages.roleNotFound);
      if (member.isOwner) throw new AppError('CONFLICT', accountMessages.ownerRoleFixed);
      if (role.name === OWNER_ROLE && role.isSystem) throw AppError.validation(accountMessages.ownerRoleNotAssignable);
      await knex.transaction(async (trx) => {
        await repo.updateMemberRole(trx, accountId, userId, roleId);
        await audit.record(
          { scope: 'account', type: 'account:member_role_changed', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { target_user_id: userId, role_id: roleId, previous_role_id: member.roleId } },
          trx,
        );
      });
      return (await repo.member(accountId, userId))!;
    },

    async removeMember(ctx: AuthContext, userId: string): Promise<void> {
      const accountId = requireAccountId(ctx);
      const member = await repo.member(accountId, userId);
      if (!member) throw AppError.notFound(accountMessages.memberNotFound);
      if (member.isOwner) throw new AppError('CONFLICT', accountMessages.ownerCannotBeRemoved);
      await knex.transaction(async (trx) => {
        await dropMember(trx, accountId, userId);
        await audit.record({ scope: 'account', type: 'account:member_removed', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { target_user_id: userId } }, trx);
        // The removed user learns of it, per their `member_removed` preference.
        const account = await repo.accountById(accountId, trx);
        await notifications.notify({ userId, type: 'member_removed', data: { accountId, accountName: account?.name ?? null, removedBy: ctx.userId } }, trx);
      });
    },

    async invites(ctx: AuthContext): Promise<AccountInvite[]> {
      return repo.invites(requireAccountId(ctx));
    },

    async createInvite(ctx: AuthContext, input: { userId?: string | null; email?: string | null; role: string }): Promise<AccountInvite> {
      const accountId = requireAccountId(ctx);
      const email = input.email?.trim().toLowerCase() || null;
      if (Boolean(input.userId) === Boolean(email)) throw AppError.validation(accountMessages.inviteTarget);
      const known = email ? await repo.userByEmail(email) : await repo.userById(input.userId!);
      if (!known && !email) throw AppError.notFound(accountMessages.userNotFound);
      const role = await roleByNameOrId(accountId, input.role.trim());
      if (role.isSystem && role.name === OWNER_ROLE) throw AppError.validation(accountMessages.ownerRoleNotAssignable);
      if (known && (await repo.member(accountId, known.id))) throw new AppError('CONFLICT', accountMessages.alreadyMember);
      const account = (await repo.accountById(accountId))!;
      const id = randomUUID();
      try {
        await knex.transaction(async (trx) => {
          if (known) {
            await repo.insertInvite(trx, { id, account_id: accountId, user_id: known.id, role_id: role.id, invited_by: ctx.userId });
            await notifyInvite(trx, (await repo.invite(id, trx))!, account.name);
          } else {
            // An address no user has: a token only its mailbox learns, kept as a hash.
            const token = randomBytes(32).toString('base64url');
            await repo.insertInvite(trx, {
              id,
              account_id: accountId,
              user_id: null,
              email: email!,
              role_id: role.id,
              invited_by: ctx.userId,
              token_hash: sha256(token),
              expires_at: new Date(Date.now() + EMAIL_INVITE_TTL_MS),
            });
            const inviter = ctx.userId ? await repo.userById(ctx.userId, trx) : undefined;
            if (!mail) throw new Error('accounts: invites by e-mail need the mail module');
            await mail.queue('account_invite', { address: email!, name: null, userId: null }, { accountName: account.name, role: role.name, inviterName: inviter?.displayName ?? null, token }, trx);
          }
          await audit.record(
            {
              scope: 'account',
              type: 'account:member_invited',
              accountId,
              userId: ctx.userId,
              actorId: ctx.userId,
              metadata: { invite_id: id, role_id: role.id, ...(known ? { target_user_id: known.id } : { email }) },
            },
            trx,
          );
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', accountMessages.alreadyInvited);
        throw error;
      }
      return (await repo.invite(id))!;
    },

    /** Takes an invite mailed to an address with its link's token: the caller joins its account with its role. */
    async acceptEmailInvite(ctx: AuthContext, token: string): Promise<Account> {
      const userId = requireUserId(ctx);
      const accountId = await knex.transaction(async (trx) => {
        const invite = await repo.inviteByToken(trx, sha256(token));
        if (!invite) throw AppError.notFound(accountMessages.inviteNotFound);
        if (invite.expired || (invite.userId !== null && invite.userId !== userId)) throw new AppError('CONFLICT', accountMessages.inviteInvalid);
        if (await repo.member(invite.accountId, userId, trx)) throw new AppError('CONFLICT', accountMessages.alreadyMember);
        await repo.deleteInvite(trx, invite.id);
        // Taken by a user who signed up with the address first: its notification goes too.
        if (invite.userId) await notifications.withdraw(invite.userId, 'invite', 'inviteId', invite.id, trx);
        await repo.insertMember(trx, { account_id: invite.accountId, user_id: userId, role_id: invite.roleId });
        await audit.record(
          { scope: 'account', type: 'account:member_joined', accountId: invite.accountId, userId, actorId: userId, metadata: { invite_id: invite.id, role_id: invite.roleId, email: invite.email } },
          trx,
        );
        await notifyJoined(trx, invite.accountId, userId, invite.invitedBy, invite.role);
        return invite.accountId;
      });
      return withRole((await repo.accountById(accountId))!, (await repo.member(accountId, userId))?.role ?? null);
    },

    async cancelInvite(ctx: AuthContext, id: string): Promise<void> {
      const accountId = requireAccountId(ctx);
      const invite = await repo.invite(id);
      if (!invite || invite.accountId !== accountId) throw AppError.notFound(accountMessages.inviteNotFound);
      await knex.transaction(async (trx) => {
        await repo.deleteInvite(trx, id);
        if (invite.userId) await notifications.withdraw(invite.userId, 'invite', 'inviteId', id, trx);
        await audit.record(
          { scope: 'account', type: 'account:invite_cancelled', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { invite_id: id, ...(invite.userId ? { target_user_id: invite.userId } : { email: invite.email }) } },
          trx,
        );
      });
    },

    /** `accept_invite`: the invited user joins with the invite's role; the invite is used up. */
    async acceptInvite(trx: Knex.Transaction, userId: string, inviteId: string): Promise<void> {
      const invite = await repo.invite(inviteId, trx);
      if (!invite || invite.userId !== userId) throw new AppError('CONFLICT', accountMessages.inviteInvalid);
      await repo.deleteInvite(trx, inviteId);
      if (!(await repo.member(invite.accountId, userId, trx))) {
        await repo.insertMember(trx, { account_id: invite.accountId, user_id: userId, role_id: invite.roleId });
      }
      await audit.record({ scope: 'account', type: 'account:member_joined', accountId: invite.accountId, userId, actorId: userId, metadata: { invite_id: inviteId, role_id: invite.roleId } }, trx);
      await notifyJoined(trx, invite.accountId, userId, invite.invitedBy, invite.role);
    },

    /** `decline_invite`: the invite row is deleted. */
    async declineInvite(trx: Knex.Transaction, userId: string, inviteId: string): Promise<void> {
      const invite = await repo.invite(inviteId, trx);
      if (!invite || invite.userId !== userId) throw new AppError('CONFLICT', accountMessages.inviteInvalid);
      await repo.deleteInvite(trx, inviteId);
      await audit.record({ scope: 'account', type: 'account:invite_declined', accountId: invite.accountId, userId, actorId: userId, metadata: { invite_id: inviteId } }, trx);
    },

    async roles(ctx: AuthContext): Promise<AccountRole[]> {
      return (await repo.roles(requireAccountId(ctx))).map(shown);
    },

    async createRole(ctx: AuthContext, input: { name: string; permissions: readonly string[] }): Promise<AccountRole> {
      const accountId = requireAccountId(ctx);
      const name = input.name.trim();
      if (!name) throw AppError.validation('name must not be blank');
      const permissions = checkGrantable(ctx, input.permissions);
      const id = randomUUID();
      try {
        await knex.transaction(async (trx) => {
          if (await repo.roleByName(accountId, name, trx)) throw new AppError('CONFLICT', accountMessages.roleNameInUse);
          await repo.insertRoles(trx, [{ id, account_id: accountId, name, position: await repo.nextRolePosition(trx, accountId), is_system: false, permissions }]);
          await audit.record({ scope: 'account', type: 'account:role_created', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { role_id: id, name, permissions } }, trx);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', accountMessages.roleNameInUse);
        throw error;
      }
      return shown((await repo.role(accountId, id))!);
    },

    async updateRole(ctx: AuthContext, id: string, input: { name?: string | null; permissions?: readonly string[] | null }): Promise<AccountRole> {
      const accountId = requireAccountId(ctx);
      const role = await repo.role(accountId, id);
      if (!role) throw AppError.notFound(accountMessages.roleNotFound);
      if (role.isSystem) throw new AppError('CONFLICT', accountMessages.ownerRoleImmutable);
      const name = input.name?.trim();
      if (input.name !== undefined && input.name !== null && !name) throw AppError.validation('name must not be blank');
      const permissions = input.permissions ? checkGrantable(ctx, input.permissions) : undefined;
      try {
        await knex.transaction(async (trx) => {
          if (name && name.toLowerCase() !== role.name.toLowerCase() && (await repo.roleByName(accountId, name, trx))) {
            throw new AppError('CONFLICT', accountMessages.roleNameInUse);
          }
          await repo.updateRole(trx, id, { name, permissions });
          await audit.record(
            { scope: 'account', type: 'account:role_updated', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { role_id: id, ...(name ? { name } : {}), ...(permissions ? { permissions } : {}) } },
            trx,
          );
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', accountMessages.roleNameInUse);
        throw error;
      }
      return shown((await repo.role(accountId, id))!);
    },

    async deleteRole(ctx: AuthContext, id: string): Promise<void> {
      const accountId = requireAccountId(ctx);
      const role = await repo.role(accountId, id);
      if (!role) throw AppError.notFound(accountMessages.roleNotFound);
      if (role.isSystem) throw new AppError('CONFLICT', accountMessages.ownerRoleUndeletable);
      if (role.memberCount > 0) throw new AppError('CONFLICT', accountMessages.roleInUse(role.memberCount));
      await knex.transaction(async (trx) => {
        await repo.deleteRole(trx, id);
        await audit.record({ scope: 'account', type: 'account:role_deleted', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { role_name: role.name } }, trx);
      });
    },

    /** What a user may own now: the operator's override, else the plans (operators read it). */
    maxAccounts: (userId: string) => repo.maxAccounts(userId),
    /** Whether a user has a developer profile (the developer module tells; operators read it beside the override). */
    hasDeveloperProfile: (userId: string) => hasDeveloperProfile(userId),
    /** Whether a user or an account is suspended (a hot read; the operators module holds credentials to it). */
    standing: (userId: string | null, accountId: string | null) => repo.standing(userId, accountId),
    /** Display names for audit rows. */
    names: (ids: { users: string[]; accounts: string[]; roles: string[] }) => repo.names(ids),
    /** The connections module supplies the user's login connections for `me`. */
    provideLoginConnections(source: (userId: string) => Promise<LoginConnection[]>): void {
      loginConnectionsOf = source;
    },
    /** The developer module answers whether a user has a developer profile (`me.isDeveloper`). */
    provideDeveloperStatus(source: (userId: string) => Promise<boolean>): void {
      hasDeveloperProfile = source;
    },
    /** Registers a reaction to a member leaving or being removed, run in the same transaction. */
    onMemberLeaving(hook: MemberLeavingHook): void {
      memberLeavingHooks.push(hook);
    },

    /** Operator lever (and test seed) until the admin-roles module exposes assignment. */
    assignAdminRole: (userId: string, roleName: string) => repo.assignAdminRole(userId, roleName),
    /** Bootstrap operators: the system admin role, resolved by its `is_system` flag. */
    assignSystemAdminRole: (userId: string) => repo.assignSystemAdminRole(userId),
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
