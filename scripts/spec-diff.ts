/**
 * The breaking-change gate over the three published documents.
 *
 *   npm run spec:diff      compare spec/published/ with the released snapshot in spec/released/;
 *                          exit 1 on a breaking change that spec/breaking-changes.yaml does not
 *                          accept with a reason
 *   npm run spec:release   make the published documents the released snapshot (on a release),
 *                          empty the accepted list, which only ever covers the next release, and
 *                          record the released commit in spec/released/COMMIT (the rolling-upgrade
 *                          test starts that commit beside the current code)
 *
 * Each document is compared by a maintained tool: OpenAPI by Optic's breaking-change ruleset
 * (@useoptic/standard-rulesets over documents @useoptic/openapi-io dereferences, recursive schemas
 * included), the GraphQL SDL by @graphql-inspector/core, AsyncAPI by @asyncapi/diff (its
 * `breaking` changes, and its unclassified removals: what a consumer relied on is gone), compared
 * frame by frame (each message with the schemas it names written in, so a field removed from a
 * REST resource a frame carries is a break of that frame).
 * A finding has a stable id, `<spec> <rule> <where>`, which is what the accepted list names.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { diff as asyncapiDiff } from '@asyncapi/diff';
import { CriticalityLevel, diff as graphqlDiff } from '@graphql-inspector/core';
import { dereferenceOpenApi } from '@useoptic/openapi-io';
import { compareSpecs } from '@useoptic/openapi-utilities';
import { RuleRunner } from '@useoptic/rulesets-base';
import { BreakingChangesRuleset } from '@useoptic/standard-rulesets';
import { buildSchema } from 'graphql';
import { parse as parseYaml } from 'yaml';

const root = path.resolve(__dirname, '..');
const ACCEPTED_FILE = 'spec/breaking-changes.yaml';

export interface Finding {
  spec: 'openapi' | 'graphql' | 'asyncapi';
  /** `<spec> <rule> <where>`: what spec/breaking-changes.yaml names to accept the change. */
  id: string;
  message: string;
}

interface SpecDocument {
  spec: Finding['spec'];
  /** The consumer-facing document; the first existing path is taken. */
  published: string[];
  released: string;
  compare(released: string, published: string): Promise<Finding[]>;
}

// ---------------------------------------------------------------- OpenAPI

type OpenApiDoc = { paths: Record<string, unknown>; components?: Record<string, Record<string, unknown>>; [key: string]: unknown };

/** A path item with every component it reaches, as one comparable string. */
function pathClosure(doc: OpenApiDoc, item: unknown): string {
  const seen = new Map<string, unknown>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/') && !seen.has(value)) {
        const [, , section, name] = value.split('/');
        const target = doc.components?.[section!]?.[name!];
        seen.set(value, target);
        visit(target);
      } else visit(value);
    }
  };
  visit(item);
  return JSON.stringify([item, [...seen.entries()].sort(([a], [b]) => a.localeCompare(b))]);
}

/**
 * Both documents keep only the paths whose operations or reachable components differ: Optic's
 * rules then read what changed and nothing else (a whole-document run takes minutes), with the
 * same findings, since an unchanged path item with unchanged components has none.
 */
function changedPathsOnly(released: OpenApiDoc, published: OpenApiDoc): [OpenApiDoc, OpenApiDoc] {
  const keep = new Set<string>();
  for (const p of new Set([...Object.keys(released.paths), ...Object.keys(published.paths)])) {
    const before = p in released.paths ? pathClosure(released, released.paths[p]) : null;
    const after = p in published.paths ? pathClosure(published, published.paths[p]) : null;
    if (before !== after) keep.add(p);
  }
  const only = (doc: OpenApiDoc): OpenApiDoc => ({ ...doc, paths: Object.fromEntries(Object.entries(doc.paths).filter(([p]) => keep.has(p))) });
  return [only(released), only(published)];
}

async function openapiFindings(releasedFile: string, publishedFile: string): Promise<Finding[]> {
  const [released, published] = changedPathsOnly(JSON.parse(readFileSync(releasedFile, 'utf8')) as OpenApiDoc, JSON.parse(readFileSync(publishedFile, 'utf8')) as OpenApiDoc);
  if (Object.keys(released.paths).length === 0 && Object.keys(published.paths).length === 0) return [];
  const dir = mkdtempSync(path.join(tmpdir(), 'spec-diff-'));
  try {
    const load = async (name: string, doc: OpenApiDoc) => {
      const file = path.join(dir, name);
      writeFileSync(file, JSON.stringify(doc));
      const { jsonLike, sourcemap } = await dereferenceOpenApi(file);
      return { jsonLike, sourcemap, isEmptySpec: false } as unknown as Parameters<typeof compareSpecs>[0];
    };
    const { results } = await compareSpecs(await load('released.json', released), await load('published.json', published), new RuleRunner([new BreakingChangesRuleset()]), {});
    return results
      .filter((r) => !r.passed && !r.exempted)
      .map((r) => ({ spec: 'openapi' as const, id: `openapi ${r.name} ${r.location.jsonPath}`, message: r.error ?? r.name }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- GraphQL

async function graphqlFindings(releasedFile: string, publishedFile: string): Promise<Finding[]> {
  const schema = (file: string) => buildSchema(readFileSync(file, 'utf8'));
  const changes = await graphqlDiff(schema(releasedFile), schema(publishedFile));
  return changes
    .filter((c) => c.criticality.level === CriticalityLevel.Breaking)
    .map((c) => ({ spec: 'graphql' as const, id: `graphql ${c.type} ${c.path ?? ''}`.trimEnd(), message: c.message }));
}

// ---------------------------------------------------------------- AsyncAPI

type AsyncApiDoc = { components?: { schemas?: Record<string, unknown>; messages?: Record<string, { payload?: unknown }> }; [key: string]: unknown };

/**
 * The document as a consumer of each frame sees it: every message's payload with the component
 * schemas it names written in (a recursive schema stops at its second visit), and no
 * `components.schemas` of its own. A frame that carries a REST resource names the copy of the
 * OpenAPI schema codegen bundles in (scripts/codegen/ws-resources.ts), so a field removed from the
 * resource is a removal in that frame's payload: the finding names the frame, and a schema that
 * only moved (inline to a reference, or renamed) is no finding.
 */
function framesView(doc: AsyncApiDoc): AsyncApiDoc {
  const schemas = doc.components?.schemas ?? {};
  const inline = (node: unknown, stack: string[]): unknown => {
    if (Array.isArray(node)) return node.map((item) => inline(item, stack));
    if (node === null || typeof node !== 'object') return node;
    const ref = (node as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      const name = ref.slice('#/components/schemas/'.length);
      return stack.includes(name) || !(name in schemas) ? node : inline(schemas[name], [...stack, name]);
    }
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, inline(value, stack)]));
  };
  const { schemas: _schemas, ...components } = doc.components ?? {};
  return { ...doc, components: { ...components, messages: inline(doc.components?.messages ?? {}, []) as Record<string, { payload?: unknown }> } };
}

/** A removed annotation (a title, description, summary or examples of a schema or message) tells a consumer nothing less about a frame. */
const ANNOTATIONS = new Set(['title', 'description', 'summary', 'examples']);
const isAnnotation = (pointer: string) => {
  const segments = pointer.split('/');
  return ANNOTATIONS.has(segments[segments.length - 1]!) && segments[segments.length - 2] !== 'properties';
};

async function asyncapiFindings(releasedFile: string, publishedFile: string): Promise<Finding[]> {
  const read = (file: string) => framesView(JSON.parse(readFileSync(file, 'utf8')) as AsyncApiDoc);
  const output = asyncapiDiff(read(releasedFile), read(publishedFile), { outputType: 'json' });
  const changes = [...(output.breaking() as { action: string; path: string }[]), ...(output.unclassified() as { action: string; path: string }[]).filter((c) => c.action === 'remove' && !isAnnotation(c.path))];
  return changes.map((c) => ({ spec: 'asyncapi' as const, id: `asyncapi ${c.action} ${c.path}`, message: `${c.action} at ${c.path}` }));
}

// ---------------------------------------------------------------- gate

export const DOCUMENTS: SpecDocument[] = [
  { spec: 'openapi', published: ['spec/published/openapi.json'], released: 'spec/released/openapi.json', compare: openapiFindings },
  { spec: 'graphql', published: ['spec/published/schema.graphql'], released: 'spec/released/schema.graphql', compare: graphqlFindings },
  { spec: 'asyncapi', published: ['spec/published/asyncapi.json'], released: 'spec/released/asyncapi.json', compare: asyncapiFindings },
];

interface Accepted {
  change: string;
  reason: string;
}

function readAccepted(base: string, problems: string[]): Accepted[] {
  const file = path.join(base, ACCEPTED_FILE);
  if (!existsSync(file)) return [];
  const doc = (parseYaml(readFileSync(file, 'utf8')) ?? {}) as { accepted?: unknown };
  const list = doc.accepted ?? [];
  if (!Array.isArray(list)) {
    problems.push(`${ACCEPTED_FILE}: accepted must be a list`);
    return [];
  }
  return list.flatMap((entry: { change?: unknown; reason?: unknown }, i) => {
    if (typeof entry?.change !== 'string' || typeof entry.reason !== 'string' || entry.reason.trim().length < 10) {
      problems.push(`${ACCEPTED_FILE}: accepted[${i}] needs a change (the id spec:diff prints) and a reason`);
      return [];
    }
    return [{ change: entry.change, reason: entry.reason }];
  });
}

const publishedOf = (base: string, document: SpecDocument) => document.published.map((p) => path.join(base, p)).find((p) => existsSync(p));

export async function runDiff(base: string = root): Promise<{ ok: boolean; report: string[] }> {
  const report: string[] = [];
  const problems: string[] = [];
  const accepted = readAccepted(base, problems);
  // A malformed list of accepted changes is reported at once: no comparison could be judged by it.
  if (problems.length) return { ok: false, report: problems.map((p) => `error: ${p}`) };
  const used = new Set<string>();
  let breaking = 0;
  for (const document of DOCUMENTS) {
    const published = publishedOf(base, document);
    const released = path.join(base, document.released);
    if (!published) {
      problems.push(`${document.spec}: no published document (${document.published.join(' or ')}); run npm run codegen`);
      continue;
    }
    if (!existsSync(released)) {
      problems.push(`${document.spec}: no released snapshot ${document.released}; run npm run spec:release`);
      continue;
    }
    const findings = await document.compare(released, published);
    const open = findings.filter((f) => {
      const hit = accepted.find((a) => a.change === f.id);
      if (hit) used.add(hit.change);
      return !hit;
    });
    breaking += open.length;
    report.push(`${document.spec}: ${findings.length} breaking change(s) against ${document.released}, ${findings.length - open.length} accepted`);
    for (const f of open) report.push(`  BREAKING ${f.id}\n    ${f.message}`);
  }
  for (const a of accepted) if (!used.has(a.change)) report.push(`note: ${ACCEPTED_FILE} accepts "${a.change}", which no longer occurs`);
  for (const p of problems) report.push(`error: ${p}`);
  if (breaking > 0) report.push(`spec:diff: ${breaking} breaking change(s) not accepted: restore compatibility, or list each in ${ACCEPTED_FILE} with a reason`);
  return { ok: breaking === 0 && problems.length === 0, report };
}

/** Where `spec:release` records the released commit: the previous release, for the rolling-upgrade test. */
export const RELEASED_COMMIT_FILE = 'spec/released/COMMIT';

/**
 * The commit being released: HEAD, which must hold every change of the work tree (the snapshot's
 * own files aside), or the recorded commit would not be the code that was released.
 */
function releasedCommit(base: string): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: base, encoding: 'utf8' });
  // Not trimmed: a porcelain line starts with its two status columns, either of which may be a space.
  const dirty = git('status', '--porcelain', '--untracked-files=no')
    .split('\n')
    .filter((line) => line && !/^.. (spec\/released\/|spec\/breaking-changes\.yaml)/.test(line));
  if (dirty.length > 0) throw new Error(`spec:release: commit these first, the release is HEAD:\n${dirty.join('\n')}`);
  return git('rev-parse', 'HEAD').trim();
}

export function release(base: string = root): string[] {
  const written: string[] = [];
  const commit = releasedCommit(base);
  for (const document of DOCUMENTS) {
    const published = publishedOf(base, document);
    if (!published) throw new Error(`${document.spec}: no published document; run npm run codegen`);
    copyFileSync(published, path.join(base, document.released));
    written.push(`${path.relative(base, published)} -> ${document.released}`);
  }
  writeFileSync(
    path.join(base, ACCEPTED_FILE),
    `# Breaking changes accepted since the released snapshot (spec/released/), each with its reason.
# npm run spec:diff fails on any other; npm run spec:release empties this list. An entry:
#   - change: <the id spec:diff prints, e.g. "graphql FIELD_REMOVED Event.title">
#     reason: <why consumers can live with it, and how they were told>
accepted: []
`,
  );
  writeFileSync(path.join(base, RELEASED_COMMIT_FILE), `${commit}\n`);
  written.push(`${commit} -> ${RELEASED_COMMIT_FILE}`);
  return written;
}

async function main(): Promise<void> {
  if (process.argv.includes('--release')) {
    for (const line of release()) console.log(`spec:release: ${line}`);
    return;
  }
  const { ok, report } = await runDiff();
  console.log(report.join('\n'));
  if (!ok) process.exit(1);
  console.log('spec:diff: no unaccepted breaking change');
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
