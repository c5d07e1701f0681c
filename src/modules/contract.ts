/**
 * The module contract. Every `src/modules/<area>/index.ts` exports one `defineModule({...})`: its
 * migrations, and a `build` that turns the shared infrastructure and the APIs of the modules built
 * before it into its bindings (REST handlers, GraphQL resolvers, WebSocket channel resolvers, bus
 * consumers) and the API it offers later modules. `src/app.ts` lists the modules once, in
 * dependency order, and folds over the list; nothing else in the composition root names a module.
 *
 * A module reaches another only through `use(name)`, which returns that module's declared API and
 * fails at start-up when the module is not built yet (a dependency-order mistake, never a late
 * binding at request time). Reactions across modules (an invite accepted, a member removed) are
 * hooks offered by the module where the event happens and registered by the module that reacts.
 */
import type { MutationResolvers, QueryResolvers } from '../../generated/graphql';
import type { RestHandlers } from '../../generated/rest';
import type { CredentialStore } from '../auth/store';
import type { JwtService } from '../auth/jwt';
import type { Revocations } from '../auth/revocations';
import type { SecretBox } from '../auth/secrets';
import type { Config } from '../config/config';
import type { Bus } from '../infra/bus';
import type { Cache } from '../infra/cache';
import type { Database, Migration } from '../infra/db/database';
import type { Jobs } from '../infra/jobs';
import type { Logger } from '../infra/logger';
import type { RequestContext } from '../http/context';
import type { RateLimiter } from '../http/rate-limit';
import type { GraphQLContext } from '../http/graphql/context';
import type { AccountResolver, OwnerCheck } from '../realtime/channels';

/** What every module may use: storage, cache, bus, config and the auth unit's shared pieces. */
export interface Infra {
  readonly config: Readonly<Config>;
  readonly log: Logger;
  readonly db: Database;
  readonly timeseries: Database;
  readonly cache: Cache;
  readonly bus: Bus;
  readonly jwt: JwtService;
  /** Opaque credential rows (hashed tokens), owned by src/auth. */
  readonly credentials: CredentialStore;
  /** Revocation notices on the bus: the sockets of a revoked session or token close on every node. */
  readonly revocations: Revocations;
  /** The per-context rate budget shared by HTTP requests, GraphQL cost and WebSocket upgrades. */
  readonly limiter: RateLimiter;
  /** Milliseconds since the epoch when the process started (health, metrics). */
  readonly startedAt: number;
  /**
   * The job system (src/infra/jobs): define jobs and periodic jobs during `build`; they start once
   * every module started, so a periodic sweep runs once per period across the cluster.
   */
  readonly jobs: Jobs;
  /** Encryption of secrets at rest (provider tokens), src/auth/secrets.ts. */
  readonly secrets: SecretBox;
}

/**
 * The API each module offers the modules built after it, by module name. A module adds its entry
 * by declaration merging in its own index.ts:
 * `declare module '../contract' { interface ModuleApis { accounts: AccountsApi } }`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ModuleApis {}

export type ModuleName = keyof ModuleApis;

export interface BuildContext extends Infra {
  /** The API of a module listed earlier; throws at start-up otherwise. */
  use<K extends ModuleName>(name: K): ModuleApis[K];
  /**
   * Every module's `channelAccounts`, merged by the fold. Complete once the fold has run (before
   * any listener opens), so read it at subscribe time, not during `build`.
   */
  readonly channelAccounts: Readonly<Record<string, AccountResolver>>;
  /** Every module's `channelBootstraps`, merged by the fold (read at subscribe time, like channelAccounts). */
  readonly channelBootstraps: Readonly<Record<string, ChannelBootstrap>>;
  /** Every module's `channelOwners`, merged by the fold (read at subscribe time, like channelAccounts). */
  readonly channelOwners: Readonly<Record<string, OwnerCheck>>;
}

/**
 * The `bootstrap` snapshot of a channel, by channel pattern (`public-stats:{platform}:{broadcast_id}`):
 * called with the placeholders after `subscribed`; null sends nothing.
 */
export type ChannelBootstrap = (params: Record<string, string>) => Promise<unknown>;

/** A bus consumer: a handler for messages on a literal channel or a `*` pattern. */
export interface BusConsumer {
  readonly pattern: string;
  handle(channel: string, message: string): void | Promise<void>;
}

export interface ModuleBindings<Api> {
  readonly api: Api;
  readonly rest?: Partial<RestHandlers<RequestContext>>;
  readonly resolvers?: {
    readonly Query?: Partial<QueryResolvers<GraphQLContext>>;
    readonly Mutation?: Partial<MutationResolvers<GraphQLContext>>;
  };
  /** Resolvers of the account that owns a channel, by placeholder name (`install_id`, ...). */
  readonly channelAccounts?: Readonly<Record<string, AccountResolver>>;
  /** Snapshots sent as a `bootstrap` event after a subscribe, by channel pattern. */
  readonly channelBootstraps?: Readonly<Record<string, ChannelBootstrap>>;
  /** Owner checks of the ExtensionOwner channel gate kind, by placeholder name (`extension_id`). */
  readonly channelOwners?: Readonly<Record<string, OwnerCheck>>;
  readonly consumers?: readonly BusConsumer[];
  /** Runs once every module is built, before any listener opens (first probes, workers). */
  start?(): Promise<void>;
  /** Stops the module's own timers and workers (the app closes the shared infrastructure). */
  close?(): Promise<void>;
}

export interface ModuleDefinition<Name extends ModuleName, Bindings extends ModuleBindings<ModuleApis[Name]>> {
  readonly name: Name;
  readonly migrations?: readonly Migration[];
  readonly timeseriesMigrations?: readonly Migration[];
  build(context: BuildContext): Bindings;
}

/** Declares a module; the identity function is there for type inference of its bindings. */
export function defineModule<Name extends ModuleName, Bindings extends ModuleBindings<ModuleApis[Name]>>(
  definition: ModuleDefinition<Name, Bindings>,
): ModuleDefinition<Name, Bindings> {
  return definition;
}
