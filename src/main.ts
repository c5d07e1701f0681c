/**
 * Process entry: load and validate configuration (print every problem, then exit), build the app,
 * listen on PORT (127.0.0.1 outside production unless `host` says otherwise) and on the loopback
 * metrics port, and drain on SIGTERM or SIGINT (a second signal ends the process at once).
 * Production runs the compiled tree: `node dist/main.js` (`npm start` execs it, so signals reach
 * this process and not a shell; the image runs it as its entry point under an init).
 */
import { ConfigError, loadConfig } from './config/config';
import { createApp, SERVICE_NAME } from './app';
import { createLogger } from './infra/logger';
import { startServer } from './server';

/** Whether a listen address only accepts connections from this machine. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const log = createLogger({ level: config.log.level, service: SERVICE_NAME, env: config.env, version: config.version });
  // Runtime and library warnings (a deprecation in a driver) become log lines: the start commands
  // pass --no-warnings, so nothing but JSON reaches the output.
  process.on('warning', (warning) => log.warn({ warning: { name: warning.name, code: (warning as { code?: string }).code, message: warning.message } }, 'runtime warning'));
  const app = await createApp(config, { log });
  const running = await startServer(app, {
    port: config.port,
    host: config.host,
    metricsPort: config.metrics.port,
    metricsHost: config.metrics.host,
  });
  const storage = config.database_url ? 'PostgreSQL' : `embedded PGlite in ${config.data_dir}`;
  const cache = config.redis_url ? 'Redis' : 'in-process cache and bus';
  if (config.auth.dev_login && !isLoopback(config.host)) {
    app.log.warn({ host: config.host }, 'auth.dev_login is on and the listener is reachable beyond this machine: anyone who reaches it can sign in as any e-mail');
  }
  // The banner is a log line like every other (stdout is JSON only), shown even at `log.level: warn`.
  const banner = config.log.level === 'silent' ? app.log : app.log.child({}, { level: 'info' });
  banner.info(
    {
      url: running.url,
      storage,
      cache,
      health: `${running.url}/v1/health`,
      graphql: `${running.url}/v1/gql`,
      graphiql: config.graphql.playground ? `${running.url}/v1/graphiql` : undefined,
      swagger_ui: config.docs.swagger_ui ? `${running.url}/v1/swagger-ui/` : undefined,
      asyncapi_ui: config.docs.asyncapi_ui ? `${running.url}/v1/asyncapi-ui` : undefined,
      openapi: config.docs.openapi_json ? `${running.url}/v1/openapi.json` : undefined,
      asyncapi: config.docs.openapi_json ? `${running.url}/v1/asyncapi.json` : undefined,
      websocket: `${running.url.replace(/^http/, 'ws')}/v1/ws`,
      metrics: `${running.metricsUrl}/metrics`,
    },
    `Service listening on ${running.url} (${storage}; ${cache})`,
  );

  const shutdown = (signal: string) => {
    app.log.info({ signal, grace_ms: config.http.shutdown_grace_ms }, 'shutting down: draining in-flight requests');
    running
      .stop()
      .then(() => {
        app.log.info('drained');
        process.exit(0);
      })
      .catch((error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  // Before a logger exists: one JSON line in the log's shape, so the output stays JSON only.
  const err = error instanceof Error ? { type: error.name, message: error.message } : { message: String(error) };
  process.stdout.write(`${JSON.stringify({ level: 60, time: new Date().toISOString(), service: 'creator-backend', err, msg: `Failed to start: ${err.message}` })}\n`, () => process.exit(1));
});
