/**
 * The OpenAPI document's parts (spec/openapi/), bundled into the one document codegen checks,
 * serves and publishes:
 *
 *   spec/openapi/root.yaml               openapi, info, servers, tags (no paths, no components)
 *   spec/openapi/common.yaml             components several modules share (no paths)
 *   spec/openapi/modules/<module>.yaml   one per folder of src/modules/ with REST operations:
 *                                        its paths and the components only it uses
 *   spec/openapi/modules/<module>/*.yaml the same module's part as a folder of files when one file
 *                                        would be too long: each holds some of its paths and the
 *                                        components they use
 *
 * The module, not the file, is the unit of ownership: a component of a module's folder may be named
 * from any file of that folder (it is defined once, in one of them), never from another module.
 *
 * Every part names components as `#/components/<kind>/<name>` wherever they are defined. The bundle
 * is deterministic and does not depend on which part holds what: root's keys as written, then the
 * paths sorted by path, then each kind of component sorted by name (code-unit order).
 *
 * Refused: a part that does not parse, a path or component defined in two parts, a component of a
 * module's part named from another module (it belongs in common.yaml) or by none of the module's
 * files, a `$ref` to a component no part defines, a module file without paths, a module given both
 * as a file and as a folder, and any file under spec/openapi/ that is not one of the parts above (a
 * stray part would silently be left out).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { fail, readSpec, root } from './common';

export const PARTS_DIR = 'spec/openapi';
/** Component kinds in the order the bundle writes them. */
const KINDS = ['parameters', 'responses', 'schemas', 'requestBodies', 'headers', 'examples', 'securitySchemes', 'links', 'callbacks'];
const ROOT_KEYS = ['openapi', 'info', 'servers', 'tags', 'security', 'externalDocs'];

type Json = Record<string, unknown>;
interface Part {
  file: string;
  /** The module a modules/ part belongs to; null for common.yaml. */
  module: string | null;
  paths: Record<string, unknown>;
  components: Record<string, Record<string, unknown>>;
  /** Every `$ref` the part writes. */
  refs: Set<string>;
}

/**
 * An unquoted comma in a YAML flow mapping (`{ description: a, b }`) silently makes a key `b`
 * with no value, which the OpenAPI validator refuses only when the service starts. In an OpenAPI
 * document only `default`, `example` and vendor extensions may be null, so any other null is that
 * mistake.
 */
function checkFlowCommas(node: unknown, where: string): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => checkFlowCommas(item, `${where}[${i}]`));
    return;
  }
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if (value === null && !['default', 'example'].includes(key) && !key.startsWith('x-')) fail(`${where}: key "${key}" has no value (an unquoted comma in a flow mapping? quote the text before it)`);
    checkFlowCommas(value, `${where}/${key}`);
  }
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function refsIn(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((item) => refsIn(item, found));
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.add(value);
      else refsIn(value, found);
    }
  }
  return found;
}

function readPart(file: string): Json | null {
  try {
    const parsed = parseYaml(readSpec(file)) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      fail(`${file}: not a YAML mapping`);
      return null;
    }
    checkFlowCommas(parsed, file);
    return parsed as Json;
  } catch (error) {
    fail(`${file}: ${(error as Error).message.split('\n')[0]}`);
    return null;
  }
}

function toPart(file: string, module: string | null, doc: Json): Part {
  for (const key of Object.keys(doc)) if (key !== 'paths' && key !== 'components') fail(`${file}: ${key} belongs in ${PARTS_DIR}/root.yaml; a part holds only paths and components`);
  const components = (doc.components ?? {}) as Record<string, Record<string, unknown>>;
  for (const kind of Object.keys(components)) if (!KINDS.includes(kind)) fail(`${file}: components.${kind} is not an OpenAPI component kind`);
  return { file, module, paths: (doc.paths ?? {}) as Record<string, unknown>, components, refs: refsIn(doc) };
}

/** Files under spec/openapi/ that are not parts, relative to the repository. */
function strays(): string[] {
  const found: string[] = [];
  const dir = path.join(root, PARTS_DIR);
  for (const entry of readdirSync(dir).sort()) {
    if (entry === 'root.yaml' || entry === 'common.yaml') continue;
    if (entry === 'modules' && statSync(path.join(dir, entry)).isDirectory()) continue;
    found.push(`${PARTS_DIR}/${entry}`);
  }
  return found;
}

const PART_NAME = /^[a-z][a-z0-9-]*\.yaml$/;
const MODULE_NAME = /^[a-z][a-z0-9-]*$/;

/** The files of the modules' parts, as [module, file relative to the repository], in a stable order. */
function moduleFiles(): Array<[string, string]> {
  const dir = path.join(root, PARTS_DIR, 'modules');
  const found: Array<[string, string]> = [];
  for (const entry of existsSync(dir) ? readdirSync(dir).sort() : []) {
    const where = `${PARTS_DIR}/modules/${entry}`;
    const isDir = statSync(path.join(dir, entry)).isDirectory();
    if (!isDir && PART_NAME.test(entry)) {
      found.push([entry.replace(/\.yaml$/, ''), where]);
      continue;
    }
    if (!isDir || !MODULE_NAME.test(entry)) {
      fail(`${where}: not a part of the OpenAPI document (modules/<module>.yaml or modules/<module>/*.yaml, named after its folder of src/modules/)`);
      continue;
    }
    if (existsSync(path.join(dir, `${entry}.yaml`))) fail(`${where}/: the ${entry} module is also given as ${where}.yaml; keep one form`);
    const files = readdirSync(path.join(dir, entry)).sort();
    for (const file of files) {
      if (PART_NAME.test(file) && statSync(path.join(dir, entry, file)).isFile()) found.push([entry, `${where}/${file}`]);
      else fail(`${where}/${file}: not a part of the OpenAPI document (modules/${entry}/<name>.yaml)`);
    }
    if (files.length === 0) fail(`${where}/: an empty folder; a module's folder holds its part as .yaml files`);
  }
  return found;
}

/** Reads and checks the parts and returns the one OpenAPI document they make. */
export function bundleOpenapi(): Json & { paths: Record<string, Record<string, Record<string, unknown>>> } {
  for (const stray of strays()) fail(`${stray}: not a part of the OpenAPI document (root.yaml, common.yaml, modules/<module>.yaml or modules/<module>/*.yaml); move or remove it`);

  const rootFile = `${PARTS_DIR}/root.yaml`;
  const rootDoc = readPart(rootFile) ?? {};
  for (const key of Object.keys(rootDoc)) if (!ROOT_KEYS.includes(key) && !key.startsWith('x-')) fail(`${rootFile}: ${key} does not belong in the root (paths go in the modules' parts, shared components in common.yaml)`);

  const parts: Part[] = [];
  const common = readPart(`${PARTS_DIR}/common.yaml`);
  if (common) {
    if (common.paths !== undefined) fail(`${PARTS_DIR}/common.yaml: paths belong in the modules' parts`);
    parts.push(toPart(`${PARTS_DIR}/common.yaml`, null, { components: common.components }));
  }
  for (const [module, file] of moduleFiles()) {
    const doc = readPart(file);
    if (!doc) continue;
    const part = toPart(file, module, doc);
    if (Object.keys(part.paths).length === 0) fail(`${file}: declares no path; a module's part holds its REST operations (shared components go in common.yaml)`);
    parts.push(part);
  }

  const paths = new Map<string, unknown>();
  const pathFile = new Map<string, string>();
  const components = new Map<string, Map<string, unknown>>();
  const componentPart = new Map<string, Part>();
  for (const part of parts) {
    for (const [p, item] of Object.entries(part.paths)) {
      const earlier = pathFile.get(p);
      if (earlier) fail(`${part.file}: path ${p} is already defined in ${earlier}`);
      else {
        paths.set(p, item);
        pathFile.set(p, part.file);
      }
    }
    for (const [kind, entries] of Object.entries(part.components)) {
      for (const [name, value] of Object.entries(entries ?? {})) {
        const ref = `#/components/${kind}/${name}`;
        const earlier = componentPart.get(ref);
        if (earlier) fail(`${part.file}: component ${kind}.${name} is already defined in ${earlier.file}`);
        else {
          if (!components.has(kind)) components.set(kind, new Map());
          components.get(kind)!.set(name, value);
          componentPart.set(ref, part);
        }
      }
    }
  }

  // Where each component is named from: a module's own components are named only from that module's files.
  const namedFrom = new Map<string, Set<Part>>();
  for (const part of [{ file: rootFile, refs: refsIn(rootDoc) } as Part, ...parts]) {
    for (const ref of part.refs) {
      if (!ref.startsWith('#/components/')) {
        fail(`${part.file}: $ref ${ref} is not #/components/<kind>/<name> (parts name each other's components as the bundled document does)`);
        continue;
      }
      if (!componentPart.has(ref)) fail(`${part.file}: $ref ${ref} names no component of any part`);
      if (!namedFrom.has(ref)) namedFrom.set(ref, new Set());
      namedFrom.get(ref)!.add(part);
    }
  }
  for (const [ref, owner] of componentPart) {
    if (owner.module === null) continue;
    const users = [...(namedFrom.get(ref) ?? [])];
    const others = users.filter((p) => p.module !== owner.module);
    if (others.length) fail(`${owner.file}: ${ref} is also named from ${others.map((p) => p.file).join(', ')}; a component several modules use belongs in ${PARTS_DIR}/common.yaml`);
    if (!users.some((p) => p.module === owner.module)) fail(`${owner.file}: ${ref} is named by none of the module's operations; remove it or move it to the part that uses it`);
  }

  const sorted = <T>(map: Map<string, T>) => Object.fromEntries([...map].sort(([a], [b]) => byCodeUnit(a, b)));
  const bundledComponents: Record<string, unknown> = {};
  for (const kind of KINDS) if (components.has(kind)) bundledComponents[kind] = sorted(components.get(kind)!);
  return {
    ...rootDoc,
    paths: sorted(paths) as Record<string, Record<string, Record<string, unknown>>>,
    components: bundledComponents,
  };
}
