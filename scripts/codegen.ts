/**
 * Builds everything in generated/, and the consumer-facing documents in spec/published/
 * (scripts/codegen/published.ts), from the hand-written specs in spec/ (OpenAPI, GraphQL SDL,
 * the WebSocket AsyncAPI, and the platforms' inbound AsyncAPI documents in spec/platforms/).
 *
 *   npm run codegen          write generated/, spec/published/ and test/contract/parity.generated.test.ts
 *   npm run codegen:check    build in memory and fail on any difference, missing gate or gate drift
 *
 * Owns: the spec checks (every operation and field gated, twins gated alike, every channel
 * pattern has a gate kind, every relayed channel a complete relay entry) and every generated
 * file. Must not read src/: generated code is a function of spec/ and codegen.yml alone, except
 * generated/tables.ts, a function of the modules' migrations (scripts/codegen/tables.ts imports
 * their migration lists and the database opener that runs them on an in-memory PGlite, never
 * src/app.ts or a module that could import generated/tables.ts itself), and the reference pages
 * in docs/reference/ (scripts/codegen/references.ts), which also read the config schema and
 * defaults, the error table and the metrics registry from their data modules, never src/app.ts.
 *
 * This file is the driver: one part per spec under scripts/codegen/ (openapi.ts, which bundles
 * spec/openapi/ with openapi-parts.ts; graphql.ts, which bundles spec/graphql/ with
 * graphql-parts.ts; ws.ts; platforms.ts, the platforms' inbound contracts in spec/platforms/), the gates they share (gates.ts), the
 * twins across them (parity.ts), the published documents (published.ts), the SDK
 * (codegen-sdk.ts) and the tables' columns (tables.ts). A new generated file is one line in build().
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { problems, root } from './codegen/common';
import { gatesModule } from './codegen/gates';
import { openapiDocumentModule, openapiTypes, readOpenapi, restModule } from './codegen/openapi';
import { graphqlSchemaModule, graphqlTypes, readGraphql } from './codegen/graphql';
import { readWs, wsDocumentModule, wsModules } from './codegen/ws';
import { platformModules, readPlatforms } from './codegen/platforms';
import { checkSpecAgreement, contractTests, parityModule } from './codegen/parity';
import { publishedDocuments, publishedOpenapi } from './codegen/published';
import { graphqlArgumentRulesModule } from './codegen/argument-rules';
import { tablesModule } from './codegen/tables';
import { REFERENCE_DIR, referenceFiles } from './codegen/references';
import { sdkFiles } from './codegen-sdk';

async function build(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const { openapi, routes } = readOpenapi();
  const { sdl, schema, gates } = readGraphql();
  // Frames name REST resources in the published OpenAPI document (scripts/codegen/ws-resources.ts);
  // an operation without a gate cannot be published, and is reported by the parity check below.
  let published: Record<string, unknown> = openapi;
  try {
    published = publishedOpenapi(openapi, new Map(routes.map((r) => [r.operationId, r.gate])));
  } catch {
    // the source document's components stand in
  }
  const ws = readWs(published);
  // The three specs failed their own checks: nothing would be written from them, so only the
  // twins' check (cheap) still runs, the slow generation steps (types, tables, SDK) are skipped,
  // and the problems are reported at once.
  if (problems.length) {
    parityModule(routes, gates, schema);
    return files;
  }

  files.set('generated/openapi.ts', await openapiTypes(openapi));
  files.set('generated/openapi-document.ts', openapiDocumentModule(openapi));
  files.set('generated/gates.ts', gatesModule);
  files.set('generated/rest.ts', restModule(routes));
  files.set('generated/graphql-schema.ts', graphqlSchemaModule(sdl, gates));
  files.set('generated/graphql.ts', await graphqlTypes(schema));
  const wsOut = wsModules(ws.doc);
  files.set('generated/ws.ts', wsOut.types);
  files.set('generated/ws-validators.js', wsOut.validators);
  files.set('generated/ws-validators.d.ts', wsOut.declarations);
  files.set('generated/ws-document.ts', wsDocumentModule(ws.doc));
  const platformsOut = platformModules(readPlatforms());
  files.set('generated/platforms.ts', platformsOut.table);
  files.set('generated/platform-validators.js', platformsOut.validators);
  files.set('generated/platform-validators.d.ts', platformsOut.declarations);
  files.set('generated/parity.ts', parityModule(routes, gates, schema));
  files.set('generated/graphql-argument-rules.ts', graphqlArgumentRulesModule(openapi, routes, schema));
  files.set('generated/tables.ts', await tablesModule());
  checkSpecAgreement(openapi, routes, schema, files.get('generated/tables.ts')!);
  files.set('test/contract/parity.generated.test.ts', contractTests(routes));
  // Published only from specs without problems (an operation that failed its checks has no gate),
  // and the SDK and references are built from the published documents: with problems, stop here.
  if (problems.length) return files;
  for (const [file, content] of publishedDocuments(openapi, new Map(routes.map((r) => [r.operationId, r.gate])), sdl, ws.text)) files.set(file, content);
  for (const [file, content] of await sdkFiles({ schema, files })) files.set(file, content);
  for (const [file, content] of await referenceFiles(openapi, ws.doc)) files.set(file, content);
  return files;
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const files = await build();
  if (problems.length) {
    console.error(`codegen: the specs have ${problems.length} problem(s):\n  - ${problems.join('\n  - ')}`);
    process.exit(1);
  }
  if (check) {
    const drift: string[] = [];
    for (const [file, content] of files) {
      const target = path.join(root, file);
      if (!existsSync(target)) drift.push(`${file} is missing`);
      else if (readFileSync(target, 'utf8') !== content) drift.push(`${file} differs from what spec/ produces`);
    }
    for (const dir of ['generated', 'spec/published', REFERENCE_DIR]) {
      const produced = new Set([...files.keys()].filter((f) => path.dirname(f) === dir).map((f) => path.basename(f)));
      for (const stale of existsSync(path.join(root, dir)) ? readdirSync(path.join(root, dir)) : []) {
        if (!produced.has(stale)) drift.push(`${dir}/${stale} is not produced by the specs`);
      }
    }
    if (drift.length) {
      console.error(`codegen:check: generated/, spec/published/ or docs/reference/ is out of date; run npm run codegen and commit.\n  - ${drift.join('\n  - ')}`);
      process.exit(1);
    }
    console.log(`codegen:check: ${files.size} generated files match spec/`);
    return;
  }
  for (const [file, content] of files) {
    const target = path.join(root, file);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
  console.log(`codegen: wrote ${files.size} files`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
