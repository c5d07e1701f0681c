/**
 * Listeners: the public HTTP server (REST, GraphQL, WebSocket upgrade) and the loopback metrics
 * server. Used by main.ts and by the integration tests, so both run the same wiring.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { App } from './app';
import { scrubbedMessages } from './errors';
import { PROMETHEUS_CONTENT_TYPE } from './infra/metrics';

export interface RunningServer {
  readonly url: string;
  readonly metricsUrl: string;
  readonly server: http.Server;
  readonly metricsServer: http.Server;
  /** Stops accepting, drains in-flight requests (up to the grace period), closes sockets and the app. */
  stop(): Promise<void>;
}

function listen(server: http.Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

function urlOf(address: AddressInfo, host: string): string {
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${address.port}`;
}

export function createMetricsServer(app: App): http.Server {
  return http.createServer((req, res) => {
    if (req.method === 'GET' && (req.url ?? '').split('?')[0] === '/metrics') {
      app.metrics
        .render()
        .then((text) => {
          res.writeHead(200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE });
          res.end(text);
        })
        .catch((error: unknown) => {
          app.log.error({ err: error }, 'metrics rendering failed');
          res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${scrubbedMessages.INTERNAL_SERVER_ERROR}\n`);
        });
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found\n');
  });
}

export async function startServer(app: App, options: { port: number; host: string; metricsPort: number; metricsHost: string }): Promise<RunningServer> {
  const server = http.createServer(app.http);
  server.on('upgrade', (req, socket, head) => {
    app.realtime.handleUpgrade(req, socket, head).catch((error: unknown) => {
      app.log.error({ err: error }, 'websocket upgrade failed');
      socket.destroy();
    });
  });
  const metricsServer = createMetricsServer(app);
  const address = await listen(server, options.port, options.host);
  const metricsAddress = await listen(metricsServer, options.metricsPort, options.metricsHost);
  let stopping: Promise<void> | null = null;

  return {
    url: urlOf(address, options.host),
    metricsUrl: urlOf(metricsAddress, options.metricsHost),
    server,
    metricsServer,
    stop() {
      stopping ??= (async () => {
        const drained = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await app.realtime.close();
        const grace = new Promise<void>((resolve) => setTimeout(resolve, app.config.http.shutdown_grace_ms).unref());
        await Promise.race([drained, grace]);
        server.closeAllConnections();
        await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
        await app.close();
      })();
      return stopping;
    },
  };
}
