/**
 * The GraphQL schema's parts (spec/graphql/), bundled into the one SDL codegen checks, serves and
 * publishes (spec/published/schema.graphql):
 *
 *   spec/graphql/root.graphql               the @gate directive, the scalars, and `type Query` and
 *                                           `type Mutation` without fields (the modules give them)
 *   spec/graphql/common.graphql             types several modules' parts name
 *   spec/graphql/modules/<module>.graphql   one per folder of src/modules/ with GraphQL resolvers:
 *                                           its `extend type Query` / `extend type Mutation`
 *                                           fields and the types only it names
 *
 * The bundle is text, not a reprint: each part's text as written (descriptions, `@gate`s and
 * comments kept), root first, then common, then the modules sorted by name (code-unit order). The
 * roots are one `type Query { ... }` and one `type Mutation { ... }` where root.graphql declares
 * them, holding every module's extension fields in that order; no `extend` is left in the bundle.
 *
 * Refused, all at once and before anything is built: a part that does not parse; a type, directive
 * or root field defined in two parts; an `extend` of anything but Query or Mutation, or one in
 * root or common; Query or Mutation given fields or directives in root, or defined outside it; a
 * module's type named from another part (it belongs in common.graphql) or by none of its own
 * module's definitions; and any file under spec/graphql/ that is not one of the parts above (a
 * stray part would silently be left out).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Kind, parse, TokenKind, visit, type DefinitionNode, type DocumentNode, type Token } from 'graphql';
import { readSpec, root } from './common';

export const PARTS_DIR = 'spec/graphql';
const ROOTS = ['Query', 'Mutation'] as const;
type RootName = (typeof ROOTS)[number];
const MODULE_PART = /^[a-z][a-z0-9-]*\.graphql$/;

interface Part {
  file: string;
  /** The module of a modules/ part; null for root and common. */
  module: string | null;
  text: string;
  doc: DocumentNode;
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const nameOf = (d: DefinitionNode): string | null => ('name' in d && d.name ? d.name.value : null);

/** The part files in bundle order, each as [module or null, path relative to the repository]. */
function partFiles(problems: string[]): Array<[string | null, string]> {
  const files: Array<[string | null, string]> = [];
  const dir = path.join(root, PARTS_DIR);
  for (const entry of readdirSync(dir).sort(byCodeUnit)) {
    if (entry === 'root.graphql' || entry === 'common.graphql' || (entry === 'modules' && statSync(path.join(dir, entry)).isDirectory())) continue;
    problems.push(`${PARTS_DIR}/${entry}: not a part of the GraphQL schema (root.graphql, common.graphql or modules/<module>.graphql); move or remove it`);
  }
  files.push([null, `${PARTS_DIR}/root.graphql`]);
  if (existsSync(path.join(dir, 'common.graphql'))) files.push([null, `${PARTS_DIR}/common.graphql`]);
  const modules = path.join(dir, 'modules');
  for (const entry of existsSync(modules) ? readdirSync(modules).sort(byCodeUnit) : []) {
    const where = `${PARTS_DIR}/modules/${entry}`;
    if (MODULE_PART.test(entry) && statSync(path.join(modules, entry)).isFile()) files.push([entry.replace(/\.graphql$/, ''), where]);
    else problems.push(`${where}: not a part of the GraphQL schema (modules/<module>.graphql, named after its folder of src/modules/)`);
  }
  return files;
}

/** The text between the braces of a definition's field list (comments included), or null when it has none. */
function fieldsText(text: string, start: Token, end: Token): string | null {
  for (let token: Token | null = start; token && token !== end; token = token.next) {
    if (token.kind === TokenKind.BRACE_L) return text.slice(token.end, end.start).replace(/^[^\S\n]*\n/, '').trimEnd();
  }
  return null;
}

/** Every type name a node names (field types, arguments, interfaces, union members). */
function namedTypes(node: DefinitionNode): Set<string> {
  const names = new Set<string>();
  visit(node, { NamedType: (n) => void names.add(n.name.value) });
  return names;
}

/** Reads and checks the parts and returns the one SDL they make; throws with every problem found. */
export function bundleGraphql(): string {
  const problems: string[] = [];
  const parts: Part[] = [];
  for (const [module, file] of partFiles(problems)) {
    const text = readSpec(file);
    try {
      parts.push({ file, module, text, doc: parse(text) });
    } catch (error) {
      problems.push(`${file}: ${(error as Error).message.split('\n')[0]}`);
    }
  }

  const definedIn = new Map<string, Part>();
  const fieldIn = new Map<string, Part>();
  const extensions = new Map<RootName, Array<{ part: Part; body: string }>>(ROOTS.map((r) => [r, []]));
  /** The text ranges of each part left out of the bundle (its extensions), and the field-less root declarations the modules' fields fill. */
  const cuts = new Map<Part, Array<{ start: number; end: number; replace: string }>>();
  for (const part of parts) {
    cuts.set(part, []);
    for (const d of part.doc.definitions) {
      const name = nameOf(d);
      const isRoot = (ROOTS as readonly string[]).includes(name ?? '');
      if (d.kind === Kind.OBJECT_TYPE_EXTENSION && isRoot) {
        if (part.module === null) problems.push(`${part.file}: extend type ${name} belongs in a module's part`);
        else if (extensions.get(name as RootName)!.some((e) => e.part === part)) problems.push(`${part.file}: extends ${name} twice; give its fields in one extension`);
        if (d.directives?.length || d.interfaces?.length) problems.push(`${part.file}: extend type ${name} may only add fields`);
        for (const field of d.fields ?? []) {
          const key = `${name}.${field.name.value}`;
          const earlier = fieldIn.get(key);
          if (earlier) problems.push(`${part.file}: ${key} is already defined in ${earlier.file}`);
          else fieldIn.set(key, part);
        }
        extensions.get(name as RootName)!.push({ part, body: fieldsText(part.text, d.loc!.startToken, d.loc!.endToken) ?? '' });
        cuts.get(part)!.push({ start: d.loc!.start, end: d.loc!.end, replace: '' });
        continue;
      }
      if (d.kind === Kind.SCHEMA_DEFINITION || /Extension$/.test(d.kind)) {
        problems.push(`${part.file}: ${d.kind}${name ? ` ${name}` : ''} is not allowed; a part defines types, and modules extend only Query and Mutation`);
        continue;
      }
      if (d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION) {
        problems.push(`${part.file}: an executable ${d.kind} has no place in the schema`);
        continue;
      }
      if (isRoot) {
        if (part.file !== `${PARTS_DIR}/root.graphql`) problems.push(`${part.file}: type ${name} is declared in ${PARTS_DIR}/root.graphql; use extend type ${name}`);
        else if (d.kind !== Kind.OBJECT_TYPE_DEFINITION || d.fields?.length || d.directives?.length || d.interfaces?.length) {
          problems.push(`${part.file}: type ${name} is declared without fields or directives (\`type ${name}\`); its fields come from the modules' parts`);
        } else cuts.get(part)!.push({ start: d.name.loc!.end, end: d.loc!.end, replace: `\0${name}` });
      }
      if (d.kind === Kind.DIRECTIVE_DEFINITION && part.file !== `${PARTS_DIR}/root.graphql`) problems.push(`${part.file}: directive @${name} belongs in ${PARTS_DIR}/root.graphql`);
      const key = d.kind === Kind.DIRECTIVE_DEFINITION ? `@${name}` : name!;
      const earlier = definedIn.get(key);
      if (earlier) problems.push(`${part.file}: ${key} is already defined in ${earlier.file}`);
      else definedIn.set(key, part);
    }
  }
  for (const name of ROOTS) if (definedIn.get(name)?.file !== `${PARTS_DIR}/root.graphql`) problems.push(`${PARTS_DIR}/root.graphql: must declare \`type ${name}\``);

  // A module's own types are named only from that module's part, and by it.
  const namedFrom = new Map<string, Set<Part>>();
  for (const part of parts) {
    for (const d of part.doc.definitions) {
      for (const used of namedTypes(d)) {
        if (used === nameOf(d)) continue;
        if (!namedFrom.has(used)) namedFrom.set(used, new Set());
        namedFrom.get(used)!.add(part);
      }
    }
  }
  for (const [name, owner] of definedIn) {
    if (owner.module === null || name.startsWith('@')) continue;
    const users = [...(namedFrom.get(name) ?? [])];
    const others = users.filter((p) => p !== owner);
    if (others.length) problems.push(`${owner.file}: ${name} is also named from ${others.map((p) => p.file).join(', ')}; a type several modules use belongs in ${PARTS_DIR}/common.graphql`);
    if (!users.includes(owner)) problems.push(`${owner.file}: ${name} is named by none of the module's fields or types; remove it or move it to the part that uses it`);
  }

  if (problems.length) throw new Error(`${PARTS_DIR}: ${problems.length} problem(s) in the GraphQL schema's parts:\n  - ${problems.join('\n  - ')}`);

  const rootFields = (name: RootName) =>
    ` {\n${extensions
      .get(name)!
      .map((e) => `  # ${e.part.file}\n${e.body}`)
      .join('\n')}\n}`;
  const pieces = parts.map((part) => {
    let text = part.text;
    for (const cut of [...cuts.get(part)!].sort((a, b) => b.start - a.start)) {
      const replace = cut.replace.startsWith('\0') ? rootFields(cut.replace.slice(1) as RootName) : cut.replace;
      text = text.slice(0, cut.start) + replace + text.slice(cut.end);
    }
    return `# --- ${part.file} ---\n${text.replace(/\n{3,}/g, '\n\n').trim()}\n`;
  });
  return pieces.join('\n');
}
