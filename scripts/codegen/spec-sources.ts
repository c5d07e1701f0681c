/**
 * Which hand-written file of spec/ holds a definition, so a check on the bundled documents can
 * name the file to edit: the part of spec/openapi/ that defines a component schema or a path, and
 * the part of spec/graphql/ a GraphQL type or root field was written in (the bundle marks each part
 * with a `# --- <file> ---` line, scripts/codegen/graphql-parts.ts).
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { ASTNode } from 'graphql';
import { parse as parseYaml } from 'yaml';
import { readSpec, root } from './common';

export interface SpecSources {
  /** The spec/openapi/ part defining `#/components/schemas/<name>`. */
  schemaFile(name: string): string;
  /** The spec/openapi/ part defining a path (as written in the part, or with the server's base before it). */
  pathFile(apiPath: string): string;
  /** The spec/graphql/ part a definition of the bundled SDL was written in. */
  graphqlFile(node: ASTNode | null | undefined): string;
}

export function specSources(): SpecSources {
  const schemas = new Map<string, string>();
  const paths = new Map<string, string>();
  const dir = path.join(root, 'spec/openapi');
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => `spec/openapi/${f.split(path.sep).join('/')}`);
  for (const file of files) {
    let doc: { paths?: Record<string, unknown>; components?: { schemas?: Record<string, unknown> } } | null;
    try {
      doc = parseYaml(readSpec(file)) as typeof doc;
    } catch {
      continue; // openapi-parts.ts reports a part that does not parse
    }
    for (const name of Object.keys(doc?.components?.schemas ?? {})) schemas.set(name, file);
    for (const p of Object.keys(doc?.paths ?? {})) paths.set(p, file);
  }
  return {
    schemaFile: (name) => schemas.get(name) ?? 'spec/openapi/',
    // A route's path carries the server's base (`/v1/overlays`); the parts write it without.
    pathFile: (apiPath) => paths.get(apiPath) ?? paths.get(apiPath.replace(/^\/[^/]+/, '')) ?? 'spec/openapi/',
    graphqlFile(node) {
      const loc = node?.loc;
      if (!loc) return 'spec/graphql/';
      // The last part marker before the node: `# --- <file> ---` opens a part, and `  # <file>`
      // opens a module's root fields inside root.graphql's `type Query` / `type Mutation`.
      const before = loc.source.body.slice(0, loc.start);
      const markers = [...before.matchAll(/^(?:# --- (\S+\.graphql) ---| {2}# (spec\/graphql\/\S+\.graphql))$/gm)];
      const last = markers[markers.length - 1];
      return last?.[1] ?? last?.[2] ?? 'spec/graphql/';
    },
  };
}
