/**
 * The words of a refusal the spec declares. A schema of spec/openapi/ may name, with
 * `x-error-message`, the message its rule is refused with: the message the service gives when
 * the same value reaches it through GraphQL (enums, lengths, patterns and formats the service
 * checks too), so that one failure reads the same on both protocols. A string applies to every
 * rule of the schema but its type (a wrong type keeps the validator's words, naming the field); a
 * map gives one message per keyword (`minLength`, `pattern`, `enum`, ...; `pattern <regex>` for
 * one of several patterns under `allOf`). `{value}` stands for the refused value. The refusal
 * names its field in `details.fields` as the service does, unless `x-error-details: false` says
 * the service's refusal carries no details. A rule over the whole body (which fields one of is
 * needed, or what a value of one field needs of another) is a member of the body's `allOf` that
 * carries its own `x-error-message`, with `x-error-field` naming the field its details point at. Owns only the rewording of the OpenAPI validator's refusals; what is refused
 * stays the validator's.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import { AppError } from '../errors';
import { documentSchema } from './mapping';

type Schema = {
  $ref?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  'x-error-message'?: string | Record<string, string>;
  'x-error-details'?: boolean;
  /** On a rule over the whole body: the field its refusal names. */
  'x-error-field'?: string;
  allOf?: Schema[];
  content?: Record<string, { schema?: Schema }>;
};
interface Parameter {
  $ref?: string;
  name?: string;
  in?: string;
  schema?: Schema;
}
/** An operation of the document, as far as the rewording reads it. */
export interface SpecOperation {
  parameters?: Parameter[];
  requestBody?: Schema;
}
interface ValidatorIssue {
  path?: string;
  message?: string;
  errorCode?: string;
}

/** A node of the OpenAPI document with its `$ref`s followed (mapping.ts `documentSchema`). */
const deref = <T extends { $ref?: string }>(node: T | undefined): T | undefined => documentSchema(node) as T | undefined;

const ruleAjv = new Ajv({ strict: false, allErrors: false });
const ruleChecks = new WeakMap<Schema, ValidateFunction>();

/**
 * The first rule of a body (a member of its `allOf` that words its own refusal) that `value` breaks.
 * The validator reports such a refusal at the body, not at a field, and stops at the first, so
 * which rule it was is found again here, on the refusal path only.
 */
function brokenRule(body: Schema, value: unknown): Schema | undefined {
  for (const rule of body.allOf ?? []) {
    if (rule['x-error-message'] === undefined) continue;
    let check = ruleChecks.get(rule);
    if (!check) {
      check = ruleAjv.compile(rule);
      ruleChecks.set(rule, check);
    }
    if (!check(value)) return rule;
  }
  return undefined;
}

/** `/body/target/type` or `.query.scope` → `['body', 'target', 'type']`. */
const segmentsOf = (path: string) => path.split(/[./]/).filter(Boolean);

interface Request {
  body?: unknown;
  query?: unknown;
  params?: unknown;
}

/** The schema an issue's path points at inside the operation, with the value it refused. */
function located(operation: SpecOperation, req: Request, segments: string[]): { schema: Schema; value: unknown; field: string } | null {
  const [where, name, ...rest] = segments;
  if (!where) return null;
  if (where === 'body' && !name) {
    // A rule over the body as a whole: the first of its rules the body breaks, with its words.
    const body = deref(deref(operation.requestBody)?.content?.['application/json']?.schema);
    const rule = body && brokenRule(body, req.body);
    return rule ? { schema: rule, value: req.body, field: rule['x-error-field'] ?? '' } : null;
  }
  if (!name) return null;
  if (where === 'body') {
    let schema = deref(deref(operation.requestBody)?.content?.['application/json']?.schema);
    let value: unknown = req.body;
    for (const key of [name, ...rest]) {
      schema = /^\d+$/.test(key) ? deref(schema?.items) : deref(schema?.properties?.[key]);
      value = (value as Record<string, unknown> | null | undefined)?.[key];
    }
    return schema ? { schema, value, field: [name, ...rest].filter((k) => !/^\d+$/.test(k)).join('.') } : null;
  }
  const parameter = (operation.parameters ?? []).map(deref).find((p) => p?.name === name && (p.in === where || (where === 'params' && p.in === 'path')));
  const schema = deref(parameter?.schema);
  const source = where === 'query' ? req.query : req.params;
  return schema ? { schema, value: (source as Record<string, unknown> | undefined)?.[name], field: name } : null;
}

/**
 * The validator's refusal `error` of `req` for `operation`, reworded as its field's schema
 * declares; the error itself when no refused field declares its words.
 */
export function withSpecMessages(error: unknown, req: Request, operation: SpecOperation): unknown {
  const issues = (error as { errors?: ValidatorIssue[] } | null)?.errors;
  if (!Array.isArray(issues)) return error;
  // A broken rule of the whole body comes with its branches' own refusals (`platform` not
  // platform_b), which are not what was refused: the rule's issue alone is read then.
  const rule = issues.find((i) => i.errorCode === 'anyOf.openapi.validation' && i.path !== undefined && segmentsOf(i.path).join('/') === 'body');
  for (const issue of rule ? [rule] : issues) {
    const keyword = (issue.errorCode ?? '').replace(/\.openapi\.validation$/, '');
    if (!issue.path) continue;
    const found = located(operation, req, segmentsOf(issue.path));
    const declared = found?.schema['x-error-message'];
    const pattern = /must match pattern "(.*)"$/.exec(issue.message ?? '')?.[1];
    // A wrong type, a missing or an unknown property keep the validator's words unless a keyword map names them.
    const general = ['type', 'required', 'additionalProperties'].includes(keyword) ? undefined : declared;
    const template = typeof declared === 'string' ? (general as string | undefined) : (declared?.[`${keyword} ${pattern}`] ?? declared?.[keyword]);
    if (!found || template === undefined) continue;
    const message = template.replace('{value}', typeof found.value === 'string' ? found.value : JSON.stringify(found.value));
    return found.schema['x-error-details'] === false ? AppError.validation(message) : AppError.validation(message, { fields: [{ field: found.field, message }] });
  }
  return error;
}
