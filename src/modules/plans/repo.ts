/** Storage of plans, their feature mapping, account plans and overrides (knex). */
import type { Knex } from 'knex';

type Db = Knex | Knex.Transaction;

export interface PlanRow {
  id: string;
  slug: string;
  name: string;
  description: string | null;
  is_default: boolean;
  price_monthly: number;
  price_yearly: number;
  currency: string;
  is_public: boolean;
  sort_order: number;
  max_overlays: number;
  max_storage_bytes: number;
  max_upload_size_bytes: number;
  max_integrations: number;
  chat_retention_days: number;
  max_setting_presets: number;
  max_sounds: number;
  max_sound_file_size: number;
  max_sound_storage_bytes: number;
  max_accounts: number;
  stripe_product_id: string | null;
  stripe_monthly_price_id: string | null;
  stripe_yearly_price_id: string | null;
}

/** Columns a plan write sets (everything but id, slug and is_default). */
export type PlanWrite = Omit<PlanRow, 'id' | 'slug' | 'is_default' | 'max_accounts'>;

const BIG = ['max_storage_bytes', 'max_upload_size_bytes', 'max_sound_file_size', 'max_sound_storage_bytes'] as const;
// pg answers bigint columns as strings; the values stay below 2^53 (the API bounds them).
const toPlan = (row: PlanRow): PlanRow => {
  const plan = { ...row };
  for (const column of BIG) plan[column] = Number(row[column]);
  return plan;
};

export function createPlansRepo(knex: Knex) {
  return {
    /** plans.list: by sort order, then slug */
    async list(db: Db = knex): Promise<PlanRow[]> {
      return (await db('plans').select('*').orderBy([{ column: 'sort_order' }, { column: 'slug' }])).map(toPlan);
    },
    /** plans.byId */
    async byId(id: string, db: Db = knex): Promise<PlanRow | undefined> {
      const row = await db('plans').where({ id }).first();
      return row ? toPlan(row) : undefined;
    },
    /** plans.bySlug */
    bySlug(slug: string, db: Db = knex): Promise<{ id: string } | undefined> {
      return db('plans').where({ slug }).first('id');
    },
    /** plans.insert */
    async insert(db: Db, plan: PlanWrite & { id: string; slug: string }): Promise<void> {
      await db('plans').insert({ ...plan, is_default: false });
    },
    /** plans.update */
    async update(db: Db, id: string, plan: Partial<PlanWrite>): Promise<void> {
      await db('plans').where({ id }).update({ ...plan, updated_at: db.fn.now() });
    },
    /** plans.delete (plan-feature rows cascade) */
    async delete(db: Db, id: string): Promise<void> {
      await db('plans').where({ id }).delete();
    },
    /** plans.accountsUsing: accounts per plan id */
    async accountsUsing(db: Db = knex): Promise<Map<string, number>> {
      const rows: { plan_id: string; count: string | number }[] = await db('accounts').whereNotNull('plan_id').groupBy('plan_id').select('plan_id').count({ count: '*' });
      return new Map(rows.map((r) => [r.plan_id, Number(r.count)]));
    },
    /** plans.features: plan-feature rows of every plan */
    async features(db: Db = knex): Promise<{ plan_id: string; feature_key: string; enabled: boolean }[]> {
      return db('plan_features').select('plan_id', 'feature_key', 'enabled');
    },
    /** plans.setFeatures: upsert of the listed rows */
    async setFeatures(db: Db, planId: string, rows: { feature_key: string; enabled: boolean }[]): Promise<void> {
      if (!rows.length) return;
      await db('plan_features')
        .insert(rows.map((r) => ({ plan_id: planId, ...r })))
        .onConflict(['plan_id', 'feature_key'])
        .merge(['enabled']);
    },
    /** plans.account */
    account(id: string, db: Db = knex): Promise<{ id: string; plan_id: string | null } | undefined> {
      return db('accounts').where({ id }).first('id', 'plan_id');
    },
    /** plans.byPriceId (payment webhooks): the plan whose monthly or yearly payment price id it is */
    byPriceId(priceId: string, db: Db = knex): Promise<{ id: string; slug: string } | undefined> {
      return db('plans')
        .where((q) => q.where({ stripe_monthly_price_id: priceId }).orWhere({ stripe_yearly_price_id: priceId }))
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
        .first('id', 'slug');
    },
    /** plans.freePlan (payment webhooks): the default plan, else the one with slug `free` */
    freePlan(db: Db = knex): Promise<{ id: string; slug: string } | undefined> {
      return db('plans')
        .where((q) => q.where({ is_default: true }).orWhere({ slug: 'free' }))
        .orderBy([{ column: 'is_default', order: 'desc' }, { column: 'created_at' }, { column: 'id' }])
        .first('id', 'slug');
    },
    /** plans.setAccountPlan */
    async setAccountPlan(db: Db, accountId: string, planId: string): Promise<void> {
      await db('accounts').where({ id: accountId }).update({ plan_id: planId, updated_at: db.fn.now() });
    },
    /** plans.setAccountRetention: null removes the override */
    async setAccountRetention(db: Db, accountId: string, days: number | null): Promise<void> {
      await db('accounts').where({ id: accountId }).update({ chat_retention_days: days, updated_at: db.fn.now() });
    },
    /** plans.effectiveRetention: the account's override, else its plan's, else the default plan's */
    async effectiveRetention(accountId: string, db: Db = knex): Promise<number> {
      const row = (await db('accounts as a')
        .leftJoin('plans as p', 'p.id', 'a.plan_id')
        .where('a.id', accountId)
        .first(db.raw('coalesce(a.chat_retention_days, p.chat_retention_days, (select chat_retention_days from plans where is_default order by created_at limit 1), 0) as days'))) as { days: number } | undefined;
      return Number(row?.days ?? 0);
    },
    /** plans.setOverride: null removes it */
    async setOverride(db: Db, accountId: string, key: string, enabled: boolean | null): Promise<void> {
      if (enabled === null) {
        await db('account_feature_overrides').where({ account_id: accountId, feature_key: key }).delete();
        return;
      }
      await db('account_feature_overrides')
        .insert({ account_id: accountId, feature_key: key, enabled })
        .onConflict(['account_id', 'feature_key'])
        .merge({ enabled, updated_at: db.fn.now() });
    },
    /** plans.user */
    user(id: string, db: Db = knex): Promise<{ id: string; email: string | null; display_name: string; account_creation_override: string } | undefined> {
      return db('users').where({ id }).first('id', 'email', 'display_name', 'account_creation_override');
    },
    /** plans.setUserOverride */
    async setUserOverride(db: Db, userId: string, value: string): Promise<void> {
      await db('users').where({ id: userId }).update({ account_creation_override: value, updated_at: db.fn.now() });
    },
  };
}

export type PlansRepo = ReturnType<typeof createPlansRepo>;
