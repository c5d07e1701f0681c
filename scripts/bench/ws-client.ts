/**
 * The WebSocket side of the bench, in its own process: opens `sockets` connections (in batches),
 * optionally subscribes each to a channel, then fires `messages` triggers one after another (an
 * HTTP request that makes the server broadcast one frame) and times, per socket, the delivery of
 * each frame from the moment its trigger was sent. Triggers and receipts share this process's
 * clock. A socket that closes or errors before the end counts as dropped; a frame a socket never
 * receives within `waitMs` counts as missed. Bounded in count and in time (`seconds`).
 * Input is one JSON argument; the result is one JSON line on stdout.
 */
import WebSocket from 'ws';

export interface WsInput {
  url: string;
  headers?: Record<string, string>;
  /** Service mode: the channel to subscribe to, and keep-alive pings (30 s silence timeout). */
  subscribe?: string;
  sockets: number;
  messages: number;
  trigger: { url: string; method: 'POST'; headers?: Record<string, string>; body: string };
  /** Pause between two triggers. */
  gapMs: number;
  /** How long a frame may take before the sockets that lack it count it as missed. */
  waitMs: number;
  seconds: number;
}

export interface WsResult {
  sockets: number;
  opened: number;
  dropped: number;
  messages: number;
  deliveries: number;
  missed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** One frame as received (the reference replays it, so both send the same payload). */
  sampleFrame: string | null;
}

const SEQ = /"bench_seq":(\d+)/;
const input = JSON.parse(process.argv[2] ?? '{}') as WsInput;
const now = () => performance.timeOrigin + performance.now();
const deadline = Date.now() + input.seconds * 1000;

const latencies: number[] = [];
const sentAt = new Map<number, number>();
const got = new Map<number, number>();
let waiting: { seq: number; resolve: () => void } | null = null;
let sampleFrame: string | null = null;
let dropped = 0;
let finishing = false;

function onFrame(text: string): void {
  const match = SEQ.exec(text);
  if (!match) return;
  const seq = Number(match[1]);
  const t0 = sentAt.get(seq);
  if (t0 === undefined) return;
  latencies.push(now() - t0);
  sampleFrame ??= text;
  const count = (got.get(seq) ?? 0) + 1;
  got.set(seq, count);
  if (waiting?.seq === seq && count >= open.size) waiting.resolve();
}

const open = new Set<WebSocket>();

function connect(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(input.url, { headers: input.headers ?? {}, perMessageDeflate: false });
    let ready = false;
    const timer = setTimeout(() => reject(new Error('socket did not open in time')), 30_000);
    socket.on('message', (data) => {
      const text = data.toString();
      if (ready) return onFrame(text);
      if (!input.subscribe) return;
      const type = (JSON.parse(text) as { type?: string }).type;
      if (type === 'welcome') socket.send(JSON.stringify({ type: 'subscribe', channel: input.subscribe }));
      else if (type === 'subscribed') {
        ready = true;
        clearTimeout(timer);
        resolve();
      } else if (type === 'error') reject(new Error(`subscribe refused: ${text}`));
    });
    socket.on('open', () => {
      open.add(socket);
      if (!input.subscribe) {
        ready = true;
        clearTimeout(timer);
        resolve();
      }
    });
    socket.on('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
    socket.on('error', (error) => {
      if (!ready) reject(error);
    });
    socket.on('close', () => {
      if (open.delete(socket) && !finishing) dropped += 1;
    });
  });
}

async function main(): Promise<void> {
  const batch = 200;
  for (let i = 0; i < input.sockets; i += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, input.sockets - i) }, () => connect()));
  }
  const opened = open.size;
  const pinger = input.subscribe
    ? setInterval(() => {
        for (const socket of open) socket.send('{"type":"ping"}');
      }, 10_000)
    : null;
  let sent = 0;
  for (let seq = 1; seq <= input.messages && Date.now() < deadline; seq += 1) {
    const delivered = new Promise<void>((resolve) => (waiting = { seq, resolve }));
    sentAt.set(seq, now());
    sent += 1;
    const res = await fetch(input.trigger.url, {
      method: input.trigger.method,
      headers: { 'content-type': 'application/json', ...input.trigger.headers },
      body: input.trigger.body.replace('"bench_seq":0', `"bench_seq":${seq}`),
    });
    if (!res.ok) throw new Error(`trigger answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    await Promise.race([delivered, new Promise((resolve) => setTimeout(resolve, input.waitMs))]);
    waiting = null;
    await new Promise((resolve) => setTimeout(resolve, input.gapMs));
  }
  if (pinger) clearInterval(pinger);
  finishing = true;
  let deliveries = 0;
  for (let seq = 1; seq <= sent; seq += 1) deliveries += got.get(seq) ?? 0;
  latencies.sort((a, b) => a - b);
  const at = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)]! : Number.NaN);
  const result: WsResult = {
    sockets: input.sockets,
    opened,
    dropped,
    messages: sent,
    deliveries,
    missed: sent * opened - deliveries,
    p50Ms: at(50),
    p99Ms: at(99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    sampleFrame,
  };
  for (const socket of open) socket.terminate();
  console.log(JSON.stringify(result));
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
