/**
 * The SDK as a consumer installs it: `npm pack` of sdk/ (its prepack builds dist/), the tarball
 * installed into a fresh directory outside the repository, and a small TypeScript consumer that
 * imports the package by name, compiled with `tsc --strict` against the shipped declarations
 * and run under Node against a started service over real HTTP and WebSocket.
 *
 * Offline: the SDK's dependencies are packed from the repository's node_modules and installed
 * with it (`npm install --offline`), so nothing is fetched; a dependency added to sdk/package.json
 * that is not listed here fails the install, which is the reminder to look at what it costs a
 * consumer.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from '../helpers/app';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

/** What the SDK brings with it: its dependencies and theirs, and `ws` for the node entry. */
const INSTALLED_WITH = ['openapi-fetch', 'openapi-typescript-helpers', 'ws'];

const CONSUMER = `
import { ApiError, createSdk, documents, isMessage, unwrap, type ErrorCode } from '@creator-backend/sdk/node';

const baseUrl = process.argv[2];
if (!baseUrl) throw new Error('usage: node consumer.js <service url>');
const sdk = createSdk({ baseUrl });
const me = await sdk.devLogin({ email: \`packed-\${Date.now()}@example.test\`, display_name: 'Packed' });
const accountId = me.accountId;
if (accountId === null) throw new Error('dev login gave no account');

const live = sdk.realtime();
let subscribed: () => void = () => undefined;
const ready = new Promise<void>((resolve) => (subscribed = resolve));
const delivered = new Promise<{ id: string; type: string }>((resolve) => {
  live.subscribe('events:{account_id}', { account_id: accountId }, {
    onMessage: (message) => {
      if (isMessage('streamEvent', message)) resolve(message.data);
    },
    onSubscribed: () => subscribed(),
  });
});
await live.connect();
await ready;

const emitted = await unwrap(sdk.rest.POST('/events/emit', { body: { type: 'platform_a:follower', platform: 'platform_a', raw: { user_name: 'packed' } } }));
const listed = await sdk.graphql(documents.EventsDocument, { filter: { limit: 10 } });
const liveData = await delivered;
live.close();

let anonymous: ErrorCode | null = null;
try {
  await unwrap(createSdk({ baseUrl }).rest.GET('/events'));
} catch (error) {
  if (error instanceof ApiError) anonymous = error.code;
}
console.log(JSON.stringify({ emitted: emitted.data.id, listed: listed.events.items.map((e) => e.id), live: liveData, anonymous }));
`;

describe('the packed SDK in a fresh consumer', () => {
  let app: Promise<TestApp> | undefined;
  let dir = '';
  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await (await app)?.stop();
  });

  test('installs offline, compiles under --strict and talks to the service by package name', async () => {
    // The service starts while the package is packed, installed and compiled.
    app = startTestApp();
    dir = mkdtempSync(path.join(tmpdir(), 'sdk-consumer-'));
    const packs = path.join(dir, 'packs');
    const consumer = path.join(dir, 'consumer');
    for (const d of [packs, consumer]) mkdirSync(d);

    const packed = JSON.parse((await run('npm', ['pack', '--json', '--pack-destination', packs], { cwd: path.join(root, 'sdk') })).stdout) as { filename: string; files: { path: string }[] }[];
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/node.js', 'dist/node.d.ts']));
    expect(files.filter((f) => !f.startsWith('dist/') && !['package.json', 'README.md'].includes(f))).toEqual([]);

    // Every runtime dependency the package declares is one of those installed with it.
    const manifest = JSON.parse(readFileSync(path.join(root, 'sdk/package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    expect(Object.keys(manifest.dependencies ?? {}).filter((name) => !INSTALLED_WITH.includes(name))).toEqual([]);
    const dependencies = JSON.parse((await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packs, ...INSTALLED_WITH.map((name) => `./node_modules/${name}`)], { cwd: root })).stdout) as { filename: string }[];

    writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'sdk-consumer', private: true, type: 'module' }));
    const tarballs = [packed[0]!.filename, ...dependencies.map((d) => d.filename)].map((f) => path.join(packs, f));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs], { cwd: consumer });

    writeFileSync(path.join(consumer, 'consumer.ts'), CONSUMER);
    writeFileSync(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          // As `tsc --init` writes it; the package's declarations are checked where they are built.
          skipLibCheck: true,
          outDir: 'out',
          typeRoots: [path.join(root, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    const compiled = await run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', consumer, '--pretty', 'false'], { cwd: consumer }).then(
      () => '',
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
    expect(compiled).toBe('');

    const { stdout } = await run(process.execPath, [path.join(consumer, 'out/consumer.js'), (await app).url], { cwd: consumer, timeout: 30_000 });
    const outcome = JSON.parse(stdout) as { emitted: string; listed: string[]; live: { id: string; type: string }; anonymous: string | null };
    expect(outcome.listed).toContain(outcome.emitted);
    expect(outcome.live).toMatchObject({ id: outcome.emitted, type: 'platform_a:follower' });
    expect(outcome.anonymous).toBe('UNAUTHORIZED');
  });
});
