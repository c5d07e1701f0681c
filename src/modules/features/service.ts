/**
 * Feature flags: evaluation of the effective availability (Part 1 "Feature and account types").
 * A flag is on for a caller when its global kill-switch is on (else GLOBAL_OFF), and, for
 * account features, when the account's override allows it or, without an override, when the
 * account's plan maps it on (else ACCOUNT_OVERRIDE or PLAN_LOCKED; a flag without a plan-feature
 * row is off). `system:*` flags are global, except `system:account_creation`, which a per-user
 * override decides first (ALLOW, DENY → USER_OVERRIDE). Unknown keys are off (fail closed).
 *
 * Caching: the global switches live in the shared cache (every node drops them with the writer);
 * each node memoises account layers and user overrides for a short time and drops them when an
 * invalidation arrives on the bus (`features:invalidate`): a plan change drops every account on
 * the plan at once, an override drops its account or user, a global flag drops everything. The
 * database is the source of truth: a cache or bus outage costs reads, never a wrong answer for
 * longer than MEMO_TTL_MS.
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import type { AuthContext } from '../../auth/context';
import type { FeatureChecker } from '../../auth/gates';
import type { Bus } from '../../infra/bus';
import { keysToClear, versionedKey, type Cache } from '../../infra/cache';
import type { AccountCreationOverride, AccountLayer, FeatureFlag, FeatureRepo } from './repo';

/**
 * The global switches' cache entry, read by every feature check: app.ts keeps a node-local copy
 * of every key of the family (cache.ts `withNearCache`). Its form is a JSON object of flag key to
 * boolean, format version GLOBAL_FORMAT: a change of the form bumps it (cache.ts `versionedKey`),
 * and a switch clears this version's entry and the previous one's.
 */
export const GLOBAL_FAMILY = 'feature-flags:global';
export const GLOBAL_FORMAT = 1;
export const GLOBAL_KEY = versionedKey(GLOBAL_FAMILY, GLOBAL_FORMAT);
const GLOBAL_TTL_SECONDS = 30;
const MEMO_TTL_MS = 30_000;
export const INVALIDATE_CHANNEL = 'features:invalidate';
const ACCOUNT_CREATION = 'system:account_creation';

/** A flag's status for a caller: the wire's `feature_statuses` item. */
export type FeatureStatus = Camelize<components['schemas']['Me']['feature_statuses'][number]>;
export type FeatureDisabledReason = NonNullable<FeatureStatus['reason']>;

/** What changed; every node drops the matching memoised entries. */
export interface Invalidation {
  all?: boolean;
  planId?: string;
  accountId?: string;
  userId?: string;
}

export interface FeatureService extends FeatureChecker {
  globalFlags(): Promise<Record<string, boolean>>;
  flags(): Promise<FeatureFlag[]>;
  flag(key: string): Promise<FeatureFlag | undefined>;
  setGlobal(key: string, enabled: boolean): Promise<boolean>;
  /** Every flag's status for the caller (system flags included unless `accountOnly`). */
  statuses(ctx: AuthContext, options?: { accountOnly?: boolean }): Promise<FeatureStatus[]>;
  status(key: string, ctx: AuthContext): Promise<FeatureStatus>;
  /** Publishes an invalidation to every node (this one included). */
  invalidate(what: Invalidation): Promise<void>;
  /** The bus consumer's handler. */
  onInvalidation(message: string): void;
}

const isSystem = (key: string) => key.startsWith('system:');

export function createFeatureService(deps: { repo: FeatureRepo; cache: Cache; bus: Bus }): FeatureService {
  const { repo, cache, bus } = deps;
  const accounts = new Map<string, { layer: AccountLayer | null; until: number }>();
  const users = new Map<string, { value: AccountCreationOverride; until: number }>();

  /** The last cached text and its parse: read on every gated request, the text rarely changes. Shared: never mutated. */
  let parsed: { text: string; flags: Record<string, boolean> } | null = null;

  async function globalFlags(): Promise<Record<string, boolean>> {
    const cached = await cache.get(GLOBAL_KEY).catch(() => null); // the cache logs its own outages
    if (cached) {
      if (parsed?.text !== cached) parsed = { text: cached, flags: JSON.parse(cached) as Record<string, boolean> };
      return parsed.flags;
    }
    const flags = Object.fromEntries((await repo.listGlobal()).map((f) => [f.key, f.enabled]));
    // Not awaited: filling the cache is a favour to the next reader, never a wait for this one.
    void cache.set(GLOBAL_KEY, JSON.stringify(flags), GLOBAL_TTL_SECONDS).catch(() => undefined);
    return flags;
  }

  /** The memoised entry of a key, while it lasts. */
  const live = <V>(memo: Map<string, { until: number } & V>, key: string | null) => {
    if (key === null) return undefined;
    const hit = memo.get(key);
    return hit && hit.until > Date.now() ? hit : undefined;
  };

  function evaluate(key: string, global: Record<string, boolean>, layer: AccountLayer | null, override: AccountCreationOverride): FeatureStatus {
    if (key === ACCOUNT_CREATION) {
      if (override === 'DENY') return { key, enabled: false, reason: 'USER_OVERRIDE' };
      if (override === 'ALLOW') return { key, enabled: true, reason: null };
    }
    if (global[key] !== true) return { key, enabled: false, reason: 'GLOBAL_OFF' };
    if (isSystem(key) || !layer) return { key, enabled: true, reason: null };
    const own = layer.overrides[key];
    if (own === false) return { key, enabled: false, reason: 'ACCOUNT_OVERRIDE' };
    if (own === true || layer.plan[key] === true) return { key, enabled: true, reason: null };
    return { key, enabled: false, reason: 'PLAN_LOCKED' };
  }

  /**
   * The layers that apply to a caller. Without an active account (a system key, a user between
   * accounts) only the global switches apply to account features.
   */
  async function layersOf(ctx: AuthContext) {
    const accountId = ctx.accountId ?? null;
    const userId = ctx.userId ?? null;
    const account = live(accounts, accountId);
    const user = live(users, userId);
    // What the memos lack is read in one statement (a caller's first request: both layers).
    const missing = (accountId !== null && !account) || (userId !== null && !user);
    const [global, loaded] = await Promise.all([globalFlags(), missing ? repo.layers(account ? null : accountId, user ? null : userId) : null]);
    const until = Date.now() + MEMO_TTL_MS;
    let layer: AccountLayer | null = null;
    if (accountId !== null) {
      if (account) layer = account.layer;
      else accounts.set(accountId, { layer: (layer = loaded!.layer), until });
    }
    let override: AccountCreationOverride = 'DEFAULT';
    if (userId !== null) {
      if (user) override = user.value;
      else users.set(userId, { value: (override = loaded!.override), until });
    }
    return { global, layer, override };
  }

  function drop(what: Invalidation): void {
    if (what.all) {
      accounts.clear();
      users.clear();
      return;
    }
    if (what.accountId) accounts.delete(what.accountId);
    if (what.userId) users.delete(what.userId);
    if (what.planId) for (const [id, entry] of accounts) if (entry.layer?.planId === what.planId) accounts.delete(id);
  }

  const service: FeatureService = {
    globalFlags,
    flags: () => repo.listGlobal(),
    flag: (key) => repo.flag(key),
    async isEnabled(key: string, ctx: AuthContext) {
      return (await service.status(key, ctx)).enabled;
    },
    async status(key, ctx) {
      const { global, layer, override } = await layersOf(ctx);
      return evaluate(key, global, layer, override);
    },
    async statuses(ctx, options = {}) {
      const { global, layer, override } = await layersOf(ctx);
      return Object.keys(global)
        .filter((key) => !(options.accountOnly && isSystem(key)))
        .sort()
        .map((key) => evaluate(key, global, layer, override));
    },
    async setGlobal(key, enabled) {
      const found = await repo.setGlobal(key, enabled);
      // With the cache down the change is stored; a copy cached before the outage expires within
      // GLOBAL_TTL_SECONDS (a restarted Redis holds none).
      for (const key of keysToClear(GLOBAL_FAMILY, GLOBAL_FORMAT)) await cache.del(key).catch(() => undefined);
      if (found) await service.invalidate({ all: true });
      return found;
    },
    async invalidate(what) {
      drop(what); // this node at once, whatever the bus does
      await bus.publish(INVALIDATE_CHANNEL, JSON.stringify(what)).catch(() => undefined);
    },
    onInvalidation(message) {
      try {
        drop(JSON.parse(message) as Invalidation);
      } catch {
        accounts.clear();
        users.clear();
      }
    },
  };
  return service;
}
