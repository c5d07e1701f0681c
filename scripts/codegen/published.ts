/**
 * The consumer-facing documents: what the service serves, written by codegen as checked-in files
 * under spec/published/, so a client generated from the repository and one generated from the
 * running service are the same client, and `npm run spec:diff` compares exactly what consumers
 * see. Each entry of `publishedDocuments` is one file; src/http/docs.ts serves each file as it is.
 *
 * The OpenAPI document is the source (spec/openapi/ bundled, with codegen's shared parameters and
 * responses) less the `x-internal` operations, plus the security requirements codegen derives
 * from each operation's gate (`x-auth`, `x-permission`): the gate stays the one truth, and
 * `securitySchemes` tell a client generator how each credential kind travels.
 */
/** The part of a normalised gate (scripts/codegen/gates.ts) that decides which credentials pass. */
interface Gate {
  auth: 'public' | 'authenticated' | 'user' | 'first-party' | 'popout-session' | 'system-key' | 'developer' | 'extension';
  permissions: { scope: string } | null;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Doc = { paths: Record<string, Record<string, Record<string, unknown>>>; components?: Record<string, Record<string, unknown>>; [key: string]: unknown };

/** One bearer scheme per credential kind, by the name the security requirements use. */
const BEARER_KINDS: Record<string, { prefix: string; description: string }> = {
  userJwt: { prefix: 'lm_ + JWT', description: 'A user session access token (`lm_` followed by a JWT with `use: access`), from sign-in or `POST /v1/auth/refresh`.' },
  userApiKey: { prefix: 'lm_usr_', description: 'A personal API key of a user (`lm_usr_`): acts as that user in the account it was created for, within its scopes.' },
  serviceKey: { prefix: 'lm_svc_', description: 'A service key of an account (`lm_svc_`): account permissions within its scopes, no user permissions.' },
  systemKey: { prefix: 'lm_sys_', description: 'A system key (`lm_sys_`) for operators and internal services; the only credential `system-key` operations accept.' },
  developerKey: { prefix: 'lm_dev_', description: 'A developer API key (`lm_dev_`) of the developer portal.' },
  overlayToken: { prefix: 'lm_overlay_', description: 'An overlay token (`lm_overlay_`) of a browser source; holds no permission.' },
  sharedOverlayToken: { prefix: 'lm_share_', description: 'A shared overlay token (`lm_share_`); holds no permission.' },
  extensionToken: {
    prefix: 'lm_ext_',
    description: 'An extension token (`lm_ext_`) of an installed extension: the account permissions its install granted, its own install storage, and the `extension` operations (its secrets).',
  },
  widgetToken: { prefix: 'lm_widget_', description: 'A widget token (`lm_widget_`); holds no permission.' },
};

export const SECURITY_SCHEMES: Record<string, Record<string, string>> = {
  ...Object.fromEntries(
    Object.entries(BEARER_KINDS).map(([name, kind]) => [name, { type: 'http', scheme: 'bearer', bearerFormat: kind.prefix, description: `${kind.description} Sent as \`Authorization: Bearer <token>\`.` }]),
  ),
  tokenQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description:
      'The credentials that may travel in the query string: popout (`lm_pop_`), overlay, shared overlay, extension and widget tokens (a raw JWT only on the WebSocket upgrade). A recognised `Authorization: Bearer` header wins.',
  },
  popoutCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: 'svc-popout-token',
    description: 'The popout session cookie: the 15-minute session JWT `POST /v1/auth/popout/exchange` sets (httpOnly) for a popout page; read after the header and `?token=`.',
  },
};

/** Bound tokens: they never pass a permission gate, except an extension token on account scope. */
const PERMISSIONLESS = ['overlayToken', 'sharedOverlayToken', 'extensionToken', 'widgetToken'];
const FIRST_PARTY = ['userJwt', 'userApiKey'];

/**
 * The security requirement of a gate (alternatives, any one suffices): the credential kinds the
 * gate engine (src/auth/gates.ts) can let through. `public` needs none (`[]`).
 */
export function securityOf(gate: Gate): Record<string, string[]>[] {
  const one = (names: string[]) => names.map((name) => ({ [name]: [] as string[] }));
  switch (gate.auth) {
    case 'public':
      return [];
    case 'user':
    case 'first-party':
      return one(FIRST_PARTY);
    case 'system-key':
      return one(['systemKey']);
    case 'popout-session':
      return one(['popoutCookie', 'tokenQuery']);
    case 'developer':
      return one(['developerKey', ...FIRST_PARTY]);
    case 'extension':
      return one(['extensionToken']);
    case 'authenticated': {
      let names = Object.keys(SECURITY_SCHEMES);
      // An extension token holds its install's account permissions; the other bound tokens hold none.
      if (gate.permissions) names = names.filter((n) => !PERMISSIONLESS.includes(n) || (n === 'extensionToken' && gate.permissions!.scope === 'account'));
      if (gate.permissions?.scope === 'user') names = names.filter((n) => n !== 'serviceKey');
      return one(names);
    }
  }
}

/** Every `#/components/...` reference reachable from `node`, followed through the components. */
function reachable(doc: Doc, start: unknown): Set<string> {
  const seen = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/') && !seen.has(value)) {
        seen.add(value);
        const [, , section, name] = value.split('/');
        visit(doc.components?.[section!]?.[name!]);
      } else visit(value);
    }
  };
  visit(start);
  return seen;
}

/**
 * The published OpenAPI document: internal operations (and paths left empty) out, components only
 * internal operations used out, a `security` on every operation from its gate, the schemes in
 * `components.securitySchemes`.
 */
export function publishedOpenapi(source: Doc, gates: ReadonlyMap<string, Gate>): Doc {
  const doc = structuredClone(source);
  const paths: Doc['paths'] = {};
  for (const [p, item] of Object.entries(doc.paths)) {
    const kept: Record<string, Record<string, unknown>> = {};
    for (const [key, value] of Object.entries(item)) {
      if (!(METHODS as readonly string[]).includes(key)) kept[key] = value;
      else if (value['x-internal'] !== true) {
        const gate = gates.get(String(value.operationId));
        if (!gate) throw new Error(`${key.toUpperCase()} ${p}: no gate`);
        kept[key] = { ...value, security: securityOf(gate) };
      }
    }
    if (METHODS.some((m) => m in kept)) paths[p] = kept;
  }
  doc.paths = paths;
  const used = reachable(doc, { paths, security: doc.security });
  const components: Record<string, Record<string, unknown>> = {};
  for (const [section, entries] of Object.entries(doc.components ?? {})) {
    components[section] = Object.fromEntries(Object.entries(entries).filter(([name]) => used.has(`#/components/${section}/${name}`)));
  }
  components.securitySchemes = SECURITY_SCHEMES;
  doc.components = components;
  return doc;
}

/** The files under spec/published/ and what each holds (the AsyncAPI document: spec/ws-protocol/ bundled, as codegen reads it). */
export function publishedDocuments(openapi: Doc, gates: ReadonlyMap<string, Gate>, sdl: string, asyncapi: string): Map<string, string> {
  return new Map([
    ['spec/published/openapi.json', `${JSON.stringify(publishedOpenapi(openapi, gates), null, 2)}\n`],
    ['spec/published/schema.graphql', sdl],
    ['spec/published/asyncapi.json', asyncapi],
  ]);
}
