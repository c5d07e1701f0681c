/**
 * Extensions (Part 1, "Key rules" 4 and the first-party gate; Part 2, "Developer portal", "Limit
 * request", "Public developer profile", "Limits"): the publishing surface a developer reaches with
 * a session or a developer key (publishing submits a version for review, see review.ts), limit
 * requests and their review, public profiles and the internal bot and automation feeds (account
 * installs live in installs.ts). Gates (auth kind, `extension-dev:*` scope,
 * admin and account permissions, feature flags) are declared in spec/ and enforced by shared
 * code; this service adds only the data-dependent checks: which profile or team owns an
 * extension, and the team permission a member acts through.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { requireUserId, type AuthContext } from '../../auth/context';
import { isAccountPermission } from '../../auth/registry';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import type { Logger } from '../../infra/logger';
import { pageOf, type Page, type PageRequest } from '../../paging';
import type { ModuleApis } from '../contract';
import type { DeveloperApi } from '../developer';
import type { ExtensionSoundLimits, SoundsApi } from '../sounds';
import { bundleHash } from './bundle-content';
import { extensionMessages as m } from './errors';
import type {
  Extension,
  ExtensionPurchase,
  ExtensionVersion,
  InstallConfig,
  LimitRequest,
  LimitRequestEvent,
  Manifest,
  RequestedLimits,
} from './records';
import type { ExtensionsRepo, FeedInstall, Owners, PublishedExtension } from './repo';
import { UUID_RE } from '../../infra/ids';

type Schemas = components['schemas'];
/**
 * An extension purchase as the payment-connect webhook reports it (idempotent on `externalId`, the
 * provider's checkout session or payment id; `accountId` null when the checkout did not carry it).
 */
export type PurchaseRecord = Pick<ExtensionPurchase, 'externalId' | 'extensionId' | 'accountId' | 'buyerUserId' | 'amountCents' | 'currency'>;
export type ExtensionLimits = Camelize<Schemas['ExtensionLimits']>;
type CreateExtensionInput = Camelize<Schemas['CreateExtensionBody']>;
type UpdateExtensionInput = Camelize<Schemas['UpdateExtensionBody']>;
type FeedCommand = Camelize<Schemas['FeedCommand']>;
type FeedKeyword = Camelize<Schemas['FeedKeyword']>;
type FeedPattern = Camelize<Schemas['FeedPattern']>;

/**
 * What an action on an extension needs: for a team extension, the team permission a member acts
 * through (null: membership is enough). A developer key's `extension-dev:*` scope is the declared
 * gate; here a key only has to be bound to the owning profile or team.
 */
const TEAM_PERMISSION = {
  read: null,
  edit: 'team-extensions:edit',
  delete: 'team-extensions:delete',
  publish: 'team-extensions:publish',
  analytics: 'team-extensions:analytics',
  createVersion: 'team-versions:create',
  uploadVersion: 'team-versions:edit',
  payouts: 'team-payouts:read',
  readTesters: 'team-testers:read',
  inviteTester: 'team-testers:invite',
  removeTester: 'team-testers:remove',
} as const;
export type ExtensionAction = keyof typeof TEAM_PERMISSION;

const SHORT_ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function shortId(): string {
  return [...randomBytes(10)].map((b) => SHORT_ID_ALPHABET[b % SHORT_ID_ALPHABET.length]).join('');
}

/** Requested limits in wire form, for a timeline event's opaque `details`. */
function limitsDetails(limits: Partial<ExtensionSoundLimits>): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  if (limits.maxSounds !== undefined) out.max_sounds = limits.maxSounds;
  if (limits.maxSoundFileSize !== undefined) out.max_sound_file_size = limits.maxSoundFileSize;
  if (limits.maxSoundStorageBytes !== undefined) out.max_sound_storage_bytes = limits.maxSoundStorageBytes;
  return out;
}

function defined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Every handler name a manifest declares (its `handlers` list). */
const declaredHandlers = (manifest: Manifest): Set<string> => new Set(manifest.handlers ?? []);

/** Whether a version's manifest carries anything for the bot runtime. */
const isBotModule = (manifest: Manifest): boolean =>
  Boolean(manifest.commands?.length || manifest.keywords?.length || manifest.patterns?.length || manifest.hasModerate);

/**
 * Per-install config triggers override manifest triggers (Part 2): an override matched on the
 * trigger's key replaces the members it sets; one matching no manifest trigger adds a trigger
 * when it names a declared handler; everything else keeps the manifest's values.
 */
function overrideTriggers<T extends { handler: string }>(base: T[], overrides: Partial<T>[] | undefined, key: keyof T, handlers: Set<string>): T[] {
  const merged = base.map((t) => ({ ...t }));
  for (const override of overrides ?? []) {
    const set = defined(override);
    const at = merged.findIndex((t) => t[key] === set[key]);
    if (at >= 0) merged[at] = { ...merged[at]!, ...set };
    else if (set.handler !== undefined && handlers.has(set.handler)) merged.push(set as T);
  }
  return merged;
}

function triggersOf(manifest: Manifest, config: InstallConfig): { commands: FeedCommand[]; keywords: FeedKeyword[]; patterns: FeedPattern[] } {
  const handlers = declaredHandlers(manifest);
  const command = (c: Partial<FeedCommand>): FeedCommand => ({ alias: null, cooldownGlobal: 0, cooldownUser: 0, minRole: 'everyone', enabled: true, name: '', handler: '', ...defined(c) });
  const keyword = (k: Partial<FeedKeyword>): FeedKeyword => ({ enabled: true, value: '', handler: '', ...defined(k) });
  const pattern = (p: Partial<FeedPattern>): FeedPattern => ({ enabled: true, regex: '', handler: '', ...defined(p) });
  return {
    commands: overrideTriggers((manifest.commands ?? []).map(command), config.commands as Partial<FeedCommand>[] | undefined, 'name', handlers).map(command),
    keywords: overrideTriggers((manifest.keywords ?? []).map(keyword), config.keywords as Partial<FeedKeyword>[] | undefined, 'value', handlers).map(keyword),
    patterns: overrideTriggers((manifest.patterns ?? []).map(pattern), config.patterns as Partial<FeedPattern>[] | undefined, 'regex', handlers).map(pattern),
  };
}

export function createExtensionsService(deps: { repo: ExtensionsRepo; knex: Knex; developer: DeveloperApi; sounds: SoundsApi; log: Logger; notifications: Pick<ModuleApis['notifications'], 'notify'> }) {
  const { repo, knex, developer, sounds, log } = deps;
  const notFound = () => AppError.notFound(m.extensionNotFound);

  /** The developer profile or team a developer key is bound to (one id; profile and team ids never collide). */
  const keySubject = (auth: AuthContext): string | null => auth.binding?.developerId ?? auth.binding?.teamId ?? null;

  /** The profiles and teams whose extensions the caller may see. */
  async function ownersOf(auth: AuthContext): Promise<Owners> {
    if (auth.kind === 'developer_api_key') {
      const subject = keySubject(auth);
      return subject ? { developerIds: [subject], teamIds: [subject] } : { developerIds: [], teamIds: [] };
    }
    const userId = requireUserId(auth);
    const [profile, teams] = await Promise.all([developer.profileOfUser(userId), developer.teamsOfUser(userId)]);
    return { developerIds: profile ? [profile.id] : [], teamIds: teams.map((t) => t.id) };
  }

  /** Whether a user develops the extension (its profile, or a member of its team). */
  async function develops(userId: string, row: Extension): Promise<boolean> {
    if (row.developerId) return (await developer.profileOfUser(userId))?.id === row.developerId;
    return (await developer.teamsOfUser(userId)).some((t) => t.id === row.teamId);
  }

  /**
   * The extension when the caller may act on it: a developer key bound to its owner; a user owning
   * its profile, or a member of its team holding the action's team permission (403 otherwise).
   * Anything the caller does not own is 404, as if absent.
   */
  async function owned(auth: AuthContext, id: string, action: ExtensionAction): Promise<Extension> {
    const row = UUID_RE.test(id) ? await repo.extensionById(id) : undefined;
    if (!row) throw notFound();
    if (auth.kind === 'developer_api_key') {
      const subject = keySubject(auth);
      if (!subject || (subject !== row.developerId && subject !== row.teamId)) throw notFound();
      return row;
    }
    const userId = requireUserId(auth);
    if (!(await develops(userId, row))) throw notFound();
    const permission = TEAM_PERMISSION[action];
    if (row.teamId && permission && !(await developer.hasTeamPermission(row.teamId, userId, permission))) {
      throw AppError.forbidden(m.missingTeamPermission(permission));
    }
    return row;
  }

  function checkPricing(pricing: { pricingType?: string; pricingAmount?: number | null; pricingCurrency?: string | null }): void {
    if (pricing.pricingType && pricing.pricingType !== 'free' && (pricing.pricingAmount === null || pricing.pricingAmount === undefined || !pricing.pricingCurrency)) {
      throw AppError.validation(m.paidNeedsPrice);
    }
  }

  function checkManifest(manifest: Manifest): void {
    const handlers = declaredHandlers(manifest);
    const used = [
      ...(manifest.commands ?? []).map((c) => c.handler),
      ...(manifest.keywords ?? []).map((k) => k.handler),
      ...(manifest.patterns ?? []).map((p) => p.handler),
      ...(manifest.nodeHandler ? [manifest.nodeHandler] : []),
    ];
    const unknown = used.find((h) => !handlers.has(h));
    if (unknown !== undefined) throw AppError.validation(m.unknownHandler(unknown), { fields: [{ field: 'manifest', message: m.unknownHandler(unknown) }] });
    // What an install may grant the extension's token: account permissions only.
    const badPermission = (manifest.permissions ?? []).find((p) => !isAccountPermission(p));
    if (badPermission !== undefined) throw AppError.validation(m.unknownPermission(badPermission), { fields: [{ field: 'manifest', message: m.unknownPermission(badPermission) }] });
  }

  async function reloaded(id: string): Promise<Extension> {
    return (await repo.extensionById(id))!;
  }

  async function ownedRequest(auth: AuthContext, id: string): Promise<LimitRequest> {
    const row = await repo.limitRequestById(id);
    if (!row) throw AppError.notFound(m.limitRequestNotFound);
    try {
      await owned(auth, row.extensionId, 'read');
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') throw AppError.notFound(m.limitRequestNotFound);
      throw error;
    }
    return row;
  }

  /** A profile's stats and its extensions in wire form (without the rating sums its average is computed from). */
  function profileOf(rows: PublishedExtension[]) {
    const ratings = rows.reduce((acc, r) => ({ sum: acc.sum + r.ratingSum, count: acc.count + r.ratingCount }), { sum: 0, count: 0 });
    const stats = {
      extensionCount: rows.length,
      totalInstalls: rows.reduce((n, r) => n + r.installCount, 0),
      avgRating: ratings.count > 0 ? ratings.sum / ratings.count : null,
    };
    return { stats, extensions: rows.map(({ ratingSum: _sum, ...extension }) => extension) };
  }

  /**
   * Moves a limit request under its row lock; the timeline event is written in the same
   * transaction. Answers the request as it was before the move and as it is after.
   */
  async function moveRequest(
    auth: AuthContext,
    id: string,
    allowed: LimitRequest['status'][],
    apply: (row: LimitRequest, trx: Knex.Transaction) => { patch: Record<string, unknown>; event: LimitRequestEvent['eventType']; details: Record<string, unknown> },
    also?: (row: LimitRequest, trx: Knex.Transaction) => Promise<void>,
  ): Promise<{ before: LimitRequest; after: LimitRequest }> {
    const before = await knex.transaction(async (trx) => {
      const row = await repo.limitRequestById(id, trx, true);
      if (!row) throw AppError.notFound(m.limitRequestNotFound);
      const outcome = apply(row, trx);
      if (!allowed.includes(row.status)) throw new AppError('CONFLICT', m.requestClosed(row.status));
      await repo.updateLimitRequest(id, outcome.patch, trx);
      await repo.insertLimitEvent({ id: randomUUID(), request_id: id, event_type: outcome.event, actor_id: auth.userId, details: outcome.details }, trx);
      await also?.(row, trx);
      return row;
    });
    return { before, after: (await repo.limitRequestById(id))! };
  }

  const service = {
    // ------------------------------------------------------------ publishing (developer surface)
    async list(auth: AuthContext): Promise<Extension[]> {
      return repo.extensionsOf(await ownersOf(auth));
    },
    async get(auth: AuthContext, id: string): Promise<Extension> {
      return owned(auth, id, 'read');
    },
    async create(auth: AuthContext, input: CreateExtensionInput): Promise<Extension> {
      const userId = requireUserId(auth);
      checkPricing(input);
      let owner: { developer_id: string | null; team_id: string | null };
      if (input.teamId) {
        const team = await developer.teamById(input.teamId);
        if (!team) throw AppError.notFound(m.teamNotFound);
        if (!(await developer.hasTeamPermission(team.id, userId, 'team-extensions:create'))) throw AppError.forbidden(m.missingTeamPermission('team-extensions:create'));
        owner = { developer_id: null, team_id: team.id };
      } else {
        const profile = await developer.profileOfUser(userId);
        if (!profile) throw AppError.forbidden(m.notDeveloper);
        owner = { developer_id: profile.id, team_id: null };
      }
      const id = randomUUID();
      const paid = input.pricingType !== undefined && input.pricingType !== 'free';
      const created = await repo.insertExtension({
        id,
        short_id: shortId(),
        slug: input.slug,
        name: input.name,
        description: input.description ?? null,
        category: input.category ?? null,
        icon_key: input.iconKey ?? null,
        ...owner,
        created_by: userId,
        pricing_type: input.pricingType ?? 'free',
        pricing_amount: paid ? (input.pricingAmount ?? null) : null,
        pricing_currency: paid ? (input.pricingCurrency ?? null) : null,
      });
      if (!created) throw new AppError('CONFLICT', m.slugTaken);
      return reloaded(id);
    },
    async update(auth: AuthContext, id: string, input: UpdateExtensionInput): Promise<Extension> {
      const row = await owned(auth, id, 'edit');
      const pricingType = input.pricingType ?? row.pricingType;
      const paid = pricingType !== 'free';
      const pricingAmount = input.pricingAmount !== undefined ? input.pricingAmount : row.pricingAmount;
      const pricingCurrency = input.pricingCurrency !== undefined ? input.pricingCurrency : row.pricingCurrency;
      checkPricing({ pricingType, pricingAmount, pricingCurrency });
      await repo.updateExtension(row.id, {
        ...defined({ name: input.name, description: input.description, category: input.category, icon_key: input.iconKey }),
        pricing_type: pricingType,
        pricing_amount: paid ? pricingAmount : null,
        pricing_currency: paid ? pricingCurrency : null,
      });
      return reloaded(row.id);
    },
    async remove(auth: AuthContext, id: string): Promise<void> {
      const row = await owned(auth, id, 'delete');
      await repo.deleteExtension(row.id);
    },

    async versions(auth: AuthContext, id: string): Promise<ExtensionVersion[]> {
      const row = await owned(auth, id, 'read');
      return repo.versions(row.id);
    },
    async createVersion(auth: AuthContext, id: string, input: { version: string; changelog?: string | null }): Promise<ExtensionVersion> {
      const row = await owned(auth, id, 'createVersion');
      const versionId = randomUUID();
      if (!(await repo.insertVersion({ id: versionId, extension_id: row.id, version: input.version, changelog: input.changelog ?? null }))) throw new AppError('CONFLICT', m.versionExists);
      return (await repo.versionById(row.id, versionId))!;
    },
    async uploadVersion(auth: AuthContext, id: string, versionId: string, input: { manifest: Manifest; handlerCode: string }): Promise<ExtensionVersion> {
      const row = await owned(auth, id, 'uploadVersion');
      checkManifest(input.manifest);
      return knex.transaction(async (trx) => {
        const current = await repo.versionById(row.id, versionId, trx);
        if (!current) throw AppError.notFound(m.versionNotFound);
        await trx('extension_versions').where({ id: current.id }).forUpdate().first('id');
        const locked = (await repo.versionById(row.id, versionId, trx))!;
        if (locked.status === 'published') throw new AppError('CONFLICT', m.publishedImmutable);
        const manifest = JSON.stringify(input.manifest);
        // The content's hash names the bundle's immutable URL (bundles.ts); hashed as the column will hold it.
        const bundleSha256 = bundleHash(JSON.parse(manifest), input.handlerCode);
        await repo.updateVersion(current.id, { manifest, handler_code: input.handlerCode, bundle_sha256: bundleSha256, status: 'uploaded', uploaded_at: trx.fn.now() }, trx);
        return (await repo.versionById(row.id, versionId, trx))!;
      });
    },
    async publishVersion(auth: AuthContext, id: string, versionId: string): Promise<ExtensionVersion> {
      const row = await owned(auth, id, 'publish');
      return knex.transaction(async (trx) => {
        await repo.lockExtension(row.id, trx);
        const current = await repo.versionById(row.id, versionId, trx);
        if (!current) throw AppError.notFound(m.versionNotFound);
        if (current.status === 'draft') throw new AppError('CONFLICT', m.uploadFirst);
        // Submission for review (review.ts decides); pending and published versions stay as they are.
        if (current.status === 'uploaded' || current.status === 'rejected') {
          await repo.updateVersion(current.id, { status: 'pending_review', submitted_at: trx.fn.now(), submitted_by: auth.userId, review_notes: null, reviewed_by: null, reviewed_at: null }, trx);
        }
        return (await repo.versionById(row.id, versionId, trx))!;
      });
    },

    async analytics(auth: AuthContext, id: string) {
      const row = await owned(auth, id, 'analytics');
      const [installs, purchases] = await Promise.all([repo.installCounts(row.id), repo.purchaseStats(row.id)]);
      const completed = purchases.filter((p) => p.status === 'completed');
      return {
        extensionId: row.id,
        installCount: installs.total,
        enabledInstallCount: installs.enabled,
        purchaseCount: completed.reduce((n, p) => n + p.count, 0),
        refundedPurchaseCount: purchases.filter((p) => p.status === 'refunded').reduce((n, p) => n + p.count, 0),
        revenue: completed.map((p) => ({ currency: p.currency, amountCents: p.amount })).sort((a, b) => a.currency.localeCompare(b.currency)),
      };
    },
    async limits(auth: AuthContext, id: string): Promise<ExtensionLimits> {
      const row = await owned(auth, id, 'read');
      return { extensionId: row.id, ...(await sounds.extensionLimits(row.id)) };
    },
    async purchases(auth: AuthContext, id: string, paging: PageRequest): Promise<Page<ExtensionPurchase>> {
      const row = await owned(auth, id, 'payouts');
      const { rows, total } = await repo.purchases(row.id, paging);
      return pageOf(rows, total, paging);
    },

    async testers(auth: AuthContext, id: string) {
      const row = await owned(auth, id, 'readTesters');
      return repo.testers(row.id);
    },
    async addTester(auth: AuthContext, id: string, userId: string) {
      const row = await owned(auth, id, 'inviteTester');
      if (!(await repo.userExists(userId))) throw AppError.notFound(m.userNotFound);
      if (!(await repo.insertTester({ extension_id: row.id, user_id: userId, added_by: auth.userId }))) throw new AppError('CONFLICT', m.testerExists);
      return (await service.testers(auth, id)).find((t) => t.userId === userId)!;
    },
    async removeTester(auth: AuthContext, id: string, userId: string): Promise<void> {
      const row = await owned(auth, id, 'removeTester');
      if (!(await repo.deleteTester(row.id, userId))) throw AppError.notFound(m.testerNotFound);
    },

    async screenshots(auth: AuthContext, id: string) {
      const row = await owned(auth, id, 'read');
      return repo.screenshots(row.id);
    },
    async addScreenshot(auth: AuthContext, id: string, input: { key?: string | null; url?: string | null; caption?: string | null; position?: number }) {
      const row = await owned(auth, id, 'edit');
      if (!input.key && !input.url) throw AppError.validation(m.screenshotNeedsSource);
      return repo.insertScreenshot({ id: randomUUID(), extension_id: row.id, key: input.key ?? null, url: input.url ?? null, caption: input.caption ?? null, position: input.position ?? 0 });
    },
    async removeScreenshot(auth: AuthContext, id: string, screenshotId: string): Promise<void> {
      const row = await owned(auth, id, 'edit');
      if (!(await repo.deleteScreenshot(row.id, screenshotId))) throw AppError.notFound(m.screenshotNotFound);
    },

    // ------------------------------------------------------------ limits and limit requests
    developerLimits: (auth: AuthContext, extensionId: string) => service.limits(auth, extensionId),
    async limitRequests(auth: AuthContext, status?: LimitRequest['status']): Promise<LimitRequest[]> {
      const extensions = await repo.extensionsOf(await ownersOf(auth));
      if (extensions.length === 0) return [];
      return repo.limitRequestsWhere({ status, extensionIds: extensions.map((e) => e.id) });
    },
    async createLimitRequest(auth: AuthContext, input: { extensionId: string; requestedLimits: RequestedLimits; reason?: string | null }): Promise<LimitRequest> {
      const row = await owned(auth, input.extensionId, 'edit');
      const userId = requireUserId(auth);
      const developerId = row.developerId ?? (await developer.profileOfUser(userId))?.id ?? null;
      const id = randomUUID();
      await knex.transaction(async (trx) => {
        await repo.lockExtension(row.id, trx);
        if (await repo.hasOpenRequest(row.id, trx)) throw new AppError('CONFLICT', m.openRequestExists);
        await repo.insertLimitRequest({ id, extension_id: row.id, developer_id: developerId, team_id: row.teamId, requested_by: userId, requested_limits: input.requestedLimits, reason: input.reason ?? null }, trx);
        await repo.insertLimitEvent({ id: randomUUID(), request_id: id, event_type: 'created', actor_id: userId, details: { requested_limits: limitsDetails(input.requestedLimits), reason: input.reason ?? null } }, trx);
      });
      return (await repo.limitRequestById(id))!;
    },
    async limitRequestEvents(auth: AuthContext, id: string): Promise<LimitRequestEvent[]> {
      const row = await ownedRequest(auth, id);
      return repo.limitEvents(row.id);
    },
    async adminLimitRequests(status?: LimitRequest['status']): Promise<LimitRequest[]> {
      return repo.limitRequestsWhere({ status });
    },
    async adminDeveloperLimitRequests(developerId: string): Promise<LimitRequest[]> {
      return repo.limitRequestsWhere({ developerId });
    },
    async adminLimitRequestEvents(id: string): Promise<LimitRequestEvent[]> {
      if (!(await repo.limitRequestById(id))) throw AppError.notFound(m.limitRequestNotFound);
      return repo.limitEvents(id);
    },
    async startReview(auth: AuthContext, id: string): Promise<LimitRequest> {
      return (await moveRequest(auth, id, ['open'], () => ({ patch: { status: 'in_review' }, event: 'in_review', details: {} }))).after;
    },
    async review(auth: AuthContext, id: string, input: { action: 'approve' | 'reject'; notes?: string | null }): Promise<LimitRequest> {
      const notes = input.notes?.trim() ? input.notes.trim() : null;
      let limits: RequestedLimits = {};
      // The requester hears of the decision (in-app and mail, as their preferences say) in the
      // decision's own transaction; an approval only once its limits are on (below).
      const tell = async (row: LimitRequest, status: 'approved' | 'rejected', trx: Knex.Transaction) => {
        if (!row.requestedBy) return;
        await deps.notifications.notify(
          { userId: row.requestedBy, type: 'limit_request', data: { limitRequestId: row.id, extensionId: row.extensionId, status, notes }, mail: { extensionName: row.extensionName } },
          trx,
        );
      };
      const { before, after } = await moveRequest(auth, id, ['open', 'in_review'], (row, trx) => {
        if (input.action === 'reject' && !notes) throw AppError.validation(m.notesRequired, { fields: [{ field: 'notes', message: m.notesRequired }] });
        const reviewed = { review_notes: notes, reviewed_by: auth.userId, reviewed_at: trx.fn.now() };
        if (input.action === 'reject') return { patch: { status: 'rejected', ...reviewed }, event: 'rejected', details: { notes } };
        limits = row.requestedLimits ?? {};
        return { patch: { status: 'approved', ...reviewed }, event: 'approved', details: { limits: limitsDetails(limits), notes } };
      }, input.action === 'reject' ? (row, trx) => tell(row, 'rejected', trx) : undefined);
      if (input.action === 'approve') {
        // The sounds module writes through its own connection, so the limits go on after the
        // commit; should that fail, the approval is undone and the request is open as before.
        try {
          await sounds.setExtensionLimits(before.extensionId, limits);
        } catch (error) {
          await knex.transaction(async (trx) => {
            await repo.limitRequestById(id, trx, true);
            await repo.updateLimitRequest(id, { status: before.status, review_notes: before.reviewNotes, reviewed_by: before.reviewedBy, reviewed_at: before.reviewedAt }, trx);
            await repo.dropLastLimitEvent(id, trx);
          });
          throw error;
        }
        await knex.transaction((trx) => tell(before, 'approved', trx));
      }
      return after;
    },
    async adminSetLimits(id: string, limits: Partial<ExtensionSoundLimits>): Promise<{ success: true }> {
      if (!UUID_RE.test(id) || !(await repo.extensionById(id))) throw notFound();
      await sounds.setExtensionLimits(id, defined(limits));
      return { success: true };
    },

    // ------------------------------------------------------------ public profiles
    async developerProfile(slug: string) {
      const profile = await developer.profileBySlug(slug);
      if (!profile) throw AppError.notFound(m.developerNotFound);
      const rows = await repo.publishedOf({ developerId: profile.id });
      return {
        id: profile.id,
        displayName: profile.displayName,
        slug: profile.slug,
        description: profile.description,
        githubUrl: profile.githubUrl,
        websiteUrl: profile.websiteUrl,
        avatarKey: profile.avatarKey,
        createdAt: profile.createdAt,
        ...profileOf(rows),
      };
    },
    async teamProfile(slug: string) {
      const team = await developer.teamBySlug(slug);
      if (!team) throw AppError.notFound(m.teamNotFound);
      const [rows, members] = await Promise.all([repo.publishedOf({ teamId: team.id }), developer.teamMembers(team.id)]);
      return {
        id: team.id,
        name: team.name,
        slug: team.slug,
        description: team.description,
        githubUrl: team.githubUrl,
        websiteUrl: team.websiteUrl,
        avatarKey: team.avatarKey,
        createdAt: team.createdAt,
        ...profileOf(rows),
        members: members.map((mb) => ({ userId: mb.userId, displayName: mb.displayName, avatarUrl: mb.avatarUrl, role: mb.role })),
      };
    },

    // ------------------------------------------------------------ helpers for installs.ts, access.ts, runtime.ts
    /** The extension when the caller may act on it (404 otherwise; 403 without the team permission). */
    ownedFor: (auth: AuthContext, id: string, action: ExtensionAction) => owned(auth, id, action),
    /** Whether a user may install what is not published: a tester, a developer of it, or granted access. */
    async mayTest(userId: string, row: Extension): Promise<boolean> {
      if (await repo.isTester(row.id, userId)) return true;
      if (await knex('extension_access_grants').where({ extension_id: row.id, user_id: userId }).first('user_id')) return true;
      return develops(userId, row);
    },

    // ------------------------------------------------------------ internal feeds (system keys)
    async botTriggers(accountId: string) {
      const rows = await repo.feed({ accountId, enabledOnly: true });
      const installs = bundles(rows)
        .filter(({ manifest }) => isBotModule(manifest))
        .map(({ row, manifest, config }) => ({
          installId: row.id,
          extensionId: row.extensionId,
          extensionName: row.extensionName,
          ...triggersOf(manifest, config),
          hasModerate: manifest.hasModerate ?? false,
          platforms: manifest.platforms ?? [],
        }));
      return { installs, killed: false };
    },
    async botHandlers(filter: { accountId?: string; installId?: string }) {
      const installs = bundles(await repo.feed(filter))
        .filter(({ manifest }) => isBotModule(manifest) || Boolean(manifest.handlers?.length && !manifest.nodeType))
        .map(({ row, manifest, config }) => ({
          ...feedBase(row, config),
          platforms: manifest.platforms ?? [],
          hasModerate: manifest.hasModerate ?? false,
          handlers: manifest.handlers ?? [],
          handlerCode: row.handlerCode,
        }));
      return { installs };
    },
    async automationHandlers(filter: { accountId?: string; installId?: string }) {
      const installs = bundles(await repo.feed(filter))
        .filter(({ manifest }) => manifest.nodeType !== undefined)
        .map(({ row, manifest, config }) => ({
          ...feedBase(row, config),
          nodeType: manifest.nodeType!,
          nodeHandler: manifest.nodeHandler ?? null,
          handlers: manifest.handlers ?? [],
          handlerCode: row.handlerCode,
        }));
      return { installs };
    },

    // ------------------------------------------------------------ module API (payment-connect receiver)
    async recordPurchase(purchase: PurchaseRecord): Promise<void> {
      if (!UUID_RE.test(purchase.extensionId) || !(await repo.extensionById(purchase.extensionId))) {
        log.warn({ extension_id: purchase.extensionId }, 'purchase for an unknown extension ignored');
        return;
      }
      await repo.insertPurchase({
        id: randomUUID(),
        external_id: purchase.externalId,
        extension_id: purchase.extensionId,
        account_id: purchase.accountId,
        buyer_user_id: purchase.buyerUserId,
        amount_cents: purchase.amountCents,
        currency: purchase.currency.toUpperCase(),
      });
    },

    /** The owning account of `ext-storage:{install_id}` (null fails closed). */
    installAccount: (installId: string): Promise<string | null> => (UUID_RE.test(installId) ? repo.installAccount(installId) : Promise.resolve(null)),
    /** Whether the caller develops the extension of `ext-logs:{extension_id}`: a user of its profile or team, or a key bound to its owner. */
    async ownsExtension(auth: AuthContext, extensionId: string): Promise<boolean> {
      if (!UUID_RE.test(extensionId)) return false;
      const row = await repo.extensionById(extensionId);
      if (!row) return false;
      if (auth.kind === 'developer_api_key') {
        const subject = keySubject(auth);
        return subject !== null && (subject === row.developerId || subject === row.teamId);
      }
      return (auth.kind === 'jwt' || auth.kind === 'user_api_key') && auth.userId !== null && develops(auth.userId, row);
    },
  };
  return service;
}

/** Installs whose version has an uploaded bundle, with the parsed manifest and config. */
function bundles(rows: FeedInstall[]): { row: FeedInstall; manifest: Manifest; config: InstallConfig }[] {
  return rows.filter((row) => row.manifest !== null).map((row) => ({ row, manifest: row.manifest as Manifest, config: row.config ?? {} }));
}

function feedBase(row: FeedInstall, config: InstallConfig) {
  return { installId: row.id, extensionId: row.extensionId, accountId: row.accountId, extensionName: row.extensionName, version: row.version, installConfig: config, enabled: row.enabled };
}

export type ExtensionsService = ReturnType<typeof createExtensionsService>;
