/**
 * Storage behind opaque credentials: every token kind (API keys, popout, overlay, shared overlay,
 * extension and widget tokens) in one `credentials` table keyed by the token's SHA-256 hash. Plain
 * tokens exist only in the value `mint()` returns once; nothing here ever stores or logs one.
 * Login sessions (the rows JWTs name) belong to the sessions module.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { fromJson, type Migration } from '../infra/db/database';
import { credentialFormats, tokenHash, type CredentialKind } from './credentials';

/**
 * The credentials table. Until sessions had their own module one migration
 * (`20261122100100_create_sessions_and_credentials`, now the sessions module's) created both
 * tables; on a database that ran it this one finds the table and does nothing.
 */
export const credentialMigrations: readonly Migration[] = [
  {
    name: '20261122100101_create_credentials',
    async up(knex: Knex) {
      if (await knex.schema.hasTable('credentials')) return;
      await knex.schema.createTable('credentials', (t) => {
        t.uuid('id').primary();
        t.string('kind', 30).notNullable();
        t.specificType('token_hash', 'char(64)').notNullable().unique();
        t.string('key_prefix', 40).notNullable();
        t.string('label', 100).notNullable().defaultTo('');
        t.uuid('account_id').nullable().references('accounts.id').onDelete('CASCADE');
        t.uuid('user_id').nullable().references('users.id').onDelete('CASCADE');
        t.uuid('created_by').nullable().references('users.id').onDelete('SET NULL');
        /** What a bound token is bound to: overlay, widget instance, install, developer profile or team. */
        t.uuid('subject_id').nullable();
        t.uuid('extension_id').nullable();
        t.jsonb('permissions').notNullable().defaultTo('[]');
        t.timestamp('expires_at', { useTz: true }).nullable();
        t.timestamp('revoked_at', { useTz: true }).nullable();
        t.timestamp('last_used_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['account_id', 'kind']);
        t.index(['user_id', 'kind']);
      });
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('credentials');
    },
  },
];

export interface CredentialRow {
  id: string;
  kind: CredentialKind;
  token_hash: string;
  key_prefix: string;
  label: string;
  account_id: string | null;
  user_id: string | null;
  created_by: string | null;
  subject_id: string | null;
  extension_id: string | null;
  permissions: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_at: Date;
}

export interface MintInput {
  kind: Exclude<CredentialKind, 'jwt' | 'system_key'>;
  accountId?: string | null;
  userId?: string | null;
  createdBy?: string | null;
  subjectId?: string | null;
  extensionId?: string | null;
  label?: string;
  permissions?: readonly string[];
  expiresAt?: Date | null;
}

/** `last_used_at` is written at most once a minute per row, not on every request. */
const TOUCH_INTERVAL = "interval '1 minute'";

const parsePermissions = (value: unknown): string[] => fromJson<string[]>(value, []);

export function createCredentialStore(knex: Knex) {
  return {
    /** Creates a credential row and returns the plain token (shown once) with the row. */
    async mint(input: MintInput, db: Knex | Knex.Transaction = knex): Promise<{ token: string; row: CredentialRow }> {
      const format = credentialFormats.find((f) => f.kind === input.kind)!;
      const token = `${format.prefix}${randomBytes(32).toString('hex')}`;
      const row = {
        id: randomUUID(),
        kind: input.kind,
        token_hash: tokenHash(token),
        key_prefix: token.slice(0, format.prefix.length + 8),
        label: input.label ?? '',
        account_id: input.accountId ?? null,
        user_id: input.userId ?? null,
        created_by: input.createdBy ?? null,
        subject_id: input.subjectId ?? null,
        extension_id: input.extensionId ?? null,
        permissions: JSON.stringify(input.permissions ?? []),
        expires_at: input.expiresAt ?? null,
      };
      const [inserted] = await db('credentials').insert(row).returning('*');
      return { token, row: { ...inserted, permissions: parsePermissions(inserted.permissions) } };
    },
    /** credentials.byHash */
    async byHash(hash: string): Promise<CredentialRow | undefined> {
      const row = await knex('credentials').where({ token_hash: hash }).first();
      return row ? { ...row, permissions: parsePermissions(row.permissions) } : undefined;
    },
    /** credentials.byId */
    async byId(id: string, db: Knex | Knex.Transaction = knex): Promise<CredentialRow | undefined> {
      const row = await db('credentials').where({ id }).first();
      return row ? { ...row, permissions: parsePermissions(row.permissions) } : undefined;
    },
    /** credentials.revokedAmong: which token hashes are revoked or deleted (the periodic WebSocket re-check) */
    async revokedCredentials(hashes: readonly string[]): Promise<Set<string>> {
      const live = new Set<string>();
      for (let i = 0; i < hashes.length; i += 1000) {
        const rows: { token_hash: string }[] = await knex('credentials').whereIn('token_hash', hashes.slice(i, i + 1000)).whereNull('revoked_at').select('token_hash');
        for (const row of rows) live.add(row.token_hash);
      }
      return new Set(hashes.filter((hash) => !live.has(hash)));
    },
    /** credentials.ofAccount */
    async ofAccount(accountId: string, kind: CredentialKind): Promise<CredentialRow[]> {
      const rows = await knex('credentials').where({ account_id: accountId, kind }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]);
      return rows.map((r: CredentialRow) => ({ ...r, permissions: parsePermissions(r.permissions) }));
    },
    /** credentials.touch */
    async touch(id: string): Promise<void> {
      await knex('credentials')
        .where({ id })
        .where((q) => q.whereNull('last_used_at').orWhereRaw(`last_used_at < now() - ${TOUCH_INTERVAL}`))
        .update({ last_used_at: knex.fn.now() });
    },
    /** credentials.revoke (soft) */
    async revoke(id: string, db: Knex | Knex.Transaction = knex): Promise<boolean> {
      return (await db('credentials').where({ id }).whereNull('revoked_at').update({ revoked_at: knex.fn.now(), updated_at: knex.fn.now() })) > 0;
    },
    /**
     * A member left or was removed: their personal keys for the account are purged; service
     * keys they created survive with `created_by` cleared (Part 1, "Key rules").
     */
    async purgeMember(db: Knex.Transaction, accountId: string, userId: string): Promise<void> {
      await db('credentials').where({ account_id: accountId, user_id: userId, kind: 'user_api_key' }).delete();
      await db('credentials').where({ account_id: accountId, created_by: userId }).whereNot({ kind: 'user_api_key' }).update({ created_by: null, updated_at: db.fn.now() });
    },
  };
}

export type CredentialStore = ReturnType<typeof createCredentialStore>;
