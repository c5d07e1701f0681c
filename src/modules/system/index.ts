/**
 * The system module: health (dependency probes in the background, never per request) and the
 * GraphQL schema download. Listed after realtime, whose socket counts health reports.
 */
import { defineModule } from '../contract';
import { createSystemRest } from './rest';
import { createSystemService, type SystemService } from './service';

declare module '../contract' {
  interface ModuleApis {
    system: SystemService;
  }
}

export const systemModule = defineModule({
  name: 'system',
  build: ({ config, db, timeseries, cache, startedAt, use, log }) => {
    const realtime = use('realtime');
    const service = createSystemService({
      version: config.version,
      startedAt,
      probes: { relational: (ms) => db.ping(ms), timeseries: (ms) => timeseries.ping(ms), cache: (ms) => cache.ping(ms) },
      websocket: () => realtime.stats(),
      log,
      // A time-series store that is the relational database is not a second outage to log.
      logged: config.timeseries_url ? ['relational', 'timeseries'] : ['relational'],
    });
    // Health follows the cache's connection events at once instead of at the next probe tick.
    cache.onAvailabilityChange(() => service.probeNow());
    return {
      api: service,
      rest: createSystemRest(service),
      // The first probe round (which also waits for Redis's first connection) runs before any
      // listener opens, so the first health request has a result; the loop keeps it fresh.
      start: () => service.start(),
      close: async () => service.stop(),
    };
  },
});
