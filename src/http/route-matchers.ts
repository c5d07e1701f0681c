/**
 * Compiled route matchers, once per route instead of once per request. express-openapi-validator
 * 5.6 finds a request's operation by compiling path-to-regexp for every documented route on every
 * request (its `lookupRoute`; upstream cdimascio/express-openapi-validator#1217 caches them): that
 * compilation was a third of the CPU of a plain `GET /v1/health`. path-to-regexp is a pure function
 * of its string input and options, and its callers only read the result (`regexp.exec`, `keys`), so
 * the module's `pathToRegexp` export is memoised here, before the validator first runs. The
 * validator looks the export up at every call, so the memo takes effect without touching it.
 * Only string paths are cached, and at most MAX distinct ones (the spec's routes number hundreds).
 */
const MAX = 10_000;

type PathToRegexp = (path: unknown, options?: PathOptions) => unknown;
interface PathOptions {
  sensitive?: boolean;
  strict?: boolean;
  end?: boolean;
  trailing?: boolean;
  delimiter?: string;
  encodePath?: unknown;
}

let installed = false;

export function memoiseRouteMatchers(): void {
  if (installed) return;
  installed = true;
  // The module object itself (not an ES namespace copy): its export is what the validator calls.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const module = require('path-to-regexp') as { pathToRegexp: PathToRegexp };
  const compile = module.pathToRegexp;
  /** path → compiled form per combination of the boolean options (an index of four bits). */
  const cache = new Map<string, unknown[]>();
  module.pathToRegexp = (path, options = {}) => {
    // A custom delimiter or path encoder is compiled as before, uncached.
    if (typeof path !== 'string' || options.delimiter !== undefined || options.encodePath !== undefined) return compile(path, options);
    const variant = (options.sensitive ? 1 : 0) | (options.strict ? 2 : 0) | (options.end === false ? 4 : 0) | (options.trailing === false ? 8 : 0);
    let variants = cache.get(path);
    if (variants === undefined) {
      variants = [];
      if (cache.size < MAX) cache.set(path, variants);
    }
    return (variants[variant] ??= compile(path, options));
  };
}
