/**
 * The account-scoped extension secret store: values an account's owner or administrator (or a
 * popout holding `extension-store:configure`) stores for one install, for that install's extension
 * to read with its own `lm_ext_` token (an upstream API key, a webhook secret). Values are sealed
 * at rest by the SecretBox (src/auth/secrets.ts; the table is in src/auth/sealed.ts's
 * SEALED_COLUMNS, so the start-up check and `npm run secrets:reseal` cover it) and write-only over
 * the account's routes: a read shows names and timestamps, never values. Only `read` opens a
 * value, and its gate (`x-auth: extension`) admits the extension token alone; the install it reads
 * from is the token's binding, never a parameter.
 * Owns the `extension_install_secrets` table; reads `extension_installs` to scope writes to the
 * caller's active account. Every write (set, delete) is audited in its transaction, in the
 * account's audit log (`account:extension_secret_set`, `account:extension_secret_deleted`): who,
 * which install and extension, which name; never the value, sealed or not.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { requireAccountId, type AuthContext } from '../../auth/context';
import type { SecretBox } from '../../auth/secrets';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import { schemaRows, tableColumns } from '../../infra/db/rows';
import { extensionMessages as m } from './errors';
import { UUID_RE } from '../../infra/ids';
import type { ModuleApis } from '../contract';

type Schemas = components['schemas'];
export type ExtensionSecret = Camelize<Schemas['ExtensionSecret']>;
export type ExtensionSecretValue = Camelize<Schemas['ExtensionSecretValue']>;

/** Secrets one install may hold: a store of credentials, not a database. */
export const MAX_SECRETS_PER_INSTALL = 100;

/** The spec's ExtensionSecretName: REST refuses others at the edge with the same words (x-error-message). */
const NAME_RE = /^[A-Za-z0-9_.-]{1,100}$/;
const MAX_VALUE_LENGTH = 8192;
const invalid = (field: string, message: string) => AppError.validation(message, { fields: [{ field, message }] });

/** The checks REST's validator made from the spec, repeated for GraphQL, which reaches here unchecked. */
function checkName(name: string): void {
  if (!NAME_RE.test(name)) throw invalid('name', m.invalidSecretName);
}
const secretRows = schemaRows('ExtensionSecret');
/** A secret with its sealed value, from `extension_install_secrets as s` joined to its install. */
const sealedRows = schemaRows('ExtensionSecret', { table: 's', extra: tableColumns('extension_install_secrets', ['value_sealed'], 's') });

export function createSecrets(deps: { knex: Knex; box: SecretBox; audit: Pick<ModuleApis['audit'], 'record'> }) {
  const { knex, box, audit } = deps;

  /** The active account's install (locked for the write's transaction when `trx` is given), or 404. */
  async function ownInstall(auth: AuthContext, id: string, trx?: Knex.Transaction): Promise<string> {
    return (await installOf(auth, id, trx)).id;
  }

  async function installOf(auth: AuthContext, id: string, trx?: Knex.Transaction): Promise<{ id: string; extension_id: string }> {
    const accountId = requireAccountId(auth);
    if (!UUID_RE.test(id)) throw AppError.notFound(m.installNotFound);
    const query = (trx ?? knex)('extension_installs').where({ id, account_id: accountId }).first('id', 'extension_id');
    const row = (await (trx ? query.forUpdate() : query)) as { id: string; extension_id: string } | undefined;
    if (!row) throw AppError.notFound(m.installNotFound);
    return row;
  }

  /** The write's audit row, in its transaction: the install, its extension and the secret's name, never its value. */
  const recordWrite = (trx: Knex.Transaction, auth: AuthContext, type: string, install: { id: string; extension_id: string }, name: string, extra: Record<string, unknown> = {}) =>
    audit.record({ scope: 'account', type, accountId: requireAccountId(auth), userId: auth.userId, actorId: auth.userId, metadata: { install_id: install.id, extension_id: install.extension_id, name, ...extra } }, trx);

  return {
    /** extension_install_secrets.list: names and timestamps of one install's secrets, by name. */
    async list(auth: AuthContext, installId: string): Promise<ExtensionSecret[]> {
      const id = await ownInstall(auth, installId);
      const rows = await knex('extension_install_secrets').where({ install_id: id }).select(knex.raw(secretRows.select)).orderBy('name');
      return rows.map(secretRows.map);
    },

    /** extension_install_secrets.upsert: seals and stores one value; the answer carries no value. */
    async set(auth: AuthContext, installId: string, name: string, value: string): Promise<ExtensionSecret> {
      checkName(name);
      if (value.length < 1 || value.length > MAX_VALUE_LENGTH) throw invalid('value', m.invalidSecretValue);
      return knex.transaction(async (trx) => {
        const install = await installOf(auth, installId, trx);
        const id = install.id;
        const exists = await trx('extension_install_secrets').where({ install_id: id, name }).first('name');
        if (!exists) {
          const [{ n }] = (await trx('extension_install_secrets').where({ install_id: id }).count({ n: '*' })) as [{ n: number | string }];
          if (Number(n) >= MAX_SECRETS_PER_INSTALL) throw new AppError('CONFLICT', m.tooManySecrets);
        }
        const sealed = box.seal(value);
        const [row] = (await trx('extension_install_secrets')
          .insert({ install_id: id, name, value_sealed: sealed, created_by: auth.userId })
          .onConflict(['install_id', 'name'])
          .merge({ value_sealed: sealed, updated_at: trx.fn.now() })
          .returning(['name', 'created_at', 'updated_at'])) as Record<string, unknown>[];
        await recordWrite(trx, auth, 'account:extension_secret_set', install, name, { replaced: Boolean(exists) });
        return secretRows.map(row!);
      });
    },

    /** extension_install_secrets.delete */
    async remove(auth: AuthContext, installId: string, name: string): Promise<void> {
      checkName(name);
      await knex.transaction(async (trx) => {
        const install = await installOf(auth, installId, trx);
        const deleted = await trx('extension_install_secrets').where({ install_id: install.id, name }).delete().returning('name');
        if (deleted.length === 0) throw AppError.notFound(m.secretNotFound);
        await recordWrite(trx, auth, 'account:extension_secret_deleted', install, name);
      });
    },

    /** extension_install_secrets.read: one value, opened, for the install the extension token is bound to. */
    async read(auth: AuthContext, name: string): Promise<ExtensionSecretValue> {
      checkName(name);
      const installId = auth.kind === 'extension' ? auth.binding?.installId : undefined;
      const accountId = requireAccountId(auth);
      if (!installId || !UUID_RE.test(installId)) throw AppError.notFound(m.secretNotFound);
      const row = await knex('extension_install_secrets as s')
        .join('extension_installs as i', 'i.id', 's.install_id')
        .where({ 's.install_id': installId, 's.name': name, 'i.account_id': accountId })
        .first(knex.raw(sealedRows.select));
      if (!row) throw AppError.notFound(m.secretNotFound);
      const secret = sealedRows.map(row as Record<string, unknown>);
      return { name: secret.name, value: box.open(secret.valueSealed), updatedAt: secret.updatedAt };
    },
  };
}

export type Secrets = ReturnType<typeof createSecrets>;
