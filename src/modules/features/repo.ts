/** Feature flag storage (knex). */
import type { Knex } from 'knex';

export interface FeatureFlag {
  key: string;
  category: string;
  label: string;
  enabled: boolean;
}

export function createFeatureRepo(knex: Knex) {
  return {
    /** features.listGlobal */
    async listGlobal(): Promise<FeatureFlag[]> {
      return knex('feature_flags').select('key', 'category', 'label', 'enabled').orderBy('key');
    },
    /** features.setGlobal */
    async setGlobal(key: string, enabled: boolean): Promise<boolean> {
      const updated = await knex('feature_flags').where({ key }).update({ enabled, updated_at: knex.fn.now() });
      return updated > 0;
    },
  };
}

export type FeatureRepo = ReturnType<typeof createFeatureRepo>;
