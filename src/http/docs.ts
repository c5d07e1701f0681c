/**
 * Documentation helpers of Part 1, each behind its flag: the OpenAPI document (internal surfaces
 * left out), Swagger UI and GraphiQL (assets from node_modules, never a CDN), and the RFC 9116
 * security.txt. A helper whose flag is off is simply not mounted, so it answers 404 NOT_FOUND.
 * Owns the Content-Security-Policy of the two documentation pages, which replaces the API's
 * (security-headers.ts) on their routes only.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Router } from 'express';
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

/**
 * The documentation pages, their assets and the OpenAPI document: static files a browser loads by
 * the dozen with each page view (Swagger UI alone is seven), so they are not charged to the API's
 * anonymous rate budget (app.ts); the API calls the pages then make (`/v1/gql`, "Try it out") are.
 * Matched without regard to case, as Express routes them.
 */
const DOCS_PATH = /^\/v1\/(?:swagger-ui|graphiql)(?:\/|$)|^\/v1\/(?:api-doc\/)?openapi\.json$|^\/v1\/asyncapi\.json$/i;
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

export function securityTxt(config: Pick<Config, 'security_txt'>, now: Date): string {
  const expires = config.security_txt.expires ?? new Date(now.getTime() + 180 * 24 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return `Contact: ${config.security_txt.contact}\nExpires: ${expires}\nPreferred-Languages: en\n`;
}

/**
 * The documentation pages' CSP: everything from this origin only (their assets come from
 * node_modules, so no CDN is listed), no inline or attribute scripts (GraphiQL's bootstrap is a
 * file), and 'unsafe-inline' styles, here and nowhere else: Swagger UI's page carries an inline
 * <style> and style attributes, the GraphiQL page an inline <style>. `data:` covers the fonts and
 * icons both stylesheets embed. Checked in headless Chromium: both pages render and load their
 * schema with no CSP violation.
 */
export function docsContentSecurityPolicy(config: Pick<Config, 'env'>) {
  return helmet.contentSecurityPolicy({
    useDefaults: false,
    directives: {
      'default-src': ["'self'"],
      'base-uri': ["'self'"],
      'connect-src': ["'self'"],
      'font-src': ["'self'", 'data:'],
      'img-src': ["'self'", 'data:'],
      'object-src': ["'none'"],
      'script-src': ["'self'"],
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
    router.get('/v1/graphiql/assets/:name', (req, res, next) => {
      const asset = graphiqlAssets[req.params.name ?? ''];
      if (!asset) return next();
      res.type(asset.type).setHeader('Cache-Control', 'public, max-age=86400');
      res.sendFile(asset.file);
    });
  }
  const started = new Date();
  if (config.security_txt.contact) router.get('/.well-known/security.txt', (_req, res) => void res.type('text/plain').send(securityTxt(config, started)));
  return router;
}
