/**
 * Storage of admin roles and their assignments (knex). The tables are created and seeded by the
 * accounts module's first migration (the `super-admin` role); this module owns every change to them.
 */
import type { Knex } from 'knex';
import { schemaRows } from '../../infra/db/rows';
import type { components } from '../../../generated/openapi';
import type { AdminRole, AdminRoleMember } from './types';

type Schemas = components['schemas'];

/** A role with its permissions in stored order (the service shows them sorted). */
const roleOf = schemaRows('AdminRole', {
  from: {
    id: 'r.id',
    name: 'r.name',
    description: 'r.description',
    is_system: 'r.is_system',
    permissions: 'r.permissions',
    member_count: '(select count(*)::int from admin_role_assignments a where a.role_id = r.id)',
    created_at: 'r.created_at',
    updated_at: 'r.updated_at',
  },
});

const memberOf = schemaRows('AdminRoleMember', {
  from: { user_id: 'a.user_id', display_name: 'u.display_name', email: 'u.email', avatar_url: 'u.avatar_url', assigned_at: 'a.assigned_at' },
});

type Db = Knex | Knex.Transaction;

export function createAdminRepo(knex: Knex) {
  const columns = (db: Db) => db('admin_roles as r').select(db.raw(roleOf.select));

  return {
    /** admin.roles */
    async roles(): Promise<AdminRole[]> {
      return (await columns(knex).orderBy([{ column: 'r.name' }, { column: 'r.id' }])).map((row: Record<string, unknown>) => roleOf.map(row));
    },
    /** admin.role */
    async role(id: string, db: Db = knex): Promise<AdminRole | undefined> {
      const row = await columns(db).where('r.id', id).first();
      return row ? roleOf.map(row) : undefined;
    },
    /** admin.roleByName (case-insensitive) */
    async roleByName(name: string, db: Db = knex): Promise<{ id: string } | undefined> {
      return db('admin_roles').whereRaw('lower(name) = lower(?)', [name]).first('id');
    },
    /** admin.insertRole */
    async insertRole(db: Db, role: Pick<Schemas['AdminRole'], 'id' | 'name' | 'description' | 'permissions'>): Promise<void> {
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
    async members(roleId: string): Promise<AdminRoleMember[]> {
      const rows = await knex('admin_role_assignments as a')
        .join('users as u', 'u.id', 'a.user_id')
        .where('a.role_id', roleId)
        .select(knex.raw(memberOf.select))
        .orderBy([{ column: 'a.assigned_at' }, { column: 'a.user_id' }]);
      return rows.map((row: Record<string, unknown>) => memberOf.map(row));
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
