/**
 * Composition root: infrastructure, then services, then bindings. Dependencies pass through
 * factory arguments only (no module-level singletons), so a test can swap any of them.
 */
import path from 'node:path';
import type { Express } from 'express';
import type { Config } from './config/config';
import { createCredentialResolver, type CredentialResolver } from './auth/credentials';
import { createGateEnforcer } from './auth/gates';
import { createSystemKeyVerifier } from './auth/system-keys';
import { createMemoryBus, createRedisBus, type Bus } from './infra/bus';
import { createMemoryCache, createRedisCache, type Cache } from './infra/cache';
import { openDatabase, shareDatabase, type Database, type Migration } from './infra/db/database';
import { createLogger, type Logger } from './infra/logger';
import { createMetrics, type Metrics } from './infra/metrics';
import { createHttpApp } from './http/app';
import { createGraphQLHandler } from './http/graphql/endpoint';
import { createRestRouter } from './http/rest';
import { createFeaturesModule, featureMigrations } from './modules/features';
import { createSystemModule } from './modules/system';
import { createTokensModule } from './modules/tokens';
import { createChannelGate } from './realtime/channels';
import { createHub } from './realtime/hub';
import { createRealtimeServer, type RealtimeServer } from './realtime/server';

export const SERVICE_NAME = 'creator-backend';

/** Relational migrations of every module, in one list (ordered by their timestamped names). */
export const relationalMigrations: readonly Migration[] = [...featureMigrations];
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
  readonly modules: {
    features: ReturnType<typeof createFeaturesModule>;
    system: ReturnType<typeof createSystemModule>;
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
  const credentials = createCredentialResolver({ system_key: createSystemKeyVerifier(config.auth.system_keys) });

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
  const tokens = createTokensModule();

  const rest = createRestRouter({ handlers: { ...system.rest, ...tokens.rest }, gates });
  const graphql = createGraphQLHandler({ resolvers: { Query: { ...tokens.resolvers.Query } }, gates, log });
  const http = createHttpApp({ config, log, credentials, graphql, rest });

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
    modules: { features, system },
    async close() {
      await realtime.close();
      await Promise.allSettled([bus.close(), cache.close()]);
      await timeseries.close();
      await db.close();
    },
  };
}
