// `npm run build`: the production tree under dist/, run with `node dist/main.js` (no TypeScript
// at run time). tsc compiles src/ and generated/ keeping their layout (dist/src, dist/generated),
// so every path the code resolves from its own file (`../../package.json`, `../../spec/published`)
// finds the copies made here; dist/main.js, dist/migrate.js and dist/reseal.js are the entry points.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');
rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
// What the compiled code reads from disk, beside it as in the source tree.
cpSync(path.join(root, 'generated/ws-validators.js'), path.join(dist, 'generated/ws-validators.js'));
mkdirSync(path.join(dist, 'spec'), { recursive: true });
cpSync(path.join(root, 'spec/published'), path.join(dist, 'spec/published'), { recursive: true });
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
writeFileSync(path.join(dist, 'package.json'), `${JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'commonjs' }, null, 2)}\n`);
for (const [entry, target] of [['main', 'src/main'], ['migrate', 'src/migrate'], ['reseal', 'src/reseal']]) {
  writeFileSync(path.join(dist, `${entry}.js`), `'use strict';\n// Entry point: node dist/${entry}.js\nrequire('./${target}.js');\n`);
}
console.log(JSON.stringify({ level: 30, time: new Date().toISOString(), msg: 'built', dir: 'dist', version: pkg.version }));
