/** Feature flag storage (knex): global kill-switches, plan features, account and user overrides. */
import type { Knex } from 'knex';
import { fromJson } from '../../infra/db/database';
import { schemaRows, type RowValue } from '../../infra/db/rows';
import { statement } from '../../infra/db/statement';

const flagOf = schemaRows('FeatureFlag');
export type FeatureFlag = RowValue<typeof flagOf>;

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
      return (await knex('feature_flags').select(knex.raw(flagOf.select)).orderBy('key')).map((row: object) => flagOf.map(row));
    },
    /** features.flag */
    async flag(key: string): Promise<FeatureFlag | undefined> {
      const row = await knex('feature_flags').where({ key }).first(knex.raw(flagOf.select));
      return row ? flagOf.map(row) : undefined;
    },
    /** features.setGlobal */
    async setGlobal(key: string, enabled: boolean): Promise<boolean> {
      const updated = await knex('feature_flags').where({ key }).update({ enabled, updated_at: knex.fn.now() });
      return updated > 0;
    },
    /**
     * features.layers: what an account adds (its plan's mapping and its own overrides; null when
     * no such account) and a user's account-creation override ('DEFAULT' when none or no such
     * user), in one statement. A null id reads nothing for its side: a caller's first request
     * asks both at once instead of four statements.
     */
    async layers(accountId: string | null, userId: string | null): Promise<{ layer: AccountLayer | null; override: AccountCreationOverride }> {
      const [row] = await statement<{ found: boolean | null; plan_id: string | null; plan: unknown; overrides: unknown; override: string | null }>(
        knex,
        `select a.id is not null as found, a.plan_id,
           case when a.plan_id is null then '{}'::jsonb else
             (select coalesce(jsonb_object_agg(pf.feature_key, pf.enabled), '{}'::jsonb) from plan_features pf where pf.plan_id = a.plan_id) end as plan,
           (select coalesce(jsonb_object_agg(o.feature_key, o.enabled), '{}'::jsonb) from account_feature_overrides o where o.account_id = a.id) as overrides,
           (select u.account_creation_override from users u where u.id = ?::uuid) as override
         from (select true as found) one
         left join (select id, plan_id from accounts where id = ?::uuid) a on true`,
        [userId, accountId],
      );
      if (!row) throw new Error('features.layers: no row');
      const map = (value: unknown) => Object.fromEntries(Object.entries(fromJson<Record<string, unknown>>(value, {})).map(([k, v]) => [k, Boolean(v)]));
      return {
        layer: row.found ? { planId: row.plan_id ?? null, plan: map(row.plan), overrides: map(row.overrides) } : null,
        override: (row.override as AccountCreationOverride | null) ?? 'DEFAULT',
      };
    },
  };
}

export type FeatureRepo = ReturnType<typeof createFeatureRepo>;
