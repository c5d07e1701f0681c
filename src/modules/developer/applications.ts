/**
 * Developer applications and their review (Part 2, "Developer portal"): a user applies (solo or
 * team) once at a time; approval creates the developer profile (and for a team application the
 * team with its default roles, owned by the applicant), with the in-app notification and audit
 * row in the same transaction, then the mail.
 */
import { randomUUID } from 'node:crypto';
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { PageRequest } from '../../paging';
import { checkSlug, conflictOnDuplicate, required, reviewNotes, text, type DeveloperAccess, type DeveloperDeps } from './access';
import { developerMessages as M } from './errors';
import type { AdminDeveloperApplicationItem, DeveloperApplication, ReviewResult, SubmitApplicationInput } from './types';

export function createApplications({ knex, repo, audit, notifications }: DeveloperDeps, access: DeveloperAccess) {
  return {
    async myDeveloperApplication(ctx: AuthContext): Promise<DeveloperApplication> {
      const row = await repo.latestApplication(requireUserId(ctx));
      if (!row) throw AppError.notFound(M.noApplication);
      return row;
    },

    async submitDeveloperApplication(ctx: AuthContext, input: SubmitApplicationInput): Promise<DeveloperApplication> {
      const userId = requireUserId(ctx);
      if (input.applicationType !== 'solo' && input.applicationType !== 'team') throw AppError.validation(M.invalidApplicationType);
      const applicationType = input.applicationType;
      const slug = checkSlug(input.slug);
      const displayName = required(input.displayName, 'display_name');
      const description = required(input.description, 'description');
      const motivation = required(input.motivation, 'motivation');
      const whatToBuild = required(input.whatToBuild, 'what_to_build');
      return conflictOnDuplicate(
        () =>
          knex.transaction(async (trx) => {
            // The user's row is the lock: two submissions at once cannot both pass the checks.
            await trx('users').where({ id: userId }).forUpdate().first('id');
            if (await repo.profileOfUser(userId, trx)) throw new AppError('CONFLICT', M.alreadyDeveloper);
            if (await repo.pendingApplication(userId, trx)) throw new AppError('CONFLICT', M.pendingApplication);
            if (await repo.slugTaken(slug, trx)) throw new AppError('CONFLICT', M.slugTaken);
            return repo.insertApplication(trx, {
              id: randomUUID(),
              user_id: userId,
              application_type: applicationType,
              display_name: displayName,
              slug,
              description,
              motivation,
              what_to_build: whatToBuild,
              github_url: text(input.githubUrl),
              website_url: text(input.websiteUrl),
              experience: text(input.experience),
            });
          }),
        M.pendingApplication,
      );
    },

    async adminDeveloperApplications(status: string | undefined, request: PageRequest): Promise<{ items: AdminDeveloperApplicationItem[]; total: number }> {
      return repo.applications(status, request.limit, request.offset);
    },

    async adminDeveloperApplication(id: string): Promise<DeveloperApplication> {
      const row = await repo.applicationById(id);
      if (!row) throw AppError.notFound(M.applicationNotFound);
      return row;
    },

    /**
     * Creates the profile (and for a team application the team with its default roles, owned by
     * the applicant), notifies in-app in the same transaction, then e-mails.
     */
    async adminApproveDeveloperApplication(ctx: AuthContext, id: string, notes?: string | null): Promise<ReviewResult> {
      const note = reviewNotes(notes, false);
      await conflictOnDuplicate(
        () =>
          knex.transaction(async (trx) => {
            const app = await repo.applicationById(id, trx, true);
            if (!app) throw AppError.notFound(M.applicationNotFound);
            if (app.status !== 'pending') throw new AppError('CONFLICT', M.applicationNotPending);
            if (await repo.profileOfUser(app.userId, trx)) throw new AppError('CONFLICT', M.alreadyDeveloper);
            if (await repo.slugTaken(app.slug, trx, app.id)) throw new AppError('CONFLICT', M.slugTaken);
            const details = { description: app.description, githubUrl: app.githubUrl, websiteUrl: app.websiteUrl, avatarKey: app.avatarKey };
            const profile = await repo.insertProfile(trx, {
              id: randomUUID(),
              user_id: app.userId,
              display_name: app.displayName,
              slug: app.slug,
              description: details.description,
              github_url: details.githubUrl,
              website_url: details.websiteUrl,
              avatar_key: details.avatarKey,
            });
            const team = app.applicationType === 'team' ? await access.createTeamRows(trx, { name: app.displayName, slug: app.slug, ...details }, app.userId) : null;
            await repo.reviewApplication(trx, app.id, { status: 'approved', review_notes: note, reviewed_by: ctx.userId });
            await notifications.notify(
              {
                userId: app.userId,
                type: 'developer_application',
                data: { applicationId: app.id, status: 'approved', developerId: profile.id, teamId: team?.id ?? null },
                mail: { displayName: app.displayName, slug: app.slug, notes: note },
              },
              trx,
            );
            await audit.record(
              {
                scope: 'system',
                type: 'system:developer_application_approved',
                userId: app.userId,
                actorId: ctx.userId,
                metadata: { application_id: app.id, developer_id: profile.id, team_id: team?.id ?? null },
              },
              trx,
            );
            return app;
          }),
        M.slugTaken,
      );
      return { success: true, newStatus: 'approved' };
    },

    async adminRejectDeveloperApplication(ctx: AuthContext, id: string, notes?: string | null): Promise<ReviewResult> {
      const note = reviewNotes(notes, true)!;
      await knex.transaction(async (trx) => {
        const app = await repo.applicationById(id, trx, true);
        if (!app) throw AppError.notFound(M.applicationNotFound);
        if (app.status !== 'pending') throw new AppError('CONFLICT', M.applicationNotPending);
        await repo.reviewApplication(trx, app.id, { status: 'rejected', review_notes: note, reviewed_by: ctx.userId });
        await notifications.notify(
          { userId: app.userId, type: 'developer_application', data: { applicationId: app.id, status: 'rejected', notes: note }, mail: { displayName: app.displayName, slug: app.slug } },
          trx,
        );
        await audit.record({ scope: 'system', type: 'system:developer_application_rejected', userId: app.userId, actorId: ctx.userId, metadata: { application_id: app.id } }, trx);
        return app;
      });
      return { success: true, newStatus: 'rejected' };
    },
  };
}
