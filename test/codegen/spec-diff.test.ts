/**
 * The breaking-change gate (`npm run spec:diff`) against a scratch copy of the project: it passes
 * on the committed tree, fails on a removed field, a narrowed enum and a new required input in
 * the published OpenAPI document and GraphQL SDL (and on a removed AsyncAPI message), and passes
 * again once each of them is accepted with a reason in spec/breaking-changes.yaml.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');

function scratchCopy(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'spec-diff-'));
  for (const entry of ['spec', 'scripts', 'package.json', 'tsconfig.json']) cpSync(path.join(root, entry), path.join(dir, entry), { recursive: true });
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

async function specDiff(dir: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'scripts/spec-diff.ts'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

function editJson(dir: string, file: string, change: (doc: any) => void): void {
  const target = path.join(dir, file);
  const doc = JSON.parse(readFileSync(target, 'utf8'));
  change(doc);
  writeFileSync(target, JSON.stringify(doc, null, 2));
}

function editText(dir: string, file: string, from: string | RegExp, to: string): void {
  const target = path.join(dir, file);
  const before = readFileSync(target, 'utf8');
  const after = before.replace(from, to);
  if (after === before) throw new Error(`edit of ${file} changed nothing`);
  writeFileSync(target, after);
}

/** The breaking changes the test makes, by the id spec:diff prints for each. */
const REST_IDS = [
  // A removed response field, wherever the schema is answered.
  /openapi prevent removing response property \/paths\/~1ideas\/post\/responses\/201\/\S*\/properties\/title/,
  // A removed field of a recursive schema (a comment's replies are comments).
  /openapi prevent removing response property \/paths\/~1ideas~1\{id\}~1comments\/get\/responses\/200\/\S*\/properties\/mentions/,
  // A narrowed request enum.
  /openapi request and response property enums \/paths\/~1ideas~1\{id\}~1vote\/post\/requestBody\/\S*\/vote_type/,
  // A new required request property.
  /openapi prevent changing request property to required \/paths\/~1ideas\/post\/requestBody\/\S*\/priority/,
];
const GRAPHQL_IDS = ['graphql FIELD_REMOVED Sound.filename', 'graphql ENUM_VALUE_REMOVED ApiKeyKind.DEVELOPER', 'graphql INPUT_FIELD_ADDED UpdateSoundInput.volume'];

/** Each run spawns tsx and the three diff tools; on a busy shared machine one takes minutes. */
const RUN_TIMEOUT = 300_000;

describe('npm run spec:diff', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = scratchCopy();
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test('passes on the committed tree', async () => {
    const result = await specDiff(fresh());
    expect(result.output).toContain('spec:diff: no unaccepted breaking change');
    expect(result.code).toBe(0);
  }, RUN_TIMEOUT);

  describe('on a removed field, a narrowed enum and a new required input', () => {
    let dir = '';
    let ids: string[] = [];

    test('fails, naming each change', async () => {
      dir = fresh();
      editJson(dir, 'spec/published/openapi.json', (doc) => {
        const schemas = doc.components.schemas;
        delete schemas.Idea.properties.title;
        schemas.Idea.required = schemas.Idea.required.filter((name: string) => name !== 'title');
        schemas.IdeaVoteBody.properties.vote_type.enum = ['up'];
        schemas.CreateIdeaBody.properties.priority = { type: 'integer' };
        schemas.CreateIdeaBody.required.push('priority');
        delete schemas.IdeaComment.properties.mentions;
        schemas.IdeaComment.required = (schemas.IdeaComment.required ?? []).filter((name: string) => name !== 'mentions');
      });
      editText(dir, 'spec/published/schema.graphql', /(type Sound \{[^}]*?)\n {2}filename: String!/, '$1');
      editText(dir, 'spec/published/schema.graphql', /(enum ApiKeyKind \{[^}]*?)\n {2}DEVELOPER/, '$1');
      editText(dir, 'spec/published/schema.graphql', /input UpdateSoundInput \{/, 'input UpdateSoundInput {\n  volume: Float!');
      const asyncapiFile = 'spec/published/asyncapi.json';
      let removedMessage = '';
      editJson(dir, asyncapiFile, (doc) => {
        removedMessage = Object.keys(doc.components.messages)[0]!;
        delete doc.components.messages[removedMessage];
      });

      const failed = await specDiff(dir);
      expect(failed.code).toBe(1);
      for (const id of REST_IDS) expect(failed.output).toMatch(id);
      for (const id of GRAPHQL_IDS) expect(failed.output).toContain(`BREAKING ${id}`);
      expect(failed.output).toContain(`/components/messages/${removedMessage}`);
      expect(failed.output).toMatch(/spec:diff: \d+ breaking change\(s\) not accepted/);
      ids = [...failed.output.matchAll(/^ {2}BREAKING (.+)$/gm)].map((m) => m[1]!);
      expect(ids.length).toBeGreaterThanOrEqual(REST_IDS.length + GRAPHQL_IDS.length + 1);
    }, RUN_TIMEOUT);

    test('passes once each change is accepted with a reason', async () => {
      expect(ids.length).toBeGreaterThan(0);
      // Changes the working spec already accepts (spec/breaking-changes.yaml) stay accepted.
      const file = path.join(dir, 'spec/breaking-changes.yaml');
      const current = readFileSync(file, 'utf8');
      const kept = /^accepted:\s*\[\]/m.test(current) ? '' : current.slice(current.indexOf('accepted:') + 'accepted:'.length).replace(/^\n/, '');
      writeFileSync(file, `accepted:\n${kept}${ids.map((id) => `  - change: ${JSON.stringify(id)}\n    reason: Announced to consumers two releases ago.\n`).join('')}`);
      const accepted = await specDiff(dir);
      expect(accepted.output).toContain('spec:diff: no unaccepted breaking change');
      expect(accepted.code).toBe(0);
    }, RUN_TIMEOUT);

    test('an entry without a reason accepts nothing', async () => {
      expect(ids.length).toBeGreaterThan(0);
      writeFileSync(path.join(dir, 'spec/breaking-changes.yaml'), `accepted:\n${ids.map((id) => `  - change: ${JSON.stringify(id)}\n`).join('')}`);
      const unexplained = await specDiff(dir);
      expect(unexplained.code).toBe(1);
      expect(unexplained.output).toContain('needs a change (the id spec:diff prints) and a reason');
    }, RUN_TIMEOUT);
  });
});
