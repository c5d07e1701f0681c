/**
 * Refuses, once and at the edge, input PostgreSQL cannot store: a NUL character, or a UTF-16
 * surrogate without its pair (a lone surrogate, or a path segment whose percent-encoding decodes
 * to no valid UTF-8); and JSON nested deeper than `MAX_JSON_DEPTH`, which would overflow the stack
 * of whatever serialises it next. Owns the check and its error (400 VALIDATION_ERROR naming the
 * field, the same code, message and details on REST and GraphQL); the REST middleware checks path
 * parameters, the query string and the JSON body, keys and opaque JSON (`raw`, `metadata`)
 * included; the GraphQL endpoint checks every argument value through `inputProblem`
 * (src/http/graphql/arguments.ts). Must not judge anything else about the input: types, formats
 * and lengths are the validators'.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routes } from '../../generated/rest';
import { AppError, messages } from '../errors';

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const INVALID_CHARACTERS = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A field name in a message stays readable however long the offending key path is. */
const MAX_SEGMENT = 64;
const MAX_FIELD = 200;

export function hasInvalidCharacters(value: string): boolean {
  return INVALID_CHARACTERS.test(value);
}

export type FieldPath = readonly (string | number)[];

/** Far deeper than any object of the specs; shallow enough for every recursive JSON consumer. */
export const MAX_JSON_DEPTH = 64;

export interface InputProblem {
  readonly kind: 'characters' | 'depth';
  /** Where: the string, or the object whose key is bad, or the container past the depth limit. */
  readonly path: FieldPath;
}

/**
 * The first problem in `value` (any JSON: object keys, array items, nested at any depth): a string
 * PostgreSQL cannot store, or nesting past `MAX_JSON_DEPTH`; null when there is none. A bad object
 * key reports the object holding it, so the key itself never travels back in the message.
 * Iterative, so a deeply nested body cannot overflow the stack of the check itself.
 */
export function inputProblem(value: unknown, root: FieldPath = []): InputProblem | null {
  // Each entry links to its parent instead of copying the path, so depth costs nothing until a hit.
  interface Entry {
    readonly value: unknown;
    readonly key: string | number | null;
    readonly parent: Entry | null;
    readonly depth: number;
  }
  const pathOf = (entry: Entry | null): FieldPath => {
    const keys: (string | number)[] = [];
    for (let e = entry; e && e.key !== null; e = e.parent) keys.push(e.key);
    return [...root, ...keys.reverse()];
  };
  const stack: Entry[] = [{ value, key: null, parent: null, depth: 0 }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const current = entry.value;
    if (typeof current === 'string') {
      if (hasInvalidCharacters(current)) return { kind: 'characters', path: pathOf(entry) };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    const depth = entry.depth + 1;
    if (depth > MAX_JSON_DEPTH) return { kind: 'depth', path: pathOf(entry) };
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], key: i, parent: entry, depth });
    } else {
      const entries = Object.entries(current);
      for (const [key] of entries) if (hasInvalidCharacters(key)) return { kind: 'characters', path: pathOf(entry) };
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], key: entries[i]![0], parent: entry, depth });
    }
  }
  return null;
}

/**
 * The path of the first container in `value` nested deeper than `max` (any JSON), or null. Only
 * nesting, nothing about the values; iterative, so the check itself cannot overflow the stack.
 */
export function nestedDeeperThan(value: unknown, max: number): FieldPath | null {
  const stack: { value: unknown; path: FieldPath; depth: number }[] = [{ value, path: [], depth: 0 }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    if (entry.value === null || typeof entry.value !== 'object') continue;
    const depth = entry.depth + 1;
    if (depth > max) return entry.path;
    // Only the outermost key names the field in the refusal, so deeper paths are not kept.
    const keyed = Array.isArray(entry.value) ? entry.value.map((item, i) => [i, item] as const) : Object.entries(entry.value);
    for (const [key, item] of keyed) stack.push({ value: item, path: entry.path.length > 0 ? entry.path : [key], depth });
  }
  return null;
}

/** `['metadata', 'tags', 2]` → `metadata.tags.2`; the empty path names the whole input (`fallback`). */
export function fieldName(path: FieldPath, fallback: string): string {
  if (path.length === 0) return fallback;
  const name = path.map((segment) => (String(segment).length > MAX_SEGMENT ? `${String(segment).slice(0, MAX_SEGMENT)}…` : String(segment))).join('.');
  return name.length > MAX_FIELD ? `${name.slice(0, MAX_FIELD)}…` : name;
}

/** A refusal for unstorable characters, shaped like the OpenAPI validator's: `details.fields` lists the field. */
export function invalidCharactersError(field: string): AppError {
  return AppError.validation(messages.invalidCharacters(field), { fields: [{ field, message: messages.invalidCharactersDetail }] });
}

/**
 * The refusal for a problem; `fallback` names the whole input (`body`, `query`). Nesting is named
 * by its outermost field (`metadata`), not by the 64-level path under it.
 */
export function inputProblemError(problem: InputProblem, fallback: string): AppError {
  if (problem.kind === 'characters') return invalidCharactersError(fieldName(problem.path, fallback));
  const field = fieldName(problem.path.slice(0, 1), fallback);
  return AppError.validation(messages.nestedTooDeep(field, MAX_JSON_DEPTH), { fields: [{ field, message: messages.nestedTooDeepDetail(MAX_JSON_DEPTH) }] });
}

/** Route templates split into segments (`:name` marks a parameter), to name a bad path segment. */
const templates = routes.map((route) => route.expressPath.split('/'));

/** The name of the path parameter at `index` of `segments` in a route that fits them, else `path`. */
function pathParameterName(segments: string[], index: number): string {
  for (const template of templates) {
    if (template.length !== segments.length || !template[index]!.startsWith(':')) continue;
    if (template.every((part, i) => part.startsWith(':') || part === segments[i])) return template[index]!.slice(1);
  }
  return 'path';
}

/** The REST input's first problem, as the error to answer with, or null. */
export function checkRestInput(req: { path: string; query: unknown; body?: unknown }): AppError | null {
  const segments = req.path.split('/');
  for (let i = 0; i < segments.length; i++) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segments[i]!);
    } catch {
      // Percent-encoding that decodes to no valid UTF-8 (`%ED%A0%80` is a lone surrogate's).
      return invalidCharactersError(pathParameterName(segments, i));
    }
    if (hasInvalidCharacters(decoded)) return invalidCharactersError(pathParameterName(segments, i));
  }
  const inQuery = inputProblem(req.query);
  if (inQuery) return inputProblemError(inQuery, 'query');
  const inBody = inputProblem(req.body);
  if (inBody) return inputProblemError(inBody, 'body');
  return null;
}

/**
 * Mounted after body parsing and before the OpenAPI validator and the REST router, so no handler,
 * service or query ever sees such input.
 */
export function inputGuardMiddleware(): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction): void => {
    next(checkRestInput(req) ?? undefined);
  };
}
