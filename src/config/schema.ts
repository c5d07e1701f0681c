/**
 * The JSON Schema every configuration is checked against at boot (src/config/config.ts compiles
 * it with Ajv once): the keys of DESIGN.md's bootstrap contract, their types and bounds. Unknown
 * keys are refused, so a misspelt setting fails the start instead of being ignored.
 */
const nullableString = { type: ['string', 'null'] };
const httpUrl = { type: ['string', 'null'], pattern: '^https?://' };
export const configSchema = {
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
    db: {
      type: 'object',
      additionalProperties: false,
      properties: { migrate_on_start: { type: 'boolean' }, pool_max: { type: 'integer', minimum: 1, maximum: 200 } },
    },
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
      properties: { swagger_ui: { type: 'boolean' }, openapi_json: { type: 'boolean' }, asyncapi_ui: { type: 'boolean' } },
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
        providers: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['slug', 'kind', 'client_id', 'purposes'],
            properties: {
              slug: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,39}$' },
              kind: { enum: ['oidc', 'oauth2'] },
              issuer: httpUrl,
              authorization_endpoint: httpUrl,
              token_endpoint: httpUrl,
              userinfo_endpoint: httpUrl,
              revocation_endpoint: httpUrl,
              client_id: { type: 'string', minLength: 1 },
              client_secret: { type: 'string', minLength: 1 },
              client_secret_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
              scopes: { type: 'array', items: { type: 'string', pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' } },
              purposes: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['login', 'channel', 'bot'] } },
            },
            oneOf: [{ required: ['client_secret'] }, { required: ['client_secret_env'] }],
          },
        },
        redirect_allow_list: { type: 'array', items: { type: 'string', pattern: '^https?://' } },
        public_url: { type: ['string', 'null'], pattern: '^https?://' },
      },
    },
    secrets: {
      type: 'object',
      additionalProperties: false,
      properties: {
        encryption_keys: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['id'],
            properties: {
              id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$' },
              key: { type: 'string', minLength: 1 },
              key_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
              state: { enum: ['sealing', 'decrypt-only', 'retired'] },
            },
            oneOf: [{ required: ['key'] }, { required: ['key_env'] }],
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
        tips_platform_secret: nullableString,
        discord_secret: nullableString,
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
    platforms: {
      type: 'object',
      additionalProperties: false,
      properties: {
        music_platform: {
          type: 'object',
          additionalProperties: false,
          properties: { api_url: { type: ['string', 'null'], pattern: '^https?://' }, poll_interval_ms: { type: 'integer', minimum: 0 } },
        },
      },
    },
    jobs: {
      type: 'object',
      additionalProperties: false,
      properties: {
        poll_interval_ms: { type: 'integer', minimum: 500, maximum: 60000 },
        periods: { type: 'object', additionalProperties: { type: 'integer', minimum: 1 } },
        lease_ttl_ms: { type: 'integer', minimum: 500, maximum: 300000 },
        lease_renew_ms: { type: 'integer', minimum: 100, maximum: 60000 },
        node_id: { type: ['string', 'null'], minLength: 1, maxLength: 200 },
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
    events: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_raw_bytes: { type: 'integer', minimum: 1024, maximum: 1_048_576 },
        page_max_bytes: { type: 'integer', minimum: 65_536 },
        read_budget_bytes: { type: 'integer', minimum: 1_048_576 },
        read_wait_ms: { type: 'integer', minimum: 0, maximum: 60_000 },
      },
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
        max_header_bytes: { type: 'integer', minimum: 16_384, maximum: 1_048_576 },
      },
    },
    security_txt: {
      type: 'object',
      additionalProperties: false,
      properties: { contact: { type: ['string', 'null'], minLength: 1, pattern: '^(mailto:|https://|tel:)' }, expires: nullableString },
    },
    bus: {
      type: 'object',
      additionalProperties: false,
      properties: {
        heartbeat_ms: { type: 'integer', minimum: 50, maximum: 60_000 },
        heartbeat_bound_ms: { type: 'integer', minimum: 100, maximum: 300_000 },
      },
    },
    mail: {
      type: 'object',
      additionalProperties: false,
      properties: {
        transport: { enum: ['smtp', 'log'] },
        from: { type: 'string', minLength: 3, maxLength: 320, pattern: '^[^\\r\\n]*$' },
        allow_log_transport: { type: 'boolean' },
        link_base: { type: 'string', pattern: '^https?://[^\\s]+$' },
        smtp: {
          type: 'object',
          additionalProperties: false,
          properties: {
            host: { type: ['string', 'null'], minLength: 1 },
            port: { type: 'integer', minimum: 1, maximum: 65535 },
            secure: { type: 'boolean' },
            require_tls: { type: 'boolean' },
            ignore_tls: { type: 'boolean' },
            reject_unauthorized: { type: 'boolean' },
            user: nullableString,
            pass: nullableString,
            pass_env: { type: ['string', 'null'], minLength: 1 },
            pool: { type: 'boolean' },
            max_connections: { type: 'integer', minimum: 1, maximum: 50 },
            connection_timeout_ms: { type: 'integer', minimum: 100, maximum: 300_000 },
            socket_timeout_ms: { type: 'integer', minimum: 100, maximum: 600_000 },
          },
        },
        retry: {
          type: 'object',
          additionalProperties: false,
          properties: {
            max_attempts: { type: 'integer', minimum: 1, maximum: 100 },
            base_delay_ms: { type: 'integer', minimum: 10, maximum: 86_400_000 },
            max_delay_ms: { type: 'integer', minimum: 10, maximum: 86_400_000 },
            sweep_seconds: { type: 'integer', minimum: 1, maximum: 3600 },
            lease_ms: { type: 'integer', minimum: 1000, maximum: 3_600_000 },
            keep_sent_days: { type: 'integer', minimum: 0, maximum: 3650 },
          },
        },
      },
    },
  },
} as const;
