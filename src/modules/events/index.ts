/**
 * The events module (Part 2, "Events"): the events table, its REST and GraphQL surface, and the
 * broadcast on `events:{account_id}` after each commit. Owns the events table only; other
 * modules (webhooks, workers) emit through its API (`emitFor`).
 */
import type { Knex } from 'knex';
import { periodSeconds as seconds } from '../../infra/jobs';
import { ReadBudget } from '../../infra/read-budget';
import type { StoredReplay } from '../../realtime/resume';
import { defineModule } from '../contract';
import { deidentify, type ErasureSubject } from './erase';
import { createGiftBundler } from './gifts';
import { createEventsResolvers } from './graphql';
import { eventMigrations } from './migrations';
import { createStoredReplay } from './replay';
import { createEventsRepo } from './repo';
import { createEventsRest } from './rest';
import { createEventsService, type EventsService } from './service';

/** Privacy erasure: what the events module offers the privacy module. */
export interface EventsErasure {
  /**
   * Sets the subject's identifiers in the payloads of `platform`'s events (every account) to null,
   * in the caller's transaction; answers the rows changed. The per-account event versions the
   * update bumps (migrations.ts triggers) drop kept event pages.
   */
  eraseSubject(db: Knex.Transaction, platform: string, subject: ErasureSubject): Promise<number>;
}

/** The events service, its privacy erasure, and the `stored` resume source of events:{account_id} (the realtime hub's). */
export type EventsApi = EventsService & EventsErasure & { readonly storedReplay: StoredReplay };

declare module '../contract' {
  interface ModuleApis {
    events: EventsApi;
  }
}

/** Periods: the gift sweep every 5 s (bundles age out after 30 s), the retention sweep hourly. */
export function createEventsModule(options: { bundleTimeoutMs?: number; giftHoldMs?: number; sweepMs?: number; retentionMs?: number } = {}) {
  return defineModule({
    name: 'events',
    migrations: eventMigrations,
    build: ({ db, bus, log, jobs, config }) => {
      const limits = config.events;
      const repo = createEventsRepo(db.knex, { pageMaxBytes: limits.page_max_bytes });
      // One budget of page bytes in flight per node (this app instance).
      const reads = new ReadBudget(limits.read_budget_bytes, limits.read_wait_ms);
      const service = createEventsService({ repo, bus, log, budgets: { maxRawBytes: limits.max_raw_bytes, pageMaxBytes: limits.page_max_bytes, reads } });
      const gifts = createGiftBundler({ knex: db.knex, log, rebroadcast: (row) => service.rebroadcast(row), bundleTimeoutMs: options.bundleTimeoutMs, holdMs: options.giftHoldMs });
      service.hooks = gifts.hooks;
      service.sweepGifts = () => gifts.sweep();
      // Once per period across the cluster (src/infra/jobs); a failed sweep is retried once, and
      // the next period's runs anyway.
      jobs.every('events.gift-sweep', seconds(options.sweepMs ?? 5000), async () => void (await service.sweepGifts()), { retryLimit: 1 });
      jobs.every('events.retention', seconds(options.retentionMs ?? 3_600_000), async () => void (await service.sweepRetention()), { retryLimit: 1 });
      const erasure: EventsErasure = {
        async eraseSubject(trx, platform, subject) {
          let changed = 0;
          for (const row of await repo.erasureCandidates(trx, platform, [subject.platformUserId, ...subject.logins])) {
            const raw = deidentify(row.raw, subject);
            if (!raw) continue;
            await repo.updateRaw(row.id, raw, trx);
            changed += 1;
          }
          return changed;
        },
      };
      // The service object itself (its hooks are set above), with the erasure and the resume source beside it.
      const api: EventsApi = Object.assign(service, erasure, { storedReplay: createStoredReplay(db.knex) });
      return {
        api,
        rest: createEventsRest(service),
        resolvers: createEventsResolvers(service),
      };
    },
  });
}

export const eventsModule = createEventsModule();
