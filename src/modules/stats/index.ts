/**
 * The stats module: public statistics, the watchlist and the emote directory (scaffold).
 */
import { defineModule } from '../contract';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface StatsApi {}

declare module '../contract' {
  interface ModuleApis {
    stats: StatsApi;
  }
}

export const statsModule = defineModule({
  name: 'stats',
  build: () => ({ api: {} as StatsApi }),
});
