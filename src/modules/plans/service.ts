/**
 * Plans and the admin levers over feature availability (Part 1 "Plans", "Plan rules"; DESIGN.md
 * "Admin levers"): plan CRUD and feature mapping, global kill-switches, account plans and
 * overrides, the per-user `system:account_creation` override, the public `plans` list and the
 * active account's `accountFeatures`. Evaluation and caching belong to the features module:
 * every change here ends with `features.invalidate(...)`, which reaches every node through the bus.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type * as Gql from '../../../generated/graphql';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { requireAccountId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { ModuleApis } from '../contract';
import type { FeatureStatus } from '../features';
import { planMessages } from './errors';
import type { AdminPlan, Plan, PlansRepo, PlanWrite } from './repo';
import { UUID_RE } from '../../infra/ids';

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** Flag categories a public plan shows (Part 1 "Plan rules"). */
const PUBLIC_CATEGORIES = new Set(['feature', 'widget', 'integration', 'bot_module']);

export type { AdminPlan } from './repo';
export type PlanFeatureEntry = AdminPlan['features'][number];
/** The public plan list is GraphQL only: its shape comes from the GraphQL schema. */
export type BillingPlan = Omit<Gql.BillingPlan, '__typename'>;

type PlanRequest = Camelize<components['schemas']['CreatePlanRequest']>;
/** Members GraphQL leaves out (the slug on update, the sound limits) or may send as null (the currency). */
type PlanInputOptional = 'slug' | 'currency' | 'maxSounds' | 'maxSoundFileSize' | 'maxSoundStorageBytes';
/** A plan write as both protocols send it: the spec's create body, its members above optional. */
export type PlanInput = Omit<PlanRequest, PlanInputOptional> & { slug?: string } & { [K in Exclude<PlanInputOptional, 'slug'>]?: PlanRequest[K] | null };

export type AccountCreationOverride = Gql.AccountCreationOverride;
/** A user's account-creation override (GraphQL only). */
export type AdminUser = Omit<Gql.AdminUser, '__typename'>;

const isUniqueViolation = (error: unknown) => (error as { code?: string })?.code === '23505';

export interface PlansDeps {
  repo: PlansRepo;
  knex: Knex;
  audit: Pick<ModuleApis['audit'], 'record'>;
  features: Pick<ModuleApis['features'], 'flags' | 'flag' | 'setGlobal' | 'invalidate' | 'statuses'>;
}

export function createPlansService(deps: PlansDeps) {
  const { repo, knex, audit, features } = deps;

  const record = (ctx: AuthContext, type: string, metadata: Record<string, unknown>, trx: Knex.Transaction, accountId: string | null = null) =>
    audit.record({ scope: 'system', type, userId: ctx.userId, actorId: ctx.userId, accountId, metadata }, trx);

  /** The plan rules, in the spec's order; answers the columns to write. */
  function validated(input: PlanInput, current?: Plan): PlanWrite {
    if (input.slug !== undefined) {
      const slug = input.slug;
      if (slug.length < 2 || slug.length > 40 || !SLUG.test(slug)) throw AppError.validation(planMessages.invalidSlug);
    }
    if (input.priceMonthly < 0 || input.priceYearly < 0) throw AppError.validation(planMessages.negativePrice);
    const limits = {
      max_overlays: input.maxOverlays,
      max_storage_bytes: input.maxStorageBytes,
      max_upload_size_bytes: input.maxUploadSizeBytes,
      max_integrations: input.maxIntegrations,
      chat_retention_days: input.chatRetentionDays,
      max_setting_presets: input.maxSettingPresets,
      max_sounds: input.maxSounds ?? current?.maxSounds ?? 0,
      max_sound_file_size: input.maxSoundFileSize ?? current?.maxSoundFileSize ?? 0,
      max_sound_storage_bytes: input.maxSoundStorageBytes ?? current?.maxSoundStorageBytes ?? 0,
    };
    for (const [field, value] of Object.entries({ price_monthly: input.priceMonthly, price_yearly: input.priceYearly, ...limits })) {
      if (!Number.isSafeInteger(value)) throw AppError.validation(planMessages.notInteger(field));
    }
    if (Object.values(limits).some((v) => v < 0)) throw AppError.validation(planMessages.negativeLimit);
    const name = input.name.trim();
    if (!name) throw AppError.validation(planMessages.nameBlank);
    return {
      name,
      description: input.description ?? null,
      price_monthly: input.priceMonthly,
      price_yearly: input.priceYearly,
      currency: input.currency ?? current?.currency ?? 'USD',
      is_public: input.isPublic,
      sort_order: input.sortOrder,
      ...limits,
      stripe_product_id: input.stripeProductId ?? null,
      stripe_monthly_price_id: input.stripeMonthlyPriceId ?? null,
      stripe_yearly_price_id: input.stripeYearlyPriceId ?? null,
    };
  }

  /** Every plan as operators see it: mapped over every account flag, with its account count. */
  async function adminPlans(db: Knex | Knex.Transaction = knex): Promise<AdminPlan[]> {
    const [plans, flags, rows, using] = await Promise.all([repo.list(db), features.flags(), repo.features(db), repo.accountsUsing(db)]);
    const accountFlags = flags.filter((f) => f.category !== 'system');
    const mapped = new Map(rows.map((r) => [`${r.plan_id}|${r.feature_key}`, Boolean(r.enabled)]));
    return plans.map((p) => ({
      ...p,
      features: accountFlags.map((f) => ({ featureId: f.id, featureKey: f.key, label: f.label, enabled: mapped.get(`${p.id}|${f.key}`) ?? false })),
      accountsUsing: using.get(p.id) ?? 0,
    }));
  }

  async function adminPlan(id: string): Promise<AdminPlan> {
    const plan = (await adminPlans()).find((p) => p.id === id);
    if (!plan) throw AppError.notFound(planMessages.planNotFound);
    return plan;
  }

  async function accountFlag(key: string) {
    const flag = await features.flag(key);
    if (!flag) throw AppError.notFound(planMessages.flagNotFound);
    if (flag.category === 'system') throw AppError.validation(planMessages.notAccountFeature);
    return flag;
  }

  return {
    adminPlans: () => adminPlans(),

    async publicPlans(): Promise<BillingPlan[]> {
      const [plans, flags] = await Promise.all([adminPlans(), features.flags()]);
      const byKey = new Map(flags.map((f) => [f.key, f]));
      return plans
        .filter((p) => p.isPublic)
        .map((p) => ({
          id: p.id,
          slug: p.slug,
          name: p.name,
          description: p.description,
          priceMonthly: String(p.priceMonthly),
          priceYearly: String(p.priceYearly),
          currency: p.currency,
          isPublic: p.isPublic,
          sortOrder: p.sortOrder,
          maxOverlays: p.maxOverlays,
          maxStorageBytes: String(p.maxStorageBytes),
          maxUploadSizeBytes: String(p.maxUploadSizeBytes),
          maxIntegrations: p.maxIntegrations,
          chatRetentionDays: p.chatRetentionDays,
          features: p.features
            .filter((f) => PUBLIC_CATEGORIES.has(byKey.get(f.featureKey)?.category ?? ''))
            .map((f) => ({ ...f, globallyEnabled: byKey.get(f.featureKey)?.enabled === true })),
        }));
    },

    async createPlan(ctx: AuthContext, input: PlanInput & { slug: string }): Promise<AdminPlan> {
      const columns = validated(input);
      const id = randomUUID();
      try {
        await knex.transaction(async (trx) => {
          if (await repo.bySlug(input.slug, trx)) throw new AppError('CONFLICT', planMessages.slugInUse);
          await repo.insert(trx, { id, slug: input.slug, ...columns });
          await record(ctx, 'system:plan_created', { plan_id: id, slug: input.slug }, trx);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', planMessages.slugInUse);
        throw error;
      }
      return adminPlan(id);
    },

    async updatePlan(ctx: AuthContext, id: string, input: PlanInput): Promise<AdminPlan> {
      const current = await repo.byId(id);
      if (!current) throw AppError.notFound(planMessages.planNotFound);
      const columns = validated({ ...input, slug: undefined }, current);
      await knex.transaction(async (trx) => {
        await repo.update(trx, id, columns);
        await record(ctx, 'system:plan_updated', { plan_id: id, slug: current.slug }, trx);
      });
      await features.invalidate({ planId: id });
      return adminPlan(id);
    },

    async deletePlan(ctx: AuthContext, id: string): Promise<void> {
      const current = await repo.byId(id);
      if (!current) throw AppError.notFound(planMessages.planNotFound);
      await knex.transaction(async (trx) => {
        const using = (await repo.accountsUsing(trx)).get(id) ?? 0;
        if (using > 0) throw new AppError('CONFLICT', planMessages.planInUse(using));
        await repo.delete(trx, id);
        await record(ctx, 'system:plan_deleted', { plan_id: id, slug: current.slug }, trx);
      });
      await features.invalidate({ planId: id });
    },

    async setPlanFeatures(ctx: AuthContext, id: string, list: readonly { featureKey: string; enabled: boolean }[]): Promise<AdminPlan> {
      if (!(await repo.byId(id))) throw AppError.notFound(planMessages.planNotFound);
      for (const entry of list) await accountFlag(entry.featureKey);
      await knex.transaction(async (trx) => {
        await repo.setFeatures(trx, id, list.map((f) => ({ feature_key: f.featureKey, enabled: f.enabled })));
        await record(ctx, 'system:plan_features_updated', { plan_id: id, features: list.map((f) => ({ feature_key: f.featureKey, enabled: f.enabled })) }, trx);
      });
      await features.invalidate({ planId: id });
      return adminPlan(id);
    },

    async setFlag(ctx: AuthContext, key: string, enabled: boolean) {
      if (!(await features.flag(key))) throw AppError.notFound(planMessages.flagNotFound);
      await features.setGlobal(key, enabled);
      await knex.transaction((trx) => record(ctx, 'system:feature_flag_updated', { feature_key: key, enabled }, trx));
      return (await features.flag(key))!;
    },

    async setAccountPlan(ctx: AuthContext, accountId: string, planId: string) {
      const account = await repo.account(accountId);
      if (!account) throw AppError.notFound(planMessages.accountNotFound);
      const plan = await repo.byId(planId);
      if (!plan) throw AppError.notFound(planMessages.planNotFound);
      await knex.transaction(async (trx) => {
        await repo.setAccountPlan(trx, accountId, planId);
        await record(ctx, 'system:account_plan_changed', { plan_id: planId, previous_plan_id: account.plan_id }, trx, accountId);
      });
      await features.invalidate({ accountId });
      return { accountId, planId, plan: plan.slug };
    },

    /**
     * The plan a payment names, for the payment webhooks: by id, slug or payment price id (the
     * first that matches); null when none does.
     */
    async billingPlan(ref: { planId?: string | null; slug?: string | null; priceId?: string | null }): Promise<{ id: string; slug: string } | null> {
      if (ref.planId && UUID_RE.test(ref.planId)) {
        const plan = await repo.byId(ref.planId);
        if (plan) return { id: plan.id, slug: plan.slug };
      }
      if (ref.slug) {
        const plan = await repo.bySlug(ref.slug);
        if (plan) return { id: plan.id, slug: ref.slug };
      }
      if (ref.priceId) return (await repo.byPriceId(ref.priceId)) ?? null;
      return null;
    },

    /** The free plan (the default one), where a cancelled subscription lands. */
    async freePlan(): Promise<{ id: string; slug: string } | null> {
      return (await repo.freePlan()) ?? null;
    },

    /**
     * Moves an account to a plan inside the caller's transaction (the payment webhooks, with no
     * caller identity): the plan and its `system:account_plan_changed` row. The caller invalidates
     * the feature caches after its commit (`features.invalidate({ accountId })`). Answers the
     * previous plan id; a missing account gives 404.
     */
    async applyBillingPlan(trx: Knex.Transaction, accountId: string, planId: string, metadata: Record<string, unknown> = {}): Promise<{ previousPlanId: string | null }> {
      const account = await repo.account(accountId, trx);
      if (!account) throw AppError.notFound(planMessages.accountNotFound);
      if (account.plan_id !== planId) await repo.setAccountPlan(trx, accountId, planId);
      await audit.record({ scope: 'system', type: 'system:account_plan_changed', accountId, metadata: { ...metadata, plan_id: planId, previous_plan_id: account.plan_id } }, trx);
      return { previousPlanId: account.plan_id };
    },

    async setAccountOverride(ctx: AuthContext, accountId: string, key: string, enabled: boolean | null) {
      if (!(await repo.account(accountId))) throw AppError.notFound(planMessages.accountNotFound);
      await accountFlag(key);
      await knex.transaction(async (trx) => {
        await repo.setOverride(trx, accountId, key, enabled);
        await record(ctx, 'system:account_feature_override_set', { feature_key: key, enabled }, trx, accountId);
      });
      await features.invalidate({ accountId });
      return { accountId, featureKey: key, enabled };
    },

    async setAccountRetention(ctx: AuthContext, accountId: string, days: number | null) {
      if (!(await repo.account(accountId))) throw AppError.notFound(planMessages.accountNotFound);
      await knex.transaction(async (trx) => {
        await repo.setAccountRetention(trx, accountId, days);
        await record(ctx, 'system:account_retention_set', { chat_retention_days: days }, trx, accountId);
      });
      return { accountId, chatRetentionDays: days, effectiveChatRetentionDays: await repo.effectiveRetention(accountId) };
    },

    async setUserCreationOverride(ctx: AuthContext, userId: string, value: AccountCreationOverride): Promise<AdminUser> {
      if (!(await repo.user(userId))) throw AppError.notFound(planMessages.userNotFound);
      await knex.transaction(async (trx) => {
        await repo.setUserOverride(trx, userId, value);
        await audit.record({ scope: 'system', type: 'system:user_account_creation_override_set', userId, actorId: ctx.userId, metadata: { override: value } }, trx);
      });
      await features.invalidate({ userId });
      const user = (await repo.user(userId))!;
      return { id: user.id, email: user.email, displayName: user.display_name, accountCreationOverride: user.account_creation_override as AccountCreationOverride };
    },

    async accountFeatures(ctx: AuthContext): Promise<{ enabledFeatures: string[]; featureStatuses: FeatureStatus[] }> {
      requireAccountId(ctx);
      const featureStatuses = await features.statuses(ctx, { accountOnly: true });
      return { enabledFeatures: featureStatuses.filter((s) => s.enabled).map((s) => s.key), featureStatuses };
    },
  };
}

export type PlansService = ReturnType<typeof createPlansService>;
