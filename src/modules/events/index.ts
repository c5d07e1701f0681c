/**
 * The events module (Part 2, "Events"): the events table, its REST and GraphQL surface, and the
 * broadcast on `events:{account_id}` after each commit. Owns the events table only; other
 * modules (webhooks, workers) emit through its API (`emitFor`).
 */
import { defineModule } from '../contract';
import { createGiftBundler } from './gifts';
import { createEventsResolvers } from './graphql';
import { eventMigrations } from './migrations';
import { createEventsRepo } from './repo';
import { createEventsRest } from './rest';
import { createEventsService, type EventsService } from './service';

declare module '../contract' {
  interface ModuleApis {
    events: EventsService;
  }
}

/** Periods: the gift sweep every 5 s (bundles age out after 30 s), the retention sweep hourly. */
export function createEventsModule(options: { bundleTimeoutMs?: number; giftHoldMs?: number; sweepMs?: number; retentionMs?: number } = {}) {
  return defineModule({
    name: 'events',
    migrations: eventMigrations,
    build: ({ db, bus, log }) => {
      const service = createEventsService({ repo: createEventsRepo(db.knex), bus, log });
      const gifts = createGiftBundler({ knex: db.knex, log, rebroadcast: (row) => service.rebroadcast(row), bundleTimeoutMs: options.bundleTimeoutMs, holdMs: options.giftHoldMs });
      service.hooks = gifts.hooks;
      service.sweepGifts = () => gifts.sweep();
      let timer: NodeJS.Timeout | undefined;
      let retention: NodeJS.Timeout | undefined;
      let sweeping = false;
      return {
        api: service,
        rest: createEventsRest(service),
        resolvers: createEventsResolvers(service),
        start() {
          timer = setInterval(() => {
            if (sweeping) return;
            sweeping = true;
            service
              .sweepGifts()
              .catch((error: unknown) => log.warn({ err: error }, 'community gift sweep failed'))
              .finally(() => {
                sweeping = false;
              });
          }, options.sweepMs ?? 5000);
          timer.unref();
          retention = setInterval(() => {
            service.sweepRetention().catch((error: unknown) => log.warn({ err: error }, 'event retention sweep failed'));
          }, options.retentionMs ?? 3_600_000);
          retention.unref();
          return Promise.resolve();
        },
        close() {
          clearInterval(timer);
          clearInterval(retention);
          return Promise.resolve();
        },
      };
    },
  });
}

export const eventsModule = createEventsModule();
