/**
 * The top entries of a `--cpu-prof` profile (BENCH_CPU_PROF, scripts/bench.ts): self time per
 * function and total time per source file, as shares of the sampled time that was not idle.
 * Usage: `tsx scripts/bench/profile-top.ts <file.cpuprofile> [entries]`. Samples before the
 * first one that runs a request handler (start-up: module loading and compilation) are left out.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

const [file, count = '25'] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-top.ts <file.cpuprofile> [entries]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
/** Nodes whose stack holds the REST dispatcher or the GraphQL endpoint: serving has begun. */
const serving = (id: number): boolean => {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (/src\/http\/(rest|graphql\/endpoint)\.ts/.test(byId.get(at)!.callFrame.url)) return true;
  return false;
};
const firstServing = profile.samples.findIndex(serving);
const hits = new Map<number, number>();
profile.samples.forEach((id, i) => {
  if (i >= firstServing) hits.set(id, (hits.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

const where = (n: Node) => {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const short = url.includes('node_modules') ? url.slice(url.lastIndexOf('node_modules') + 13) : path.relative(process.cwd(), url) || url;
  return `${n.callFrame.functionName || '(anonymous)'} ${short}:${n.callFrame.lineNumber + 1}`;
};
const idle = new Set(['(idle)', '(program)', '(garbage collector)']);
let busy = 0;
const self = new Map<string, number>();
const files = new Map<string, number>();
for (const [id, us] of hits) {
  const node = byId.get(id)!;
  const name = node.callFrame.functionName;
  if (name === '(idle)') continue;
  busy += us;
  const key = idle.has(name) ? name : where(node);
  self.set(key, (self.get(key) ?? 0) + us);
  // Inclusive per file: each file on the sample's stack counts once.
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const url = byId.get(at)!.callFrame.url;
    if (!url) continue;
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    const key2 = m ? `pkg ${m[1]}` : path.relative(process.cwd(), url.replace(/^file:\/\//, ''));
    if (seen.has(key2)) continue;
    seen.add(key2);
    files.set(key2, (files.get(key2) ?? 0) + us);
  }
}
const show = (title: string, map: Map<string, number>) => {
  console.log(`${title} (busy ${(busy / 1e6).toFixed(1)} s)`);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(count))) console.log(`  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${k}`);
};
show('self time', self);
show('total time per file or package', files);
