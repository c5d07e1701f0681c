/**
 * Developer verification and its review (Part 2, "Developer portal"): an approved developer
 * submits (and while not verified resubmits) their legal identity; an operator verifies or
 * rejects it, notifying the developer in the review's transaction. The record's personal data
 * never reaches the audit log (ids and status only).
 */
import { randomUUID } from 'node:crypto';
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { PageRequest } from '../../paging';
import { conflictOnDuplicate, required, reviewNotes, text, type DeveloperAccess, type DeveloperDeps } from './access';
import { developerMessages as M } from './errors';
import type { VerificationFields } from './repo';
import type { DeveloperVerification, ReviewResult, SubmitVerificationInput } from './types';

export function createVerification({ knex, repo, audit, notifications }: DeveloperDeps, access: DeveloperAccess) {
  return {
    async developerVerificationStatus(ctx: AuthContext): Promise<DeveloperVerification | null> {
      const profile = await access.requireProfile(ctx, M.verificationNeedsDeveloper);
      return (await repo.verificationOf(profile.id)) ?? null;
    },

    /** Upsert while none, pending or rejected; verified is terminal (409). */
    async submitDeveloperVerification(ctx: AuthContext, input: SubmitVerificationInput): Promise<DeveloperVerification> {
      const profile = await access.requireProfile(ctx, M.verificationNeedsDeveloper);
      const fields: VerificationFields = {
        legal_name: required(input.legalName, 'legal_name', M.legalNameRequired),
        address_line1: required(input.addressLine1, 'address_line1', M.addressLine1Required),
        postal_code: required(input.postalCode, 'postal_code', M.postalCodeRequired),
        city: required(input.city, 'city', M.cityRequired),
        country: required(input.country, 'country', M.countryRequired),
        company_name: text(input.companyName),
        address_line2: text(input.addressLine2),
        tax_id: text(input.taxId),
        trade_register_id: text(input.tradeRegisterId),
        document_key: text(input.documentKey),
      };
      if (!/^[A-Za-z]{2}$/.test(fields.country)) throw AppError.validation(M.countryFormat);
      fields.country = fields.country.toUpperCase();
      const userId = requireUserId(ctx);
      return conflictOnDuplicate(
        () =>
          knex.transaction(async (trx) => {
            // The profile row is the lock: a first submission twice at once inserts once.
            await trx('developer_profiles').where({ id: profile.id }).forUpdate().first('id');
            const existing = await repo.verificationOf(profile.id, trx, true);
            if (existing?.status === 'verified') throw new AppError('CONFLICT', M.verificationApproved);
            const saved = existing ? await repo.resubmitVerification(trx, existing.id, fields) : await repo.insertVerification(trx, { id: randomUUID(), developer_id: profile.id, ...fields });
            // Ids and status only: the record's personal data never goes into the audit log.
            await audit.record(
              {
                scope: 'user',
                type: 'developer:verification_submitted',
                userId,
                actorId: userId,
                metadata: { verification_id: saved.id, developer_id: profile.id, status: saved.status, resubmission: existing !== undefined },
              },
              trx,
            );
            return saved;
          }),
        M.verificationApproved,
      );
    },

    async adminDeveloperVerifications(status: string | undefined, request: PageRequest): Promise<{ items: DeveloperVerification[]; total: number }> {
      return repo.verifications(status, request.limit, request.offset);
    },

    async adminDeveloperVerification(id: string): Promise<DeveloperVerification> {
      const row = await repo.verificationById(id);
      if (!row) throw AppError.notFound(M.verificationNotFound);
      return row;
    },

    async adminReviewDeveloperVerification(ctx: AuthContext, id: string, verdict: 'verified' | 'rejected', notes?: string | null): Promise<ReviewResult> {
      const note = reviewNotes(notes, verdict === 'rejected');
      await knex.transaction(async (trx) => {
        const row = await repo.verificationById(id, trx, true);
        if (!row) throw AppError.notFound(M.verificationNotFound);
        if (row.status !== 'pending') throw new AppError('CONFLICT', M.verificationNotPending);
        const profile = (await trx('developer_profiles').where({ id: row.developerId }).first('user_id')) as { user_id: string };
        await repo.reviewVerification(trx, id, { status: verdict, review_notes: note, reviewed_by: ctx.userId });
        await notifications.notify(
          { userId: profile.user_id, type: 'developer_verification', data: { verificationId: id, status: verdict, ...(verdict === 'rejected' ? { notes: note } : {}) }, mail: { notes: note } },
          trx,
        );
        await audit.record(
          {
            scope: 'system',
            type: verdict === 'verified' ? 'system:developer_verification_approved' : 'system:developer_verification_rejected',
            userId: profile.user_id,
            actorId: ctx.userId,
            metadata: { verification_id: id, developer_id: row.developerId },
          },
          trx,
        );
        return profile.user_id;
      });
      return { success: true, newStatus: verdict };
    },
  };
}
