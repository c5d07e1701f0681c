/**
 * The WebSocket endpoint as a module of the fold: the channel registry (hub) over the bus, the
 * channel gates through the one gate engine with every module's channel-account resolvers, and
 * the session server. `src/server.ts` attaches `server` to the HTTP listener.
 */
import { randomUUID } from 'node:crypto';
import { defineModule } from '../contract';
import { createChannelGate } from '../../realtime/channels';
import { createHub } from '../../realtime/hub';
import { createPresence } from '../../realtime/presence';
import { channelLogOf } from '../../realtime/resume';
import { createRealtimeServer, type RealtimeOptions, type RealtimeServer } from '../../realtime/server';

export interface RealtimeApi {
  readonly server: RealtimeServer;
  stats(): { sessions: number; channels: number };
}

declare module '../contract' {
  interface ModuleApis {
    realtime: RealtimeApi;
  }
}

/** Tests shorten the spec's timers (silence, heartbeat, re-check); production uses the spec's. */
export function createRealtimeModule(limits?: RealtimeOptions['limits']) {
  return defineModule({
    name: 'realtime',
    build: ({ config, log, bus, limiter, revocations, channelAccounts, channelBootstraps, channelOwners, use }) => {
      const auth = use('auth');
      const accounts = use('accounts');
      const hub = createHub({ bus, log, channelLog: channelLogOf(bus), storedReplay: use('events').storedReplay });
      const server = createRealtimeServer({
        credentials: auth.credentials,
        channels: createChannelGate({ gates: auth.gates, accountResolvers: channelAccounts, ownerChecks: channelOwners }),
        hub,
        log,
        version: config.version,
        limiter,
        revocations,
        revokedAmong: auth.revokedAmong,
        trustProxy: config.http.trust_proxy,
        caps: config.realtime,
        limits,
        presence: createPresence({ bus, log, nodeId: randomUUID() }),
        bootstraps: channelBootstraps,
        async presenceMember(sessionId, ctx) {
          const names = ctx.userId ? await accounts.names({ users: [ctx.userId], accounts: [], roles: [] }) : [];
          return { session_id: sessionId, user_id: ctx.userId, account_id: ctx.accountId, display_name: names[0]?.display_name ?? null, avatar_url: null };
        },
      });
      return {
        api: { server, stats: () => server.stats() },
        close: () => {
          hub.close();
          return server.close();
        },
      };
    },
  });
}
