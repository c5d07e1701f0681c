/**
 * Storage of admin roles and their assignments (knex). The tables are created and seeded by the
 * accounts module's first migration (the `super-admin` role); this module owns every change to them.
 */
import type { Knex } from 'knex';
import { fromJson } from '../../infra/db/database';

export interface AdminRoleRow {
  id: string;
  name: string;
  description: string | null;
  is_system: boolean;
  permissions: string[];
  member_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface AdminRoleMemberRow {
  user_id: string;
  display_name: string;
  email: string | null;
  avatar_url: string | null;
  assigned_at: Date;
}

type Db = Knex | Knex.Transaction;

export function createAdminRepo(knex: Knex) {
  const columns = (db: Db) =>
    db('admin_roles as r').select(
      'r.id',
      'r.name',
      'r.description',
      'r.is_system',
      'r.permissions',
      'r.created_at',
      'r.updated_at',
      db.raw('(select count(*)::int from admin_role_assignments a where a.role_id = r.id) as member_count'),
    );
  const toRow = (row: AdminRoleRow): AdminRoleRow => ({ ...row, permissions: fromJson<string[]>(row.permissions, []), member_count: Number(row.member_count) });

  return {
    /** admin.roles */
    async roles(): Promise<AdminRoleRow[]> {
      return (await columns(knex).orderBy([{ column: 'r.name' }, { column: 'r.id' }])).map(toRow);
    },
    /** admin.role */
    async role(id: string, db: Db = knex): Promise<AdminRoleRow | undefined> {
      const row = await columns(db).where('r.id', id).first();
      return row ? toRow(row) : undefined;
    },
    /** admin.roleByName (case-insensitive) */
    async roleByName(name: string, db: Db = knex): Promise<{ id: string } | undefined> {
      return db('admin_roles').whereRaw('lower(name) = lower(?)', [name]).first('id');
    },
    /** admin.insertRole */
    async insertRole(db: Db, role: { id: string; name: string; description: string | null; permissions: string[] }): Promise<void> {
      await db('admin_roles').insert({ ...role, is_system: false, permissions: JSON.stringify(role.permissions) });
    },
    /** admin.updateRole */
    async updateRole(db: Db, id: string, patch: { name?: string; description?: string | null; permissions?: string[] }): Promise<void> {
      await db('admin_roles')
        .where({ id })
        .update({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.description !== undefined ? { description: patch.description } : {}),
          ...(patch.permissions !== undefined ? { permissions: JSON.stringify(patch.permissions) } : {}),
          updated_at: db.fn.now(),
        });
    },
    /** admin.deleteRole (assignments cascade) */
    async deleteRole(db: Db, id: string): Promise<void> {
      await db('admin_roles').where({ id }).delete();
    },
    /** admin.members: oldest assignment first */
    members(roleId: string): Promise<AdminRoleMemberRow[]> {
      return knex('admin_role_assignments as a')
        .join('users as u', 'u.id', 'a.user_id')
        .where('a.role_id', roleId)
        .select('a.user_id', 'u.display_name', 'u.email', 'u.avatar_url', 'a.assigned_at')
        .orderBy([{ column: 'a.assigned_at' }, { column: 'a.user_id' }]);
    },
    /** admin.userExists */
    async userExists(userId: string, db: Db = knex): Promise<boolean> {
      return Boolean(await db('users').where({ id: userId }).first('id'));
    },
    /** admin.assign: true when a new assignment was made */
    async assign(db: Db, userId: string, roleId: string): Promise<boolean> {
      const inserted = await db('admin_role_assignments').insert({ user_id: userId, role_id: roleId }).onConflict(['user_id', 'role_id']).ignore().returning('user_id');
      return inserted.length > 0;
    },
    /** admin.unassign: true when an assignment was removed */
    async unassign(db: Db, userId: string, roleId: string): Promise<boolean> {
      const removed: unknown[] = await db('admin_role_assignments').where({ user_id: userId, role_id: roleId }).delete().returning('user_id');
      return removed.length > 0;
    },
  };
}

export type AdminRepo = ReturnType<typeof createAdminRepo>;
