/**
 * Documentation helpers (Part 1, "Helper endpoints"): the GraphQL SDL, the public OpenAPI
 * document (internal surfaces left out), Swagger UI, GraphiQL and the WebSocket protocol's AsyncAPI
 * page served from node_modules (no CDN), each behind its config flag, and the RFC 9116 security.txt.
 */
import vm from 'node:vm';
import { useTestApp } from '../helpers/app';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type OpenApiDoc = { openapi: string; paths: Record<string, Record<string, unknown>> };

/** The src/href attribute values of every script and link element. */
function assetUrls(html: string): string[] {
  const urls: string[] = [];
  for (const tag of html.match(/<(script|link)\b[^>]*>/gi) ?? []) {
    const attr = /\b(?:src|href)\s*=\s*["']([^"']*)["']/i.exec(tag);
    if (attr) urls.push(attr[1]!);
  }
  return urls;
}

describe('documentation helpers (default flags)', () => {
  const t = useTestApp();

  test('GET /v1/schema serves the SDL as text/plain', async () => {
    const res = await fetch(`${t.url}/v1/schema`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('type Query');
    expect(text).toContain('myPermissions');
  });

  test.each(['/v1/openapi.json', '/v1/api-doc/openapi.json'])('GET %s serves the public OpenAPI document', async (path) => {
    const res = await fetch(`${t.url}${path}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = (await res.json()) as OpenApiDoc;
    expect(doc.openapi).toBe('3.0.3');
    expect(Object.keys(doc.paths)).toContain('/tokens/me');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/health', '/schema']));
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method] as Record<string, unknown> | undefined;
        if (op) expect({ path: p, method, internal: op['x-internal'] }).toEqual({ path: p, method, internal: undefined });
      }
    }
  });

  test('both document URLs serve the same document', async () => {
    const a = await (await fetch(`${t.url}/v1/openapi.json`)).json();
    const b = await (await fetch(`${t.url}/v1/api-doc/openapi.json`)).json();
    expect(a).toEqual(b);
  });

  test('GET /v1/swagger-ui/ serves HTML that loads nothing from another host', async () => {
    const res = await fetch(`${t.url}/v1/swagger-ui/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    const urls = assetUrls(html);
    expect(urls.length).toBeGreaterThan(0);
    for (const url of urls) expect(url).not.toMatch(/^(https?:)?\/\//i);
    expect(html).not.toMatch(/<(script|link)\b[^>]*(src|href)\s*=\s*["'](https?:)?\/\//i);
  });

  test('Swagger UI assets are served locally', async () => {
    const bundle = await fetch(`${t.url}/v1/swagger-ui/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/javascript/);
    expect((await bundle.text()).length).toBeGreaterThan(1000);
    // Every relative asset the page references resolves under /v1/swagger-ui/.
    const html = await (await fetch(`${t.url}/v1/swagger-ui/`)).text();
    for (const url of assetUrls(html)) {
      const res = await fetch(new URL(url, `${t.url}/v1/swagger-ui/`));
      expect({ url, status: res.status }).toEqual({ url, status: 200 });
      await res.arrayBuffer();
    }
  });

  test("Swagger UI's init script parses and loads the document by URL, not embedded", async () => {
    const res = await fetch(`${t.url}/v1/swagger-ui/swagger-ui-init.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    const text = await res.text();
    // A document filled in with String.replace breaks this (its patterns hold `$\``).
    expect(() => new vm.Script(text, { filename: 'swagger-ui-init.js' })).not.toThrow();
    expect(text).toContain('"url": "/v1/api-doc/openapi.json"');
    expect(text).not.toContain('"openapi"');
  });

  test('GET /v1/graphiql serves HTML whose scripts and styles all come from /v1/graphiql/assets/', async () => {
    const res = await fetch(`${t.url}/v1/graphiql`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    const urls = assetUrls(html).filter((url) => !url.startsWith('data:'));
    expect(urls.length).toBeGreaterThan(0);
    for (const url of urls) expect(url).toMatch(/^\/v1\/graphiql\/assets\/[^/]+$/);
    expect(html).not.toMatch(/(src|href)\s*=\s*["'](https?:)?\/\//i);
    for (const url of urls) {
      const asset = await fetch(`${t.url}${url}`);
      expect({ url, status: asset.status }).toEqual({ url, status: 200 });
      expect(asset.headers.get('content-type')).toMatch(url.endsWith('.css') ? /^text\/css/ : /javascript/);
      await asset.arrayBuffer();
    }
  });

  test('GET /v1/asyncapi-ui serves HTML whose scripts and styles all come from /v1/asyncapi-ui/assets/, and the document it renders', async () => {
    const res = await fetch(`${t.url}/v1/asyncapi-ui`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    // The pages' CSP; this page alone adds 'unsafe-eval' (its renderer's parser compiles validators).
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self' 'unsafe-eval'");
    expect(csp).toContain("default-src 'self'");
    const html = await res.text();
    const urls = assetUrls(html).filter((url) => !url.startsWith('data:'));
    expect(urls.length).toBeGreaterThan(0);
    for (const url of urls) expect(url).toMatch(/^\/v1\/asyncapi-ui\/assets\/[^/]+$/);
    for (const url of [...urls, '/v1/asyncapi-ui/assets/init.js']) {
      const asset = await fetch(`${t.url}${url}`);
      expect({ url, status: asset.status }).toEqual({ url, status: 200 });
      expect(asset.headers.get('content-type')).toMatch(url.endsWith('.css') ? /^text\/css/ : /javascript/);
      await asset.arrayBuffer();
    }
    const doc = (await (await fetch(`${t.url}/v1/asyncapi-ui/asyncapi.json`)).json()) as { asyncapi: string; channels: Record<string, unknown> };
    expect(doc.asyncapi).toMatch(/^3\./);
    expect(Object.keys(doc.channels)).toContain('events');
    // Swagger UI and GraphiQL keep the strict policy, and the AsyncAPI page's is that policy with
    // 'unsafe-eval' in script-src and nothing else loosened.
    const strict = (await fetch(`${t.url}/v1/graphiql`)).headers.get('content-security-policy') ?? '';
    expect(strict).not.toContain('unsafe-eval');
    expect((await fetch(`${t.url}/v1/swagger-ui/`)).headers.get('content-security-policy')).toBe(strict);
    expect(csp.replace(" 'unsafe-eval'", '')).toBe(strict);
  });

  test('an unknown GraphiQL asset is 404 NOT_FOUND', async () => {
    const res = await fetch(`${t.url}/v1/graphiql/assets/nope.js`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: 'Resource not found' });
  });

  test('GET /.well-known/security.txt: RFC 9116 Contact and a future Expires', async () => {
    const res = await fetch(`${t.url}/.well-known/security.txt`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    const lines = text.split(/\r?\n/);
    const contact = lines.find((l) => l.startsWith('Contact:'));
    expect(contact).toBeDefined();
    expect(contact!.slice('Contact:'.length).trim()).not.toBe('');
    const expiresLines = lines.filter((l) => l.startsWith('Expires:'));
    expect(expiresLines).toHaveLength(1);
    const value = expiresLines[0]!.slice('Expires:'.length).trim();
    // RFC 9116 requires an RFC 3339 date-time.
    expect(value).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
    const expires = Date.parse(value);
    expect(Number.isNaN(expires)).toBe(false);
    expect(expires).toBeGreaterThan(Date.now());
  });
});

describe('documentation files and the anonymous rate budget', () => {
  const t = useTestApp();

  test("200 loads of the pages, their assets and the document leave the API's anonymous budget intact", async () => {
    const files = ['/v1/swagger-ui/', '/v1/swagger-ui/swagger-ui-init.js', '/v1/swagger-ui/index.css', '/v1/graphiql', '/v1/graphiql/assets/init.js', '/v1/asyncapi-ui', '/v1/asyncapi-ui/assets/init.js', '/v1/openapi.json', '/v1/api-doc/openapi.json', '/V1/GraphiQL'];
    for (let i = 0; i < 200; i += 1) {
      const path = files[i % files.length]!;
      const res = await fetch(`${t.url}${path}`);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
      await res.arrayBuffer();
    }
    const api = await fetch(`${t.url}/v1/schema`);
    expect(api.status).toBe(200);
    expect(api.headers.get('x-ratelimit-limit')).toBe('120');
    expect(api.headers.get('x-ratelimit-remaining')).toBe('119');
  });
});

describe('documentation helpers switched off', () => {
  const t = useTestApp({ docs: { swagger_ui: false, openapi_json: false, asyncapi_ui: false }, graphql: { playground: false } });

  test.each([
    '/v1/openapi.json',
    '/v1/api-doc/openapi.json',
    '/v1/swagger-ui/',
    '/v1/swagger-ui/swagger-ui-bundle.js',
    '/v1/graphiql',
    '/v1/graphiql/assets/graphiql.js',
    '/v1/asyncapi-ui',
    '/v1/asyncapi-ui/asyncapi.json',
    '/v1/asyncapi-ui/assets/asyncapi.js',
  ])('GET %s is 404 NOT_FOUND', async (path) => {
    const res = await fetch(`${t.url}${path}`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: 'Resource not found' });
  });

  test('the schema download and security.txt stay available', async () => {
    expect((await fetch(`${t.url}/v1/schema`)).status).toBe(200);
    expect((await fetch(`${t.url}/.well-known/security.txt`)).status).toBe(200);
  });
});
