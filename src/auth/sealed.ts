/**
 * Where sealed values live (src/auth/secrets.ts), and the two jobs over all of them: the start-up
 * check (a sample of stored values per key id must open on this node, else readiness is refused
 * naming the key) and the reseal (`npm run secrets:reseal`: every value sealed by a key other
 * than the sealing one is opened and sealed again with it, so the old key can be retired).
 *
 * Each table is named with the key columns that find a row again; the modules that own them
 * (connections, mail, extensions) seal the columns listed here and nothing else.
 */
import type { Knex } from 'knex';
import type { Logger } from '../infra/logger';
import { SealedValueError, sealedKeyId, type SecretBox } from './secrets';

export interface SealedColumns {
  table: string;
  key: readonly string[];
  columns: readonly string[];
}

export const SEALED_COLUMNS: readonly SealedColumns[] = [
  { table: 'login_connections', key: ['id'], columns: ['access_token_sealed', 'refresh_token_sealed'] },
  { table: 'account_connections', key: ['account_id', 'platform'], columns: ['access_token_sealed', 'refresh_token_sealed'] },
  { table: 'account_bot_connections', key: ['account_id', 'platform'], columns: ['access_token_sealed', 'refresh_token_sealed'] },
  { table: 'mail_outbox', key: ['id'], columns: ['text_body', 'html_body'] },
  { table: 'extension_install_secrets', key: ['install_id', 'name'], columns: ['value_sealed'] },
];

/** The key id of a sealed column value: `v1.<id>.…` */
const keyIdSql = (column: string) => `split_part(${column}, '.', 2)`;

export interface SealedKeyReport {
  /** Stored values by the key id that sealed them. */
  counts: Record<string, number>;
  /** Key ids of stored values this node cannot open (missing, retired, or a sample failed to open). */
  unopenable: string[];
}

/**
 * The start-up check: counts stored values per key id, and opens up to `sample` of each key's
 * values per column. A key id this node lacks, or a sample that does not open (a wrong key under
 * the right id), lands in `unopenable`.
 */
export async function checkSealedValues(knex: Knex, box: SecretBox, sample = 3): Promise<SealedKeyReport> {
  const counts: Record<string, number> = {};
  const unopenable = new Set<string>();
  for (const { table, columns } of SEALED_COLUMNS) {
    if (!(await knex.schema.hasTable(table))) continue;
    for (const column of columns) {
      const { rows } = (await knex.raw(`select ${keyIdSql(column)} as key_id, count(*)::int as n from ${table} where ${column} is not null group by 1`)) as { rows: { key_id: string; n: number }[] };
      for (const { key_id: keyId, n } of rows) {
        counts[keyId] = (counts[keyId] ?? 0) + n;
        if (!box.openKeyIds.includes(keyId)) {
          unopenable.add(keyId);
          continue;
        }
        const values: Record<string, string>[] = await knex(table).whereRaw(`${keyIdSql(column)} = ?`, [keyId]).whereNotNull(column).select(column).limit(sample);
        for (const value of values) {
          try {
            box.open(value[column]!);
          } catch (error) {
            if (error instanceof SealedValueError) unopenable.add(keyId);
            else throw error;
          }
        }
      }
    }
  }
  return { counts, unopenable: [...unopenable].sort() };
}

/** The start-up check found stored values this node cannot open: it does not serve. */
export class UnopenableSecretsError extends Error {
  constructor(readonly keyIds: readonly string[], readonly counts: Readonly<Record<string, number>>) {
    super(
      `stored values are sealed with key ${keyIds.map((id) => `${id} (${counts[id] ?? 0} values)`).join(', ')}, which this node cannot open: list ${keyIds.length > 1 ? 'those keys' : 'that key'} in secrets.encryption_keys (state decrypt-only), or fix the key under that id`,
    );
    this.name = 'UnopenableSecretsError';
  }
}

export interface ResealResult {
  resealed: number;
  /** Values that could not be opened, by key id (left as they are). */
  failed: Record<string, number>;
}

/**
 * Seals again, with the sealing key, every stored value another key sealed: in batches, each
 * row updated only if its value is still the one read (a concurrent write wins). Safe to run
 * while nodes serve, once every node opens with the sealing key.
 */
export async function resealAll(knex: Knex, box: SecretBox, log?: Logger, batch = 500): Promise<ResealResult> {
  let resealed = 0;
  const failed: Record<string, number> = {};
  for (const { table, key, columns } of SEALED_COLUMNS) {
    if (!(await knex.schema.hasTable(table))) continue;
    for (const column of columns) {
      let tableCount = 0;
      // Values that failed are skipped by remembering them; the rest leave the selection once rewritten.
      const skipped = new Set<string>();
      for (;;) {
        const rows: Record<string, string>[] = await knex(table)
          .whereNotNull(column)
          .whereRaw(`${keyIdSql(column)} <> ?`, [box.keyId])
          .modify((q) => {
            if (skipped.size) void q.whereNotIn(column, [...skipped]);
          })
          .select([...key, column])
          .limit(batch);
        if (rows.length === 0) break;
        for (const row of rows) {
          const old = row[column]!;
          let plain: string;
          try {
            plain = box.open(old);
          } catch (error) {
            if (!(error instanceof SealedValueError)) throw error;
            const id = sealedKeyId(old) ?? '(unknown format)';
            failed[id] = (failed[id] ?? 0) + 1;
            skipped.add(old);
            continue;
          }
          const where = Object.fromEntries(key.map((k) => [k, row[k]]));
          const updated = await knex(table).where(where).andWhere(column, old).update({ [column]: box.seal(plain) });
          resealed += updated;
          tableCount += updated;
        }
      }
      if (tableCount > 0) log?.info({ table, column, resealed: tableCount, key_id: box.keyId }, 'values resealed');
    }
  }
  return { resealed, failed };
}
