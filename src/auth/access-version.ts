/**
 * The access version: one counter in the database that every change to who may do what bumps in
 * the changing transaction (triggers below): a session or key revoked, expired, rotated or
 * re-scoped, a membership or role changed, a user renamed or deleted. The reads made on every
 * request (the session behind a JWT, a member's grants, a key's row, the member list) are kept on
 * each node and guarded by it (src/infra/db/hot-read.ts): a request reads the counter, after it
 * arrived, and a kept result that was loaded under the same count is still exact. So a revocation
 * committed on any node that shares the database is seen by the next request everywhere, as a
 * fresh read would see it, without the reads themselves.
 *
 * What does not bump: new rows nobody could have read yet (a login's session, a new key) and the
 * once-a-minute `last_used_at` touches.
 */
import type { Knex } from 'knex';
import type { Migration } from '../infra/db/database';
import { hotRead, type Guard } from '../infra/db/hot-read';

/** Table → the statements that change what the guarded reads return (statement-level triggers). */
const BUMPED_BY: Record<string, string> = {
  sessions: 'update of revoked_at, expires_at, user_id, account_id, refresh_jti or delete',
  credentials: 'update of revoked_at, expires_at, permissions, token_hash, kind, account_id, user_id, subject_id, extension_id, label or delete',
  users: 'update of display_name, email, avatar_url or delete',
  accounts: 'update of owner_id or delete',
  account_members: 'insert or update or delete',
  account_roles: 'update or delete',
  admin_roles: 'update or delete',
  admin_role_assignments: 'insert or update or delete',
  user_roles: 'update or delete',
  user_role_assignments: 'insert or update or delete',
};

export const accessVersionMigrations: readonly Migration[] = [
  {
    name: '20261124120000_create_access_version',
    async up(knex: Knex) {
      await knex.schema.createTable('data_versions', (t) => {
        t.string('name', 50).primary();
        t.bigInteger('n').notNullable().defaultTo(0);
      });
      await knex('data_versions').insert({ name: 'access', n: 0 });
      await knex.raw(`create function bump_access_version() returns trigger language plpgsql as $$
        begin
          update data_versions set n = n + 1 where name = 'access';
          return null;
        end $$`);
      for (const [table, events] of Object.entries(BUMPED_BY)) {
        await knex.raw(`create trigger ${table}_access_version after ${events} on ${table} for each statement execute function bump_access_version()`);
      }
    },
    async down(knex: Knex) {
      for (const table of Object.keys(BUMPED_BY)) await knex.raw(`drop trigger if exists ${table}_access_version on ${table}`);
      await knex.raw('drop function if exists bump_access_version()');
      await knex.schema.dropTableIfExists('data_versions');
    },
  },
];

/** The guard of a read that depends on access: the counter, read fresh (coalesced across requests). */
export const ACCESS_GUARD: Guard = Object.freeze({ id: 'access', sql: "select n from data_versions where name = 'access'", bindings: [] });

/** A select-list column answering the access version as the statement's own snapshot saw it. */
export const ACCESS_VERSION_COLUMN = `(${ACCESS_GUARD.sql}) as access_version`;

/** The access version a row read with ACCESS_VERSION_COLUMN carries, as the counter reader answers it. */
export const accessVersionOf = (row: { access_version?: unknown } | undefined): string => String(row?.access_version ?? '0');

/**
 * A hot read guarded by the access version whose load also answers that version, read by its own
 * statement (ACCESS_VERSION_COLUMN): on PostgreSQL a key nothing keeps yet (a caller's first
 * request on this node) costs that one statement instead of a counter round and then the read;
 * a kept result is still checked against a fresh counter round (hot-read.ts `versioned`).
 */
export function accessRead<A extends unknown[], V>(
  knex: Knex,
  load: (...args: A) => PromiseLike<{ value: V; version: string }>,
  keyOf: (...args: A) => string,
): (...args: A) => Promise<V> {
  return hotRead(knex, async (...args: A) => (await load(...args)).value, keyOf, () => ACCESS_GUARD, { versioned: load });
}
