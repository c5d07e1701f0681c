/**
 * Typed configuration: defaults, then the SVC_CONFIG file (JSON or YAML), then environment
 * variables (every key as `SVC_<PATH>`, see envKeys; and the short names PORT, DATABASE_URL,
 * TIMESERIES_URL, REDIS_URL), validated once at boot into a frozen object. Owns the config keys of DESIGN.md's
 * bootstrap contract; must not read the environment anywhere else.
 *
 * Plain system keys from the file are hashed here and dropped: only SHA-256 hashes stay in memory.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { configSchema } from './schema';

export type Env = 'development' | 'test' | 'production';

export interface SystemKeyConfig {
  label: string;
  key_sha256: string;
  permissions: string[];
}

/** What a login provider's grants are for (Part 1 "Feature and account types": login, channel, bot). */
export type ProviderPurpose = 'login' | 'channel' | 'bot';

/**
 * A sign-in provider. `oidc`: `issuer` is discovered (`/.well-known/openid-configuration`)
 * and the endpoints below override what it announces; `oauth2`: no discovery and no ID token, the
 * endpoints are given and the subject comes from userinfo. The file may name an environment
 * variable instead of the secret (`client_secret_env`); loadConfig resolves it.
 */
export interface ProviderConfig {
  slug: string;
  kind: 'oidc' | 'oauth2';
  issuer: string | null;
  authorization_endpoint: string | null;
  token_endpoint: string | null;
  userinfo_endpoint: string | null;
  revocation_endpoint: string | null;
  client_id: string;
  client_secret: string;
  scopes: string[];
  purposes: ProviderPurpose[];
}

/**
 * A key of the secrets at rest: 32 bytes, base64; rows store the id of the key that sealed them.
 * `state` (src/auth/secrets.ts): `sealing` (one key; default: the first without a state),
 * `decrypt-only`, `retired`; unset means sealing for the first such key, decrypt-only after.
 */
export interface EncryptionKeyConfig {
  id: string;
  key: string;
  state?: 'sealing' | 'decrypt-only' | 'retired';
}

export interface Config {
  env: Env;
  version: string;
  port: number;
  host: string;
  database_url: string | null;
  timeseries_url: string | null;
  redis_url: string | null;
  data_dir: string;
  /** Prefix for every Redis key and bus channel (several deployments or test runs on one Redis). */
  redis_prefix: string;
  /**
   * The relational store: `migrate_on_start` applies pending migrations at start under the
   * migration lock (src/infra/db/migrate.ts); false makes a start refuse a database that lacks
   * any, naming them (run `npm run migrate` first). `pool_max`: most PostgreSQL connections per
   * store per node.
   */
  db: { migrate_on_start: boolean; pool_max: number };
  log: { level: string };
  /**
   * GraphQL limits, checked before execution (HTTP 400 BAD_REQUEST): selection depth, aliases,
   * directives and lexical tokens per document, and the estimated cost (src/http/graphql/cost.ts),
   * which is also what a request is charged against its rate limit. `introspection` also governs
   * "Did you mean" suggestions; both are off by default in production.
   */
  graphql: {
    playground: boolean;
    introspection: boolean;
    max_depth: number;
    max_aliases: number;
    max_directives: number;
    max_tokens: number;
    max_cost: number;
  };
  docs: { swagger_ui: boolean; openapi_json: boolean; asyncapi_ui: boolean };
  auth: {
    jwt_secret: string;
    ws_token_expiration: number;
    /** Lifetime of an access JWT, in seconds. */
    access_token_expiration: number;
    /** Lifetime of a session (and of its refresh JWTs), in seconds. */
    session_expiration: number;
    dev_login: boolean;
    /** E-mail addresses that hold the `super-admin` role from their next login on (first operators). */
    bootstrap_admins: string[];
    system_keys: SystemKeyConfig[];
    /** Login and platform-grant providers (OAuth 2.0 / OpenID Connect; src/modules/signin). */
    providers: ProviderConfig[];
    /**
     * Where a sign-in may send the browser back to: a `redirect_uri` must have the scheme, host
     * and port of an entry and a path under its path (exact prefix match); anything else is 400.
     */
    redirect_allow_list: string[];
    /**
     * The service's public base URL (`https://api.example.com`), from which the provider callback
     * `<public_url>/v1/auth/callback/<slug>` is built; null: from the request's own address.
     */
    public_url: string | null;
  };
  /**
   * Secrets at rest (provider tokens): AES-256-GCM keys; new writes use the first, reads the one
   * named by the row. Required in production; development generates one into the data dir.
   */
  secrets: { encryption_keys: EncryptionKeyConfig[] };
  /** Requests per minute per authentication context (Part 1 "Limits"); system keys are never limited. */
  rate_limits: { enabled: boolean; api_key: number; jwt: number; token: number; anonymous: number };
  /**
   * WebSocket limits beyond the protocol's own (spec/ws-protocol/root.json `x-limits`): open sockets per
   * node per anonymous client address and per credential (system keys are not capped), and the
   * bytes a session's outbound queue may hold besides its 256 messages.
   */
  realtime: { max_sockets_per_address: number; max_sockets_per_credential: number; outbound_queue_bytes: number };
  webhooks: {
    require_signatures: boolean;
    platform_b_secret: string | null;
    platform_c_secret: string | null;
    platform_c_public_key: string | null;
    shop_platform_secrets: Record<string, string>;
    /** HMAC-SHA256 secrets of the signed receivers of tips_platform and discord (spec/platforms/). */
    tips_platform_secret: string | null;
    discord_secret: string | null;
  };
  payments: {
    webhook_secret: string | null;
    connect_secret: string | null;
    allow_unsigned_webhooks: boolean;
    /** The payout provider's webhook id, sent with each delivery to its verification API (unset: fail closed). */
    payout_webhook_id: string | null;
    /** Base URL of the payout provider's API (the verification call goes to `<url>/v1/notifications/verify-webhook-signature`). */
    payout_api_url: string;
    /** The provider's domain a payout certificate URL must be on (or a subdomain of); null: the API host without its first label. */
    payout_cert_domain: string | null;
  };
  /**
   * Submitting payout requests to the payout provider (src/modules/payouts/submitter.ts, ADR 007):
   * off by default; its API is `payments.payout_api_url`, authenticated with the OAuth2 client
   * credentials here. `retry` bounds the tries while the provider is unavailable.
   */
  payouts: {
    enabled: boolean;
    client_id: string | null;
    client_secret: string | null;
    request_timeout_ms: number;
    batch_size: number;
    retry: { max_attempts: number; base_delay_ms: number; max_delay_ms: number; sweep_seconds: number; lease_ms: number };
  };
  /** Platform OAuth apps: the platforms whose global (SYSTEM) app credentials are configured. */
  connections: { system_apps: string[] };
  /**
   * Where uploaded sound audio lives (src/infra/blobs.ts): `fs` (default) keeps files under
   * `blob_dir` (null: `<data_dir>/sounds`, or a throw-away temporary folder when `data_dir` is
   * `memory://`); `database` keeps them in the relational store, for several nodes without a
   * shared disk.
   */
  sounds: { blob_store: 'fs' | 'database'; blob_dir: string | null };
  /**
   * Chat platforms (Part 2 "Chat"): the base URL of each platform's API for send, moderate,
   * profile refresh and live chat polling; the platform_a chat socket the ingest worker holds
   * open per connected channel; the platform_b polling period (0: no polling).
   */
  chat: {
    request_timeout_ms: number;
    platforms: {
      platform_a: { api_url: string | null; socket_url: string | null; reconnect_ms: number };
      platform_b: { api_url: string | null; poll_interval_ms: number };
      platform_c: { api_url: string | null };
    };
  };
  /**
   * Platforms without a chat (src/modules/platforms/): music_platform's activity feed, polled per
   * connected music account with its channel grant (api_url unset or poll_interval_ms 0: no poller).
   */
  platforms: { music_platform: { api_url: string | null; poll_interval_ms: number } };
  /**
   * Background work (docs/adr/005-background-jobs.md): how often a node polls for queued jobs;
   * per-job period overrides in seconds (`events.gift-sweep`: 5, ...); the ingest leases' lifetime
   * and renewal period (a dead node's channels are taken over within lease_ttl_ms + lease_renew_ms);
   * this node's name in GET /v1/admin/workers (null: host name and process id).
   */
  jobs: { poll_interval_ms: number; periods: Record<string, number>; lease_ttl_ms: number; lease_renew_ms: number; node_id: string | null };
  metrics: { host: string; port: number };
  /**
   * Results kept in process memory for later requests (hot reads, rendered response bytes, kept
   * GraphQL answers; src/infra/kept.ts): together at most `kept_bytes` (estimated), the least
   * recently used going first, besides each cache's own entry count.
   */
  memory: { kept_bytes: number };
  /**
   * Byte budgets of the events surface (one account must not exhaust a node's heap):
   * `max_raw_bytes` bounds an event's `raw` as JSON text (larger: 400 VALIDATION_ERROR);
   * `page_max_bytes` bounds the `raw` bytes of one page of `GET /v1/events` (a page stops early past
   * it and says so; its first event is always served); `read_budget_bytes` bounds the page bytes a
   * node holds for answers not yet written (each account at most a quarter of it), and a read that
   * does not fit waits up to `read_wait_ms`, then answers 503 with `Retry-After`.
   */
  events: { max_raw_bytes: number; page_max_bytes: number; read_budget_bytes: number; read_wait_ms: number };
  /** `max_metadata_bytes` bounds the `metadata` of an ingested audit row as JSON text (larger: 400 VALIDATION_ERROR). */
  audit: { max_metadata_bytes: number };
  http: {
    trust_proxy: boolean | number | string;
    /** Validate every REST response against the OpenAPI document (on in tests). */
    validate_responses: boolean;
    /** Grace period for in-flight requests on SIGTERM, in milliseconds. */
    shutdown_grace_ms: number;
    /** Origins (`https://dash.example.com`) allowed to call the API from a browser, with credentials; empty = same origin only. */
    cors_origins: string[];
    /**
     * Most bytes of a request line plus headers (Node's `maxHeaderSize`; its default is 16 KiB).
     * Sized so that every documented query at its longest fits beside a JWT; beyond it the answer
     * is 431 `HEADERS_TOO_LARGE` (spec/openapi/common.yaml).
     */
    max_header_bytes: number;
  };
  /** RFC 9116 `/.well-known/security.txt`: not served while `contact` is null (the production default). */
  security_txt: { contact: string | null; expires: string | null };
  /**
   * Bus liveness (Redis only). Each node publishes a heartbeat on its own bus channel every
   * `heartbeat_ms` and hears it back through its subscriber; a node-local copy of a credential
   * (key look-ups, the global feature switches) is trusted only while the last round trip is at
   * most `heartbeat_bound_ms` old. Otherwise the database answers (fail closed).
   */
  bus: { heartbeat_ms: number; heartbeat_bound_ms: number };
  /**
   * Outgoing mail (src/modules/mail, docs/guides/operating.md "The mail outbox"): `transport` `smtp` (nodemailer) or `log` (a
   * log line per message, the development default; production refuses it unless
   * `allow_log_transport`). `from` is the sender; `link_base` the dashboard origin links point at.
   * `smtp.pass_env` names an environment variable holding the password (read here, once).
   * `retry`: tries per message, exponential backoff with jitter between `base_delay_ms` and
   * `max_delay_ms`, how often a node looks for due retries (`sweep_seconds`), how long a node
   * holds a message it is sending before another may retry it (`lease_ms`), and how many days
   * sent messages stay visible.
   */
  mail: {
    transport: 'smtp' | 'log';
    from: string;
    allow_log_transport: boolean;
    link_base: string;
    smtp: {
      host: string | null;
      port: number;
      secure: boolean;
      require_tls: boolean;
      ignore_tls: boolean;
      reject_unauthorized: boolean;
      user: string | null;
      pass: string | null;
      pass_env: string | null;
      pool: boolean;
      max_connections: number;
      connection_timeout_ms: number;
      socket_timeout_ms: number;
    };
    retry: { max_attempts: number; base_delay_ms: number; max_delay_ms: number; sweep_seconds: number; lease_ms: number; keep_sent_days: number };
  };
}

const DEV_JWT_SECRET = 'development-only-secret-change-me-0123456789';
/** The shortest secret production accepts (what HMAC-SHA-256 keys ought to be). */
const MIN_SECRET_BYTES = 32;
/** Secrets printed in the README and in this file: anyone can read them, so production refuses them. */
const PUBLISHED_SECRETS = new Set([DEV_JWT_SECRET, 'a-long-random-secret-of-at-least-32-characters']);
/** The security.txt contact of the development default, an address nobody reads. */
const PLACEHOLDER_CONTACT = /@example\.(?:com|org|net)\b|\/\/(?:www\.)?example\.(?:com|org|net)\b/i;

/**
 * Production refuses published secrets (the README's example, the development default) and
 * shared secrets under MIN_SECRET_BYTES (JWT, payment and webhook signing secrets we choose), and
 * a security.txt contact that is the placeholder.
 */
function productionSecretProblems(config: Config): string[] {
  const problems: string[] = [];
  const named: [string, unknown][] = [
    ['auth.jwt_secret', config.auth?.jwt_secret],
    ['payments.webhook_secret', config.payments?.webhook_secret],
    ['payments.connect_secret', config.payments?.connect_secret],
    ['webhooks.platform_b_secret', config.webhooks?.platform_b_secret],
    ['webhooks.platform_c_secret', config.webhooks?.platform_c_secret],
  ];
  for (const [where, value] of named) {
    if (typeof value !== 'string' || value === '') continue;
    if (PUBLISHED_SECRETS.has(value)) problems.push(`${where}: is the example from the README or the development default; production needs a secret of its own (openssl rand -hex 32)`);
    else if (where !== 'auth.jwt_secret' && Buffer.byteLength(value) < MIN_SECRET_BYTES) problems.push(`${where}: must be at least ${MIN_SECRET_BYTES} bytes in production`);
  }
  const contact = config.security_txt?.contact;
  if (typeof contact === 'string' && PLACEHOLDER_CONTACT.test(contact)) problems.push('security_txt.contact: is the example.com placeholder; production needs an address someone reads (mailto: or https:)');
  return problems;
}

/** The defaults of each environment, below the file and the environment (also read by docs/reference/configuration.md's generator). */
export const configDefaults = (env: Env): Omit<Config, 'version'> => ({
  env,
  port: 8080,
  // Loopback outside production: dev login is on there and must not be reachable from the network.
  host: env === 'production' ? '0.0.0.0' : '127.0.0.1',
  database_url: null,
  timeseries_url: null,
  redis_url: null,
  data_dir: './.data',
  redis_prefix: '',
  db: { migrate_on_start: true, pool_max: 10 },
  log: { level: env === 'test' ? 'silent' : 'info' },
  graphql: {
    playground: env !== 'production',
    introspection: env !== 'production',
    max_depth: 12,
    max_aliases: 30,
    max_directives: 50,
    max_tokens: 5000,
    max_cost: 5000,
  },
  docs: { swagger_ui: true, openapi_json: true, asyncapi_ui: true },
  auth: {
    jwt_secret: env === 'production' ? '' : DEV_JWT_SECRET,
    ws_token_expiration: 900,
    access_token_expiration: 900,
    session_expiration: 30 * 86400,
    dev_login: env !== 'production',
    bootstrap_admins: [],
    system_keys: [],
    providers: [],
    redirect_allow_list: [],
    public_url: null,
  },
  secrets: { encryption_keys: [] },
  webhooks: {
    require_signatures: true,
    platform_b_secret: null,
    platform_c_secret: null,
    platform_c_public_key: null,
    shop_platform_secrets: {},
    tips_platform_secret: null,
    discord_secret: null,
  },
  payments: {
    webhook_secret: null,
    connect_secret: null,
    allow_unsigned_webhooks: false,
    payout_webhook_id: null,
    payout_api_url: 'https://api.payout-provider.com',
    payout_cert_domain: null,
  },
  payouts: {
    enabled: false,
    client_id: null,
    client_secret: null,
    request_timeout_ms: 10_000,
    batch_size: 20,
    retry: { max_attempts: 5, base_delay_ms: 30_000, max_delay_ms: 3_600_000, sweep_seconds: 30, lease_ms: 120_000 },
  },
  connections: { system_apps: [] },
  sounds: { blob_store: 'fs', blob_dir: null },
  chat: {
    request_timeout_ms: 5000,
    platforms: {
      platform_a: { api_url: null, socket_url: null, reconnect_ms: 5000 },
      platform_b: { api_url: null, poll_interval_ms: 5000 },
      platform_c: { api_url: null },
    },
  },
  platforms: { music_platform: { api_url: null, poll_interval_ms: 5000 } },
  rate_limits: { enabled: true, api_key: 1200, jwt: 600, token: 600, anonymous: 120 },
  realtime: { max_sockets_per_address: 20, max_sockets_per_credential: 50, outbound_queue_bytes: 4 * 1024 * 1024 },
  jobs: { poll_interval_ms: 2000, periods: {}, lease_ttl_ms: 20_000, lease_renew_ms: 5000, node_id: null },
  metrics: { host: '127.0.0.1', port: 9464 },
  memory: { kept_bytes: 64 * 1024 * 1024 },
  events: { max_raw_bytes: 64 * 1024, page_max_bytes: 1024 * 1024, read_budget_bytes: 32 * 1024 * 1024, read_wait_ms: 1000 },
  audit: { max_metadata_bytes: 64 * 1024 },
  http: { trust_proxy: 'loopback', validate_responses: env === 'test', shutdown_grace_ms: 10_000, cors_origins: [], max_header_bytes: 65_536 },
  // Production serves no security.txt until a contact is configured (never the placeholder).
  security_txt: { contact: env === 'production' ? null : 'mailto:security@example.com', expires: null },
  bus: { heartbeat_ms: 1000, heartbeat_bound_ms: 2000 },
  mail: {
    transport: 'log',
    from: 'Creator Backend <no-reply@localhost>',
    allow_log_transport: false,
    link_base: 'http://localhost:8080',
    smtp: {
      host: null,
      port: 587,
      secure: false,
      require_tls: false,
      ignore_tls: false,
      reject_unauthorized: true,
      user: null,
      pass: null,
      pass_env: null,
      pool: true,
      max_connections: 2,
      connection_timeout_ms: 10_000,
      socket_timeout_ms: 30_000,
    },
    retry: { max_attempts: 8, base_delay_ms: 30_000, max_delay_ms: 3_600_000, sweep_seconds: 15, lease_ms: 120_000, keep_sent_days: 7 },
  },
});

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isObject(value) && isObject(base[key]) ? merge(base[key] as Json, value) : value;
  }
  return out;
}

function readConfigFile(file: string): Json {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError([`SVC_CONFIG: cannot read ${file}: ${(error as Error).message}`]);
  }
  let parsed: unknown;
  try {
    parsed = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigError([`SVC_CONFIG: ${file} is not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(error as Error).message}`]);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isObject(parsed)) throw new ConfigError([`SVC_CONFIG: ${file} must hold an object at its top level`]);
  return parsed;
}

type SchemaNode = { type?: string | readonly string[]; enum?: readonly unknown[]; properties?: Record<string, SchemaNode>; additionalProperties?: unknown };

/** The schema node of a dotted key path, or null when no key of the schema has that path. */
function schemaAt(keys: readonly string[]): SchemaNode | null {
  let node: SchemaNode = configSchema as unknown as SchemaNode;
  for (const key of keys) {
    const next = node.properties?.[key];
    if (!next) return null;
    node = next;
  }
  return node;
}

/** An environment variable's text as the type its key takes: booleans, integers, JSON for lists and objects, else the text. */
function envValue(text: string, node: SchemaNode): { value: unknown } | { problem: string } {
  const types = new Set(node.type === undefined ? (node.enum ?? []).map((v) => (v === null ? 'null' : typeof v)) : typeof node.type === 'string' ? [node.type] : node.type);
  if (types.has('null') && text === '') return { value: null };
  if (types.has('boolean') && /^(true|false)$/.test(text)) return { value: text === 'true' };
  if ((types.has('integer') || types.has('number')) && /^-?\d+(\.\d+)?$/.test(text)) return { value: Number(text) };
  if (types.has('array') || types.has('object')) {
    try {
      return { value: JSON.parse(text) as unknown };
    } catch {
      return { problem: `is not JSON (a list or object is given as JSON text)` };
    }
  }
  return { value: text };
}

/**
 * Every key of the schema from the environment, by one rule: `SVC_` then the key's path in upper
 * case, nested keys joined by a double underscore (`auth.jwt_secret` is `SVC_AUTH__JWT_SECRET`,
 * `db.pool_max` is `SVC_DB__POOL_MAX`); lists and objects as JSON text. `SVC_CONFIG` names the
 * file. A `SVC_` variable inside a section that names no key of it is a problem, as an unknown key
 * in the file is; one outside every section is left alone (a secret a `key_env` names).
 */
function envKeys(env: NodeJS.ProcessEnv, problems: string[]): Json {
  const out: Json = {};
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith('SVC_') || name === 'SVC_CONFIG' || text === undefined) continue;
    const keys = name.slice(4).toLowerCase().split('__');
    const node = keys.every(Boolean) ? schemaAt(keys) : null;
    // A variable outside every section (`SVC_SECRETS_KEY`, named by a `key_env`) is not ours to judge.
    if (!node && !schemaAt(keys.slice(0, 1))) continue;
    if (!node) {
      problems.push(`${name}: names no configuration key (SVC_<KEY PATH>, nested keys joined by __, e.g. SVC_AUTH__JWT_SECRET)`);
      continue;
    }
    const parsed = envValue(text, node);
    if ('problem' in parsed) {
      problems.push(`${name}: ${parsed.problem}`);
      continue;
    }
    let target = out;
    for (const key of keys.slice(0, -1)) target = (target[key] = isObject(target[key]) ? target[key] : {}) as Json;
    target[keys.at(-1)!] = parsed.value;
  }
  return out;
}

/**
 * The short names kept beside the rule (PORT, DATABASE_URL, ...) and the key each sets: they win
 * over their SVC_ forms. An empty value is ignored.
 */
export const SHORT_ENV_NAMES = { PORT: 'port', DATABASE_URL: 'database_url', TIMESERIES_URL: 'timeseries_url', REDIS_URL: 'redis_url', SVC_DATA_DIR: 'data_dir' } as const;

function envOverrides(env: NodeJS.ProcessEnv): Json {
  const out: Json = {};
  for (const [name, key] of Object.entries(SHORT_ENV_NAMES)) {
    const text = env[name];
    if (text === undefined || text === '') continue;
    // PORT alone is a number; a non-numeric PORT stays text so validation names it.
    out[key] = key === 'port' && /^\d+$/.test(text) ? Number(text) : text;
  }
  return out;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

let compiledValidator: ValidateFunction | null = null;
/** The schema's validator, compiled once per process (loadConfig runs many times in tests and codegen). */
const configValidator = (): ValidateFunction => (compiledValidator ??= new Ajv({ allErrors: true, strict: false }).compile(configSchema));

/**
 * Loads configuration. `overrides` is merged last (tests use it instead of files); every problem
 * is collected and reported together in one ConfigError.
 */
export function loadConfig(options: { env?: NodeJS.ProcessEnv; overrides?: Json } = {}): Readonly<Config> {
  const processEnv = options.env ?? process.env;
  const file = processEnv.SVC_CONFIG ? readConfigFile(processEnv.SVC_CONFIG) : {};
  const problems: string[] = [];
  const layered = merge(merge(merge(file, envKeys(processEnv, problems)), envOverrides(processEnv)), options.overrides ?? {});
  const envName = (layered.env ?? 'development') as Env;
  const merged = merge({ ...configDefaults(['development', 'test', 'production'].includes(envName) ? envName : 'development'), version: packageVersion() }, layered);

  const validate = configValidator();
  if (!validate(merged)) {
    for (const e of validate.errors ?? []) {
      const where = e.instancePath.replace(/^\//, '').replace(/\//g, '.') || '(root)';
      const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
      problems.push(`${where}: ${e.message ?? 'is invalid'}${extra}`);
    }
  }
  const config = merged as unknown as Config;
  if (config.env === 'production') {
    if (!config.auth?.jwt_secret || Buffer.byteLength(config.auth.jwt_secret) < MIN_SECRET_BYTES) problems.push(`auth.jwt_secret: must be set to at least ${MIN_SECRET_BYTES} bytes in production`);
    if (config.auth?.dev_login) problems.push('auth.dev_login: cannot be enabled in production');
    // The development-only switches that accept unsigned requests as if they came from a provider.
    if (config.payments?.allow_unsigned_webhooks) problems.push('payments.allow_unsigned_webhooks: cannot be enabled in production (it accepts unsigned payment events)');
    if (config.webhooks?.require_signatures === false) problems.push('webhooks.require_signatures: cannot be false in production (it accepts unsigned platform webhooks)');
    problems.push(...productionSecretProblems(config));
    if (config.payouts?.enabled) {
      for (const key of ['client_id', 'client_secret'] as const) {
        if (!config.payouts[key]) problems.push(`payouts.${key}: must be set in production while payouts.enabled is true (the payout provider's credentials)`);
      }
    }
  }
  // A lease renewed no more often than it lasts would lapse between renewals.
  if (typeof config.jobs?.lease_renew_ms === 'number' && typeof config.jobs.lease_ttl_ms === 'number' && config.jobs.lease_renew_ms * 2 > config.jobs.lease_ttl_ms) {
    problems.push('jobs.lease_renew_ms: must be at most half of jobs.lease_ttl_ms');
  }
  for (const origin of Array.isArray(config.http?.cors_origins) ? config.http.cors_origins : []) {
    const url = typeof origin === 'string' && URL.canParse(origin) ? new URL(origin) : null;
    const isOrigin = url && /^https?:$/.test(url.protocol) && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password && !url.hostname.includes('*');
    if (typeof origin === 'string' && !isOrigin) problems.push(`http.cors_origins: ${JSON.stringify(origin)} is not an origin such as https://dash.example.com`);
  }
  if (config.bus && config.bus.heartbeat_bound_ms <= config.bus.heartbeat_ms) problems.push('bus.heartbeat_bound_ms: must be greater than bus.heartbeat_ms');
  problems.push(...signInProblems(config, processEnv));
  problems.push(...mailProblems(config, processEnv));
  if (problems.length) throw new ConfigError([...new Set(problems)]);

  const fromFile = config.auth.system_keys as (Partial<SystemKeyConfig> & { label: string; key?: string; permissions: string[] })[];
  config.auth.system_keys = fromFile.map(({ label, key, key_sha256, permissions }) => ({
    label,
    key_sha256: key_sha256 ?? sha256Hex(key!),
    permissions: [...permissions],
  }));
  return deepFreeze(config);
}

type RawProvider = Partial<ProviderConfig> & { client_secret_env?: string };
type RawKey = { id: string; key?: string; key_env?: string; state?: EncryptionKeyConfig['state'] };

/**
 * Sign-in providers and secrets keys: secrets named by environment variable are read here (the
 * only place that reads the environment), each provider has what its kind needs, and production
 * refuses to start without an encryption key. Resolved values replace the raw entries in place.
 */
function signInProblems(config: Config, processEnv: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  if (!isObject(config.auth) || !isObject(config.secrets)) return problems;
  const rawProviders = (Array.isArray(config.auth?.providers) ? config.auth.providers : []) as RawProvider[];
  const slugs = new Set<string>();
  config.auth.providers = rawProviders.map((p, i) => {
    const where = `auth.providers.${i}`;
    if (p.slug && slugs.has(p.slug)) problems.push(`${where}.slug: ${p.slug} is listed twice`);
    if (p.slug) slugs.add(p.slug);
    let secret = p.client_secret ?? '';
    if (p.client_secret_env) {
      secret = processEnv[p.client_secret_env] ?? '';
      if (!secret) problems.push(`${where}.client_secret_env: environment variable ${p.client_secret_env} is not set`);
    }
    if (p.kind === 'oidc' && !p.issuer) problems.push(`${where}.issuer: required for an oidc provider (discovery)`);
    if (p.kind === 'oauth2') {
      for (const field of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint'] as const) {
        if (!p[field]) problems.push(`${where}.${field}: required for an oauth2 provider`);
      }
    }
    return {
      slug: p.slug ?? '',
      kind: p.kind ?? 'oidc',
      issuer: p.issuer ?? null,
      authorization_endpoint: p.authorization_endpoint ?? null,
      token_endpoint: p.token_endpoint ?? null,
      userinfo_endpoint: p.userinfo_endpoint ?? null,
      revocation_endpoint: p.revocation_endpoint ?? null,
      client_id: p.client_id ?? '',
      client_secret: secret,
      scopes: p.scopes ?? (p.kind === 'oauth2' ? [] : ['openid', 'email', 'profile']),
      purposes: p.purposes ?? ['login'],
    };
  });
  for (const entry of Array.isArray(config.auth?.redirect_allow_list) ? config.auth.redirect_allow_list : []) {
    const url = typeof entry === 'string' && URL.canParse(entry) ? new URL(entry) : null;
    if (!url || url.search || url.hash || url.username || url.password) problems.push(`auth.redirect_allow_list: ${JSON.stringify(entry)} is not a URL prefix such as https://dash.example.com/signed-in`);
  }
  const rawKeys = (Array.isArray(config.secrets?.encryption_keys) ? config.secrets.encryption_keys : []) as RawKey[];
  const ids = new Set<string>();
  config.secrets.encryption_keys = rawKeys.map((k, i) => {
    const where = `secrets.encryption_keys.${i}`;
    const key = k.key_env ? (processEnv[k.key_env] ?? '') : (k.key ?? '');
    if (k.key_env && !key) problems.push(`${where}.key_env: environment variable ${k.key_env} is not set`);
    else if (Buffer.from(key, 'base64').length !== 32) problems.push(`${where}.key: must be 32 bytes, base64 (openssl rand -base64 32)`);
    if (ids.has(k.id)) problems.push(`${where}.id: ${k.id} is listed twice`);
    ids.add(k.id);
    return k.state ? { id: k.id, key, state: k.state } : { id: k.id, key };
  });
  const keys = config.secrets.encryption_keys;
  if (keys.filter((k) => k.state === 'sealing').length > 1) problems.push('secrets.encryption_keys: more than one key is `state: sealing` (one key seals)');
  if (keys.length > 0 && !keys.some((k) => k.state === 'sealing' || k.state === undefined)) problems.push('secrets.encryption_keys: no key seals (mark one `state: sealing`)');
  if (config.env === 'production' && config.auth.providers.length > 0 && !config.auth.public_url) {
    problems.push('auth.public_url: required in production when auth.providers is set (the providers redirect to <public_url>/v1/auth/callback/<slug>)');
  }
  if (config.env === 'production' && config.secrets.encryption_keys.length === 0) {
    problems.push('secrets.encryption_keys: at least one key is required in production (provider tokens are encrypted at rest)');
  }
  return problems;
}

/**
 * Mail: production sends real mail unless told otherwise in so many words, SMTP needs a host,
 * and a password named by environment variable is read here (replacing `pass`).
 */
function mailProblems(config: Config, processEnv: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const mail = config.mail;
  if (!isObject(mail) || !isObject(mail.smtp) || !isObject(mail.retry)) return problems;
  if (config.env === 'production' && mail.transport === 'log' && !mail.allow_log_transport) {
    problems.push('mail.transport: `log` sends no mail; production needs `smtp` (or mail.allow_log_transport: true to accept that)');
  }
  if (mail.transport === 'smtp' && !mail.smtp.host) problems.push('mail.smtp.host: required when mail.transport is smtp');
  if (mail.smtp.pass_env) {
    const pass = processEnv[mail.smtp.pass_env] ?? '';
    if (!pass) problems.push(`mail.smtp.pass_env: environment variable ${mail.smtp.pass_env} is not set`);
    mail.smtp.pass = pass;
  }
  if (mail.retry.max_delay_ms < mail.retry.base_delay_ms) problems.push('mail.retry.max_delay_ms: must be at least mail.retry.base_delay_ms');
  // A hold shorter than one try's worst case would let another node send the message again.
  if (mail.smtp.connection_timeout_ms + mail.smtp.socket_timeout_ms >= mail.retry.lease_ms) {
    problems.push('mail.retry.lease_ms: must exceed mail.smtp.connection_timeout_ms + mail.smtp.socket_timeout_ms');
  }
  return problems;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
