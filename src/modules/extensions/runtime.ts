/**
 * What an install's extension keeps and says while it runs: its isolated
 * key-value storage and its log lines. Every change is published on the internal bus under the
 * socket channel's own name, which the realtime relay forwards (spec/ws-protocol/):
 * - a storage write or delete: `ext-storage:{install_id}`, `storage:update`
 *   `{ install_id, key, value, deleted }`;
 * - a log line the runtime writes (system key): `ext-logs:{extension_id}` for the extension's
 *   developers and `ext-install-logs:{account_id}` for the account, `extension:log` with the line.
 * Publishing happens after the write committed; a bus failure is logged, never a failed write.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { requireAccountId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { shapeOf, toWire, type Camelize } from '../../http/mapping';
import type { Bus } from '../../infra/bus';
import { fromJson } from '../../infra/db/database';
import { schemaRows } from '../../infra/db/rows';
import type { Logger } from '../../infra/logger';
import { extensionMessages as m } from './errors';
import type { ExtensionLog } from './records';
import { UUID_RE } from '../../infra/ids';

type Schemas = components['schemas'];
export type StorageEntry = Camelize<Schemas['ExtensionStorageEntry']>;
/** An install's ids as stored: what the runtime checks and keys storage and logs by. */
type InstallRef = Pick<Schemas['ExtensionInstall'], 'id' | 'account_id' | 'extension_id'>;
type LogLevel = ExtensionLog['level'];

/** Largest stored value, serialised (64 KiB, the WebSocket frame limit). */
export const MAX_STORAGE_VALUE_BYTES = 64 * 1024;
const LOG_PAGE = 200;
const newestFirst = [{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }];

const logRows = schemaRows('ExtensionLog');
const storageRows = schemaRows('ExtensionStorageEntry');

/** Stored values are wrapped (`{ v }`) so that a JSON string survives the jsonb round trip. */
const unwrap = (stored: unknown): unknown => fromJson<{ v?: unknown }>(stored, {}).v ?? null;
const storageEntryOf = (row: Record<string, unknown>): StorageEntry => {
  const entry = storageRows.map(row);
  return { ...entry, value: unwrap(entry.value) };
};

/** A log line in wire form (snake_case, the REST schema's), the `data` of an `extension:log` frame. */
const logShape = shapeOf({ $ref: '#/components/schemas/ExtensionLog' });
const logWire = (log: ExtensionLog) => toWire(log, logShape);

export function createRuntime(deps: { knex: Knex; bus: Bus; log: Logger; ownedExtension: (auth: AuthContext, id: string) => Promise<{ id: string }> }) {
  const { knex, bus, log } = deps;

  async function publish(channel: string, eventType: string, data: unknown): Promise<void> {
    await bus.publish(channel, JSON.stringify({ event_type: eventType, data })).catch((error: unknown) => log.warn({ err: error, channel }, 'extension broadcast failed'));
  }

  /** The active account's install, or 404. */
  async function ownInstall(auth: AuthContext, id: string): Promise<InstallRef> {
    const accountId = requireAccountId(auth);
    const row = UUID_RE.test(id) ? await knex('extension_installs').where({ id, account_id: accountId }).first('id', 'account_id', 'extension_id') : undefined;
    if (!row) throw AppError.notFound(m.installNotFound);
    return row as InstallRef;
  }

  return {
    async storage(auth: AuthContext, installId: string): Promise<StorageEntry[]> {
      const install = await ownInstall(auth, installId);
      const rows = await knex('extension_install_storage').where({ install_id: install.id }).select(knex.raw(storageRows.select)).orderBy('key');
      return rows.map(storageEntryOf);
    },
    async setStorage(auth: AuthContext, installId: string, key: string, value: unknown): Promise<StorageEntry> {
      const install = await ownInstall(auth, installId);
      const serialised = JSON.stringify(value ?? null);
      if (Buffer.byteLength(serialised) > MAX_STORAGE_VALUE_BYTES) throw AppError.validation(m.storageValueTooLarge, { fields: [{ field: 'value', message: m.storageValueTooLarge }] });
      const [row] = (await knex('extension_install_storage')
        .insert({ install_id: install.id, key, value: JSON.stringify({ v: value ?? null }), updated_at: knex.fn.now() })
        .onConflict(['install_id', 'key'])
        .merge(['value', 'updated_at'])
        .returning(['key', 'value', 'updated_at'])) as Record<string, unknown>[];
      const entry = storageEntryOf(row!);
      await publish(`ext-storage:${install.id}`, 'storage:update', { install_id: install.id, key, value: entry.value, deleted: false });
      return entry;
    },
    async deleteStorage(auth: AuthContext, installId: string, key: string): Promise<void> {
      const install = await ownInstall(auth, installId);
      const deleted = await knex('extension_install_storage').where({ install_id: install.id, key }).delete().returning('key');
      if (deleted.length === 0) throw AppError.notFound(m.storageEntryNotFound);
      await publish(`ext-storage:${install.id}`, 'storage:update', { install_id: install.id, key, value: null, deleted: true });
    },

    /** The runtime's log writer (system key): stored, then published to the developer's and the account's channels. */
    async writeLog(input: { installId: string; level: LogLevel; message: string; data?: Record<string, unknown> | null }): Promise<ExtensionLog> {
      const install = (await knex('extension_installs').where({ id: input.installId }).first('id', 'account_id', 'extension_id')) as InstallRef | undefined;
      if (!install) throw AppError.notFound(m.installNotFound);
      const [row] = (await knex('extension_logs')
        .insert({
          id: randomUUID(),
          extension_id: install.extension_id,
          install_id: install.id,
          account_id: install.account_id,
          level: input.level,
          message: input.message,
          data: input.data === undefined || input.data === null ? null : JSON.stringify(input.data),
        })
        .returning('*')) as Record<string, unknown>[];
      const line = logRows.map(row!);
      await publish(`ext-logs:${install.extension_id}`, 'extension:log', logWire(line));
      await publish(`ext-install-logs:${install.account_id}`, 'extension:log', logWire(line));
      return line;
    },
    async installLogs(auth: AuthContext, installId: string): Promise<ExtensionLog[]> {
      const install = await ownInstall(auth, installId);
      const rows = await knex('extension_logs').where({ install_id: install.id, account_id: install.account_id }).select(knex.raw(logRows.select)).orderBy(newestFirst).limit(LOG_PAGE);
      return rows.map(logRows.map);
    },
    async extensionLogs(auth: AuthContext, extensionId: string): Promise<ExtensionLog[]> {
      const row = await deps.ownedExtension(auth, extensionId);
      const rows = await knex('extension_logs').where({ extension_id: row.id }).select(knex.raw(logRows.select)).orderBy(newestFirst).limit(LOG_PAGE);
      return rows.map(logRows.map);
    },
  };
}

export type Runtime = ReturnType<typeof createRuntime>;
