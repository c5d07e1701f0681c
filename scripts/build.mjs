// `npm run build`: the production tree under dist/, run with `node dist/main.js` (no TypeScript
// at run time). tsc compiles src/ and generated/ keeping their layout (dist/src, dist/generated),
// so every path the code resolves from its own file (`../../package.json`, `../../spec/published`)
// finds the copies made here; dist/main.js, dist/migrate.js and dist/reseal.js are the entry points.
import { execFileSync } from 'node:child_process';
//
// `--if-stale` (what `npm start` runs first) builds only when dist/main.js is missing or older than
// a file it is built from, so `npm install && npm start` serves the current sources and a built
// image (no sources newer than its dist/, no compiler) starts at once.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');

/** The newest modification time under `dir` (a file counts as itself); 0 when it does not exist. */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  const stat = statSync(dir);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(dir).reduce((latest, name) => Math.max(latest, newest(path.join(dir, name))), stat.mtimeMs);
}

if (process.argv.includes('--if-stale')) {
  const built = existsSync(path.join(dist, 'main.js')) ? statSync(path.join(dist, 'main.js')).mtimeMs : 0;
  const sources = Math.max(...['src', 'generated', 'spec/published', 'package.json', 'tsconfig.build.json'].map((p) => newest(path.join(root, p))));
  if (built > 0 && (sources <= built || !existsSync(path.join(root, 'node_modules/typescript')))) process.exit(0);
}
rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
// What the compiled code reads from disk, beside it as in the source tree.
for (const name of readdirSync(path.join(root, 'generated')).filter((n) => n.endsWith('.js'))) {
  cpSync(path.join(root, 'generated', name), path.join(dist, 'generated', name));
}
mkdirSync(path.join(dist, 'spec'), { recursive: true });
cpSync(path.join(root, 'spec/published'), path.join(dist, 'spec/published'), { recursive: true });
// The AsyncAPI page's renderer (src/http/docs.ts): the browser bundle and stylesheet of
// @asyncapi/react-component, a development dependency whose Node dependencies (jsdom and more) the
// production tree does without. Names as docs.ts serves them; the licence texts go beside them (not served).
const asyncapiPackage = path.dirname(createRequire(import.meta.url).resolve('@asyncapi/react-component/package.json'));
const asyncapiDir = path.join(dist, 'assets/asyncapi');
mkdirSync(asyncapiDir, { recursive: true });
for (const [from, to] of [
  ['browser/standalone/index.js', 'asyncapi.js'],
  ['browser/standalone/index.js.LICENSE.txt', 'index.js.LICENSE.txt'], // the name asyncapi.js's header cites,
  ['styles/default.min.css', 'asyncapi.css'],
  ['LICENSE', 'LICENSE'],
]) {
  cpSync(path.join(asyncapiPackage, from), path.join(asyncapiDir, to));
}
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
writeFileSync(path.join(dist, 'package.json'), `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'commonjs' }, null, 2)}\n`);
for (const [entry, target] of [['main', 'src/main'], ['migrate', 'src/migrate'], ['reseal', 'src/reseal']]) {
  writeFileSync(path.join(dist, `${entry}.js`), `'use strict';\n// Entry point: node dist/${entry}.js\nrequire('./${target}.js');\n`);
}
console.log(JSON.stringify({ level: 30, time: new Date().toISOString(), msg: 'built', dir: 'dist', version: pkg.version }));
