/**
 * Process entry: load and validate configuration (print every problem, then exit), build the app,
 * listen on PORT (127.0.0.1 outside production unless `host` says otherwise) and on the loopback
 * metrics port, and drain on SIGTERM or SIGINT (a second signal ends the process at once).
 */
import { ConfigError, loadConfig } from './config/config';
import { createApp } from './app';
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
  const app = await createApp(config);
  const running = await startServer(app, {
    port: config.port,
    host: config.host,
    metricsPort: config.metrics.port,
    metricsHost: config.metrics.host,
  });
  const storage = config.database_url ? 'PostgreSQL' : `embedded PGlite in ${config.data_dir}`;
  const cache = config.redis_url ? 'Redis' : 'in-process cache and bus';
  app.log.info({ url: running.url, metrics: `${running.metricsUrl}/metrics` }, 'listening');
  if (config.auth.dev_login && !isLoopback(config.host)) {
    app.log.warn({ host: config.host }, 'auth.dev_login is on and the listener is reachable beyond this machine: anyone who reaches it can sign in as any e-mail');
  }
  const docs = [
    `Service listening on ${running.url} (${storage}; ${cache})`,
    `  Health:     ${running.url}/v1/health`,
    `  GraphQL:    POST ${running.url}/v1/gql${config.graphql.playground ? `  (explorer: ${running.url}/v1/graphiql)` : ''}`,
    config.docs.swagger_ui ? `  API docs:   ${running.url}/v1/swagger-ui/` : null,
    config.docs.openapi_json ? `  OpenAPI:    ${running.url}/v1/openapi.json` : null,
    `  WebSocket:  ${running.url.replace(/^http/, 'ws')}/v1/ws`,
    config.docs.openapi_json ? `  AsyncAPI:   ${running.url}/v1/asyncapi.json (the WebSocket protocol)` : null,
    `  Metrics:    ${running.metricsUrl}/metrics (loopback listener)`,
  ].filter(Boolean);
  console.log(docs.join('\n'));

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
  console.error('Failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});
