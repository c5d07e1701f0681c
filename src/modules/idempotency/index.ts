/**
 * The idempotency module: the store of `Idempotency-Key`s that REST changes and GraphQL mutations
 * read (src/http/idempotency.ts), and the hourly purge of keys past their 24 hours. It owns the
 * `idempotency_keys` table and nothing else; it binds no operation of its own.
 */
import { periodSeconds } from '../../infra/jobs';
import { defineModule } from '../contract';
import { idempotencyMigrations } from './migrations';
import { createIdempotencyStore, type IdempotencyStore } from '../../infra/idempotency';

declare module '../contract' {
  interface ModuleApis {
    idempotency: IdempotencyStore;
  }
}

export type { IdempotencyStore, StoredAnswer } from '../../infra/idempotency';

export const idempotencyModule = defineModule({
  name: 'idempotency',
  migrations: idempotencyMigrations,
  build: ({ db, jobs }) => {
    const store = createIdempotencyStore(db.knex);
    jobs.every('idempotency.purge', periodSeconds(3_600_000), async () => void (await store.purge()), { retryLimit: 1 });
    return { api: store };
  },
});
