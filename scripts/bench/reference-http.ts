/**
 * The bare Express 5 reference of the bench: one JSON endpoint, no middleware, in its own
 * process on 127.0.0.1. Prints `{ "port": n }` once it listens. Every HTTP case is measured as a
 * ratio to this process's throughput in the same run.
 */
import express from 'express';

const app = express();
app.disable('x-powered-by');
app.get('/json', (_req, res) => {
  res.json({ data: { status: 'healthy', version: '0.1.0', uptime_seconds: 1 }, _links: { self: '/json' } });
});
const server = app.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : null }));
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
