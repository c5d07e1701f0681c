/**
 * Composition root: the shared infrastructure, then one fold over the module list (in dependency
 * order), then the transports over what the modules bound. Adding a module is one line in
 * `moduleList`; the contract is src/modules/contract.ts. Dependencies pass through factory
 * arguments only (no module-level singletons), so a test can swap any of them.
 */
import path from 'node:path';
import type { MutationResolvers, QueryResolvers } from '../generated/graphql';
import { routes, type OperationId, type RestHandlers } from '../generated/rest';
import { authModule } from './modules/auth';
import { checkSealedValues, UnopenableSecretsError } from './auth/sealed';
import { loadSecretBox } from './auth/secrets';
import { createJwtService } from './auth/jwt';
import { createRevocations } from './auth/revocations';
import { createCredentialStore, KEY_CACHE_PREFIX, type CredentialStore } from './auth/store';
import type { CredentialResolver } from './auth/credentials';
import { ConfigError, loadConfig, type Config } from './config/config';
import type { RequestContext } from './http/context';
import { createHttpApp, type HttpHandler } from './http/app';
import { createGraphQLHandler } from './http/graphql/endpoint';
import type { GraphQLContext } from './http/graphql/context';
import { createRateLimiter, rateLimitStep } from './http/rate-limit';
import { createOperationIndex } from './http/operations';
import { clientAddressResolver } from './http/request';
import { createRestDispatcher } from './http/rest';
import { unboundMessages, type UnboundGraphql, type UnboundRest } from './modules/bindings';
import { createMemoryBus, createRedisBus, type Bus } from './infra/bus';
import { loggedBus } from './realtime/resume';
import { createMemoryCache, createRedisCache, NEAR_INVALIDATIONS_CHANNEL, REDIS_CONNECT_TIMEOUT_MS, withNearCache, type Cache } from './infra/cache';
import { openDatabase, shareDatabase, type Database, type Migration, type MigrationSet } from './infra/db/database';
import { splitRelationalLedger } from './infra/db/ledgers';
import { openJobs, type Jobs } from './infra/jobs';
import { setKeptBudget } from './infra/kept';
import { setLastResort } from './infra/listeners';
import { createLogger, type Logger } from './infra/logger';
import { createMetrics, type Metrics } from './infra/metrics';
import { accountsModule } from './modules/accounts';
import { adminModule } from './modules/admin';
import { apiKeysModule } from './modules/apikeys';
import { auditModule } from './modules/audit';
import { connectionsModule } from './modules/connections';
import type { BuildContext, ModuleApis, ModuleBindings, ModuleDefinition, ModuleName } from './modules/contract';
import { chatModule } from './modules/chat';
import { developerModule } from './modules/developer';
import { eventsModule } from './modules/events';
import { extensionsModule } from './modules/extensions';
import { featuresModule, GLOBAL_FAMILY as FEATURE_GLOBALS_FAMILY } from './modules/features';
import { ideasModule } from './modules/ideas';
import { idempotencyModule } from './modules/idempotency';
import { mailModule } from './modules/mail';
import { notificationsModule } from './modules/notifications';
import { overlaysModule } from './modules/overlays';
import { payoutsModule } from './modules/payouts';
import { platformsModule } from './modules/platforms';
import { plansModule } from './modules/plans';
import { presetsModule } from './modules/presets';
import { privacyModule } from './modules/privacy';
import { operatorsModule } from './modules/operators';
import { sessionsModule } from './modules/sessions';
import { signinModule } from './modules/signin';
import { soundsModule } from './modules/sounds';
import { statsModule } from './modules/stats';
import { systemModule } from './modules/system';
import { tokensModule } from './modules/tokens';
import { webhooksModule } from './modules/webhooks';
import { workersModule } from './modules/workers';
import { createRealtimeModule } from './modules/realtime';
import type { RealtimeOptions, RealtimeServer } from './realtime/server';

export const SERVICE_NAME = 'creator-backend';

/** Where the embedded store `name` lives under `data_dir` (a `memory://` data dir holds every store itself). */
export function embeddedDataDir(config: Readonly<Config>, name: string): string {
  return config.data_dir.startsWith('memory://') ? config.data_dir : path.join(config.data_dir, name);
}

/**
 * The configuration and logger of an operator command (`npm run migrate`, `npm run secrets:reseal`):
 * null after printing why when the configuration is refused. Commands log at info at least.
 */
export function commandContext(command: string): { config: Readonly<Config>; log: Logger } | null {
  let config: Readonly<Config>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return null;
    }
    throw error;
  }
  const level = config.log.level === 'silent' ? 'info' : config.log.level;
  return { config, log: createLogger({ level, service: SERVICE_NAME, env: config.env, version: config.version }).child({ command }) };
}

/** Every module, in dependency order: a module may `use` only the ones above it. */
function moduleList(realtimeLimits?: RealtimeOptions['limits']) {
  return [
    featuresModule,
    idempotencyModule,
    auditModule,
    mailModule,
    notificationsModule,
    accountsModule,
    adminModule,
    plansModule,
    presetsModule,
    connectionsModule,
    sessionsModule,
    signinModule,
    tokensModule,
    apiKeysModule,
    eventsModule,
    overlaysModule,
    workersModule,
    platformsModule,
    chatModule,
    soundsModule,
    developerModule,
    extensionsModule,
    payoutsModule,
    webhooksModule,
    ideasModule,
    statsModule,
    privacyModule,
    operatorsModule,
    authModule,
    createRealtimeModule(realtimeLimits),
    systemModule,
  ] as const;
}

type Modules = ReturnType<typeof moduleList>;
type BindingsOf<M> = M extends ModuleDefinition<ModuleName, infer B> ? B : never;
type Intersect<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type Provided<Part extends 'rest' | 'Query' | 'Mutation'> = Intersect<
  BindingsOf<Modules[number]> extends infer B ? (B extends unknown ? (Part extends 'rest' ? NonNullable<B extends { rest: infer R } ? R : unknown> : NonNullable<B extends { resolvers: { [K in Part]: infer R } } ? R : unknown>) : never) : never
>;
/**
 * Compile-time completeness, as a missing handler was before: an operation or field no module binds
 * makes tsc say `'"complete"' is not assignable to '"operation X has no REST handler in module Y ..."'`
 * (src/modules/bindings.ts); foldModules refuses to start with the same words.
 */
export const bindingsComplete: [
  UnboundRest<Exclude<OperationId, keyof Provided<'rest'>>>,
  UnboundGraphql<'Query', Exclude<keyof QueryResolvers, keyof Provided<'Query'>> & string>,
  UnboundGraphql<'Mutation', Exclude<keyof MutationResolvers, keyof Provided<'Mutation'>> & string>,
] = ['complete', 'complete', 'complete'];

/** Relational migrations of every module (ordered by their timestamped names when they run). */
export const relationalMigrations: readonly Migration[] = moduleList().flatMap((m) => ('migrations' in m ? (m.migrations ?? []) : []));
/** Time-series migrations (partitioned sample tables) of every module. */
export const timeseriesMigrations: readonly Migration[] = moduleList().flatMap((m) => ('timeseriesMigrations' in m ? (m.timeseriesMigrations ?? []) : []));
/** Two ledgers, so that a node of the first rolling-upgradable release still starts on a migrated database (src/infra/db/ledgers.ts). */
const relationalSets: readonly MigrationSet[] = splitRelationalLedger({ table: 'knex_migrations', migrations: relationalMigrations });
const timeseriesSet: MigrationSet = { table: 'knex_migrations_timeseries', migrations: timeseriesMigrations };
/** Every migration of a database that holds both stores (no TIMESERIES_URL), in the order they run. */
export const sharedStoreMigrations: readonly MigrationSet[] = [...relationalSets, timeseriesSet];

export interface App {
  readonly config: Readonly<Config>;
  readonly log: Logger;
  readonly http: HttpHandler;
  readonly realtime: RealtimeServer;
  readonly metrics: Metrics;
  readonly db: Database;
  readonly timeseries: Database;
  readonly cache: Cache;
  readonly bus: Bus;
  readonly jobs: Jobs;
  readonly credentials: CredentialResolver;
  /** Opaque credential rows (modules mint tokens through it). */
  readonly authStore: CredentialStore;
  /** What each module offers the others, by name. */
  readonly modules: Readonly<ModuleApis>;
  /** Stops the modules (sockets first), then closes the bus, cache and database pools. */
  close(): Promise<void>;
}

export interface AppOptions {
  log?: Logger;
  /** Replaces the configured job system (a test's own). */
  jobs?: Jobs;
  realtimeLimits?: RealtimeOptions['limits'];
}

/** The migration sets each store's database holds: both in one unless TIMESERIES_URL names another. */
export function storeMigrationSets(config: Readonly<Config>): { relational: readonly MigrationSet[]; timeseries: readonly MigrationSet[] } {
  return config.timeseries_url ? { relational: relationalSets, timeseries: [timeseriesSet] } : { relational: sharedStoreMigrations, timeseries: [] };
}

async function openStores(config: Readonly<Config>, log: Logger): Promise<{ db: Database; timeseries: Database }> {
  const embeddedDir = (name: string) => embeddedDataDir(config, name);
  const separate = Boolean(config.timeseries_url);
  const sets = storeMigrationSets(config);
  const common = { migrate: config.db.migrate_on_start ? ('apply' as const) : ('check' as const), poolMax: config.db.pool_max, log };
  const db = await openDatabase({ ...common, url: config.database_url, dataDir: embeddedDir('pglite'), migrationSets: sets.relational });
  try {
    const timeseries = separate ? await openDatabase({ ...common, url: config.timeseries_url, dataDir: '', migrationSets: sets.timeseries }) : shareDatabase(db);
    return { db, timeseries };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/** Builds every module in list order; each sees the APIs of those before it. */
function foldModules(modules: Modules, infra: Omit<BuildContext, 'use' | 'channelAccounts' | 'channelBootstraps' | 'channelOwners'>) {
  const apis: Partial<Record<ModuleName, unknown>> = {};
  const channelAccounts: Record<string, NonNullable<ModuleBindings<unknown>['channelAccounts']>[string]> = {};
  const channelBootstraps: Record<string, NonNullable<ModuleBindings<unknown>['channelBootstraps']>[string]> = {};
  const channelOwners: Record<string, NonNullable<ModuleBindings<unknown>['channelOwners']>[string]> = {};
  const rest: Record<string, unknown> = {};
  const Query: Record<string, unknown> = {};
  const Mutation: Record<string, unknown> = {};
  const built: { name: ModuleName; bindings: ModuleBindings<unknown> }[] = [];
  const context: BuildContext = {
    ...infra,
    channelAccounts,
    channelBootstraps,
    channelOwners,
    use(name) {
      if (!(name in apis)) throw new Error(`module ${name} is used before it is built: list it earlier in src/app.ts`);
      return apis[name] as never;
    },
  };
  for (const module of modules as readonly { name: ModuleName; build(context: BuildContext): ModuleBindings<unknown> }[]) {
    if (module.name in apis) throw new Error(`module ${module.name} is listed twice`);
    const bindings = module.build(context);
    apis[module.name] = bindings.api;
    Object.assign(rest, bindings.rest);
    Object.assign(Query, bindings.resolvers?.Query);
    Object.assign(Mutation, bindings.resolvers?.Mutation);
    Object.assign(channelAccounts, bindings.channelAccounts);
    Object.assign(channelBootstraps, bindings.channelBootstraps);
    Object.assign(channelOwners, bindings.channelOwners);
    built.push({ name: module.name, bindings });
  }
  const unbound = unboundMessages(rest, { Query, Mutation });
  if (unbound.length) throw new Error(`the modules leave ${unbound.length} operation(s) unbound:\n  - ${unbound.join('\n  - ')}`);
  return {
    apis: apis as ModuleApis,
    rest: rest as unknown as RestHandlers<RequestContext>,
    resolvers: { Query: Query as QueryResolvers<GraphQLContext>, Mutation: Mutation as MutationResolvers<GraphQLContext> },
    built,
  };
}

/** The longest a node-local copy of a near-cached key lives (a lost invalidation notice is bounded by it). */
const NEAR_CACHE_TTL_MS = 30_000;

/** Redis, with node-local copies of the keys every request reads (key look-ups, global feature switches). */
async function sharedCache(url: string, prefix: string, bus: Bus, log: Logger): Promise<Cache> {
  const cache = withNearCache(createRedisCache(url, prefix, { log }), bus, { prefixes: [KEY_CACHE_PREFIX, FEATURE_GLOBALS_FAMILY], ttlMs: NEAR_CACHE_TTL_MS, log });
  await bus.subscribe(NEAR_INVALIDATIONS_CHANNEL, (_channel, message) => cache.onNearInvalidation(message));
  // The rate limiters send on the raw client, which has no offline queue: a request served before
  // its first connection would be let through uncounted. Wait for that connection's first outcome
  // (bounded by the connect timeout; a Redis that is down lets the node start without it).
  await cache.ping(REDIS_CONNECT_TIMEOUT_MS).catch(() => undefined);
  return cache;
}

export async function createApp(config: Readonly<Config>, options: AppOptions = {}): Promise<App> {
  const log = options.log ?? createLogger({ level: config.log.level, service: SERVICE_NAME, env: config.env, version: config.version });
  // A failure whose own handler failed (src/infra/listeners.ts) is logged, never thrown into an emitter.
  setLastResort((error) => log.error({ err: error }, 'a failure handler failed'));
  // What the process keeps for later requests is bounded by bytes (src/infra/kept.ts).
  setKeptBudget(config.memory.kept_bytes);
  const startedAt = Date.now();
  const secrets = await loadSecretBox(config);
  const { db, timeseries } = await openStores(config, log);
  // A node that cannot open what the database holds (a key missing or wrong during a rotation)
  // never becomes ready: it says which key, and stops before serving anything.
  try {
    const sealed = await checkSealedValues(db.knex, secrets);
    if (sealed.unopenable.length) throw new UnopenableSecretsError(sealed.unopenable, sealed.counts);
    if (Object.keys(sealed.counts).length) log.info({ sealing_key: secrets.keyId, values_by_key: sealed.counts }, 'sealed values checked: every key opens');
  } catch (error) {
    await timeseries.close();
    await db.close();
    throw error;
  }
  // Relayed families' messages are logged on their way out, so sockets can resume (src/realtime/resume.ts).
  const bus = loggedBus(
    config.redis_url
      ? createRedisBus(config.redis_url, config.redis_prefix, { log, heartbeat: { intervalMs: config.bus.heartbeat_ms, boundMs: config.bus.heartbeat_bound_ms } })
      : createMemoryBus(),
    { url: config.redis_url, prefix: config.redis_prefix },
    log,
  );
  const cache = config.redis_url ? await sharedCache(config.redis_url, config.redis_prefix, bus, log) : createMemoryCache();
  const authStore = createCredentialStore(db.knex);
  // One per-context budget for HTTP requests, GraphQL cost and WebSocket upgrades alike.
  const limiter = createRateLimiter({ config, redis: cache.redis, prefix: config.redis_prefix, log });
  const jobs = options.jobs ?? openJobs(config, db, log);

  const { apis, rest, resolvers, built } = foldModules(moduleList(options.realtimeLimits), {
    config,
    log,
    db,
    timeseries,
    cache,
    bus,
    jwt: createJwtService(config.auth.jwt_secret),
    credentials: authStore,
    revocations: createRevocations({ bus, log }),
    limiter,
    startedAt,
    jobs,
    secrets,
  });

  const { gates, credentials } = apis.auth;
  const realtime = apis.realtime.server;
  const clientAddress = clientAddressResolver(config.http.trust_proxy);
  const http = createHttpApp({
    config,
    log,
    credentials,
    clientAddress,
    graphql: createGraphQLHandler({ resolvers, gates, log, config, limiter, clientAddress, idempotency: apis.idempotency }),
    rest: createRestDispatcher({ handlers: rest, gates }),
    operations: createOperationIndex(routes),
    rateLimit: rateLimitStep(limiter, clientAddress),
    idempotency: apis.idempotency,
  });
  const metrics = createMetrics({
    service: SERVICE_NAME,
    env: config.env,
    sources: {
      version: config.version,
      uptimeSeconds: () => Math.floor((Date.now() - startedAt) / 1000),
      wsSessions: () => apis.realtime.stats().sessions,
      wsChannels: () => apis.realtime.stats().channels,
      pools: () => ({ relational: db.pool(), ...(config.timeseries_url ? { timeseries: timeseries.pool() } : {}) }),
      statements: () => ({ relational: db.statements(), ...(config.timeseries_url ? { timeseries: timeseries.statements() } : {}) }),
      jobs: () => jobs.stats(),
      mail: () => apis.mail.counts(),
      platformFrames: () => apis.platforms.rejected(),
    },
  });

  // Bus consumers go live, then each module starts, before any listener opens.
  const unsubscribe: (() => Promise<void>)[] = [];
  for (const { name, bindings } of built) {
    for (const consumer of bindings.consumers ?? []) {
      const handle = (channel: string, message: string) => {
        void Promise.resolve()
          .then(() => consumer.handle(channel, message))
          .catch((error: unknown) => log.error({ err: error, module: name, channel }, 'bus consumer failed'));
      };
      unsubscribe.push(await (consumer.pattern.includes('*') ? bus.subscribePattern(consumer.pattern, handle) : bus.subscribe(consumer.pattern, handle)));
    }
  }
  for (const { bindings } of built) await bindings.start?.();
  // Jobs last: a job's handler may use anything a module started.
  await jobs.start();

  return {
    config,
    log,
    http,
    realtime,
    metrics,
    db,
    timeseries,
    cache,
    bus,
    jobs,
    credentials,
    authStore,
    modules: apis,
    async close() {
      await Promise.allSettled(unsubscribe.map((stop) => stop()));
      await jobs.stop();
      // Last built, first stopped: system's probes, then the sockets, then the rest.
      for (const { name, bindings } of [...built].reverse()) {
        await bindings.close?.().catch((error: unknown) => log.warn({ err: error, module: name }, 'module close failed'));
      }
      await Promise.allSettled([bus.close(), cache.close()]);
      await timeseries.close();
      await db.close();
    },
  };
}
