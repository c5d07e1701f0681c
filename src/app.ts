/**
 * Composition root: infrastructure, then services, then bindings. Dependencies pass through
 * factory arguments only (no module-level singletons), so a test can swap any of them.
 */
import path from 'node:path';
import type { Express } from 'express';
import type { Config } from './config/config';
import { createCredentialResolver, type CredentialResolver } from './auth/credentials';
import { createGateEnforcer } from './auth/gates';
import { createJwtService } from './auth/jwt';
import { authMigrations, createAuthStore, type AuthStore } from './auth/store';
import { createSystemKeyVerifier } from './auth/system-keys';
import { createVerifiers } from './auth/verifiers';
import { createMemoryBus, createRedisBus, type Bus } from './infra/bus';
import { createMemoryCache, createRedisCache, type Cache } from './infra/cache';
import { openDatabase, shareDatabase, type Database, type Migration } from './infra/db/database';
import { createLogger, type Logger } from './infra/logger';
import { createMetrics, type Metrics } from './infra/metrics';
import { createHttpApp } from './http/app';
import { createRateLimiter, rateLimitMiddleware } from './http/rate-limit';
import { createGraphQLHandler } from './http/graphql/endpoint';
import { createRestRouter } from './http/rest';
import { accountMigrations, createAccountsModule } from './modules/accounts';
import { auditMigrations, createAuditModule } from './modules/audit';
import { createFeaturesModule, featureMigrations } from './modules/features';
import { createNotificationsModule, notificationMigrations } from './modules/notifications';
import { createSessionsModule } from './modules/sessions';
import { createSystemModule } from './modules/system';
import { createTokensModule } from './modules/tokens';
import { createChannelGate } from './realtime/channels';
import { createHub } from './realtime/hub';
import { createRealtimeServer, type RealtimeServer } from './realtime/server';

export const SERVICE_NAME = 'creator-backend';

/** Relational migrations of every module, in one list (ordered by their timestamped names). */
export const relationalMigrations: readonly Migration[] = [...featureMigrations, ...accountMigrations, ...authMigrations, ...notificationMigrations, ...auditMigrations];
/** Time-series migrations (partitioned sample tables); empty until a module records samples. */
export const timeseriesMigrations: readonly Migration[] = [];

export interface App {
  readonly config: Readonly<Config>;
  readonly log: Logger;
  readonly http: Express;
  readonly realtime: RealtimeServer;
  readonly metrics: Metrics;
  readonly db: Database;
  readonly timeseries: Database;
  readonly cache: Cache;
  readonly bus: Bus;
  readonly credentials: CredentialResolver;
  /** Sessions and opaque credential rows (modules mint tokens through it). */
  readonly authStore: AuthStore;
  readonly modules: {
    features: ReturnType<typeof createFeaturesModule>;
    system: ReturnType<typeof createSystemModule>;
    accounts: ReturnType<typeof createAccountsModule>;
    audit: ReturnType<typeof createAuditModule>;
    notifications: ReturnType<typeof createNotificationsModule>;
    sessions: ReturnType<typeof createSessionsModule>;
    tokens: ReturnType<typeof createTokensModule>;
  };
  /** Closes sessions, then the bus, cache and database pools. */
  close(): Promise<void>;
}

export interface AppOptions {
  log?: Logger;
  realtimeLimits?: Parameters<typeof createRealtimeServer>[0]['limits'];
}

async function openStores(config: Readonly<Config>): Promise<{ db: Database; timeseries: Database }> {
  const embeddedDir = (name: string) => (config.data_dir.startsWith('memory://') ? config.data_dir : path.join(config.data_dir, name));
  const db = await openDatabase({
    url: config.database_url,
    dataDir: embeddedDir('pglite'),
    migrations: relationalMigrations,
    migrationsTable: 'knex_migrations',
  });
  try {
    const timeseries = config.timeseries_url
      ? await openDatabase({ url: config.timeseries_url, dataDir: '', migrations: timeseriesMigrations, migrationsTable: 'knex_migrations_timeseries' })
      : await shareDatabase(db, timeseriesMigrations, 'knex_migrations_timeseries');
    return { db, timeseries };
  } catch (error) {
    await db.close();
    throw error;
  }
}

export async function createApp(config: Readonly<Config>, options: AppOptions = {}): Promise<App> {
  const log = options.log ?? createLogger({ level: config.log.level, service: SERVICE_NAME, env: config.env, version: config.version });
  const startedAt = Date.now();
  const { db, timeseries } = await openStores(config);
  const cache = config.redis_url ? createRedisCache(config.redis_url, config.redis_prefix) : createMemoryCache();
  const bus = config.redis_url ? createRedisBus(config.redis_url, config.redis_prefix) : createMemoryBus();

  const features = createFeaturesModule({ knex: db.knex, cache });
  const gates = createGateEnforcer(features.service);

  const authStore = createAuthStore(db.knex);
  const jwt = createJwtService(config.auth.jwt_secret);
  // Audit names resolve through accounts, which is built next; the late binding is only read at request time.
  let accountsRef: ReturnType<typeof createAccountsModule> | null = null;
  const audit = createAuditModule({ knex: db.knex, names: (ids) => accountsRef!.service.names(ids) });
  const notifications = createNotificationsModule({ knex: db.knex });
  const accounts = createAccountsModule({ knex: db.knex, audit: audit.service, notifications: notifications.service, credentials: authStore });
  accountsRef = accounts;
  notifications.service.onAction('invite', 'accept_invite', 'accepted', (trx, userId, n) => accounts.service.acceptInvite(trx, userId, String(n.data.inviteId)));
  notifications.service.onAction('invite', 'decline_invite', 'declined', (trx, userId, n) => accounts.service.declineInvite(trx, userId, String(n.data.inviteId)));

  const { verifiers, popoutGrant } = createVerifiers({ jwt, store: authStore, principals: accounts.service.principals });
  const credentials = createCredentialResolver({ ...verifiers, system_key: createSystemKeyVerifier(config.auth.system_keys) });
  const sessions = createSessionsModule({
    config,
    jwt,
    store: authStore,
    principals: accounts.service.principals,
    accounts: accounts.service,
    audit: audit.service,
    popoutGrant,
  });

  const hub = createHub({ bus, log });
  const realtime = createRealtimeServer({
    credentials,
    channels: createChannelGate({ features: features.service }),
    hub,
    log,
    version: config.version,
    limits: options.realtimeLimits,
  });

  const system = createSystemModule({
    version: config.version,
    startedAt,
    probes: { relational: () => db.ping(), timeseries: () => timeseries.ping(), cache: () => cache.ping() },
    websocket: () => realtime.stats(),
  });
  const tokens = createTokensModule({ store: authStore, accounts: accounts.service, audit: audit.service });

  const rest = createRestRouter({
    handlers: { ...system.rest, ...tokens.rest, ...sessions.rest, ...accounts.rest, ...notifications.rest, ...audit.rest },
    gates,
  });
  const graphql = createGraphQLHandler({
    resolvers: {
      Query: { ...tokens.resolvers.Query, ...sessions.resolvers.Query, ...accounts.resolvers.Query, ...notifications.resolvers.Query, ...audit.resolvers.Query },
      Mutation: { ...tokens.resolvers.Mutation, ...sessions.resolvers.Mutation, ...accounts.resolvers.Mutation, ...notifications.resolvers.Mutation },
    },
    gates,
    log,
  });
  const http = createHttpApp({
    config,
    log,
    credentials,
    graphql,
    rest,
    rateLimit: rateLimitMiddleware(createRateLimiter({ config, redis: cache.redis, prefix: config.redis_prefix })),
  });

  const metrics = createMetrics({
    service: SERVICE_NAME,
    env: config.env,
    sources: {
      version: config.version,
      uptimeSeconds: () => Math.floor((Date.now() - startedAt) / 1000),
      wsSessions: () => realtime.stats().sessions,
      wsChannels: () => realtime.stats().channels,
      pools: () => ({ relational: db.pool(), ...(config.timeseries_url ? { timeseries: timeseries.pool() } : {}) }),
    },
  });

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
    credentials,
    authStore,
    modules: { features, system, accounts, audit, notifications, sessions, tokens },
    async close() {
      await realtime.close();
      await Promise.allSettled([bus.close(), cache.close()]);
      await timeseries.close();
      await db.close();
    },
  };
}
