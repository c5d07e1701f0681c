/**
 * Feature flags: the global kill-switches, cached through the shared cache so that every node
 * sees a change as soon as the writer drops the key. Plans and per-account overrides join the
 * evaluation when accounts exist; until then an account feature is on when its global switch is.
 * Unknown keys are off (fail closed). The cache is optional: when it fails the flags are read
 * from the database, which is the source of truth, so a Redis outage never fails a request.
 */
import type { AuthContext } from '../../auth/context';
import type { FeatureChecker } from '../../auth/gates';
import type { Cache } from '../../infra/cache';
import type { FeatureRepo } from './repo';

const GLOBAL_KEY = 'feature-flags:global';
const GLOBAL_TTL_SECONDS = 30;

export interface FeatureService extends FeatureChecker {
  globalFlags(): Promise<Record<string, boolean>>;
  setGlobal(key: string, enabled: boolean): Promise<boolean>;
}

export function createFeatureService(deps: { repo: FeatureRepo; cache: Cache }): FeatureService {
  const { repo, cache } = deps;

  async function globalFlags(): Promise<Record<string, boolean>> {
    const cached = await cache.get(GLOBAL_KEY).catch(() => null); // the cache logs its own outages
    if (cached) return JSON.parse(cached) as Record<string, boolean>;
    const flags = Object.fromEntries((await repo.listGlobal()).map((f) => [f.key, f.enabled]));
    // Not awaited: filling the cache is a favour to the next reader, never a wait for this one.
    void cache.set(GLOBAL_KEY, JSON.stringify(flags), GLOBAL_TTL_SECONDS).catch(() => undefined);
    return flags;
  }

  return {
    globalFlags,
    async isEnabled(key: string, _ctx: AuthContext) {
      return (await globalFlags())[key] === true;
    },
    async setGlobal(key, enabled) {
      const found = await repo.setGlobal(key, enabled);
      // With the cache down the change is stored; a copy cached before the outage expires within
      // GLOBAL_TTL_SECONDS (a restarted Redis holds none).
      await cache.del(GLOBAL_KEY).catch(() => undefined);
      return found;
    },
  };
}
