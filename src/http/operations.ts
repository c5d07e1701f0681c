/**
 * Which operation of the route table a request is for, found once per request from its method and
 * path, then read by everything after it: the request validator (validator.ts) and the REST
 * dispatcher (rest.ts). Replaces the two linear scans over every documented route (the validator's
 * and Express's, a regular expression per route) with a walk down a tree of path segments.
 *
 * Matching is the one both of those applied: path segments are compared without regard to case,
 * one trailing slash is ignored, a parameter takes one whole non-empty segment, and a literal
 * segment wins over a parameter at the same place (the first match in the validator's route order,
 * where `/:x` sorts after every literal). The operation is chosen by path first and method second: a
 * path whose first matching template lacks the method has no operation (as the validator answers,
 * then mapped to 404), even if a later template would have it; a malformed parameter is refused
 * (400) before the method is looked at.
 */
import type { RouteSpec } from '../../generated/rest';

export interface ResolvedOperation {
  readonly route: RouteSpec;
  /** Path parameters by their names in the route's template, percent-decoded. */
  readonly params: Record<string, string>;
}

/** A path that matched a template but whose parameters are not valid percent-encoding. */
export const MALFORMED = Symbol('malformed path');

export type OperationLookup = ResolvedOperation | typeof MALFORMED | null;

interface Node {
  readonly literals: Map<string, Node>;
  param: Node | null;
  /** Set on the node where a template ends: its routes by method, each with its parameter names. */
  leaf: Map<string, { readonly route: RouteSpec; readonly names: readonly string[] }> | null;
}

const node = (): Node => ({ literals: new Map(), param: null, leaf: null });

const isParam = (segment: string) => segment.startsWith('{') && segment.endsWith('}');

export interface OperationIndex {
  /** The operation for `method` (any case) and `path` (no query string), or null, or MALFORMED. */
  resolve(method: string, path: string): OperationLookup;
}

export function createOperationIndex(routes: readonly RouteSpec[]): OperationIndex {
  const root = node();
  for (const route of routes) {
    let at = root;
    const names: string[] = [];
    for (const segment of route.path.split('/').slice(1)) {
      if (isParam(segment)) {
        names.push(segment.slice(1, -1));
        at = at.param ??= node();
      } else {
        const key = segment.toLowerCase();
        let next = at.literals.get(key);
        if (!next) at.literals.set(key, (next = node()));
        at = next;
      }
    }
    (at.leaf ??= new Map()).set(route.method.toUpperCase(), { route, names });
  }

  /** The first template (literal before parameter, depth first) that matches all of `segments`. */
  function walk(at: Node, segments: readonly string[], i: number, values: string[]): Node | null {
    if (i === segments.length) return at.leaf ? at : null;
    const segment = segments[i]!;
    const literal = at.literals.get(segment.toLowerCase());
    if (literal) {
      const found = walk(literal, segments, i + 1, values);
      if (found) return found;
    }
    if (at.param && segment !== '') {
      values.push(segment);
      const found = walk(at.param, segments, i + 1, values);
      if (found) return found;
      values.pop();
    }
    return null;
  }

  return {
    resolve(method, path) {
      if (!path.startsWith('/')) return null;
      const segments = path.split('/').slice(1);
      // One trailing slash is ignored ("/v1/health/"), as path-to-regexp's non-strict match does.
      if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop();
      const values: string[] = [];
      const found = walk(root, segments, 0, values);
      if (!found) return null;
      // Parameters are decoded before the method is looked at: a malformed one is refused either way.
      let decoded: string[];
      try {
        decoded = values.map((v) => decodeURIComponent(v));
      } catch {
        return MALFORMED;
      }
      const entry = found.leaf!.get(method.toUpperCase());
      if (!entry) return null;
      const { route, names } = entry;
      const params: Record<string, string> = {};
      for (let i = 0; i < names.length; i += 1) params[names[i]!] = decoded[i]!;
      return { route, params };
    },
  };
}

/** The request's operation, resolved on first use and kept on the request. */
export function operationOf(index: OperationIndex, req: { method?: string | undefined; path: string; operation?: OperationLookup }): OperationLookup {
  if (req.operation === undefined) req.operation = index.resolve(req.method ?? 'GET', req.path);
  return req.operation;
}
