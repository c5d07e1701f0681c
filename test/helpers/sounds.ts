/**
 * What the sound tests share: an account on a plan of its own with given sound limits, and counts
 * of stored sounds and blobs (to show a refused upload left nothing behind).
 */
import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import type { TestApp } from './app';
import { api, devLogin, type LoggedIn } from './users';

export interface SoundLimits {
  max_sounds: number;
  max_sound_file_size: number;
  max_sound_storage_bytes: number;
  max_storage_bytes?: number;
  max_upload_size_bytes?: number;
}

/** A fresh account on a plan of its own with these sound limits, `feature:sounds` on unless `features` is false. */
export async function accountOnSoundPlan(t: TestApp, operator: LoggedIn, limits: SoundLimits, features = true): Promise<LoggedIn> {
  const user = await devLogin(t);
  const plan = await api(t, 'POST', '/admin/plans', {
    token: operator.accessToken,
    body: {
      slug: `sounds-${randomUUID().slice(0, 8)}`,
      name: 'Sound test',
      price_monthly: 0,
      price_yearly: 0,
      is_public: false,
      sort_order: 9,
      max_overlays: 5,
      max_storage_bytes: 1_000_000,
      max_upload_size_bytes: 1_000_000,
      max_integrations: 1,
      chat_retention_days: 0,
      max_setting_presets: 0,
      ...limits,
    },
  });
  if (plan.status !== 201) throw new Error(`plan: ${plan.status} ${JSON.stringify(plan.body)}`);
  const id = (plan.body.data as { id: string }).id;
  const featured = await api(t, 'PUT', `/admin/plans/${id}/features`, { token: operator.accessToken, body: { features: [{ feature_key: 'feature:sounds', enabled: features }] } });
  if (featured.status !== 200) throw new Error(`plan features: ${featured.status}`);
  const moved = await api(t, 'PUT', `/admin/accounts/${user.accountId}/plan`, { token: operator.accessToken, body: { plan_id: id } });
  if (moved.status !== 200) throw new Error(`account plan: ${moved.status}`);
  return user;
}

/** How many blobs the sound store holds: files in `blobDir` (fs backend) or keys in blob_chunks (database). */
export async function blobCount(t: TestApp, backend: 'fs' | 'database', blobDir: string): Promise<number> {
  if (backend === 'database') {
    const row = (await t.app.db.knex('blob_chunks').countDistinct({ n: 'key' }).first()) as { n: string | number };
    return Number(row.n);
  }
  return (await readdir(blobDir)).length;
}

/** How many sounds an account has stored. */
export async function soundRowCount(t: TestApp, accountId: string): Promise<number> {
  return Number(((await t.app.db.knex('sounds').where({ account_id: accountId }).count({ n: '*' }).first()) as { n: string | number }).n);
}
