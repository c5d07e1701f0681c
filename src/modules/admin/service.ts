/**
 * Admin roles (Part 1 "Admin roles"): CRUD over the roles operators hold, their members and the
 * permission catalogue. Owns the role rules: `admin:access` is in every role, permissions are
 * validated against the admin registry and kept sorted (code-point order, as Part 1 says "sorted"),
 * an update is a diff that keeps strings the registry does not know (legacy grants), system roles
 * are editable but not deletable, and keep their name and the `admin-roles:*` family so operators
 * can never lock themselves out of role management.
 * Assignments reach a user's tokens through the live grants the auth layer reads: a new role at
 * their next token, a removed one with their next request. Gates are checked by the router.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { AuthContext } from '../../auth/context';
import { adminPermissionCatalogue, isAdminPermission } from '../../auth/registry';
import { AppError } from '../../errors';
import type { ModuleApis } from '../contract';
import { adminMessages } from './errors';
import type { AdminRepo } from './repo';
import type { AdminPermissionInfo, AdminRole, AdminRoleMember } from './types';

export type { AdminPermissionInfo, AdminRole, AdminRoleMember } from './types';

const ADMIN_ACCESS = 'admin:access';
/** Held by system keys only; never part of a role. */
const SYSTEM_KEY_ONLY = new Set(['audit:ingest']);

/** What a system role always keeps: the entry gate and role management (the way back in). */
export const SYSTEM_ROLE_KEEPS: readonly string[] = ['admin:access', 'admin-roles:read', 'admin-roles:create', 'admin-roles:edit', 'admin-roles:delete'];

/** Part 1 "permissions [String!]! (sorted)": plain code-point order, deduplicated. */
export const sortedPermissions = (list: readonly string[]): string[] => [...new Set(list)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** A permission an admin role may hold. */
export const isAssignableAdminPermission = (p: string): boolean => isAdminPermission(p) && !SYSTEM_KEY_ONLY.has(p);

/** Permissions as Part 1 shows them: sorted. */
const shown = (role: AdminRole): AdminRole => ({ ...role, permissions: sortedPermissions(role.permissions) });

const isUniqueViolation = (error: unknown) => (error as { code?: string })?.code === '23505';

export interface AdminRolesDeps {
  repo: AdminRepo;
  knex: Knex;
  audit: Pick<ModuleApis['audit'], 'record'>;
}

export function createAdminRolesService(deps: AdminRolesDeps) {
  const { repo, knex, audit } = deps;

  async function roleOrThrow(id: string): Promise<AdminRole> {
    const role = await repo.role(id);
    if (!role) throw AppError.notFound(adminMessages.roleNotFound);
    return role;
  }

  function trimmedName(name: string): string {
    const trimmed = name.trim();
    if (!trimmed) throw AppError.validation(adminMessages.nameBlank);
    return trimmed;
  }

  /** The stored list: validated strings plus `admin:access`, deduplicated and sorted. */
  function withAccess(list: readonly string[]): string[] {
    return sortedPermissions([ADMIN_ACCESS, ...list]);
  }

  const record = (ctx: AuthContext, type: string, metadata: Record<string, unknown>, trx: Knex.Transaction) =>
    audit.record({ scope: 'system', type, userId: ctx.userId, actorId: ctx.userId, metadata }, trx);

  return {
    async roles(): Promise<AdminRole[]> {
      return (await repo.roles()).map(shown);
    },

    async role(id: string): Promise<AdminRole> {
      return shown(await roleOrThrow(id));
    },

    async members(roleId: string): Promise<AdminRoleMember[]> {
      await roleOrThrow(roleId);
      return repo.members(roleId);
    },

    permissions(): AdminPermissionInfo[] {
      return adminPermissionCatalogue.filter((p) => isAssignableAdminPermission(p.permission)).map((p) => ({ permission: p.permission, category: p.category }));
    },

    async createRole(ctx: AuthContext, input: { name: string; description?: string | null; permissions: readonly string[] }): Promise<AdminRole> {
      const name = trimmedName(input.name);
      const invalid = input.permissions.find((p) => !isAssignableAdminPermission(p));
      if (invalid !== undefined) throw AppError.validation(adminMessages.invalidPermission(invalid));
      const permissions = withAccess(input.permissions);
      const id = randomUUID();
      try {
        await knex.transaction(async (trx) => {
          if (await repo.roleByName(name, trx)) throw new AppError('CONFLICT', adminMessages.roleNameInUse);
          await repo.insertRole(trx, { id, name, description: input.description ?? null, permissions });
          await record(ctx, 'system:admin_role_created', { role_id: id, name, permissions }, trx);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', adminMessages.roleNameInUse);
        throw error;
      }
      return shown((await repo.role(id))!);
    },

    async updateRole(ctx: AuthContext, id: string, input: { name?: string | null; description?: string | null; permissions?: readonly string[] | null }): Promise<AdminRole> {
      const role = await roleOrThrow(id);
      const name = input.name === undefined || input.name === null ? undefined : trimmedName(input.name);
      // A system role is what bootstrap and every operator rely on: its name and its way back in stay.
      if (role.isSystem && name !== undefined && name !== role.name) throw new AppError('CONFLICT', adminMessages.systemRoleRename);
      let permissions: string[] | undefined;
      if (input.permissions) {
        const current = new Set(role.permissions);
        // Strings already on the role that the registry does not offer are kept as they are.
        const legacy = role.permissions.filter((p) => !isAssignableAdminPermission(p));
        const invalid = input.permissions.find((p) => !isAssignableAdminPermission(p) && !current.has(p));
        if (invalid !== undefined) throw AppError.validation(adminMessages.invalidPermission(invalid));
        const wanted = withAccess([...legacy, ...input.permissions.filter(isAssignableAdminPermission)]);
        const lost = role.isSystem ? SYSTEM_ROLE_KEEPS.find((p) => !wanted.includes(p)) : undefined;
        if (lost !== undefined) throw new AppError('CONFLICT', adminMessages.systemRoleKeeps(lost));
        permissions = wanted;
      }
      const added = permissions ? permissions.filter((p) => !role.permissions.includes(p)) : [];
      const removed = permissions ? role.permissions.filter((p) => !permissions.includes(p)) : [];
      try {
        await knex.transaction(async (trx) => {
          if (name && name.toLowerCase() !== role.name.toLowerCase() && (await repo.roleByName(name, trx))) {
            throw new AppError('CONFLICT', adminMessages.roleNameInUse);
          }
          await repo.updateRole(trx, id, { name, description: input.description, permissions });
          await record(
            ctx,
            'system:admin_role_updated',
            { role_id: id, ...(name ? { name } : {}), ...(input.description !== undefined ? { description: input.description } : {}), ...(permissions ? { added, removed } : {}) },
            trx,
          );
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', adminMessages.roleNameInUse);
        throw error;
      }
      return shown((await repo.role(id))!);
    },

    async deleteRole(ctx: AuthContext, id: string): Promise<void> {
      const role = await roleOrThrow(id);
      if (role.isSystem) throw new AppError('CONFLICT', adminMessages.systemRoleUndeletable);
      await knex.transaction(async (trx) => {
        await repo.deleteRole(trx, id);
        await record(ctx, 'system:admin_role_deleted', { role_id: id, name: role.name, member_count: role.memberCount }, trx);
      });
    },

    async assign(ctx: AuthContext, userId: string, roleId: string): Promise<boolean> {
      const role = await roleOrThrow(roleId);
      if (!(await repo.userExists(userId))) throw AppError.notFound(adminMessages.userNotFound);
      return knex.transaction(async (trx) => {
        const created = await repo.assign(trx, userId, roleId);
        if (created) await record(ctx, 'system:admin_role_assigned', { role_id: roleId, role_name: role.name, target_user_id: userId }, trx);
        return created;
      });
    },

    async unassign(ctx: AuthContext, userId: string, roleId: string): Promise<boolean> {
      const role = await roleOrThrow(roleId);
      return knex.transaction(async (trx) => {
        const removed = await repo.unassign(trx, userId, roleId);
        if (removed) await record(ctx, 'system:admin_role_unassigned', { role_id: roleId, role_name: role.name, target_user_id: userId }, trx);
        return removed;
      });
    },
  };
}

export type AdminRolesService = ReturnType<typeof createAdminRolesService>;
