/** Feature flag storage (knex): global kill-switches, plan features, account and user overrides. */
import type { Knex } from 'knex';

export interface FeatureFlag {
  id: string;
  key: string;
  category: string;
  label: string;
  enabled: boolean;
}

export type AccountCreationOverride = 'DEFAULT' | 'ALLOW' | 'DENY';

/** What an account adds to the global switches: its plan's mapping and its own overrides. */
export interface AccountLayer {
  planId: string | null;
  plan: Record<string, boolean>;
  overrides: Record<string, boolean>;
}

export function createFeatureRepo(knex: Knex) {
  return {
    /** features.listGlobal */
    async listGlobal(): Promise<FeatureFlag[]> {
      return knex('feature_flags').select('id', 'key', 'category', 'label', 'enabled').orderBy('key');
    },
    /** features.flag */
    flag(key: string): Promise<FeatureFlag | undefined> {
      return knex('feature_flags').where({ key }).first('id', 'key', 'category', 'label', 'enabled');
    },
    /** features.setGlobal */
    async setGlobal(key: string, enabled: boolean): Promise<boolean> {
      const updated = await knex('feature_flags').where({ key }).update({ enabled, updated_at: knex.fn.now() });
      return updated > 0;
    },
    /** features.accountLayer: the account's plan mapping and overrides in one round trip */
    async accountLayer(accountId: string): Promise<AccountLayer | null> {
      const account = await knex('accounts').where({ id: accountId }).first('plan_id');
      if (!account) return null;
      const [plan, overrides] = await Promise.all([
        account.plan_id ? knex('plan_features').where({ plan_id: account.plan_id }).select('feature_key', 'enabled') : [],
        knex('account_feature_overrides').where({ account_id: accountId }).select('feature_key', 'enabled'),
      ]);
      const map = (rows: { feature_key: string; enabled: boolean }[]) => Object.fromEntries(rows.map((r) => [r.feature_key, Boolean(r.enabled)]));
      return { planId: account.plan_id ?? null, plan: map(plan), overrides: map(overrides) };
    },
    /** features.userOverride */
    async userOverride(userId: string): Promise<AccountCreationOverride> {
      const row = await knex('users').where({ id: userId }).first('account_creation_override');
      return (row?.account_creation_override as AccountCreationOverride | undefined) ?? 'DEFAULT';
    },
  };
}

export type FeatureRepo = ReturnType<typeof createFeatureRepo>;
