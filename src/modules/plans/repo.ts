/** Storage of plans, their feature mapping, account plans and overrides (knex). */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { schemaRows } from '../../infra/db/rows';

type Db = Knex | Knex.Transaction;

/** A plan as operators see it (with its feature mapping and account count). */
export type AdminPlan = Camelize<components['schemas']['AdminPlan']>;
/** A stored plan: the operators' view without what is computed from other tables. */
export type Plan = Omit<AdminPlan, 'features' | 'accountsUsing'>;
/** Columns a plan write sets (everything the operators' view carries but id, slug and what is computed). */
export type PlanWrite = Omit<components['schemas']['AdminPlan'], 'id' | 'slug' | 'features' | 'accounts_using'>;

// bigint columns arrive as text from pg; the values stay below 2^53 (the API bounds them).
/** A stored plan: the operators' view without what is computed from other tables. */
const planOf = schemaRows('AdminPlan', { omit: ['features', 'accounts_using'] });

export function createPlansRepo(knex: Knex) {
  return {
    /** plans.list: by sort order, then slug */
    async list(db: Db = knex): Promise<Plan[]> {
      return (await db('plans').select(db.raw(planOf.select)).orderBy([{ column: 'sort_order' }, { column: 'slug' }])).map(planOf.map);
    },
    /** plans.byId */
    async byId(id: string, db: Db = knex): Promise<Plan | undefined> {
      const row = await db('plans').where({ id }).first(db.raw(planOf.select));
      return row ? planOf.map(row) : undefined;
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
