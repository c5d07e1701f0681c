/**
 * Boundary cases of `multipart/form-data` request bodies, read from spec/openapi/ (through
 * generated/openapi-document.ts) as test/contract/boundaries.ts reads JSON bodies and parameters:
 * for every operation whose body is a form, one valid base form (its required parts; a binary part
 * is a small real WAV with a file name) and forms that change one part: a text field's boundary
 * values (the same variants as a query value, since a form field is a string on the wire: lengths
 * at minLength-1, minLength, maxLength, maxLength+1, pattern, enum members and a non-member), a
 * field the schema does not declare when it declares `additionalProperties: false`, a required
 * binary part left out, and the same part sent as a browser sends a file input left empty (an
 * empty file name and no bytes: no file). A refusal the spec words (`x-error-message`) carries those words. Each case has its
 * GraphQL form where the operation has a twin: the multipart request convention, the text fields
 * as arguments and the files as `Upload` variables.
 */
import { buildSchema, type GraphQLArgument } from 'graphql';
import { typeDefs } from '../../generated/graphql-schema';
import { routes, type RouteSpec } from '../../generated/rest';
import { camelName } from '../../src/infra/names';
import { wav } from '../fixtures/audio/make';
import { operationOf, variantsOf, type Variant } from './boundaries';
import { deref } from './harness';

type Schema = Record<string, unknown>;

/** One part of a form: a text field, or a file with its file name. */
export type FormPart = { field: string; value: string } | { field: string; file: Buffer; filename: string; type: string };

export interface MultipartCase {
  expect: 'accept' | 'refuse';
  /** What changed, e.g. `form.name: length 101 (minLength 1, maxLength 100)`. */
  what: string;
  parts: FormPart[];
  /** The words the spec gives the refusal (`x-error-message`), when it gives some. */
  message?: string;
  /** Why the case has no GraphQL form, when it has none. */
  noGraphql?: string;
}

export interface MultipartOperation {
  route: RouteSpec;
  cases: MultipartCase[];
}

/** A small valid WAV: the binary part of every form that must get past its file. */
const SMALL_WAV = wav(50);
const UNDECLARED = 'undeclared_field';

/** The `multipart/form-data` schema of an operation's request body, if it has one. */
function formSchemaOf(route: RouteSpec): Schema | undefined {
  const content = (deref(operationOf(route).requestBody)?.content ?? {}) as Record<string, Schema>;
  const node = content['multipart/form-data']?.schema;
  return node ? deref(node) : undefined;
}

const isBinary = (node: unknown) => deref(node)?.format === 'binary';

/** The schema keyword a variant tests, to pick its message from an `x-error-message` map. */
function keywordOf(what: string, value: unknown, schema: Schema): string | undefined {
  if (what.startsWith('not an enum member')) return 'enum';
  if (what.startsWith('breaks ')) return 'pattern';
  if (what.startsWith('not format ')) return 'format';
  if (what.startsWith('length ')) {
    const length = [...String(value)].length;
    return schema.minLength !== undefined && length < Number(schema.minLength) ? 'minLength' : 'maxLength';
  }
  if (what.startsWith('below minimum')) return 'minimum';
  if (what.startsWith('above maximum')) return 'maximum';
  return undefined;
}

/**
 * The words `x-error-message` declares for a refusal of `node`: one string for every rule, or the
 * broken keyword's (`keyword`, else read from the variant); `{value}` is the refused value.
 */
export function declaredMessage(node: unknown, variant: Pick<Variant, 'what' | 'value'>, keyword?: string): string | undefined {
  const schema = deref(node);
  const declared = schema?.['x-error-message'];
  if (typeof declared === 'string') return declared.replaceAll('{value}', String(variant.value));
  if (declared && typeof declared === 'object') {
    const broken = keyword ?? keywordOf(variant.what, variant.value, schema);
    const words = broken ? (declared as Record<string, unknown>)[broken] : undefined;
    return typeof words === 'string' ? words.replaceAll('{value}', String(variant.value)) : undefined;
  }
  return undefined;
}

/** Every operation with a `multipart/form-data` body, with its boundary cases. */
export function multipartCases(): MultipartOperation[] {
  const out: MultipartOperation[] = [];
  for (const route of routes) {
    const schema = formSchemaOf(route);
    if (!schema) continue;
    const props = (schema.properties ?? {}) as Record<string, unknown>;
    const required = new Set((schema.required as string[] | undefined) ?? []);
    const fileOf = (field: string, filename = 'clip.wav'): FormPart => ({ field, file: SMALL_WAV, filename, type: 'audio/wav' });
    const partOf = (field: string, value: string): FormPart => (isBinary(props[field]) ? fileOf(field) : { field, value });
    // The base form: the required parts, text fields first (as a browser sends a form in order).
    const base = (except: string[] = []): FormPart[] =>
      [...required]
        .filter((f) => !except.includes(f))
        .sort((a, b) => Number(isBinary(props[a])) - Number(isBinary(props[b])))
        .map((f) => partOf(f, String(deref(props[f])?.example ?? 'x')));
    const withField = (field: string, value: string): FormPart[] => {
      const parts = base([field]);
      const firstFile = parts.findIndex((p) => 'file' in p);
      parts.splice(firstFile === -1 ? parts.length : firstFile, 0, { field, value });
      return parts;
    };

    const cases: MultipartCase[] = [{ expect: 'accept', what: 'the base form', parts: base() }];
    for (const [field, node] of Object.entries(props)) {
      if (isBinary(node)) {
        // Left out, and sent as a browser sends a file input left empty (HTML's form encoding: an
        // empty file name, no bytes, application/octet-stream): the same form to the service.
        const missing = required.has(field) ? { expect: 'refuse' as const, message: declaredMessage(schema, { what: 'required', value: field }, 'required') } : { expect: 'accept' as const };
        cases.push({ ...missing, what: `form.${field}: the ${required.has(field) ? 'required ' : ''}file part left out`, parts: base([field]) });
        cases.push({ ...missing, what: `form.${field}: an empty file input (empty file name, no bytes)`, parts: [...base([field]), { field, file: Buffer.alloc(0), filename: '', type: '' }] });
        continue;
      }
      for (const v of variantsOf(node, false)) {
        if (typeof v.value !== 'string') continue;
        cases.push({
          expect: v.expect,
          what: `form.${field}: ${v.what}`,
          parts: withField(field, v.value),
          ...(v.expect === 'refuse' ? { message: declaredMessage(node, v) } : {}),
        });
      }
    }
    if (schema.additionalProperties === false) {
      cases.push({
        expect: 'refuse',
        what: `form.${UNDECLARED}: a field the schema does not declare (additionalProperties: false)`,
        parts: withField(UNDECLARED, 'x'),
        message: declaredMessage(schema, { what: 'additionalProperties', value: UNDECLARED }, 'additionalProperties'),
        noGraphql: 'GraphQL declares its arguments in the schema: an undeclared one is refused when the document is validated, before any value is read',
      });
    }
    out.push({ route, cases: cases.map((c) => (c.message === undefined ? omitMessage(c) : c)) });
  }
  return out;
}

const omitMessage = ({ message: _message, ...rest }: MultipartCase): MultipartCase => rest;

let graphqlSchema: ReturnType<typeof buildSchema> | undefined;

/** The arguments of a REST operation's GraphQL twin (`Mutation.uploadSound`). */
function twinArguments(route: RouteSpec): readonly GraphQLArgument[] {
  const [root, field] = (route.graphql ?? '').split('.') as [string, string];
  graphqlSchema ??= buildSchema(typeDefs);
  const type = root === 'Mutation' ? graphqlSchema.getMutationType() : graphqlSchema.getQueryType();
  const twin = type?.getFields()[field];
  if (!twin) throw new Error(`${route.operationId}: no GraphQL field ${route.graphql}`);
  return twin.args;
}

/**
 * A case as a GraphQL multipart request (`operations`, `map`, then the files): each text field
 * fills the argument of its camelCase name, each file an `Upload` argument (every argument of the
 * field is declared, one a case leaves out is null); the selection is `__typename`.
 */
export function graphqlForm(route: RouteSpec, c: MultipartCase): FormPart[] {
  const args = twinArguments(route);
  const [, field] = route.graphql!.split('.') as [string, string];
  const variables: Record<string, unknown> = {};
  const map: Record<string, string[]> = {};
  const files: FormPart[] = [];
  for (const part of c.parts) {
    const name = camelName(part.field);
    if (!args.some((a) => a.name === name)) throw new Error(`${route.graphql} has no argument ${name} for form field ${part.field}`);
    if ('file' in part) {
      variables[name] = null;
      map[String(files.length)] = [`variables.${name}`];
      files.push({ ...part, field: String(files.length) });
    } else {
      variables[name] = part.value;
    }
  }
  const declared = args.map((a) => `$${a.name}: ${a.type.toString()}`).join(', ');
  const passed = args.map((a) => `${a.name}: $${a.name}`).join(', ');
  const query = `mutation Boundary(${declared}) { ${field}(${passed}) { __typename } }`;
  return [{ field: 'operations', value: JSON.stringify({ query, variables }) }, { field: 'map', value: JSON.stringify(map) }, ...files];
}

/** The parts as a browser's FormData sends them, in order. */
export function formData(parts: FormPart[]): FormData {
  const form = new FormData();
  for (const part of parts) {
    if ('file' in part) form.append(part.field, new Blob([part.file], { type: part.type }), part.filename);
    else form.append(part.field, part.value);
  }
  return form;
}
