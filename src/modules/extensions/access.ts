/**
 * Access to an extension before it is published (Part 1 lists
 * `grantExtensionAccess` and `createExtensionAccessInvite` among the first-party operations): a
 * developer grants one user access, or creates an invite code whoever accepts it is granted
 * access with. A granted user installs the extension's latest uploaded version as a tester does.
 * Invite codes (`lm_inv_` + 32 hex) are stored as SHA-256 only and answered once. The first-party
 * gate is declared in the specs; a team extension needs the member's `team-testers:invite`.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import { isoTime } from '../../infra/db/database';
import { schemaRows } from '../../infra/db/rows';
import { extensionMessages as m } from './errors';
import type { AccessGrant } from './records';
import type { ExtensionsRepo } from './repo';

type Schemas = components['schemas'];
export type AccessInvite = Camelize<Schemas['ExtensionAccessInvite']>;

const grantRows = schemaRows('ExtensionAccessGrant');
const INVITE_PREFIX = 'lm_inv_';
const codeHash = (code: string) => createHash('sha256').update(code, 'utf8').digest('hex');

export function createAccess(deps: { repo: ExtensionsRepo; knex: Knex; ownedForInvite: (auth: AuthContext, id: string) => Promise<{ id: string }> }) {
  const { repo, knex } = deps;

  /** Inserts the grant unless it exists; answers the grant either way. */
  async function grant(db: Knex | Knex.Transaction, extensionId: string, userId: string, grantedBy: string | null, inviteId: string | null): Promise<AccessGrant> {
    await db('extension_access_grants').insert({ extension_id: extensionId, user_id: userId, granted_by: grantedBy, invite_id: inviteId }).onConflict(['extension_id', 'user_id']).ignore();
    return grantRows.map(await db('extension_access_grants').where({ extension_id: extensionId, user_id: userId }).first(db.raw(grantRows.select)));
  }

  return {
    /** Whether a user was granted access to the extension. */
    async hasAccess(extensionId: string, userId: string): Promise<boolean> {
      return Boolean(await knex('extension_access_grants').where({ extension_id: extensionId, user_id: userId }).first('user_id'));
    },

    async grantAccess(auth: AuthContext, extensionId: string, userId: string): Promise<AccessGrant> {
      const row = await deps.ownedForInvite(auth, extensionId);
      if (!(await repo.userExists(userId))) throw AppError.notFound(m.userNotFound);
      return grant(knex, row.id, userId, requireUserId(auth), null);
    },

    async createInvite(auth: AuthContext, extensionId: string, input: { expiresAt?: string | null; maxUses?: number | null } = {}): Promise<AccessInvite> {
      const row = await deps.ownedForInvite(auth, extensionId);
      let expiresAt: Date | null = null;
      if (input.expiresAt !== undefined && input.expiresAt !== null) {
        expiresAt = new Date(input.expiresAt);
        if (Number.isNaN(expiresAt.getTime())) throw AppError.validation(m.invalidExpiry, { fields: [{ field: 'expires_at', message: m.invalidExpiry }] });
        if (expiresAt.getTime() <= Date.now()) throw AppError.validation(m.expiresInPast, { fields: [{ field: 'expires_at', message: m.expiresInPast }] });
      }
      const maxUses = input.maxUses ?? null;
      if (maxUses !== null && (!Number.isInteger(maxUses) || maxUses < 1 || maxUses > 10000)) {
        const message = 'max_uses must be between 1 and 10000';
        throw AppError.validation(message, { fields: [{ field: 'max_uses', message }] });
      }
      const code = `${INVITE_PREFIX}${randomBytes(16).toString('hex')}`;
      const id = randomUUID();
      const [inserted] = (await knex('extension_access_invites')
        .insert({ id, extension_id: row.id, code_hash: codeHash(code), max_uses: maxUses, created_by: requireUserId(auth), expires_at: expiresAt })
        .returning(['created_at'])) as { created_at: Date }[];
      return { id, extensionId: row.id, code, expiresAt: expiresAt ? expiresAt.toISOString() : null, maxUses, createdAt: isoTime(inserted!.created_at) };
    },

    /** Accepts a code: one use is counted under the invite's row lock, so `max_uses` holds under concurrency. */
    async acceptInvite(auth: AuthContext, code: string): Promise<AccessGrant> {
      const userId = requireUserId(auth);
      return knex.transaction(async (trx) => {
        const invite = (await trx('extension_access_invites').where({ code_hash: codeHash(code) }).forUpdate().first()) as
          | { id: string; extension_id: string; max_uses: number | null; uses: number; expires_at: Date | null; created_by: string | null }
          | undefined;
        const live = invite && (invite.expires_at === null || new Date(invite.expires_at).getTime() > Date.now()) && (invite.max_uses === null || invite.uses < invite.max_uses);
        if (!invite || !live) throw AppError.notFound(m.inviteNotFound);
        const existing = await trx('extension_access_grants').where({ extension_id: invite.extension_id, user_id: userId }).first('user_id');
        if (!existing) await trx('extension_access_invites').where({ id: invite.id }).increment('uses', 1);
        return grant(trx, invite.extension_id, userId, invite.created_by, invite.id);
      });
    },
  };
}

export type Access = ReturnType<typeof createAccess>;
