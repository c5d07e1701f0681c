/**
 * REST resources in WebSocket frames: one copy of each entity. A frame that carries a resource the
 * REST API answers (an overlay, a widget, a stored event, a notification, an install's bundle...)
 * names the OpenAPI schema instead of restating it, so a change to the resource changes the frame
 * (and `npm run spec:diff` reports a removed field as a break of the frame too).
 *
 * In a part of spec/ws-protocol/, two forms (the reference is a relative URI of the published
 * OpenAPI document, which AsyncAPI tooling resolves from the part's folder):
 *
 *   the resource as it is:  { "$ref": "../../published/openapi.json#/components/schemas/Overlay" }
 *   a declared derivation:  { "x-derived-from": {
 *                               "resource": "../../published/openapi.json#/components/schemas/Idea",
 *                               "omit":     { "timeline": "<why the frame leaves it out>" },
 *                               "override": { "my_vote": { "reason": "<why>", "schema": { "type": "null" } } },
 *                               "add":      { "install_id": { "reason": "<why>", "schema": {...}, "required": true } } } }
 *
 * The bundled document (spec/published/asyncapi.json) is self-contained: each referenced OpenAPI
 * schema, and every schema it names, is copied once into `components.schemas` under its OpenAPI
 * name, written as AsyncAPI's JSON Schema (`nullable` becomes a `null` type, OpenAPI-only keywords
 * and vendor extensions are left out), and the references point at the copy; a derivation is
 * written out as the schema it makes, with `x-derived-from` saying what it was made from.
 *
 * Refused, with the file and the field to edit: a reference into any other document or to a schema
 * the OpenAPI document does not have, a derivation that omits, overrides or adds a field the
 * resource does not have (or already has), a reason shorter than 12 characters, a frame schema
 * named like an OpenAPI schema a frame references, and a frame schema that is a hand-written copy
 * of an OpenAPI schema: the same fields, or the same fields but one (a copy that drifted).
 */
import path from 'node:path';
import type { SpecSources } from './spec-sources';

type Json = Record<string, unknown>;

const PUBLISHED_OPENAPI = 'spec/published/openapi.json';
const EXTERNAL = /^([^#]+)#\/components\/schemas\/([^/]+)$/;
const DERIVED = 'x-derived-from';
/** Keywords an OpenAPI 3.0 schema may hold that AsyncAPI's JSON Schema has not (or means otherwise). */
const OPENAPI_ONLY = new Set(['nullable', 'example', 'xml', 'externalDocs', 'discriminator']);
/** A hand-written frame schema with at least this many fields is compared with the OpenAPI schemas. */
const COPY_MIN_FIELDS = 3;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The OpenAPI schema an external reference of `file` names, or a problem. */
export function externalTarget(file: string, ref: string): { name: string } | { problem: string } | null {
  if (ref.startsWith('#')) return null;
  const m = EXTERNAL.exec(ref);
  const target = m ? path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)) : null;
  if (!m || target !== PUBLISHED_OPENAPI) {
    const up = path.posix.relative(path.posix.dirname(file), PUBLISHED_OPENAPI);
    return { problem: `${file}: $ref ${ref}: a frame names a REST resource as ${up}#/components/schemas/<Name> (the published OpenAPI document, relative to this part)` };
  }
  return { name: m[2]! };
}

/** Every external reference a part writes (`$ref`s and derivations' resources), with where it is. */
export function externalRefs(node: unknown, at = ''): Array<{ ref: string; at: string }> {
  const found: Array<{ ref: string; at: string }> = [];
  const visit = (n: unknown, where: string) => {
    if (Array.isArray(n)) n.forEach((item, i) => visit(item, `${where}/${i}`));
    else if (isObject(n)) {
      for (const [key, value] of Object.entries(n)) {
        if (key === '$ref' && typeof value === 'string' && !value.startsWith('#')) found.push({ ref: value, at: where });
        else if (key === DERIVED && isObject(value) && typeof value.resource === 'string') found.push({ ref: value.resource, at: `${where}/${DERIVED}` });
        else visit(value, `${where}/${key}`);
      }
    }
  };
  visit(node, at);
  return found;
}

/** An OpenAPI 3.0 schema as AsyncAPI's JSON Schema: `nullable` as a `null` type, OpenAPI-only keywords and vendor extensions left out. */
export function asJsonSchema(schema: unknown, where: string, problems: string[]): unknown {
  if (Array.isArray(schema)) return schema.map((item) => asJsonSchema(item, where, problems));
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'discriminator') problems.push(`${where}: discriminator has no AsyncAPI equivalent; a frame cannot carry this schema as it is`);
    if (OPENAPI_ONLY.has(key) || key.startsWith('x-')) continue;
    if (key === 'properties' && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, asJsonSchema(s, `${where}.${name}`, problems)]));
    else if (['items', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf'].includes(key)) out[key] = asJsonSchema(value, where, problems);
    else out[key] = value;
  }
  if (schema.nullable !== true) return out;
  if (typeof out.type === 'string') {
    out.type = [out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  return { anyOf: [out, { type: 'null' }] };
}

interface Context {
  bundle: Json;
  openapi: Json;
  sources: SpecSources;
  /** The part file that defines a bundled `#/components/<kind>/<name>`. */
  fileOf: (ref: string) => string;
  problems: string[];
}

const openapiSchemas = (openapi: Json) => ((openapi.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;

/** The reasons of a derivation's list are at least 12 characters, and its names fit the resource. */
function derive(ctx: Context, file: string, name: string, schema: Json): Json | null {
  const where = `${file}: components.schemas.${name}.${DERIVED}`;
  const spec = schema[DERIVED] as Json;
  const target = typeof spec.resource === 'string' ? externalTarget(file, spec.resource) : null;
  if (!target || 'problem' in target) return null; // reported with the part's references
  const resource = openapiSchemas(ctx.openapi)[target.name];
  if (!resource) return null;
  const resourceFile = ctx.sources.schemaFile(target.name);
  const made = asJsonSchema(structuredClone(resource), `${resourceFile}: components.schemas.${target.name}`, ctx.problems) as Json;
  const properties = { ...((made.properties as Json | undefined) ?? {}) };
  let required = [...((made.required as string[] | undefined) ?? [])];
  const reason = (entry: unknown) => (isObject(entry) ? entry.reason : entry);
  const lists = { omit: spec.omit ?? {}, override: spec.override ?? {}, add: spec.add ?? {} } as Record<string, unknown>;
  for (const key of Object.keys(spec)) if (!['resource', 'omit', 'override', 'add'].includes(key)) ctx.problems.push(`${where}: unknown member ${key} (resource, omit, override, add)`);
  for (const [list, entries] of Object.entries(lists)) {
    if (!isObject(entries)) {
      ctx.problems.push(`${where}.${list}: must be an object of field: ${list === 'omit' ? 'reason' : '{ reason, schema }'}`);
      continue;
    }
    for (const [field, entry] of Object.entries(entries)) {
      const why = reason(entry);
      if (typeof why !== 'string' || why.trim().length < 12) ctx.problems.push(`${where}.${list}.${field}: needs a reason (at least 12 characters)`);
      const has = Object.hasOwn(properties, field);
      if (list !== 'add' && !has) ctx.problems.push(`${where}.${list}.${field}: OpenAPI ${target.name} (${resourceFile}) has no field ${field}; remove it from ${list}`);
      if (list === 'add' && has) ctx.problems.push(`${where}.add.${field}: OpenAPI ${target.name} (${resourceFile}) has ${field} already; use override, or nothing`);
      if (list === 'omit') {
        delete properties[field];
        required = required.filter((r) => r !== field);
        continue;
      }
      if (!isObject(entry) || !isObject(entry.schema)) {
        ctx.problems.push(`${where}.${list}.${field}: needs a schema`);
        continue;
      }
      properties[field] = entry.schema;
      if (list === 'add' && entry.required === true) required.push(field);
    }
  }
  const { [DERIVED]: _spec, ...own } = schema;
  const { required: _required, ...rest } = made;
  return {
    ...rest,
    ...own,
    properties,
    ...(required.length ? { required } : {}),
    [DERIVED]: {
      resource: `openapi.json#/components/schemas/${target.name}`,
      ...Object.fromEntries(Object.entries(lists).filter(([, v]) => isObject(v) && Object.keys(v).length).map(([k, v]) => [k, Object.keys(v as Json)])),
    },
  };
}

/** Points every external reference at the bundle's copy of its schema; answers the names referenced. */
function localise(node: unknown, names: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((item) => localise(item, names));
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    const m = key === '$ref' && typeof value === 'string' && !value.startsWith('#') ? EXTERNAL.exec(value) : null;
    if (m) {
      names.add(m[2]!);
      out[key] = `#/components/schemas/${m[2]}`;
    } else out[key] = key === DERIVED ? value : localise(value, names);
  }
  return out;
}

/**
 * Writes the derivations out, copies the referenced OpenAPI schemas in (with every schema they
 * name) and refuses hand-written copies of them; changes `bundle` in place.
 */
export function linkResources(ctx: Context): void {
  const components = (ctx.bundle.components ??= {}) as Json;
  const written = (components.schemas ??= {}) as Record<string, Json>;
  const own = new Set(Object.keys(written));
  const referenced = new Set<string>();
  for (const [name, schema] of Object.entries(written)) {
    if (!isObject(schema[DERIVED])) continue;
    const made = derive(ctx, ctx.fileOf(`#/components/schemas/${name}`), name, schema);
    if (!made) continue;
    written[name] = made;
    // What the resource names comes with it (the OpenAPI document's own references).
    for (const ref of JSON.stringify(made).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) referenced.add(ref[1]!);
  }
  for (const key of ['channels', 'operations']) if (key in ctx.bundle) ctx.bundle[key] = localise(ctx.bundle[key], referenced);
  for (const [kind, entries] of Object.entries(components)) components[kind] = localise(entries, referenced);
  const schemas = components.schemas as Record<string, Json>;
  // The referenced schemas and what they name, from the OpenAPI document, under their OpenAPI names.
  const resources = openapiSchemas(ctx.openapi);
  const queue = [...referenced];
  const imported = new Set<string>();
  while (queue.length) {
    const name = queue.shift()!;
    if (imported.has(name)) continue;
    imported.add(name);
    const source = resources[name];
    if (!source) {
      ctx.problems.push(`spec/ws-protocol/: a frame references OpenAPI ${name}, which the OpenAPI document does not define`);
      continue;
    }
    if (own.has(name)) {
      ctx.problems.push(`${ctx.fileOf(`#/components/schemas/${name}`)}: components.schemas.${name} has the name of the OpenAPI schema a frame references; rename it`);
      continue;
    }
    const converted = asJsonSchema(structuredClone(source), `${ctx.sources.schemaFile(name)}: components.schemas.${name}`, ctx.problems) as Json;
    for (const ref of JSON.stringify(converted).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) queue.push(ref[1]!);
    schemas[name] = converted;
  }
  components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  refuseCopies(ctx, own);
}

/** A hand-written frame schema (a component, or a message's inline `data`) that restates an OpenAPI schema. */
function refuseCopies(ctx: Context, own: Set<string>): void {
  const components = ctx.bundle.components as { schemas: Record<string, Json>; messages?: Record<string, { payload?: Json }> };
  const candidates: Array<{ where: string; schema: Json }> = [];
  for (const name of own) {
    const schema = components.schemas[name]!;
    if (!isObject(schema[DERIVED])) candidates.push({ where: `${ctx.fileOf(`#/components/schemas/${name}`)}: components.schemas.${name}`, schema });
  }
  for (const [name, message] of Object.entries(components.messages ?? {})) {
    const data = (message.payload?.properties as Json | undefined)?.data;
    if (isObject(data) && !data.$ref) candidates.push({ where: `${ctx.fileOf(`#/components/messages/${name}`)}: components.messages.${name}.payload.properties.data`, schema: data });
  }
  const resources = Object.entries(openapiSchemas(ctx.openapi));
  for (const { where, schema } of candidates) {
    const fields = Object.keys((schema.properties as Json | undefined) ?? {});
    if (fields.length < COPY_MIN_FIELDS) continue;
    const matches = resources.flatMap(([name, resource]) => {
      const theirs = Object.keys((resource.properties as Json | undefined) ?? {});
      const lacks = theirs.filter((f) => !fields.includes(f));
      const extra = fields.filter((f) => !theirs.includes(f));
      const common = fields.length - extra.length;
      return common >= COPY_MIN_FIELDS && lacks.length + extra.length <= 1 ? [{ name, lacks, extra }] : [];
    });
    // The resource it copies exactly, else the one it drifted from.
    const exact = matches.filter((m) => m.lacks.length + m.extra.length === 0);
    for (const { name, lacks, extra } of exact.length ? exact : matches) {
      const ref = `${path.posix.relative(path.posix.dirname(where.slice(0, where.indexOf(':'))), PUBLISHED_OPENAPI)}#/components/schemas/${name}`;
      const drift = [...lacks.map((f) => `lacks ${f}`), ...extra.map((f) => `has ${f}, which it does not`)].join(', ');
      ctx.problems.push(
        `${where}: a copy of OpenAPI ${name} (${ctx.sources.schemaFile(name)})${drift ? ` that drifted from it (${drift})` : ''}; replace it with { "$ref": "${ref}" }, or declare how the frame differs with ${DERIVED}`,
      );
    }
  }
}
