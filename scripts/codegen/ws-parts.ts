/**
 * The WebSocket protocol's parts (spec/ws-protocol/), bundled into the one AsyncAPI document
 * codegen checks, serves and publishes (spec/published/asyncapi.json):
 *
 *   spec/ws-protocol/root.json             asyncapi, info, defaultContentType, x-limits, and the
 *                                          session itself: the `session` channel, its operations
 *                                          and the components it names (the envelope frames:
 *                                          subscribe, welcome, error...), which any part may name
 *   spec/ws-protocol/modules/<name>.json   one per module, or per domain no module owns (music,
 *                                          automations, history, presence): its channels, their
 *                                          operations, and the components only it names
 *
 * A part is JSON with `channels`, `operations` and `components` only (root adds the document's
 * header keys). Every part names channels and components as the bundled document does
 * (`#/channels/<id>`, `#/components/<kind>/<name>`). A REST resource a frame carries is named by its OpenAPI
 * schema in the published OpenAPI document (`../../published/openapi.json#/components/schemas/<Name>`,
 * or a declared derivation of it), which ws-resources.ts copies into the bundle.
 *
 * The bundle is deterministic: root's keys as written; channels and operations root's first, then
 * each module's part in name order (code-unit), as written inside it, because the channel matcher
 * tries channel families in document order (a module lists a literal address such as
 * `ideas:list` before a pattern that would take it); each kind of component sorted by name.
 *
 * Refused, all at once and before anything is built: a part that does not parse or is not an
 * object, a key a part may not hold, a channel, operation or component defined in two parts, a
 * `$ref` the bundled document does not resolve, a module's component named from another part (it
 * belongs in root.json) or by none of its own, and any file under spec/ws-protocol/ that is not one
 * of the parts above (a stray part would silently be left out).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { readSpec, root } from './common';
import { specSources } from './spec-sources';
import { externalRefs, externalTarget, linkResources } from './ws-resources';

export const PARTS_DIR = 'spec/ws-protocol';
const SECTIONS = ['channels', 'operations'] as const;
const MODULE_PART = /^[a-z][a-z0-9-]*\.json$/;

type Json = Record<string, unknown>;
interface Part {
  file: string;
  /** The module (or domain) of a modules/ part; null for root. */
  module: string | null;
  doc: Json;
  refs: Set<string>;
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function refsIn(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((item) => refsIn(item, found));
  else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.add(value);
      else refsIn(value, found);
    }
  }
  return found;
}

/** The node a local `$ref` (`#/a/b`, JSON Pointer) names in `doc`, or undefined. */
function resolve(doc: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** The part files in bundle order, each as [module or null, path relative to the repository]. */
function partFiles(problems: string[]): Array<[string | null, string]> {
  const dir = path.join(root, PARTS_DIR);
  for (const entry of readdirSync(dir).sort(byCodeUnit)) {
    if (entry === 'root.json' || (entry === 'modules' && statSync(path.join(dir, entry)).isDirectory())) continue;
    problems.push(`${PARTS_DIR}/${entry}: not a part of the WebSocket protocol (root.json or modules/<name>.json); move or remove it`);
  }
  const files: Array<[string | null, string]> = [[null, `${PARTS_DIR}/root.json`]];
  const modules = path.join(dir, 'modules');
  for (const entry of existsSync(modules) ? readdirSync(modules).sort(byCodeUnit) : []) {
    const where = `${PARTS_DIR}/modules/${entry}`;
    if (MODULE_PART.test(entry) && statSync(path.join(modules, entry)).isFile()) files.push([entry.replace(/\.json$/, ''), where]);
    else problems.push(`${where}: not a part of the WebSocket protocol (modules/<name>.json, named after its module or domain)`);
  }
  return files;
}

/**
 * Reads and checks the parts and returns the one AsyncAPI document they make, with the REST
 * resources its frames name copied in from `openapi` (the published OpenAPI document; see
 * ws-resources.ts); throws with every problem found.
 */
export function bundleWs(openapi: Json = {}): Json {
  const problems: string[] = [];
  const parts: Part[] = [];
  for (const [module, file] of partFiles(problems)) {
    let doc: unknown;
    try {
      doc = JSON.parse(readSpec(file));
    } catch (error) {
      problems.push(`${file}: ${(error as Error).message.split('\n')[0]}`);
      continue;
    }
    if (!isObject(doc)) {
      problems.push(`${file}: not a JSON object`);
      continue;
    }
    for (const [key, value] of Object.entries(doc)) {
      const section = (SECTIONS as readonly string[]).includes(key) || key === 'components';
      if (module !== null && !section) problems.push(`${file}: ${key} belongs in ${PARTS_DIR}/root.json; a module's part holds only channels, operations and components`);
      if (section && !isObject(value)) problems.push(`${file}: ${key} must be an object`);
    }
    if (isObject(doc.components)) for (const [kind, entries] of Object.entries(doc.components)) if (!isObject(entries)) problems.push(`${file}: components.${kind} must be an object`);
    for (const { ref } of externalRefs(doc)) {
      const target = externalTarget(file, ref);
      if (target && 'problem' in target) problems.push(target.problem);
    }
    parts.push({ file, module, doc, refs: refsIn(doc) });
  }
  const rootPart = parts.find((p) => p.module === null);
  if (!rootPart) throw new Error(`${PARTS_DIR}: ${problems.length + 1} problem(s) in the WebSocket protocol's parts:\n  - ${[...problems, `${PARTS_DIR}/root.json: missing`].join('\n  - ')}`);

  const definedIn = new Map<string, Part>();
  const sections = new Map<string, Map<string, unknown>>(SECTIONS.map((s) => [s, new Map()]));
  const components = new Map<string, Map<string, unknown>>();
  const define = (part: Part, ref: string, where: string, into: Map<string, unknown>, name: string, value: unknown) => {
    const earlier = definedIn.get(ref);
    if (earlier) problems.push(`${part.file}: ${where} is already defined in ${earlier.file}`);
    else {
      definedIn.set(ref, part);
      into.set(name, value);
    }
  };
  for (const part of parts) {
    for (const section of SECTIONS) {
      for (const [name, value] of Object.entries(isObject(part.doc[section]) ? part.doc[section] : {})) define(part, `#/${section}/${name}`, `${section}.${name}`, sections.get(section)!, name, value);
    }
    for (const [kind, entries] of Object.entries(isObject(part.doc.components) ? part.doc.components : {})) {
      if (!components.has(kind)) components.set(kind, new Map());
      for (const [name, value] of Object.entries(isObject(entries) ? entries : {})) define(part, `#/components/${kind}/${name}`, `components.${kind}.${name}`, components.get(kind)!, name, value);
    }
  }

  const sorted = (map: Map<string, unknown>) => Object.fromEntries([...map].sort(([a], [b]) => byCodeUnit(a, b)));
  const merged: Json = {
    channels: Object.fromEntries(sections.get('channels')!),
    operations: Object.fromEntries(sections.get('operations')!),
    components: Object.fromEntries([...components].map(([kind, entries]) => [kind, sorted(entries)])),
  };
  const bundle: Json = {};
  for (const [key, value] of Object.entries(rootPart.doc)) bundle[key] = key in merged ? merged[key] : value;
  for (const [key, value] of Object.entries(merged)) if (!(key in bundle)) bundle[key] = value;

  // The REST resources frames carry, named by reference (or derived) from the OpenAPI document.
  linkResources({ bundle, openapi, sources: specSources(), fileOf: (ref) => definedIn.get(ref)?.file ?? PARTS_DIR, problems });

  // Every $ref resolves in the bundle; a module's components are named only from its own part, and by it.
  const namedFrom = new Map<string, Set<Part>>();
  for (const part of parts) {
    for (const ref of part.refs) {
      if (!ref.startsWith('#')) continue; // an OpenAPI schema: checked and copied in by linkResources
      if (resolve(bundle, ref) === undefined) problems.push(`${part.file}: $ref ${ref} names nothing in the bundled document`);
      const owner = /^#\/components\/[^/]+\/[^/]+/.exec(ref)?.[0];
      if (!owner) continue;
      if (!namedFrom.has(owner)) namedFrom.set(owner, new Set());
      namedFrom.get(owner)!.add(part);
    }
  }
  for (const [ref, owner] of definedIn) {
    if (owner.module === null || !ref.startsWith('#/components/')) continue;
    const users = [...(namedFrom.get(ref) ?? [])];
    const others = users.filter((p) => p !== owner);
    if (others.length) problems.push(`${owner.file}: ${ref} is also named from ${others.map((p) => p.file).join(', ')}; a component several parts name belongs in ${PARTS_DIR}/root.json`);
    if (!users.includes(owner)) problems.push(`${owner.file}: ${ref} is named by none of the part's channels or operations; remove it or move it to the part that uses it`);
  }

  if (problems.length) throw new Error(`${PARTS_DIR}: ${problems.length} problem(s) in the WebSocket protocol's parts:\n  - ${problems.join('\n  - ')}`);
  return bundle;
}
