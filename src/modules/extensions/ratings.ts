/**
 * Ratings of extensions: a user whose active account installed an extension rates it 1 to 5, one
 * rating per user (whatever the account), replaced by rating again or withdrawn. Profiles read
 * `rating_avg`, `rating_count` and `stats.avg_rating` from these rows (repo.ts), so there is no
 * counter to keep in step.
 * Owns the `extension_ratings` table; reads `extension_installs` for the install check.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { requireAccountId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import { schemaRows } from '../../infra/db/rows';
import { extensionMessages as m } from './errors';
import { UUID_RE } from '../../infra/ids';

export type ExtensionRating = Camelize<components['schemas']['ExtensionRating']>;

const ratingRows = schemaRows('ExtensionRating');

/** The rating's user: a key or token acting for no user (a service key, an extension token) rates nothing. */
function raterOf(auth: AuthContext): string {
  if (!auth.userId || auth.kind === 'extension') throw AppError.forbidden(m.userRatesOnly);
  return auth.userId;
}

export function createRatings(deps: { knex: Knex }) {
  const { knex } = deps;

  /** The extension's row, or 404. */
  async function existingExtension(trx: Knex.Transaction, id: string): Promise<void> {
    if (!UUID_RE.test(id) || !(await trx('extensions').where({ id }).first('id'))) throw AppError.notFound(m.extensionNotFound);
  }

  return {
    /** extension_ratings.mine */
    async mine(auth: AuthContext, extensionId: string): Promise<ExtensionRating> {
      const userId = raterOf(auth);
      const row = UUID_RE.test(extensionId) ? await knex('extension_ratings').where({ extension_id: extensionId, user_id: userId }).first(knex.raw(ratingRows.select)) : undefined;
      if (!row) throw AppError.notFound(m.ratingNotFound);
      return ratingRows.map(row as Record<string, unknown>);
    },

    /** extension_ratings.upsert, after the install check in the same transaction. */
    async rate(auth: AuthContext, extensionId: string, rating: number): Promise<ExtensionRating> {
      // REST refused these at the edge with the same words (x-error-message); GraphQL reaches here unchecked.
      if (!Number.isInteger(rating) || rating < 1 || rating > 5) throw AppError.validation(m.invalidRating, { fields: [{ field: 'rating', message: m.invalidRating }] });
      const userId = raterOf(auth);
      const accountId = requireAccountId(auth);
      return knex.transaction(async (trx) => {
        await existingExtension(trx, extensionId);
        if (!(await trx('extension_installs').where({ extension_id: extensionId, account_id: accountId }).first('id'))) throw AppError.forbidden(m.installBeforeRating);
        const [row] = (await trx('extension_ratings')
          .insert({ extension_id: extensionId, user_id: userId, account_id: accountId, rating })
          .onConflict(['extension_id', 'user_id'])
          .merge({ rating, account_id: accountId, updated_at: trx.fn.now() })
          .returning(['extension_id', 'user_id', 'rating', 'created_at', 'updated_at'])) as Record<string, unknown>[];
        return ratingRows.map(row!);
      });
    },

    /** extension_ratings.delete */
    async remove(auth: AuthContext, extensionId: string): Promise<void> {
      const userId = raterOf(auth);
      const removed = UUID_RE.test(extensionId) ? await knex('extension_ratings').where({ extension_id: extensionId, user_id: userId }).delete().returning('rating') : [];
      if (removed.length === 0) throw AppError.notFound(m.ratingNotFound);
    },
  };
}

export type Ratings = ReturnType<typeof createRatings>;
