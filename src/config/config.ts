/**
 * Typed configuration: defaults, then the SVC_CONFIG file (JSON or YAML), then environment
 * variables, validated once at boot into a frozen object. Owns the config keys of DESIGN.md's
 * bootstrap contract; must not read the environment anywhere else.
 *
 * Plain system keys from the file are hashed here and dropped: only SHA-256 hashes stay in memory.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import { parse as parseYaml } from 'yaml';

export type Env = 'development' | 'test' | 'production';

export interface SystemKeyConfig {
  label: string;
  key_sha256: string;
  permissions: string[];
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
  docs: { swagger_ui: boolean; openapi_json: boolean };
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
  };
  /** Requests per minute per authentication context (Part 1 "Limits"); system keys are never limited. */
  rate_limits: { enabled: boolean; api_key: number; jwt: number; token: number; anonymous: number };
  /**
   * WebSocket limits beyond the protocol's own (spec/ws-protocol.json `x-limits`): open sockets per
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
  metrics: { host: string; port: number };
  /**
   * Results kept in process memory for later requests (hot reads, rendered response bytes, kept
   * GraphQL answers; src/infra/kept.ts): together at most `kept_bytes` (estimated), the least
   * recently used going first, besides each cache's own entry count.
   */
  memory: { kept_bytes: number };
  http: {
    trust_proxy: boolean | number | string;
    /** Validate every REST response against the OpenAPI document (on in tests). */
    validate_responses: boolean;
    /** Grace period for in-flight requests on SIGTERM, in milliseconds. */
    shutdown_grace_ms: number;
    /** Origins (`https://dash.example.com`) allowed to call the API from a browser, with credentials; empty = same origin only. */
    cors_origins: string[];
  };
  security_txt: { contact: string; expires: string | null };
}

const DEV_JWT_SECRET = 'development-only-secret-change-me-0123456789';

const defaults = (env: Env): Omit<Config, 'version'> => ({
  env,
  port: 8080,
  // Loopback outside production: dev login is on there and must not be reachable from the network.
  host: env === 'production' ? '0.0.0.0' : '127.0.0.1',
  database_url: null,
  timeseries_url: null,
  redis_url: null,
  data_dir: './.data',
  redis_prefix: '',
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
  docs: { swagger_ui: true, openapi_json: true },
  auth: {
    jwt_secret: env === 'production' ? '' : DEV_JWT_SECRET,
    ws_token_expiration: 900,
    access_token_expiration: 900,
    session_expiration: 30 * 86400,
    dev_login: env !== 'production',
    bootstrap_admins: [],
    system_keys: [],
  },
  webhooks: {
    require_signatures: true,
    platform_b_secret: null,
    platform_c_secret: null,
    platform_c_public_key: null,
    shop_platform_secrets: {},
  },
  payments: {
    webhook_secret: null,
    connect_secret: null,
    allow_unsigned_webhooks: false,
    payout_webhook_id: null,
    payout_api_url: 'https://api.payout-provider.com',
    payout_cert_domain: null,
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
  rate_limits: { enabled: true, api_key: 1200, jwt: 600, token: 600, anonymous: 120 },
  realtime: { max_sockets_per_address: 20, max_sockets_per_credential: 50, outbound_queue_bytes: 4 * 1024 * 1024 },
  metrics: { host: '127.0.0.1', port: 9464 },
  memory: { kept_bytes: 64 * 1024 * 1024 },
  http: { trust_proxy: 'loopback', validate_responses: env === 'test', shutdown_grace_ms: 10_000, cors_origins: [] },
  security_txt: { contact: 'mailto:security@example.com', expires: null },
});

const nullableString = { type: ['string', 'null'] };
const schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    env: { enum: ['development', 'test', 'production'] },
    version: { type: 'string' },
    port: { type: 'integer', minimum: 0, maximum: 65535 },
    host: { type: 'string' },
    database_url: nullableString,
    timeseries_url: nullableString,
    redis_url: nullableString,
    data_dir: { type: 'string', minLength: 1 },
    redis_prefix: { type: 'string' },
    log: {
      type: 'object',
      additionalProperties: false,
      properties: { level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] } },
    },
    graphql: {
      type: 'object',
      additionalProperties: false,
      properties: {
        playground: { type: 'boolean' },
        introspection: { type: 'boolean' },
        // Bounded so the parser's recursion stays far from the stack limit (see src/http/graphql/limits.ts).
        max_depth: { type: 'integer', minimum: 1, maximum: 100 },
        max_aliases: { type: 'integer', minimum: 0 },
        max_directives: { type: 'integer', minimum: 0 },
        max_tokens: { type: 'integer', minimum: 100 },
        max_cost: { type: 'integer', minimum: 1 },
      },
    },
    docs: {
      type: 'object',
      additionalProperties: false,
      properties: { swagger_ui: { type: 'boolean' }, openapi_json: { type: 'boolean' } },
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      properties: {
        jwt_secret: { type: 'string' },
        ws_token_expiration: { type: 'integer', minimum: 30, maximum: 86400 },
        access_token_expiration: { type: 'integer', minimum: 30, maximum: 86400 },
        session_expiration: { type: 'integer', minimum: 300, maximum: 31536000 },
        dev_login: { type: 'boolean' },
        bootstrap_admins: { type: 'array', items: { type: 'string', pattern: '^[^@\\s]+@[^@\\s]+$' } },
        system_keys: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['label', 'permissions'],
            properties: {
              label: { type: 'string', minLength: 1 },
              key: { type: 'string', pattern: '^lm_sys_[0-9a-f]{64}$' },
              key_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
              permissions: { type: 'array', items: { type: 'string', minLength: 1 } },
            },
            oneOf: [{ required: ['key'] }, { required: ['key_sha256'] }],
          },
        },
      },
    },
    webhooks: {
      type: 'object',
      additionalProperties: false,
      properties: {
        require_signatures: { type: 'boolean' },
        platform_b_secret: nullableString,
        platform_c_secret: nullableString,
        platform_c_public_key: nullableString,
        shop_platform_secrets: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
    payments: {
      type: 'object',
      additionalProperties: false,
      properties: {
        webhook_secret: nullableString,
        connect_secret: nullableString,
        allow_unsigned_webhooks: { type: 'boolean' },
        payout_webhook_id: nullableString,
        payout_api_url: { type: 'string', pattern: '^https?://' },
        payout_cert_domain: nullableString,
      },
    },
    chat: {
      type: 'object',
      additionalProperties: false,
      properties: {
        request_timeout_ms: { type: 'integer', minimum: 100, maximum: 60000 },
        platforms: {
          type: 'object',
          additionalProperties: false,
          properties: {
            platform_a: {
              type: 'object',
              additionalProperties: false,
              properties: {
                api_url: { type: ['string', 'null'], pattern: '^https?://' },
                socket_url: { type: ['string', 'null'], pattern: '^wss?://' },
                reconnect_ms: { type: 'integer', minimum: 10 },
              },
            },
            platform_b: {
              type: 'object',
              additionalProperties: false,
              properties: { api_url: { type: ['string', 'null'], pattern: '^https?://' }, poll_interval_ms: { type: 'integer', minimum: 0 } },
            },
            platform_c: {
              type: 'object',
              additionalProperties: false,
              properties: { api_url: { type: ['string', 'null'], pattern: '^https?://' } },
            },
          },
        },
      },
    },
    connections: {
      type: 'object',
      additionalProperties: false,
      properties: {
        system_apps: { type: 'array', items: { type: 'string', enum: ['platform_a', 'platform_b', 'platform_c', 'music_platform'] } },
      },
    },
    sounds: {
      type: 'object',
      additionalProperties: false,
      properties: { blob_store: { enum: ['fs', 'database'] }, blob_dir: { type: ['string', 'null'], minLength: 1 } },
    },
    realtime: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_sockets_per_address: { type: 'integer', minimum: 1 },
        max_sockets_per_credential: { type: 'integer', minimum: 1 },
        outbound_queue_bytes: { type: 'integer', minimum: 65536 },
      },
    },
    memory: {
      type: 'object',
      additionalProperties: false,
      properties: { kept_bytes: { type: 'integer', minimum: 0 } },
    },
    rate_limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        api_key: { type: 'integer', minimum: 1 },
        jwt: { type: 'integer', minimum: 1 },
        token: { type: 'integer', minimum: 1 },
        anonymous: { type: 'integer', minimum: 1 },
      },
    },
    metrics: {
      type: 'object',
      additionalProperties: false,
      properties: { host: { type: 'string' }, port: { type: 'integer', minimum: 0, maximum: 65535 } },
    },
    http: {
      type: 'object',
      additionalProperties: false,
      properties: {
        trust_proxy: { type: ['boolean', 'integer', 'string'] },
        validate_responses: { type: 'boolean' },
        shutdown_grace_ms: { type: 'integer', minimum: 0 },
        cors_origins: { type: 'array', items: { type: 'string', minLength: 1 } },
      },
    },
    security_txt: {
      type: 'object',
      additionalProperties: false,
      properties: { contact: { type: 'string', minLength: 1 }, expires: nullableString },
    },
  },
} as const;

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

function envOverrides(env: NodeJS.ProcessEnv): Json {
  const out: Json = {};
  if (env.PORT !== undefined && env.PORT !== '') out.port = /^\d+$/.test(env.PORT) ? Number(env.PORT) : env.PORT;
  if (env.DATABASE_URL) out.database_url = env.DATABASE_URL;
  if (env.TIMESERIES_URL) out.timeseries_url = env.TIMESERIES_URL;
  if (env.REDIS_URL) out.redis_url = env.REDIS_URL;
  if (env.SVC_DATA_DIR) out.data_dir = env.SVC_DATA_DIR;
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

/**
 * Loads configuration. `overrides` is merged last (tests use it instead of files); every problem
 * is collected and reported together in one ConfigError.
 */
export function loadConfig(options: { env?: NodeJS.ProcessEnv; overrides?: Json } = {}): Readonly<Config> {
  const processEnv = options.env ?? process.env;
  const file = processEnv.SVC_CONFIG ? readConfigFile(processEnv.SVC_CONFIG) : {};
  const layered = merge(merge(file, envOverrides(processEnv)), options.overrides ?? {});
  const envName = (layered.env ?? 'development') as Env;
  const merged = merge({ ...defaults(['development', 'test', 'production'].includes(envName) ? envName : 'development'), version: packageVersion() }, layered);

  const ajv = new Ajv({ allErrors: true, strict: false });
  const validate = ajv.compile(schema);
  const problems: string[] = [];
  if (!validate(merged)) {
    for (const e of validate.errors ?? []) {
      const where = e.instancePath.replace(/^\//, '').replace(/\//g, '.') || '(root)';
      const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
      problems.push(`${where}: ${e.message ?? 'is invalid'}${extra}`);
    }
  }
  const config = merged as unknown as Config;
  if (config.env === 'production') {
    if (!config.auth?.jwt_secret || config.auth.jwt_secret.length < 32) problems.push('auth.jwt_secret: must be set to at least 32 characters in production');
    if (config.auth?.dev_login) problems.push('auth.dev_login: cannot be enabled in production');
  }
  for (const origin of Array.isArray(config.http?.cors_origins) ? config.http.cors_origins : []) {
    const url = typeof origin === 'string' && URL.canParse(origin) ? new URL(origin) : null;
    const isOrigin = url && /^https?:$/.test(url.protocol) && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password && !url.hostname.includes('*');
    if (typeof origin === 'string' && !isOrigin) problems.push(`http.cors_origins: ${JSON.stringify(origin)} is not an origin such as https://dash.example.com`);
  }
  if (problems.length) throw new ConfigError([...new Set(problems)]);

  const fromFile = config.auth.system_keys as (Partial<SystemKeyConfig> & { label: string; key?: string; permissions: string[] })[];
  config.auth.system_keys = fromFile.map(({ label, key, key_sha256, permissions }) => ({
    label,
    key_sha256: key_sha256 ?? sha256Hex(key!),
    permissions: [...permissions],
  }));
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
