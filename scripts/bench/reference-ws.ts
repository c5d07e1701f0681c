/**
 * The bare `ws` broadcast reference of the bench, in its own process on 127.0.0.1: clients
 * connect to `/ws`; `POST /broadcast` (the body is the frame to send) writes it to every open
 * socket, one `send` each, and answers 204. Prints `{ "port": n }` once it listens.
 */
import http from 'node:http';
import { WebSocketServer } from 'ws';

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/broadcast') return void res.writeHead(404).end();
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    for (const client of wss.clients) if (client.readyState === client.OPEN) client.send(text);
    res.writeHead(204).end();
  });
});
const wss = new WebSocketServer({ server, path: '/ws' });
wss.on('connection', (socket) => {
  socket.on('message', () => undefined);
  socket.on('error', () => undefined);
});
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : null }));
});
process.once('SIGTERM', () => {
  for (const client of wss.clients) client.terminate();
  server.close(() => process.exit(0));
});
