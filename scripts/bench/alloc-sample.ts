/**
 * What a running process allocates, by the function that allocated it, garbage included: V8's
 * sampling heap profiler through the inspector, for a few seconds of a bench case. `--heap-prof`
 * (BENCH_HEAP_PROF) keeps only what is still live when the process stops, which leaves out the
 * short-lived objects a request makes, the ones the young-generation collector spends its time on.
 *
 * Usage: `tsx scripts/bench/alloc-sample.ts <pid> [seconds] [entries] [--survivors]`, while the
 * bench runs the case (it prints the service's pid). The process's inspector is opened by SIGUSR1
 * on 127.0.0.1:9229 (Node's default; nothing else may hold that port). `--survivors` leaves out
 * what the young-generation collector freed: what lived long enough to reach the old generation,
 * which the mark-compact collector then has to free.
 */
import WebSocket from 'ws';

const args = process.argv.slice(2);
const survivors = args.includes('--survivors');
const [pidText, secondsText = '8', entriesText = '30'] = args.filter((a) => a !== '--survivors');
const pid = Number(pidText);
if (!Number.isInteger(pid)) throw new Error('usage: alloc-sample.ts <pid> [seconds] [entries] [--survivors]');
const INSPECTOR = 'http://127.0.0.1:9229/json/list';

interface SampleNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampleNode[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function inspectorUrl(): Promise<string> {
  process.kill(pid, 'SIGUSR1');
  for (let tries = 0; tries < 50; tries += 1) {
    try {
      const targets = (await (await fetch(INSPECTOR)).json()) as { webSocketDebuggerUrl: string }[];
      if (targets[0]) return targets[0].webSocketDebuggerUrl;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`process ${pid} opened no inspector on 127.0.0.1:9229`);
}

async function main(): Promise<void> {
  const socket = new WebSocket(await inspectorUrl(), { maxPayload: 1 << 30 });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString('utf8')) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  const call = <T>(method: string, params: object = {}) =>
    new Promise<T>((resolve) => {
      id += 1;
      pending.set(id, resolve as (result: unknown) => void);
      socket.send(JSON.stringify({ id, method, params }));
    });
  await call('HeapProfiler.enable');
  await call('HeapProfiler.startSampling', { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !survivors });
  const seconds = Number(secondsText);
  await sleep(seconds * 1000);
  const { profile } = await call<{ profile: { head: SampleNode } }>('HeapProfiler.stopSampling');
  socket.close();

  const bytes = new Map<string, number>();
  let total = 0;
  const walk = (node: SampleNode) => {
    const frame = node.callFrame;
    const where = frame.url.replace(/^.*\/(node_modules|dist)\//, '$1/');
    const name = `${frame.functionName || '(anonymous)'} ${where}${where ? `:${frame.lineNumber + 1}` : ''}`;
    bytes.set(name, (bytes.get(name) ?? 0) + node.selfSize);
    total += node.selfSize;
    node.children.forEach(walk);
  };
  walk(profile.head);
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  console.log(`${survivors ? 'allocations that outlived a young-generation collection' : 'allocations'}: ${mib(total)} MiB in ${seconds} s (${mib(total / seconds)} MiB/s); divide by the requests answered meanwhile for a figure per request`);
  for (const [name, size] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, Number(entriesText))) {
    console.log(`${((100 * size) / total).toFixed(1).padStart(6)}%  ${mib(size).padStart(7)} MiB  ${name}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
