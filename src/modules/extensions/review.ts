/**
 * Extension version review: a submitted version waits in `pending_review`
 * until an operator holding admin `extension-review:edit` approves it (it becomes `published`,
 * and its extension public) or rejects it with notes (`rejected`; the developer may upload again
 * and resubmit). The submitter (else the extension's creator) is notified (`extension_review`) in
 * the decision's own transaction; after an approval committed, every install of the extension is told
 * the bundle it runs now (bundles.ts, `extension:updated`). The admin gates are declared in
 * spec/openapi/modules/extensions/versions.yaml.
 */
import type { Knex } from 'knex';
import type { AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { ModuleApis } from '../contract';
import { extensionMessages as m } from './errors';
import { schemaRows, tableColumns } from '../../infra/db/rows';
import type { ExtensionReview } from './records';
import type { ExtensionsRepo } from './repo';
import { UUID_RE } from '../../infra/ids';

type ReviewStatus = 'pending_review' | 'published' | 'rejected';

/** A version under review, with its extension's name and owner. */
const reviewFrom = { table: 'v', from: { extension_name: 'e.name', developer_id: 'e.developer_id', team_id: 'e.team_id' } } as const;
const reviewRows = schemaRows('ExtensionReview', reviewFrom);
/** The same, with whom a decision is told to: the submitter, else the extension's creator (neither on the wire). */
const decisionRows = schemaRows('ExtensionReview', {
  ...reviewFrom,
  extra: { ...tableColumns('extension_versions', ['submitted_by'], 'v'), ...tableColumns('extensions', ['created_by'], 'e') },
});

export function createReview(deps: {
  repo: ExtensionsRepo;
  knex: Knex;
  notifications: Pick<ModuleApis['notifications'], 'notify'>;
  /** Run after an approval committed: the installs learn which bundle they run now (bundles.ts). */
  published: (extensionId: string) => Promise<void>;
}) {
  const { repo, knex } = deps;
  const reviews = (db: Knex | Knex.Transaction = knex, select = reviewRows.select) =>
    db('extension_versions as v').join('extensions as e', 'e.id', 'v.extension_id').select(db.raw(select));
  const underReview = async (db: Knex.Transaction, versionId: string) => {
    const row = await reviews(db, decisionRows.select).where('v.id', versionId).first();
    return row ? decisionRows.map(row) : undefined;
  };

  async function decide(auth: AuthContext, versionId: string, decision: 'published' | 'rejected', notes: string | null): Promise<ExtensionReview> {
    if (!UUID_RE.test(versionId)) throw AppError.notFound(m.versionNotFound);
    return knex.transaction(async (trx) => {
      const found = await underReview(trx, versionId);
      if (!found) throw AppError.notFound(m.versionNotFound);
      if (decision === 'rejected' && !notes) throw AppError.validation(m.reviewNotesRequired, { fields: [{ field: 'notes', message: m.reviewNotesRequired }] });
      // The extension's lock orders this against a concurrent submission or a second decision.
      await repo.lockExtension(found.extensionId, trx);
      const current = (await underReview(trx, versionId))!;
      if (current.status !== 'pending_review') throw new AppError('CONFLICT', m.notAwaitingReview);
      const reviewed = { review_notes: notes, reviewed_by: auth.userId, reviewed_at: trx.fn.now() };
      if (decision === 'published') {
        await repo.updateVersion(current.id, { status: 'published', published_at: trx.fn.now(), ...reviewed }, trx);
        const extension = (await repo.extensionById(current.extensionId, trx))!;
        await repo.updateExtension(current.extensionId, { status: 'published', ...(extension.publishedAt ? {} : { published_at: trx.fn.now() }) }, trx);
      } else {
        await repo.updateVersion(current.id, { status: 'rejected', ...reviewed }, trx);
      }
      const developerUser = current.submittedBy ?? current.createdBy;
      if (developerUser) {
        await deps.notifications.notify(
          {
            userId: developerUser,
            type: 'extension_review',
            data: { extensionId: current.extensionId, versionId: current.id, version: current.version, status: decision === 'published' ? 'approved' : 'rejected', notes },
            mail: { extensionName: current.extensionName },
          },
          trx,
        );
      }
      return reviewRows.map(await reviews(trx).where('v.id', versionId).first());
    });
  }

  return {
    async list(status: ReviewStatus = 'pending_review'): Promise<ExtensionReview[]> {
      const rows = await reviews()
        .where('v.status', status)
        .orderBy([{ column: 'v.submitted_at' }, { column: 'v.created_at' }, { column: 'v.id' }]);
      return rows.map(reviewRows.map);
    },
    async approve(auth: AuthContext, versionId: string, notes?: string | null): Promise<ExtensionReview> {
      const approved = await decide(auth, versionId, 'published', notes?.trim() ? notes.trim() : null);
      await deps.published(approved.extensionId);
      return approved;
    },
    reject: (auth: AuthContext, versionId: string, notes: string) => decide(auth, versionId, 'rejected', notes.trim() ? notes.trim() : null),
  };
}

export type Review = ReturnType<typeof createReview>;
