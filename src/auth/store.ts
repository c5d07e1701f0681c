/**
 * Storage behind opaque credentials: every token kind (API keys, popout, overlay, shared overlay,
 * extension and widget tokens) in one `credentials` table keyed by the token's SHA-256 hash. Plain
 * tokens exist only in the value `mint()` returns once; nothing here ever stores or logs one.
 * Login sessions (the rows JWTs name) belong to the sessions module.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { keptCache } from '../infra/kept';
import type { Bus } from '../infra/bus';
import type { Cache } from '../infra/cache';
import { fromJson, revokedAmong, type Migration } from '../infra/db/database';
import { statement } from '../infra/db/statement';
import { credentialFormats, tokenHash, type CredentialKind } from './credentials';
import { ACCESS_VERSION_COLUMN, accessRead, accessVersionOf } from './access-version';

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
  updated_at: Date;
}

export interface MintInput {
  /** `system_key` rows are admin-provisioned system keys (no account, no user). */
  kind: Exclude<CredentialKind, 'jwt'>;
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

/** A fresh secret of a kind: prefix + 64 hex from 32 random bytes, its hash and display prefix. */
export function newSecret(kind: Exclude<CredentialKind, 'jwt'>): { token: string; hash: string; keyPrefix: string } {
  const format = credentialFormats.find((f) => f.kind === kind)!;
  const token = `${format.prefix}${randomBytes(32).toString('hex')}`;
  return { token, hash: tokenHash(token), keyPrefix: token.slice(0, format.prefix.length + 8) };
}

/** Key kinds whose look-ups are cached (hash → row): the long-lived keys presented on every call. */
export const CACHED_KEY_KINDS: ReadonlySet<CredentialKind> = new Set(['user_api_key', 'service_key', 'developer_api_key', 'system_key']);

/** How long a key look-up is cached; writes invalidate it at once, the TTL only bounds a lost notice. */
export const KEY_CACHE_TTL_SECONDS = 30;

/** Bus channel naming a key hash whose cached look-up every node drops (scope change, delete, rotate). */
export const KEY_INVALIDATIONS_CHANNEL = 'key-invalidations';

/** Key look-ups are read on every request: app.ts keeps a node-local copy of this prefix (cache.ts `withNearCache`). */
export const KEY_CACHE_PREFIX = 'apikey:';
export const keyCacheKey = (hash: string): string => `${KEY_CACHE_PREFIX}${hash}`;

/**
 * Drops a key's cached look-up: from the shared cache at once (the next request on any node reads
 * the row), then announced on the bus so any node-local copy goes too. Never throws.
 */
export async function invalidateKey(deps: { cache: Cache; bus: Bus }, hash: string): Promise<void> {
  await deps.cache.del(keyCacheKey(hash)).catch(() => undefined);
  await deps.bus.publish(KEY_INVALIDATIONS_CHANNEL, hash).catch(() => undefined);
}

const reviveRow = (value: Record<string, unknown>): CredentialRow => {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return {
    ...(value as unknown as CredentialRow),
    expires_at: date(value.expires_at),
    revoked_at: date(value.revoked_at),
    last_used_at: date(value.last_used_at),
    created_at: date(value.created_at)!,
    updated_at: date(value.updated_at)!,
  };
};

/**
 * Key look-ups through the cache (hash → row, short TTL). Only rows of `CACHED_KEY_KINDS` are
 * cached, never a miss; a cache failure falls back to the database. `touch` records use at most
 * once a minute per key from this node (the SQL also skips rows touched in the last minute), so a
 * request never pays a database write.
 */
export function createKeyLookup(deps: { store: CredentialStore; cache: Cache }) {
  const touched = new Map<string, number>();
  // The row last revived from each cached text: a key presented on every request is parsed once
  // per cached copy (the node-local copy answers the very same string), not once per request.
  const revived = keptCache<string, { text: string; row: CredentialRow }>({ max: 10_000, sizeOf: (value, hash) => 256 + hash.length + 3 * value.text.length });
  return {
    async byHash(hash: string): Promise<CredentialRow | undefined> {
      const cached = await deps.cache.get(keyCacheKey(hash)).catch(() => null);
      if (cached) {
        const known = revived.get(hash);
        if (known?.text === cached) return known.row;
        try {
          const row = reviveRow(JSON.parse(cached) as Record<string, unknown>);
          revived.set(hash, { text: cached, row });
          return row;
        } catch {
          // fall through to the database
        }
      }
      const row = await deps.store.byHash(hash);
      if (row && CACHED_KEY_KINDS.has(row.kind)) {
        await deps.cache.set(keyCacheKey(hash), JSON.stringify(row), KEY_CACHE_TTL_SECONDS).catch(() => undefined);
      }
      return row;
    },
    forget(hash: string): Promise<void> {
      return deps.cache.del(keyCacheKey(hash)).catch(() => undefined);
    },
    /** Records use at most once a minute per key per node; the write runs in the background. */
    touch(row: CredentialRow): void {
      const now = Date.now();
      const last = Math.max(touched.get(row.id) ?? 0, row.last_used_at ? new Date(row.last_used_at).getTime() : 0);
      if (now - last < 60_000) return;
      if (touched.size > 10_000) touched.clear();
      touched.set(row.id, now);
      void deps.store.touch(row.id).catch(() => undefined);
    },
  };
}

export type KeyLookup = ReturnType<typeof createKeyLookup>;

/**
 * Calls of `run` gathered in rounds: every item asked for while a round runs goes into the next
 * one, which starts when it ends; a first call waits one turn of the event loop, so the calls of
 * requests that arrived together share a round. Each call resolves (or fails) with its round.
 */
function inRounds(run: (items: string[]) => Promise<void>): (item: string) => Promise<void> {
  let next: { items: Set<string>; done: Promise<void>; settle: (error?: unknown) => void } | null = null;
  let running = false;
  const start = (): void => {
    const round = next!;
    next = null;
    running = true;
    run([...round.items]).then(
      () => round.settle(),
      (error: unknown) => round.settle(error ?? new Error('round failed')),
    ).finally(() => {
      running = false;
      if (next) start();
    });
  };
  return (item) => {
    if (!next) {
      let settle!: (error?: unknown) => void;
      const done = new Promise<void>((resolve, reject) => {
        settle = (error) => (error === undefined ? resolve() : reject(error));
      });
      next = { items: new Set(), done, settle };
      if (!running) setImmediate(start);
    }
    next.items.add(item);
    return next.done;
  };
}

/*
 * The statements of every key-authenticated request, named (src/infra/db/statement.ts) so each
 * connection, and PGlite, parses and plans them once.
 */
/** A row by hash, with the access version its statement saw. */
const KEY_ROW = `select *, ${ACCESS_VERSION_COLUMN} from credentials where token_hash = ? limit 1`;
/** Marks keys used (one array parameter: one text for any number of ids); bumps no counter. */
const TOUCH = `update credentials set last_used_at = CURRENT_TIMESTAMP where id = any(?::uuid[]) and (last_used_at is null or last_used_at < now() - ${TOUCH_INTERVAL})`;

export function createCredentialStore(knex: Knex) {
  /** A row by hash, with the access version its statement saw (the hot read's `versioned`). */
  async function rowByHash(hash: string): Promise<{ value: CredentialRow | undefined; version: string }> {
    const [row] = await statement<CredentialRow & { access_version: unknown }>(knex, KEY_ROW, [hash]);
    if (!row) return { value: undefined, version: '' };
    const { access_version: version, ...rest } = row as CredentialRow & { access_version: unknown };
    return { value: { ...rest, permissions: parsePermissions(rest.permissions) }, version: accessVersionOf({ access_version: version }) };
  }
  const touches = inRounds(async (ids: string[]) => {
    // last_used_at is no column of the access version's triggers: no kept read depends on it.
    await statement(knex, TOUCH, [ids], { bumpsNoGuard: true });
  });
  /** Told the hash of every row `revoke` revoked (the auth module drops its cached look-up). */
  const revokedListeners: ((hash: string) => Promise<void>)[] = [];
  return {
    /** Registers a listener for `revoke`; the auth module's key cache uses it. */
    onRevoked(listener: (hash: string) => Promise<void>): void {
      revokedListeners.push(listener);
    },
    /** Creates a credential row and returns the plain token (shown once) with the row. */
    async mint(input: MintInput, db: Knex | Knex.Transaction = knex): Promise<{ token: string; row: CredentialRow }> {
      const { token, hash, keyPrefix } = newSecret(input.kind);
      const row = {
        id: randomUUID(),
        kind: input.kind,
        token_hash: hash,
        key_prefix: keyPrefix,
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
    /**
     * credentials.byHash (a hot read: src/infra/db/hot-read.ts). On PostgreSQL a hash nothing keeps
     * yet (a key's first request on this node) is read with the access version in the same
     * statement, instead of a counter round and then the row.
     */
    byHash: accessRead(knex, rowByHash, (hash) => hash),
    /** credentials.byId */
    async byId(id: string, db: Knex | Knex.Transaction = knex): Promise<CredentialRow | undefined> {
      const row = await db('credentials').where({ id }).first();
      return row ? { ...row, permissions: parsePermissions(row.permissions) } : undefined;
    },
    /** credentials.revokedAmong: which token hashes are revoked or deleted (the periodic WebSocket re-check) */
    revokedCredentials: (hashes: readonly string[]): Promise<Set<string>> => revokedAmong(knex, 'credentials', 'token_hash', hashes),
    /** credentials.ofAccount */
    async ofAccount(accountId: string, kind: CredentialKind): Promise<CredentialRow[]> {
      const rows = await knex('credentials').where({ account_id: accountId, kind }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]);
      return rows.map((r: CredentialRow) => ({ ...r, permissions: parsePermissions(r.permissions) }));
    },
    /**
     * credentials.touch: records use (at most once a minute per row). Touches are written in
     * rounds, one UPDATE for every row touched while the previous round was on its way (a first
     * touch waits one turn of the event loop), never on a request's path; resolves once the
     * round holding this row has run.
     */
    touch: (id: string): Promise<void> => touches(id),
    /** credentials.revoke (soft) */
    async revoke(id: string, db: Knex | Knex.Transaction = knex): Promise<boolean> {
      const rows: { token_hash: string }[] = await db('credentials')
        .where({ id })
        .whereNull('revoked_at')
        .update({ revoked_at: knex.fn.now(), updated_at: knex.fn.now() })
        .returning('token_hash');
      for (const { token_hash: hash } of rows) for (const listener of revokedListeners) await listener(hash).catch(() => undefined);
      return rows.length > 0;
    },
    /**
     * Regenerates a row's secret in place (same id, label, scopes, expiry); the old hash stops
     * matching at once. Answers the new plain token (shown once), the updated row and the old row.
     */
    async rotate(id: string, db: Knex | Knex.Transaction = knex): Promise<{ token: string; row: CredentialRow; old: CredentialRow } | null> {
      const old = await db('credentials').where({ id }).forUpdate().first();
      if (!old) return null;
      const { token, hash, keyPrefix } = newSecret(old.kind);
      const [row] = await db('credentials').where({ id }).update({ token_hash: hash, key_prefix: keyPrefix, updated_at: knex.fn.now() }).returning('*');
      return { token, row: { ...row, permissions: parsePermissions(row.permissions) }, old: { ...old, permissions: parsePermissions(old.permissions) } };
    },
    /** credentials.update: label and, for operators, scopes. */
    async update(id: string, fields: { label?: string; permissions?: readonly string[] }, db: Knex | Knex.Transaction = knex): Promise<CredentialRow | undefined> {
      const patch: Record<string, unknown> = { updated_at: knex.fn.now() };
      if (fields.label !== undefined) patch.label = fields.label;
      if (fields.permissions !== undefined) patch.permissions = JSON.stringify(fields.permissions);
      const [row] = await db('credentials').where({ id }).update(patch).returning('*');
      return row ? { ...row, permissions: parsePermissions(row.permissions) } : undefined;
    },
    /** credentials.remove (hard delete); answers the removed row. */
    async remove(id: string, db: Knex | Knex.Transaction = knex): Promise<CredentialRow | undefined> {
      const [row] = await db('credentials').where({ id }).delete().returning('*');
      return row ? { ...row, permissions: parsePermissions(row.permissions) } : undefined;
    },
    /** credentials.list: rows of one kind by owner columns, newest first. */
    async list(where: { kind: CredentialKind; account_id?: string; user_id?: string }, db: Knex | Knex.Transaction = knex): Promise<CredentialRow[]> {
      const rows = await db('credentials').where(where).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }]);
      return rows.map((r: CredentialRow) => ({ ...r, permissions: parsePermissions(r.permissions) }));
    },
    /**
     * A member left or was removed: their personal keys for the account are purged; service
     * keys (and popout tokens) they created survive with `created_by` cleared (Part 1, "Key
     * rules"). Answers the purged keys' hashes, so their cached look-ups can be dropped.
     */
    async purgeMember(db: Knex.Transaction, accountId: string, userId: string): Promise<string[]> {
      const purged: { token_hash: string }[] = await db('credentials').where({ account_id: accountId, user_id: userId, kind: 'user_api_key' }).delete().returning('token_hash');
      await db('credentials').where({ account_id: accountId, created_by: userId }).whereNot({ kind: 'user_api_key' }).update({ created_by: null, updated_at: db.fn.now() });
      return purged.map((r) => r.token_hash);
    },
  };
}

export type CredentialStore = ReturnType<typeof createCredentialStore>;
