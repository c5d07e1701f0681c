/**
 * The JSON Schema every configuration is checked against at boot (src/config/config.ts compiles
 * it with Ajv once): the keys of DESIGN.md's bootstrap contract, their types and bounds. Unknown
 * keys are refused, so a misspelt setting fails the start instead of being ignored.
 *
 * Every key carries a `description`: docs/reference/configuration.md is generated from them
 * (scripts/codegen/references.ts), and codegen fails on a key without one. A data module: it
 * imports nothing, so codegen may read it without loading the service.
 */
const nullableString = { type: ['string', 'null'] };
const httpUrl = { type: ['string', 'null'], pattern: '^https?://' };
export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    env: { enum: ['development', 'test', 'production'], description: 'The environment: selects the defaults of the other keys and, in production, the checks that refuse development-only settings and published secrets.' },
    version: { type: 'string', description: "The service version reported by /v1/health, the metrics' build info and the workers list; read from package.json." },
    port: { type: 'integer', minimum: 0, maximum: 65535, description: 'Public HTTP and WebSocket port (0: any free port).' },
    host: { type: 'string', description: 'Public listener address; loopback outside production, where dev login must not be reachable from the network.' },
    database_url: { ...nullableString, description: 'PostgreSQL URL of the relational store; null: embedded PGlite under data_dir.' },
    timeseries_url: { ...nullableString, description: 'PostgreSQL URL of the time-series store (viewer samples, follower counts, chat counts); null: the relational store.' },
    redis_url: { ...nullableString, description: 'Redis URL for the cache, the bus and the rate limits shared by every node; null: in-process.' },
    data_dir: { type: 'string', minLength: 1, description: 'Directory of the embedded PGlite stores, the development secrets key and (by default) uploaded sounds; `memory://` keeps nothing.' },
    redis_prefix: { type: 'string', description: 'Prefix of every Redis key and bus channel, so several deployments or test runs can share one Redis.' },
    db: {
      type: 'object',
      additionalProperties: false,
      description: 'The relational store.',
      properties: {
        migrate_on_start: { type: 'boolean', description: 'Apply pending migrations at start under the migration lock; false: a start on a database that lacks any refuses to serve and names them (run `npm run migrate` first).' },
        pool_max: { type: 'integer', minimum: 1, maximum: 200, description: 'Most PostgreSQL connections per store per node.' },
      },
    },
    log: {
      type: 'object',
      additionalProperties: false,
      description: 'Logging (pino, JSON lines on stdout).',
      properties: { level: { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], description: 'The pino log level.' } },
    },
    graphql: {
      type: 'object',
      additionalProperties: false,
      description: 'The GraphQL endpoint (/v1/gql): its documentation helpers and the per-document limits checked before execution (400 BAD_REQUEST).',
      properties: {
        playground: { type: 'boolean', description: 'Serve GraphiQL at /v1/graphiql.' },
        introspection: { type: 'boolean', description: 'Answer `__schema` / `__type` and give "Did you mean" hints (GraphiQL needs it; the SDL stays at /v1/schema).' },
        // Bounded so the parser's recursion stays far from the stack limit (see src/http/graphql/limits.ts).
        max_depth: { type: 'integer', minimum: 1, maximum: 100, description: 'Deepest selection nesting a document may have.' },
        max_aliases: { type: 'integer', minimum: 0, description: 'Most aliases in one document.' },
        max_directives: { type: 'integer', minimum: 0, description: 'Most directives in one document.' },
        max_tokens: { type: 'integer', minimum: 100, description: 'Most lexical tokens in one document.' },
        max_cost: { type: 'integer', minimum: 1, description: 'Most estimated objects per operation (src/http/graphql/cost.ts); a request draws ceil(cost / 100) from its rate limit.' },
      },
    },
    docs: {
      type: 'object',
      additionalProperties: false,
      description: 'The public documents and documentation pages; each answers 404 while its switch is off.',
      properties: {
        swagger_ui: { type: 'boolean', description: 'Serve Swagger UI at /v1/swagger-ui/ and its document at /v1/api-doc/openapi.json.' },
        openapi_json: { type: 'boolean', description: 'Serve the published documents /v1/openapi.json and /v1/asyncapi.json.' },
        asyncapi_ui: { type: 'boolean', description: "Serve the WebSocket protocol's rendered AsyncAPI page at /v1/asyncapi-ui and its document." },
      },
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      description: 'Credentials: JWT signing and lifetimes, development login, system keys and sign-in providers.',
      properties: {
        jwt_secret: { type: 'string', description: 'Secret that signs the JWTs (access, refresh, WebSocket); `openssl rand -hex 32`.' },
        ws_token_expiration: { type: 'integer', minimum: 30, maximum: 86400, description: 'Lifetime of a WebSocket-only JWT, in seconds.' },
        access_token_expiration: { type: 'integer', minimum: 30, maximum: 86400, description: 'Lifetime of an access JWT, in seconds.' },
        session_expiration: { type: 'integer', minimum: 300, maximum: 31536000, description: 'Lifetime of a session and of its refresh JWTs, in seconds.' },
        dev_login: { type: 'boolean', description: 'Enable POST /v1/auth/dev/login (a user and account by e-mail, no password).' },
        bootstrap_admins: { type: 'array', items: { type: 'string', pattern: '^[^@\\s]+@[^@\\s]+$' }, description: 'E-mail addresses that hold the `super-admin` role from their next login on (the first operators).' },
        system_keys: {
          type: 'array',
          description: 'System keys: first-party services that act across accounts with the listed permissions; plain keys are hashed at load and dropped.',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['label', 'permissions'],
            properties: {
              label: { type: 'string', minLength: 1, description: 'Name of the key in logs and audit entries.' },
              key: { type: 'string', pattern: '^lm_sys_[0-9a-f]{64}$', description: 'The plain key (`lm_sys_` and 64 hex digits); give it or key_sha256.' },
              key_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256 (hex) of the plain key, so the file holds no usable secret.' },
              permissions: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Permissions the key holds (`resource:action`, `*` wildcards allowed).' },
            },
            oneOf: [{ required: ['key'] }, { required: ['key_sha256'] }],
          },
        },
        providers: {
          type: 'array',
          description: 'OAuth 2.0 / OpenID Connect providers for sign-in and platform grants (src/modules/signin).',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['slug', 'kind', 'client_id', 'purposes'],
            properties: {
              slug: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,39}$', description: 'The provider in URLs (`/v1/auth/callback/<slug>`); unique.' },
              kind: { enum: ['oidc', 'oauth2'], description: '`oidc`: discovered from the issuer, with an ID token; `oauth2`: endpoints given, the subject from userinfo.' },
              issuer: { ...httpUrl, description: 'Issuer URL of an oidc provider (discovery at `/.well-known/openid-configuration`); required for oidc.' },
              authorization_endpoint: { ...httpUrl, description: 'Authorization endpoint; required for oauth2, overrides discovery for oidc.' },
              token_endpoint: { ...httpUrl, description: 'Token endpoint; required for oauth2, overrides discovery for oidc.' },
              userinfo_endpoint: { ...httpUrl, description: 'Userinfo endpoint; required for oauth2, overrides discovery for oidc.' },
              revocation_endpoint: { ...httpUrl, description: 'Token revocation endpoint, called when a grant is removed; optional.' },
              client_id: { type: 'string', minLength: 1, description: "The service's client id at the provider." },
              client_secret: { type: 'string', minLength: 1, description: 'The client secret; give it or client_secret_env.' },
              client_secret_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Name of the environment variable that holds the client secret (read once at load).' },
              scopes: { type: 'array', items: { type: 'string', pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' }, description: 'Scopes requested; default `openid email profile` for oidc, none for oauth2.' },
              purposes: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['login', 'channel', 'bot'] }, description: "What the provider's grants are for: `login`, `channel` (platform grant), `bot`." },
            },
            oneOf: [{ required: ['client_secret'] }, { required: ['client_secret_env'] }],
          },
        },
        redirect_allow_list: { type: 'array', items: { type: 'string', pattern: '^https?://' }, description: 'URL prefixes a sign-in may send the browser back to: same scheme, host and port, path at or under the entry; anything else is 400.' },
        public_url: { type: ['string', 'null'], pattern: '^https?://', description: "The service's public base URL; providers call back to `<public_url>/v1/auth/callback/<slug>`. Null: the request's own address. Required in production when auth.providers is set." },
      },
    },
    secrets: {
      type: 'object',
      additionalProperties: false,
      description: 'Secrets at rest (provider tokens, mail bodies): AES-256-GCM keys.',
      properties: {
        encryption_keys: {
          type: 'array',
          description: 'The keys: new values are sealed with the sealing key, reads use the key a value names. Development without keys generates one into `<data_dir>/secrets.key`.',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['id'],
            properties: {
              id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$', description: 'Key id stored with every value it seals; unique.' },
              key: { type: 'string', minLength: 1, description: 'The key: 32 bytes, base64 (`openssl rand -base64 32`); give it or key_env.' },
              key_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Name of the environment variable that holds the key (read once at load).' },
              state: { enum: ['sealing', 'decrypt-only', 'retired'], description: '`sealing` (one key: new values), `decrypt-only` or `retired`; unset: the first such key seals, the rest decrypt only.' },
            },
            oneOf: [{ required: ['key'] }, { required: ['key_env'] }],
          },
        },
      },
    },
    webhooks: {
      type: 'object',
      additionalProperties: false,
      description: "Verification of the platforms' inbound webhooks.",
      properties: {
        require_signatures: { type: 'boolean', description: 'Refuse inbound platform webhooks without a valid signature.' },
        platform_b_secret: { ...nullableString, description: "Secret that verifies platform_b's webhook signatures." },
        platform_c_secret: { ...nullableString, description: "HMAC secret of platform_c's legacy `Platform-C-Signature`." },
        platform_c_public_key: { ...nullableString, description: "PEM public key that verifies platform_c's RSA-SHA256 `Platform-C-Event-Signature`." },
        shop_platform_secrets: { type: 'object', additionalProperties: { type: 'string' }, description: "Shop domain → secret of shop_platform's `X-Shop-Platform-Hmac-Sha256`." },
        tips_platform_secret: { ...nullableString, description: 'HMAC-SHA256 secret of the tips_platform receiver (`X-Signature-256: sha256=<hex>`); unset: 401 while require_signatures.' },
        discord_secret: { ...nullableString, description: 'HMAC-SHA256 secret of the discord receiver (`X-Signature-256: sha256=<hex>`); unset: 401 while require_signatures.' },
      },
    },
    payments: {
      type: 'object',
      additionalProperties: false,
      description: "The payment and payout providers' webhooks.",
      properties: {
        webhook_secret: { ...nullableString, description: "Signing secret of payment_provider's webhooks (`Payment-Provider-Signature`)." },
        connect_secret: { ...nullableString, description: 'Signing secret of the payment-connect webhooks.' },
        allow_unsigned_webhooks: { type: 'boolean', description: 'Accept unsigned payment webhooks (development only).' },
        payout_webhook_id: { ...nullableString, description: "The payout provider's webhook id, sent with each delivery to its verification API; unset: payout webhooks fail closed." },
        payout_api_url: { type: 'string', pattern: '^https?://', description: "Base URL of the payout provider's API (signature verification call)." },
        payout_cert_domain: { ...nullableString, description: 'Domain a payout certificate URL must be on, or a subdomain of; null: the API host without its first label.' },
      },
    },
    payouts: {
      type: 'object',
      additionalProperties: false,
      description: 'Submitting payout requests to the payout provider (src/modules/payouts/submitter.ts, docs/adr/007-payouts.md). Its API is at payments.payout_api_url.',
      properties: {
        enabled: { type: 'boolean', description: 'Submit pending payout requests to the provider. Off: requests stay pending until the provider\'s events move them. Production refuses it on without client_id and client_secret.' },
        client_id: { ...nullableString, description: 'The provider\'s OAuth2 client id (env SVC_PAYOUTS__CLIENT_ID).' },
        client_secret: { ...nullableString, description: 'The provider\'s OAuth2 client secret (env SVC_PAYOUTS__CLIENT_SECRET). Never logged.' },
        request_timeout_ms: { type: 'integer', minimum: 100, maximum: 120_000, description: 'Time allowed for one call to the provider; a try without an answer is retried with the same idempotency key.' },
        batch_size: { type: 'integer', minimum: 1, maximum: 500, description: 'Pending payouts one claim takes and submits at once.' },
        retry: {
          type: 'object',
          additionalProperties: false,
          description: 'Tries of one payout while the provider is unavailable; out of tries the payout fails with the last error as its reason.',
          properties: {
            max_attempts: { type: 'integer', minimum: 1, maximum: 100, description: 'Tries per payout before it fails.' },
            base_delay_ms: { type: 'integer', minimum: 10, maximum: 86_400_000, description: 'Delay after the first failed try; doubled each try, with jitter.' },
            max_delay_ms: { type: 'integer', minimum: 10, maximum: 86_400_000, description: 'Longest delay between tries.' },
            sweep_seconds: { type: 'integer', minimum: 1, maximum: 3600, description: 'How often the cluster looks for due payouts (the periodic payouts.submit-sweep job).' },
            lease_ms: { type: 'integer', minimum: 1000, maximum: 3_600_000, description: 'How long a node holds a payout it is submitting before another node may try it again.' },
          },
        },
      },
    },
    chat: {
      type: 'object',
      additionalProperties: false,
      description: "The chat platforms' APIs (send, moderation, profile refresh, live chat ingest).",
      properties: {
        request_timeout_ms: { type: 'integer', minimum: 100, maximum: 60000, description: 'Timeout of each platform API call, in milliseconds.' },
        platforms: {
          type: 'object',
          additionalProperties: false,
          description: 'Per chat platform.',
          properties: {
            platform_a: {
              type: 'object',
              additionalProperties: false,
              description: "platform_a's API and chat socket.",
              properties: {
                api_url: { type: ['string', 'null'], pattern: '^https?://', description: "Base URL of platform_a's API; unset: send and moderation answer `error_code: internal_error`, a profile refresh 503 PLATFORM_UNAVAILABLE." },
                socket_url: { type: ['string', 'null'], pattern: '^wss?://', description: 'Chat socket the ingest worker holds open per connected channel on the node holding its lease; unset: no worker.' },
                reconnect_ms: { type: 'integer', minimum: 10, description: 'How often the worker looks for new connections and reopens dropped sockets, in milliseconds.' },
              },
            },
            platform_b: {
              type: 'object',
              additionalProperties: false,
              description: "platform_b's API and live chat polling.",
              properties: {
                api_url: { type: ['string', 'null'], pattern: '^https?://', description: "Base URL of platform_b's API (send, moderation, profile refresh, live chat polling)." },
                poll_interval_ms: { type: 'integer', minimum: 0, description: 'Live chat polling period, in milliseconds (0: no polling; needs api_url).' },
              },
            },
            platform_c: {
              type: 'object',
              additionalProperties: false,
              description: "platform_c's API.",
              properties: { api_url: { type: ['string', 'null'], pattern: '^https?://', description: "Base URL of platform_c's API (send, moderation, profile refresh)." } },
            },
          },
        },
      },
    },
    platforms: {
      type: 'object',
      additionalProperties: false,
      description: 'Platforms without a chat (src/modules/platforms/).',
      properties: {
        music_platform: {
          type: 'object',
          additionalProperties: false,
          description: "music_platform's activity feed, polled per connected music account under an ingest lease.",
          properties: {
            api_url: { type: ['string', 'null'], pattern: '^https?://', description: "Base URL of music_platform's API; unset: no poller." },
            poll_interval_ms: { type: 'integer', minimum: 0, description: 'Polling period, in milliseconds (0: no poller).' },
          },
        },
      },
    },
    jobs: {
      type: 'object',
      additionalProperties: false,
      description: 'Background work (docs/adr/005-background-jobs.md).',
      properties: {
        poll_interval_ms: { type: 'integer', minimum: 500, maximum: 60000, description: 'How often a node asks for queued jobs, in milliseconds.' },
        periods: { type: 'object', additionalProperties: { type: 'integer', minimum: 1 }, description: 'Periodic job name → period in seconds (`events.gift-sweep`, `events.retention`, `stats.sweep`, `sounds.orphan-sweep`); unset names keep their own period.' },
        lease_ttl_ms: { type: 'integer', minimum: 500, maximum: 300000, description: "Lifetime of a platform channel's ingest lease; a dead node's channels move within lease_ttl_ms + lease_renew_ms." },
        lease_renew_ms: { type: 'integer', minimum: 100, maximum: 60000, description: 'Renewal period of the ingest leases (at most half of lease_ttl_ms).' },
        node_id: { type: ['string', 'null'], minLength: 1, maxLength: 200, description: "This node's name in GET /v1/admin/workers; null: host name, process id and a random suffix." },
      },
    },
    connections: {
      type: 'object',
      additionalProperties: false,
      description: 'Platform OAuth apps.',
      properties: {
        system_apps: { type: 'array', items: { type: 'string', enum: ['platform_a', 'platform_b', 'platform_c', 'music_platform'] }, description: 'Platforms whose global (SYSTEM) OAuth app is configured; a SYSTEM credential mode of any other platform degrades to ACCOUNT.' },
      },
    },
    sounds: {
      type: 'object',
      additionalProperties: false,
      description: 'Where uploaded sound audio lives (src/infra/blobs.ts).',
      properties: {
        blob_store: { enum: ['fs', 'database'], description: '`fs`: files under blob_dir; `database`: 256 KiB chunks in the relational store, for several nodes without a shared disk.' },
        blob_dir: { type: ['string', 'null'], minLength: 1, description: 'Directory of the `fs` store; null: `<data_dir>/sounds` (a throw-away temporary folder when data_dir is `memory://`).' },
      },
    },
    realtime: {
      type: 'object',
      additionalProperties: false,
      description: "WebSocket limits beyond the protocol's own (spec/ws-protocol/root.json `x-limits`).",
      properties: {
        max_sockets_per_address: { type: 'integer', minimum: 1, description: 'Open WebSockets per node per anonymous client address; over it the upgrade gets 429.' },
        max_sockets_per_credential: { type: 'integer', minimum: 1, description: 'Open WebSockets per node per credential (a session and its ws tokens count as one); system keys are not capped.' },
        outbound_queue_bytes: { type: 'integer', minimum: 65536, description: "Bytes a session's outbound queue may hold besides its 256 messages; a client further behind is disconnected (1013)." },
      },
    },
    memory: {
      type: 'object',
      additionalProperties: false,
      description: 'Results kept in process memory for later requests (src/infra/kept.ts).',
      properties: { kept_bytes: { type: 'integer', minimum: 0, description: 'Estimated bytes of everything kept (hot reads, rendered REST bytes, kept GraphQL answers, verified tokens) together; past it the least recently used go first. Reported as `svc_kept_bytes`.' } },
    },
    events: {
      type: 'object',
      additionalProperties: false,
      description: 'Byte budgets of the events surface, so one account cannot exhaust a node\'s heap.',
      properties: {
        max_raw_bytes: { type: 'integer', minimum: 1024, maximum: 1_048_576, description: "Largest event `raw` as JSON text (larger: 400 VALIDATION_ERROR)." },
        page_max_bytes: { type: 'integer', minimum: 65_536, description: 'Most `raw` bytes of one page of GET /v1/events; a page stops early past it and says so (its first event is always served).' },
        read_budget_bytes: { type: 'integer', minimum: 1_048_576, description: 'Page bytes a node holds for answers not yet written (each account at most a quarter of it).' },
        read_wait_ms: { type: 'integer', minimum: 0, maximum: 60_000, description: 'How long a read that does not fit the budget waits before answering 503 with Retry-After, in milliseconds.' },
      },
    },
    audit: {
      type: 'object',
      additionalProperties: false,
      description: 'Bounds of the audit log\'s stored rows.',
      properties: {
        max_metadata_bytes: { type: 'integer', minimum: 1024, maximum: 1_048_576, description: 'Largest `metadata` of a row ingested by a trusted service (POST /v1/internal/audit-ingest) as JSON text (larger: 400 VALIDATION_ERROR).' },
      },
    },
    rate_limits: {
      type: 'object',
      additionalProperties: false,
      description: 'Requests per minute per authentication context (shared through Redis when configured); system keys are never limited.',
      properties: {
        enabled: { type: 'boolean', description: 'Apply the per-context request budgets.' },
        api_key: { type: 'integer', minimum: 1, description: 'Requests per minute per API key (user, service and developer keys).' },
        jwt: { type: 'integer', minimum: 1, description: 'Requests per minute per JWT session.' },
        token: { type: 'integer', minimum: 1, description: 'Requests per minute per popout, overlay, widget or extension token.' },
        anonymous: { type: 'integer', minimum: 1, description: 'Requests per minute per anonymous client address (as derived under http.trust_proxy).' },
      },
    },
    metrics: {
      type: 'object',
      additionalProperties: false,
      description: 'The Prometheus listener (docs/reference/metrics.md); never the public port.',
      properties: {
        host: { type: 'string', description: 'Address of the metrics listener.' },
        port: { type: 'integer', minimum: 0, maximum: 65535, description: 'Port of the metrics listener (0: any free port).' },
      },
    },
    http: {
      type: 'object',
      additionalProperties: false,
      description: 'The public HTTP listener.',
      properties: {
        trust_proxy: { type: ['boolean', 'integer', 'string'], description: "Express's trust-proxy value; anonymous rate limits key on the client address Express derives from it." },
        validate_responses: { type: 'boolean', description: 'Validate every REST response against the OpenAPI document.' },
        shutdown_grace_ms: { type: 'integer', minimum: 0, description: 'On SIGTERM, how long in-flight responses may go on writing before the rest are closed, in milliseconds.' },
        cors_origins: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Origins (`https://dash.example.com`) allowed to call the API from a browser, with credentials; empty: same origin only.' },
        max_header_bytes: { type: 'integer', minimum: 16_384, maximum: 1_048_576, description: 'Most bytes of a request line plus headers; beyond it the answer is 431 HEADERS_TOO_LARGE.' },
      },
    },
    security_txt: {
      type: 'object',
      additionalProperties: false,
      description: 'RFC 9116 /.well-known/security.txt; not served while contact is null.',
      properties: {
        contact: { type: ['string', 'null'], minLength: 1, pattern: '^(mailto:|https://|tel:)', description: 'The `Contact:` field (`mailto:`, `https:` or `tel:`).' },
        expires: { ...nullableString, description: 'The `Expires:` field (RFC 3339); null: 180 days after start.' },
      },
    },
    bus: {
      type: 'object',
      additionalProperties: false,
      description: 'Bus liveness (Redis only): node-local copies of credentials are trusted only while the bus is heard live.',
      properties: {
        heartbeat_ms: { type: 'integer', minimum: 50, maximum: 60_000, description: 'How often each node publishes a heartbeat on its own bus channel, in milliseconds.' },
        heartbeat_bound_ms: { type: 'integer', minimum: 100, maximum: 300_000, description: 'How old the last heartbeat heard back may be while the bus counts as live (greater than heartbeat_ms); otherwise the database answers.' },
      },
    },
    mail: {
      type: 'object',
      additionalProperties: false,
      description: 'Outgoing mail (src/modules/mail).',
      properties: {
        transport: { enum: ['smtp', 'log'], description: '`smtp` (nodemailer) or `log` (a log line per message, no mail sent).' },
        from: { type: 'string', minLength: 3, maxLength: 320, pattern: '^[^\\r\\n]*$', description: 'The sender (`Name <address>`).' },
        allow_log_transport: { type: 'boolean', description: 'Let production run with the `log` transport (sending no mail).' },
        link_base: { type: 'string', pattern: '^https?://[^\\s]+$', description: 'The dashboard origin that links in mail point at.' },
        smtp: {
          type: 'object',
          additionalProperties: false,
          description: 'The SMTP server (nodemailer options).',
          properties: {
            host: { type: ['string', 'null'], minLength: 1, description: 'SMTP host; required when transport is smtp.' },
            port: { type: 'integer', minimum: 1, maximum: 65535, description: 'SMTP port.' },
            secure: { type: 'boolean', description: 'TLS from the first byte (port 465); false: STARTTLS when offered.' },
            require_tls: { type: 'boolean', description: 'Refuse to send unless STARTTLS succeeds.' },
            ignore_tls: { type: 'boolean', description: 'Never use STARTTLS.' },
            reject_unauthorized: { type: 'boolean', description: "Refuse a server certificate that does not verify." },
            user: { ...nullableString, description: 'SMTP user; null: no authentication.' },
            pass: { ...nullableString, description: 'SMTP password (prefer pass_env).' },
            pass_env: { type: ['string', 'null'], minLength: 1, description: 'Name of the environment variable that holds the SMTP password (read once at load).' },
            pool: { type: 'boolean', description: 'Keep SMTP connections open and reuse them.' },
            max_connections: { type: 'integer', minimum: 1, maximum: 50, description: 'Most pooled SMTP connections per node.' },
            connection_timeout_ms: { type: 'integer', minimum: 100, maximum: 300_000, description: 'Timeout of an SMTP connection attempt, in milliseconds.' },
            socket_timeout_ms: { type: 'integer', minimum: 100, maximum: 600_000, description: 'Idle timeout of an SMTP socket, in milliseconds.' },
          },
        },
        retry: {
          type: 'object',
          additionalProperties: false,
          description: 'Retries of mail that could not be sent: exponential backoff with jitter.',
          properties: {
            max_attempts: { type: 'integer', minimum: 1, maximum: 100, description: 'Tries per message before it is given up.' },
            base_delay_ms: { type: 'integer', minimum: 10, maximum: 86_400_000, description: 'Smallest delay before a retry, in milliseconds.' },
            max_delay_ms: { type: 'integer', minimum: 10, maximum: 86_400_000, description: 'Largest delay before a retry, in milliseconds (at least base_delay_ms).' },
            sweep_seconds: { type: 'integer', minimum: 1, maximum: 3600, description: 'How often a node looks for due retries, in seconds.' },
            lease_ms: { type: 'integer', minimum: 1000, maximum: 3_600_000, description: 'How long a node holds a message it is sending before another may retry it (more than the SMTP connection plus socket timeouts).' },
            keep_sent_days: { type: 'integer', minimum: 0, maximum: 3650, description: 'Days sent messages stay visible.' },
          },
        },
      },
    },
  },
} as const;
