/**
 * The sounds module (Part 2, "Sounds"): the sound library, multipart uploads streamed into the
 * blob store (src/infra/blobs.ts, backend by config `sounds.blob_store`), ranged streaming, play
 * and stop on `sounds:{account_id}`, the plan's and per-extension limits. Owns the `sounds` and
 * `sound_extension_limits` tables and the blob store; uses overlays for play targets. Must not
 * touch extensions: it keys overrides by extension id, and the extensions module tells it names.
 */
import path from 'node:path';
import { createDatabaseBlobStore, createFsBlobStore, type BlobStore } from '../../infra/blobs';
import type { Config } from '../../config/config';
import type { Database } from '../../infra/db/database';
import { periodSeconds as seconds } from '../../infra/jobs';
import { defineModule } from '../contract';
import { createSoundsResolvers } from './graphql';
import { soundMigrations } from './migrations';
import { createSoundsRepo } from './repo';
import { createSoundsRest } from './rest';
import { createSoundsService, type ExtensionNameResolver, type ExtensionSoundLimits } from './service';

export type { ExtensionSoundLimits } from './service';

export interface SoundsApi {
  /** Sets the overrides present in `limits` (absent keys stay as they are); used by the admin limits routes. */
  setExtensionLimits(extensionId: string, limits: Partial<ExtensionSoundLimits>): Promise<void>;
  extensionLimits(extensionId: string): Promise<ExtensionSoundLimits>;
  /** An account's own sounds against its plan's max_sounds, and the bytes every sound of it stores. */
  accountUsage(accountId: string): Promise<{ sounds: number; maxSounds: number; storageBytes: number }>;
  /** How an extension's display name is found for `source_extension_name` (the extensions module registers it). */
  useExtensionNames(resolver: ExtensionNameResolver): void;
}

declare module '../contract' {
  interface ModuleApis {
    sounds: SoundsApi;
  }
}

/** The configured blob store: files under the data folder (default) or chunks in the database. */
export function openBlobStore(config: Readonly<Config>, db: Database): BlobStore {
  if (config.sounds.blob_store === 'database') return createDatabaseBlobStore(db.knex);
  const dir = config.sounds.blob_dir ?? (config.data_dir.startsWith('memory://') ? null : path.join(config.data_dir, 'sounds'));
  return createFsBlobStore({ dir });
}

/** Orphan sweep period and age: blobs no sound points at (crashed uploads, dissolved accounts). */
export function createSoundsModule(options: { sweepMs?: number } = {}) {
  return defineModule({
    name: 'sounds',
    migrations: soundMigrations,
    build: ({ db, bus, log, config, use, jobs }) => {
      const blobs = openBlobStore(config, db);
      const service = createSoundsService({ repo: createSoundsRepo(db.knex), knex: db.knex, blobs, bus, log, overlays: use('overlays'), quotas: use('plans').quotas });
      jobs.every('sounds.orphan-sweep', seconds(options.sweepMs ?? 3_600_000), async () => void (await service.sweepOrphans()), { retryLimit: 1 });
      return {
        api: service,
        rest: createSoundsRest(service),
        resolvers: createSoundsResolvers(service),
        async close() {
          await blobs.close();
        },
      };
    },
  });
}

export const soundsModule = createSoundsModule();
