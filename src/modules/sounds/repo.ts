/** Sound rows, usage against the limits, the plan's sound limits and per-extension overrides (knex). */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { schemaRows, tableColumns, type RowValue } from '../../infra/db/rows';

type Db = Knex | Knex.Transaction;

export type Sound = Camelize<components['schemas']['Sound']>;
/** A sound with where its bytes are stored (never on the wire). */
export type StoredSound = Sound & { blobKey: string };
/** The columns of a new sound: the wire's, with the blob and the uploading extension. */
export type NewSound = Omit<components['schemas']['Sound'], 'created_at'> & { blob_key: string; source_extension_id: string | null };

// pg answers bigint as strings and jsonb as parsed JSON; PGlite likewise. Sizes stay below 2^53.
// The spec leaves `waveform` untyped (any JSON); it is stored as jsonb, so the row reads it as json (the migration's type).
const soundOf = schemaRows('Sound', { omit: ['waveform'], extra: tableColumns('sounds', ['waveform']) });
const storedOf = schemaRows('Sound', { omit: ['waveform'], extra: tableColumns('sounds', ['waveform', 'blob_key']) });

/** The plan's sound limits, as the library shows them. */
export type SoundLimits = Pick<Camelize<components['schemas']['SoundLibrary']>, 'maxSounds' | 'maxSoundFileSize' | 'maxSoundStorageBytes'>;
/** Per-extension overrides of the plan's sound limits (the spec's ExtensionLimits); null: the plan's value applies. */
const overridesOf = schemaRows('ExtensionLimits', { omit: ['extension_id'] });
export type LimitOverrides = RowValue<typeof overridesOf>;

/** Whose uploads a quota counts: the account's own (null) or one extension's. */
export type Source = string | null;

const num = (v: unknown): number => Number(v ?? 0);

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

export function createSoundsRepo(knex: Knex) {
  const bySource = (q: Knex.QueryBuilder, accountId: string, source: Source) => {
    q.where({ account_id: accountId });
    return source === null ? q.whereNull('source_extension_id') : q.where({ source_extension_id: source });
  };
  return {
    /** sounds.page: newest first, optional case-insensitive partial name */
    async page(accountId: string, search: string | undefined, limit: number, offset: number): Promise<{ rows: Sound[]; total: number }> {
      const filtered = () => {
        const q = knex('sounds').where({ account_id: accountId });
        if (search) q.whereRaw("name ilike ? escape '\\'", [`%${escapeLike(search)}%`]);
        return q;
      };
      const [rows, count] = await Promise.all([
        filtered().select(knex.raw(soundOf.select)).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit).offset(offset),
        filtered().count<{ count: string | number }[]>({ count: '*' }).first(),
      ]);
      return { rows: (rows as Record<string, unknown>[]).map(soundOf.map), total: num(count?.count) };
    },
    /** sounds.byId (account-scoped) */
    async byId(accountId: string, id: string, db: Db = knex): Promise<Sound | undefined> {
      const row = (await db('sounds').where({ id, account_id: accountId }).first(db.raw(soundOf.select))) as Record<string, unknown> | undefined;
      return row ? soundOf.map(row) : undefined;
    },
    /** sounds.storedById (account-scoped): with the blob key */
    async storedById(accountId: string, id: string): Promise<StoredSound | undefined> {
      const row = (await knex('sounds').where({ id, account_id: accountId }).first(knex.raw(storedOf.select))) as Record<string, unknown> | undefined;
      return row ? storedOf.map(row) : undefined;
    },
    /** sounds.usage: count and bytes of one source's sounds in an account */
    async usage(accountId: string, source: Source, db: Db = knex): Promise<{ count: number; bytes: number }> {
      const row = (await bySource(db('sounds'), accountId, source).first(db.raw('count(*) as count, coalesce(sum(size_bytes), 0) as bytes'))) as { count: unknown; bytes: unknown } | undefined;
      return { count: num(row?.count), bytes: num(row?.bytes) };
    },
    /** sounds.accountBytes: bytes of every sound the account stores (its own and its extensions'), held against max_storage_bytes */
    async accountBytes(accountId: string, db: Db = knex): Promise<number> {
      const row = (await db('sounds').where({ account_id: accountId }).first(db.raw('coalesce(sum(size_bytes), 0) as bytes'))) as { bytes: unknown } | undefined;
      return num(row?.bytes);
    },
    /** accounts.lockForSounds: serialises quota checks of one account (the row lock is held to commit) */
    async lockAccount(db: Knex.Transaction, accountId: string): Promise<boolean> {
      return Boolean(await db('accounts').where({ id: accountId }).forUpdate().first('id'));
    },
    /** sounds.insert */
    async insert(db: Db, row: NewSound): Promise<Sound> {
      const [inserted] = (await db('sounds')
        .insert({ ...row, waveform: row.waveform === null || row.waveform === undefined ? null : JSON.stringify(row.waveform) })
        .returning('*')) as Record<string, unknown>[];
      return soundOf.map(inserted!);
    },
    /** sounds.update */
    async update(accountId: string, id: string, patch: { name?: string; duration_ms?: number; waveform?: unknown }): Promise<Sound | undefined> {
      const values: Record<string, unknown> = {};
      if (patch.name !== undefined) values.name = patch.name;
      if (patch.duration_ms !== undefined) values.duration_ms = patch.duration_ms;
      if (patch.waveform !== undefined) values.waveform = patch.waveform === null ? null : JSON.stringify(patch.waveform);
      if (Object.keys(values).length === 0) return this.byId(accountId, id);
      const [row] = (await knex('sounds').where({ id, account_id: accountId }).update(values).returning('*')) as Record<string, unknown>[];
      return row ? soundOf.map(row) : undefined;
    },
    /** sounds.delete: answers the blob key of the removed row */
    async delete(accountId: string, id: string): Promise<string | null> {
      const [row] = (await knex('sounds').where({ id, account_id: accountId }).delete().returning('blob_key')) as { blob_key: string }[];
      return row?.blob_key ?? null;
    },
    /** sounds.referencedKeys: which of `keys` a sound still points at */
    async referencedKeys(keys: string[]): Promise<Set<string>> {
      if (keys.length === 0) return new Set();
      const rows = (await knex('sounds').whereIn('blob_key', keys).select('blob_key')) as { blob_key: string }[];
      return new Set(rows.map((r) => r.blob_key));
    },
    /** plans.soundLimits: the account's plan's sound limits, else the default plan's */
    async planLimits(accountId: string, db: Db = knex): Promise<SoundLimits> {
      const row = (await db('accounts as a')
        .leftJoin('plans as p', 'p.id', 'a.plan_id')
        .where('a.id', accountId)
        .first(
          db.raw('coalesce(p.max_sounds, (select max_sounds from plans where is_default order by created_at limit 1), 0) as max_sounds'),
          db.raw('coalesce(p.max_sound_file_size, (select max_sound_file_size from plans where is_default order by created_at limit 1), 0) as max_sound_file_size'),
          db.raw('coalesce(p.max_sound_storage_bytes, (select max_sound_storage_bytes from plans where is_default order by created_at limit 1), 0) as max_sound_storage_bytes'),
        )) as Record<string, unknown> | undefined;
      return { maxSounds: num(row?.max_sounds), maxSoundFileSize: num(row?.max_sound_file_size), maxSoundStorageBytes: num(row?.max_sound_storage_bytes) };
    },
    /** sound_extension_limits.get */
    async overrides(extensionId: string, db: Db = knex): Promise<LimitOverrides> {
      // No row: every override is null (the mapping answers null for an absent column).
      return overridesOf.map((await db('sound_extension_limits').where({ extension_id: extensionId }).first(db.raw(overridesOf.select))) ?? {});
    },
    /** sound_extension_limits.upsert of the given columns */
    async setOverrides(extensionId: string, values: Partial<Record<'max_sounds' | 'max_sound_file_size' | 'max_sound_storage_bytes', number | null>>): Promise<void> {
      await knex('sound_extension_limits')
        .insert({ extension_id: extensionId, ...values, updated_at: knex.fn.now() })
        .onConflict('extension_id')
        .merge({ ...values, updated_at: knex.fn.now() });
    },
  };
}

export type SoundsRepo = ReturnType<typeof createSoundsRepo>;
