/**
 * Listeners: the public HTTP server (REST, GraphQL, WebSocket upgrade) and the loopback metrics
 * server, and their drain on shutdown. Used by main.ts and by the integration tests, so both run
 * the same wiring.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { App } from './app';
import { messages, scrubbedMessages } from './errors';
import { guarded, unowned } from './infra/listeners';
import { PROMETHEUS_CONTENT_TYPE } from './infra/metrics';

export interface RunningServer {
  readonly url: string;
  readonly metricsUrl: string;
  readonly server: http.Server;
  readonly metricsServer: http.Server;
  /**
   * Stops accepting, closes idle keep-alive connections at once, lets in-flight responses finish
   * writing (each connection closes after its last one) for up to `http.shutdown_grace_ms`, then
   * cuts whatever is left and closes the app.
   */
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
  return http.createServer(guarded((req: http.IncomingMessage, res: http.ServerResponse) => {
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
  }, (error: unknown, _req: http.IncomingMessage, res: http.ServerResponse) => {
    app.log.error({ err: error }, 'metrics request failed');
    res.destroy();
  }));
}

/**
 * Follows every public connection: how many of its responses are still being written, and
 * whether the WebSocket layer took it over. Node's own `closeIdleConnections()` (which
 * `server.close()` calls) counts a connection as idle as soon as the handler has called
 * `res.end()`, even while megabytes are still queued for a slow reader, and destroys it: SIGTERM
 * cut a 28.6 MB response short that way. Here a response counts until its last byte has been
 * handed to the kernel (`close` after `finish`), so a drain waits for it.
 */
class ConnectionTracker {
  private readonly inFlight = new Map<Socket, number>();
  private readonly upgraded = new Set<Socket>();
  private draining = false;

  /** Attach before the app's own `request` listener, so every request is counted first. */
  constructor(server: http.Server) {
    server.on(
      'connection',
      guarded((socket: Socket) => {
        this.inFlight.set(socket, 0);
        socket.once(
          'close',
          guarded(() => {
            this.inFlight.delete(socket);
            this.upgraded.delete(socket);
          }, unowned),
        );
      }, unowned),
    );
    server.on(
      'request',
      guarded((req: http.IncomingMessage, res: http.ServerResponse) => this.track(req.socket, res), unowned),
    );
    // The realtime layer closes its own sockets (close code 1001) when it is closed.
    server.on(
      'upgrade',
      guarded((req: http.IncomingMessage) => {
        if (!this.inFlight.delete(req.socket)) return;
        this.upgraded.add(req.socket);
      }, unowned),
    );
    // Replaces Node's version on this server, so `server.close()` no longer cuts responses short.
    server.closeIdleConnections = () => this.closeIdle();
  }

  private track(socket: Socket, res: http.ServerResponse): void {
    const count = this.inFlight.get(socket);
    if (count === undefined) return;
    this.inFlight.set(socket, count + 1);
    // A request that arrives during the drain is served, then its connection closes.
    if (this.draining) res.shouldKeepAlive = false;
    res.once(
      'close',
      guarded(() => {
        const before = this.inFlight.get(socket);
        if (before === undefined) return;
        const left = Math.max(before - 1, 0);
        this.inFlight.set(socket, left);
        // Every byte is with the kernel now: end() sends FIN after them and the client closes its side.
        if (this.draining && left === 0) socket.end();
      }, unowned),
    );
  }

  /** Destroys the connections with nothing in flight (keep-alive sockets waiting for a request). */
  closeIdle(): void {
    for (const [socket, count] of this.inFlight) if (count === 0) socket.destroy();
  }

  /** From now on every connection closes once its responses are written. */
  startDraining(): void {
    this.draining = true;
    this.closeIdle();
  }

  /** The end of the grace period: whatever is still open is cut. */
  destroyAll(): void {
    for (const socket of [...this.inFlight.keys(), ...this.upgraded]) socket.destroy();
  }
}

/**
 * What Node's parser refuses before any route runs: a request line plus headers past
 * `http.max_header_bytes` gets 431 HEADERS_TOO_LARGE, any other malformed request 400
 * BAD_REQUEST, both as the usual JSON error body; the connection then closes (the parser cannot
 * go on). A socket already gone, or one whose request timed out, is just destroyed.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || !socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const body = JSON.stringify(tooLarge ? { error: 'HEADERS_TOO_LARGE', message: messages.headersTooLarge } : { error: 'BAD_REQUEST', message: messages.malformedRequest });
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

export async function startServer(app: App, options: { port: number; host: string; metricsPort: number; metricsHost: string }): Promise<RunningServer> {
  const server = http.createServer({ maxHeaderSize: app.config.http.max_header_bytes });
  server.on('clientError', answerClientError);
  const connections = new ConnectionTracker(server);
  server.on('request', app.http);
  // A failed upgrade ends its own socket, never the process (src/infra/listeners.ts).
  server.on(
    'upgrade',
    guarded(
      (req: http.IncomingMessage, socket: Duplex, head: Buffer) => app.realtime.handleUpgrade(req, socket, head),
      (error: unknown, _req: http.IncomingMessage, socket: Duplex) => {
        app.log.error({ err: error }, 'websocket upgrade failed');
        socket.destroy();
      },
    ),
  );
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
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, app.config.http.shutdown_grace_ms)));
        // Stop accepting on both listeners; each resolves once its last connection has closed.
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        const metricsClosed = new Promise<void>((resolve) => metricsServer.close(() => resolve()));
        connections.startDraining();
        await app.realtime.close();
        await Promise.race([closed, grace]);
        clearTimeout(timer);
        connections.destroyAll();
        metricsServer.closeAllConnections();
        await Promise.all([closed, metricsClosed]);
        await app.close();
      })();
      return stopping;
    },
  };
}
