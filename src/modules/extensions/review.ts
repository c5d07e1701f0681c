/**
 * Extension version review (issue 33, item 3): a submitted version waits in `pending_review`
 * until an operator holding admin `extension-review:edit` approves it (it becomes `published`,
 * and its extension public) or rejects it with notes (`rejected`; the developer may upload again
 * and resubmit). The submitter (else the extension's creator) is notified (`extension_review`) in
 * the decision's own transaction. The admin gates are declared in spec/openapi/modules/extensions.yaml.
 */
import type { Knex } from 'knex';
import type { AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { ModuleApis } from '../contract';
import { extensionMessages as m } from './errors';
import { reviewOf, type ExtensionReview } from './records';
import type { ExtensionsRepo, VersionRow } from './repo';

type ReviewStatus = 'pending_review' | 'published' | 'rejected';

interface ReviewRow extends VersionRow {
  extension_name: string;
  developer_id: string | null;
  team_id: string | null;
  created_by: string | null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createReview(deps: { repo: ExtensionsRepo; knex: Knex; notifications: Pick<ModuleApis['notifications'], 'notify'> }) {
  const { repo, knex } = deps;
  const reviews = (db: Knex | Knex.Transaction = knex) =>
    db('extension_versions as v').join('extensions as e', 'e.id', 'v.extension_id').select('v.*', 'e.name as extension_name', 'e.developer_id', 'e.team_id', 'e.created_by');

  async function decide(auth: AuthContext, versionId: string, decision: 'published' | 'rejected', notes: string | null): Promise<ExtensionReview> {
    if (!UUID_RE.test(versionId)) throw AppError.notFound(m.versionNotFound);
    const row = await knex.transaction(async (trx) => {
      const found = (await reviews(trx).where('v.id', versionId).first()) as ReviewRow | undefined;
      if (!found) throw AppError.notFound(m.versionNotFound);
      if (decision === 'rejected' && !notes) throw AppError.validation(m.reviewNotesRequired, { fields: [{ field: 'notes', message: m.reviewNotesRequired }] });
      // The extension's lock orders this against a concurrent submission or a second decision.
      await repo.lockExtension(found.extension_id, trx);
      const current = (await reviews(trx).where('v.id', versionId).first()) as ReviewRow;
      if (current.status !== 'pending_review') throw new AppError('CONFLICT', m.notAwaitingReview);
      const reviewed = { review_notes: notes, reviewed_by: auth.userId, reviewed_at: trx.fn.now() };
      if (decision === 'published') {
        await repo.updateVersion(current.id, { status: 'published', published_at: trx.fn.now(), ...reviewed }, trx);
        const extension = (await repo.extensionById(current.extension_id, trx))!;
        await repo.updateExtension(current.extension_id, { status: 'published', ...(extension.published_at ? {} : { published_at: trx.fn.now() as unknown as Date }) }, trx);
      } else {
        await repo.updateVersion(current.id, { status: 'rejected', ...reviewed }, trx);
      }
      const developerUser = current.submitted_by ?? current.created_by;
      if (developerUser) {
        await deps.notifications.notify(
          {
            userId: developerUser,
            type: 'extension_review',
            data: { extensionId: current.extension_id, versionId: current.id, version: current.version, status: decision === 'published' ? 'approved' : 'rejected', notes },
            mail: { extensionName: current.extension_name },
          },
          trx,
        );
      }
      return (await reviews(trx).where('v.id', versionId).first()) as ReviewRow;
    });
    return reviewOf(row);
  }

  return {
    async list(status: ReviewStatus = 'pending_review'): Promise<ExtensionReview[]> {
      const rows = (await reviews()
        .where('v.status', status)
        .orderBy([{ column: 'v.submitted_at' }, { column: 'v.created_at' }, { column: 'v.id' }])) as ReviewRow[];
      return rows.map(reviewOf);
    },
    approve: (auth: AuthContext, versionId: string, notes?: string | null) => decide(auth, versionId, 'published', notes?.trim() ? notes.trim() : null),
    reject: (auth: AuthContext, versionId: string, notes: string) => decide(auth, versionId, 'rejected', notes.trim() ? notes.trim() : null),
  };
}

export type Review = ReturnType<typeof createReview>;
