/**
 * The bench's HTTP references: one JSON endpoint, no middleware, in its own process on
 * 127.0.0.1. `reference-http.ts <port> [express|node]`: on Express 5 (the default: every HTTP case
 * is measured as a ratio to this process's throughput in the same run), or on bare `node:http`
 * with the same body (what an answer costs without Express: the yardstick of the cold page's parts,
 * bench.ts). Prints `{ "port": n }` once it listens.
 */
import { createServer, type RequestListener } from 'node:http';
import express from 'express';

const body = () => ({ data: { status: 'healthy', version: '0.1.0', uptime_seconds: 1 }, _links: { self: '/json' } });

function expressApp(): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  app.get('/json', (_req, res) => {
    res.json(body());
  });
  return app;
}

/** The same answer as Express's `res.json`, less its ETag and routing. */
const bare: RequestListener = (req, res) => {
  if (req.method !== 'GET' || req.url !== '/json') {
    res.statusCode = 404;
    res.end();
    return;
  }
  const text = JSON.stringify(body());
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
};

const server = createServer(process.argv[3] === 'node' ? bare : expressApp());
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : null }));
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
