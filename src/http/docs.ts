/**
 * Documentation helpers of Part 1, each behind its flag: the OpenAPI document (internal surfaces
 * left out), Swagger UI, GraphiQL and the WebSocket protocol's page (AsyncAPI's own renderer;
 * assets from node_modules, never a CDN), and the RFC 9116 security.txt. A helper whose flag is
 * off is simply not mounted, so it answers 404 NOT_FOUND. Owns the Content-Security-Policy of the
 * three documentation pages, which replaces the API's (security-headers.ts) on their routes only.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Router, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import swaggerUi from 'swagger-ui-express';
import type { Config } from '../config/config';
import { productionOnlyDirectives } from './security-headers';

/** A file inside an installed package, even one its `exports` map does not list. */
const packageFile = (pkg: string, file: string) => path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);

const graphiqlAssets: Record<string, { file: string; type: string }> = {
  'react.js': { file: packageFile('react', 'umd/react.production.min.js'), type: 'application/javascript' },
  'react-dom.js': { file: packageFile('react-dom', 'umd/react-dom.production.min.js'), type: 'application/javascript' },
  'graphiql.js': { file: packageFile('graphiql', 'graphiql.min.js'), type: 'application/javascript' },
  'graphiql.css': { file: packageFile('graphiql', 'graphiql.min.css'), type: 'text/css' },
};

/**
 * The WebSocket protocol's page: @asyncapi/react-component's standalone bundle (React and the
 * AsyncAPI parser included) and its stylesheet, the browser build its README documents for use
 * without a bundler. The page needs these two files only, not the package's Node dependencies
 * (jsdom among them), so the package is a development dependency: `npm run build`
 * (scripts/build.mjs) copies the files into dist/assets/asyncapi/ under the names served here, and
 * a built tree serves them from there; a source tree (tests, `npm run dev`) reads them from the
 * package.
 */
const ASYNCAPI_ASSETS: Record<string, { packagePath: string; type: string }> = {
  'asyncapi.js': { packagePath: 'browser/standalone/index.js', type: 'application/javascript' },
  'asyncapi.css': { packagePath: 'styles/default.min.css', type: 'text/css' },
};
/** Where scripts/build.mjs puts them: dist/assets/asyncapi, seen from dist/src/http. */
const BUILT_ASYNCAPI_DIR = path.resolve(__dirname, '../../assets/asyncapi');

function asyncapiAssets(): Record<string, { file: string; type: string }> {
  const built = existsSync(BUILT_ASYNCAPI_DIR);
  if (!built) {
    try {
      require.resolve('@asyncapi/react-component/package.json');
    } catch {
      throw new Error(
        `docs.asyncapi_ui: the page's files are missing: neither ${BUILT_ASYNCAPI_DIR} (npm run build copies them) nor the @asyncapi/react-component package (a development dependency) is here; build the tree, or set docs.asyncapi_ui to false`,
      );
    }
  }
  return Object.fromEntries(
    Object.entries(ASYNCAPI_ASSETS).map(([name, asset]) => [
      name,
      { file: built ? path.join(BUILT_ASYNCAPI_DIR, name) : packageFile('@asyncapi/react-component', asset.packagePath), type: asset.type },
    ]),
  );
}

/**
 * The published documents codegen writes under spec/published/, each served byte for byte at its
 * URL behind its flag, so what a consumer downloads is the checked-in file that `npm run
 * spec:diff` guards. (The SDL is served by `GET /v1/schema`, an API operation, from the same text.)
 */
const PUBLISHED_DIR = path.resolve(__dirname, '../../spec/published');
const publishedDocuments = (config: Readonly<Config>) => [
  { url: '/v1/openapi.json', file: 'openapi.json', type: 'application/json', on: config.docs.openapi_json },
  // The WebSocket protocol (AsyncAPI 3), under the same switch as the OpenAPI document.
  { url: '/v1/asyncapi.json', file: 'asyncapi.json', type: 'application/json', on: config.docs.openapi_json },
];
const publishedFile = (file: string): Buffer => readFileSync(path.join(PUBLISHED_DIR, file));

/** The document Swagger UI loads (served whenever Swagger UI is). */
export const SWAGGER_DOCUMENT_PATH = '/v1/api-doc/openapi.json';
/** The document the AsyncAPI page loads (served whenever the page is, whatever `docs.openapi_json` says). */
export const ASYNCAPI_DOCUMENT_PATH = '/v1/asyncapi-ui/asyncapi.json';

/**
 * The documentation pages, their assets and the OpenAPI document: static files a browser loads by
 * the dozen with each page view (Swagger UI alone is seven), so they are not charged to the API's
 * anonymous rate budget (app.ts); the API calls the pages then make (`/v1/gql`, "Try it out") are.
 * Matched without regard to case, as Express routes them.
 */
const DOCS_PATH = /^\/v1\/(?:swagger-ui|graphiql|asyncapi-ui)(?:\/|$)|^\/v1\/(?:api-doc\/)?openapi\.json$|^\/v1\/asyncapi\.json$/i;
export const isDocsPath = (path: string): boolean => DOCS_PATH.test(path);

/** The page's bootstrap, served as a file so the CSP needs no inline script. */
const graphiqlInit = `const fetcher = GraphiQL.createFetcher({ url: '/v1/gql' });
ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(GraphiQL, { fetcher }));
`;

const graphiqlPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>GraphiQL</title>
    <!-- No icon file: without this line the browser asks for /favicon.ico, a 404 in the console. -->
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="/v1/graphiql/assets/graphiql.css" />
    <style>body { margin: 0; height: 100vh; } #graphiql { height: 100vh; }</style>
  </head>
  <body>
    <div id="graphiql">Loading…</div>
    <script src="/v1/graphiql/assets/react.js"></script>
    <script src="/v1/graphiql/assets/react-dom.js"></script>
    <script src="/v1/graphiql/assets/graphiql.js"></script>
    <script src="/v1/graphiql/assets/init.js"></script>
  </body>
</html>
`;

/** The AsyncAPI page's bootstrap, a file like GraphiQL's: the renderer fetches and parses the document itself. */
const asyncapiInit = `AsyncApiStandalone.render(
  { schema: { url: '${ASYNCAPI_DOCUMENT_PATH}', options: { method: 'GET' } }, config: { show: { sidebar: true, errors: true } } },
  document.getElementById('asyncapi'),
);
`;

const asyncapiPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>WebSocket protocol</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="/v1/asyncapi-ui/assets/asyncapi.css" />
  </head>
  <body>
    <div id="asyncapi">Loading…</div>
    <script src="/v1/asyncapi-ui/assets/asyncapi.js"></script>
    <script src="/v1/asyncapi-ui/assets/init.js"></script>
  </body>
</html>
`;

/** Serves a page's assets by name from a fixed table (anything else falls through to 404). */
const assetRoute = (assets: Record<string, { file: string; type: string }>) => (req: Request, res: Response, next: NextFunction) => {
  const asset = assets[String(req.params.name ?? '')];
  if (!asset) return next();
  res.type(asset.type).setHeader('Cache-Control', 'public, max-age=86400');
  res.sendFile(asset.file);
};

export function securityTxt(config: Pick<Config, 'security_txt'>, now: Date): string {
  const expires = config.security_txt.expires ?? new Date(now.getTime() + 180 * 24 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return `Contact: ${config.security_txt.contact}\nExpires: ${expires}\nPreferred-Languages: en\n`;
}

/**
 * The documentation pages' CSP: everything from this origin only (their assets come from
 * node_modules, so no CDN is listed), no inline or attribute scripts (GraphiQL's bootstrap is a
 * file), and 'unsafe-inline' styles, here and nowhere else: Swagger UI's page carries an inline
 * <style> and style attributes, the GraphiQL page an inline <style>. `data:` covers the fonts and
 * icons both stylesheets embed. `evaluatesSchemas` adds 'unsafe-eval' for the AsyncAPI page
 * alone: loading the renderer's bundle compiles JSON Schema validators with `new Function`
 * (Spectral's core builds an Ajv instance at module load, and ajv-errors compiles its keyword's
 * meta-schema there). The without-parser build does the same, even when handed a document parsed
 * and stringified beforehand with @asyncapi/parser (tried under script-src 'self': EvalError
 * before the bundle defines its global), because the document models it needs load Spectral's
 * core; upstream: https://github.com/asyncapi/asyncapi-react/issues/1187. Rendering the page to
 * static HTML at build time (react-dom/server) runs no script, but leaves every payload schema
 * collapsed behind buttons that do nothing. The page loads nothing but this origin's files and
 * the published document, so the exception lets no foreign script in. Checked in headless
 * Chromium: the three pages render and load their documents with no CSP violation.
 */
export function docsContentSecurityPolicy(config: Pick<Config, 'env'>, options: { evaluatesSchemas?: boolean } = {}) {
  return helmet.contentSecurityPolicy({
    useDefaults: false,
    directives: {
      'default-src': ["'self'"],
      'base-uri': ["'self'"],
      'connect-src': ["'self'"],
      'font-src': ["'self'", 'data:'],
      'img-src': ["'self'", 'data:'],
      'object-src': ["'none'"],
      'script-src': options.evaluatesSchemas ? ["'self'", "'unsafe-eval'"] : ["'self'"],
      'script-src-attr': ["'none'"],
      'style-src': ["'self'", "'unsafe-inline'"],
      'form-action': ["'self'"],
      'frame-ancestors': ["'none'"],
      ...productionOnlyDirectives(config),
    },
  });
}

export function createDocsRouter(config: Readonly<Config>): Router {
  const router = Router();
  const pagePolicy = docsContentSecurityPolicy(config);
  for (const published of publishedDocuments(config)) {
    if (!published.on) continue;
    const body = publishedFile(published.file);
    router.get(published.url, (_req, res) => void res.type(published.type).send(body));
  }
  if (config.docs.swagger_ui) {
    const openapi = publishedFile('openapi.json');
    router.get(SWAGGER_DOCUMENT_PATH, (_req, res) => void res.type('application/json').send(openapi));
    // The page loads the document by URL: swagger-ui-express fills its init script with a plain
    // String.replace, so a document embedded there would have its `$\`` / `$&` sequences (the
    // spec's patterns contain them) expanded and the script broken; a URL has none. validatorUrl:
    // null keeps Swagger UI from loading its badge from validator.swagger.io.
    const swaggerOptions = { url: SWAGGER_DOCUMENT_PATH, validatorUrl: null };
    router.use('/v1/swagger-ui', pagePolicy, swaggerUi.serve, swaggerUi.setup(undefined, { customSiteTitle: 'API documentation', swaggerOptions }));
  }
  if (config.graphql.playground) {
    router.use('/v1/graphiql', pagePolicy);
    router.get('/v1/graphiql', (_req, res) => void res.type('html').send(graphiqlPage));
    router.get('/v1/graphiql/assets/init.js', (_req, res) => void res.type('application/javascript').send(graphiqlInit));
    router.get('/v1/graphiql/assets/:name', assetRoute(graphiqlAssets));
  }
  if (config.docs.asyncapi_ui) {
    const asyncapi = publishedFile('asyncapi.json');
    router.use('/v1/asyncapi-ui', docsContentSecurityPolicy(config, { evaluatesSchemas: true }));
    router.get('/v1/asyncapi-ui', (_req, res) => void res.type('html').send(asyncapiPage));
    router.get(ASYNCAPI_DOCUMENT_PATH, (_req, res) => void res.type('application/json').send(asyncapi));
    router.get('/v1/asyncapi-ui/assets/init.js', (_req, res) => void res.type('application/javascript').send(asyncapiInit));
    router.get('/v1/asyncapi-ui/assets/:name', assetRoute(asyncapiAssets()));
  }
  const started = new Date();
  if (config.security_txt.contact) router.get('/.well-known/security.txt', (_req, res) => void res.type('text/plain').send(securityTxt(config, started)));
  return router;
}
