// Lint (`npm run lint`, part of `npm run check` and CI): a small, type-aware rule set that catches
// what tsc does not: promises nobody awaits, unused code, type-only imports that would load a
// module at run time, and imports in one order (node built-ins, packages, then project files);
// and the structure of src/ (see BOUNDARIES below): no import cycle, no layer importing a layer
// above it, no module reaching into another module's files past its public index.ts.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import js from '@eslint/js';
import importPlugin from 'eslint-plugin-import';
import tseslint from 'typescript-eslint';

// ---------------------------------------------------------------- BOUNDARIES
// The layers of src/, lowest first (DESIGN.md, "Runtime layout"): a file may import its own layer
// and the layers below it, never one above. The module contract sits between the protocol layers,
// whose types it names, and the modules that implement it; app.ts composes the modules.
const MODULES = readdirSync(path.join(import.meta.dirname, 'src/modules'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();
const moduleDir = (name) => `./src/modules/${name}`;
const LAYERS = [
  { name: 'config and errors', paths: ['./src/config', './src/errors.ts'] },
  { name: 'infra and paging', paths: ['./src/infra', './src/paging.ts'] },
  { name: 'auth', paths: ['./src/auth'] },
  { name: 'http', paths: ['./src/http'] },
  { name: 'realtime', paths: ['./src/realtime'] },
  { name: 'the module contract', paths: ['./src/modules/contract.ts'] },
  { name: 'modules', paths: MODULES.map(moduleDir) },
  { name: 'the composition root', paths: ['./src/app.ts', './src/server.ts', './src/main.ts', './src/migrate.ts', './src/reseal.ts'] },
];
const layerZones = LAYERS.slice(0, -1).map((layer, i) => ({
  target: layer.paths,
  from: LAYERS.slice(i + 1).flatMap((above) => above.paths),
  message: `${layer.name} may not import a layer above it (layers, lowest first: ${LAYERS.map((l) => l.name).join(' < ')}; see eslint.config.mjs).`,
}));
// A module is reached from outside only through its index.ts: types it exports there, values
// through use() (src/modules/contract.ts). Inside, no file imports its own index.ts (a circle).
const moduleZones = MODULES.flatMap((name) => [
  {
    target: [...MODULES.filter((other) => other !== name).map(moduleDir), './src/app.ts', './src/server.ts', './src/main.ts', './src/migrate.ts', './src/reseal.ts'],
    from: moduleDir(name),
    except: ['./index.ts'],
    message: `import the ${name} module's types from its index.ts, and its values through use('${name}').`,
  },
  {
    target: `${moduleDir(name)}/**/!(index).ts`,
    from: `${moduleDir(name)}/index.ts`,
    message: 'a module file may not import its own index.ts (an import circle): move what it needs out of index.ts.',
  },
]);

export default tseslint.config(
  { ignores: ['generated/**', 'node_modules/**', '.data/**', '.ci/**', 'coverage/**', 'sdk/dist/**', 'sdk/src/generated/**', 'sdk/node_modules/**', 'dist/**'] },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { import: importPlugin },
    settings: {
      // Resolve and read TypeScript files, so import/no-cycle and import/no-restricted-paths see the graph.
      'import/resolver': { node: { extensions: ['.ts', '.js', '.mjs', '.json'] } },
      'import/extensions': ['.ts', '.js'],
      'import/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import/ignore': ['node_modules'],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'import/order': [
        'error',
        {
          groups: [['builtin', 'external'], ['parent', 'sibling', 'index']],
          'newlines-between': 'never',
        },
      ],
      'import/no-duplicates': 'error',
      'import/no-cycle': ['error', { ignoreExternal: true }],
      'import/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: [...layerZones, ...moduleZones] }],
      'no-control-regex': 'off',
    },
  },
);
