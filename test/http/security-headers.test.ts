/**
 * Security headers through real HTTP: nosniff, no framing and a CSP that
 * lets nothing load on every API answer; the documentation pages' own CSP, under which Swagger UI
 * and GraphiQL still work (no inline scripts, only same-origin assets, 'unsafe-inline' styles on
 * those routes alone); HSTS and upgrade-insecure-requests in production only.
 */
import { startTestApp, useTestApp, type TestApp } from '../helpers/app';

/** The CSP as directive → sources. */
function csp(res: Response): Map<string, string[]> {
  const header = res.headers.get('content-security-policy');
  expect(header).not.toBeNull();
  return new Map(
    header!
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((parts) => parts[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

/** Every <script> element: its src (or null) and its inline text. */
function scripts(html: string): { src: string | null; body: string }[] {
  return [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)].map((m) => ({ src: /\bsrc\s*=\s*["']([^"']*)["']/i.exec(m[1]!)?.[1] ?? null, body: m[2]!.trim() }));
}

function expectCommonHeaders(res: Response): void {
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-powered-by')).toBeNull();
}

describe('security headers (development and test)', () => {
  const t = useTestApp();

  test.each([
    ['GET', '/v1/health', undefined],
    ['GET', '/v1/tokens/me', undefined],
    ['GET', '/v1/no-such-path', undefined],
    ['POST', '/v1/gql', JSON.stringify({ query: '{ __typename }' })],
    ['GET', '/v1/openapi.json', undefined],
    ['GET', '/.well-known/security.txt', undefined],
  ])('%s %s: nosniff, no framing, a CSP that loads nothing, no HSTS', async (method, path, body) => {
    const res = await fetch(`${t.url}${path}`, { method, body, headers: body ? { 'content-type': 'application/json' } : {} });
    await res.arrayBuffer();
    expectCommonHeaders(res);
    const policy = csp(res);
    expect(policy.get('default-src')).toEqual(["'none'"]);
    expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
    expect(policy.has('upgrade-insecure-requests')).toBe(false);
    expect(res.headers.get('strict-transport-security')).toBeNull();
  });

  test.each(['/v1/swagger-ui/', '/v1/graphiql'])('%s has its own CSP: same-origin assets, no inline script, inline styles allowed', async (path) => {
    const res = await fetch(`${t.url}${path}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expectCommonHeaders(res);
    const policy = csp(res);
    expect(policy.get('default-src')).toEqual(["'self'"]);
    expect(policy.get('script-src')).toEqual(["'self'"]);
    expect(policy.get('script-src-attr')).toEqual(["'none'"]);
    expect(policy.get('style-src')).toEqual(["'self'", "'unsafe-inline'"]);
    expect(policy.get('connect-src')).toEqual(["'self'"]);
    expect(policy.get('object-src')).toEqual(["'none'"]);
    expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
    // No CDN, nor any other host, in any directive.
    for (const [directive, sources] of policy) {
      for (const source of sources) expect({ directive, source }).toEqual({ directive, source: expect.stringMatching(/^('[a-z-]+'|data:)$/) });
    }
    // Everything the page runs is a same-origin file the policy allows; nothing inline.
    const found = scripts(html);
    expect(found.length).toBeGreaterThan(0);
    for (const script of found) {
      expect(script.body).toBe('');
      expect(script.src).not.toMatch(/^(https?:)?\/\//i);
      const asset = await fetch(new URL(script.src!, `${t.url}${path}`));
      expect({ src: script.src, status: asset.status }).toEqual({ src: script.src, status: 200 });
      expect(asset.headers.get('content-type')).toMatch(/javascript/);
      await asset.arrayBuffer();
    }
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
  });

  test('GraphiQL bootstraps from a served file that points at the same-origin endpoint', async () => {
    const res = await fetch(`${t.url}/v1/graphiql/assets/init.js`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("url: '/v1/gql'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  test("'unsafe-inline' appears on the documentation routes only", async () => {
    for (const path of ['/v1/health', '/v1/openapi.json', '/v1/schema', '/v1/api-doc/openapi.json']) {
      const res = await fetch(`${t.url}${path}`);
      await res.arrayBuffer();
      expect({ path, csp: res.headers.get('content-security-policy') }).toEqual({ path, csp: expect.not.stringContaining('unsafe-inline') });
    }
  });
});

describe('security headers in production', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: 'production', mail: { allow_log_transport: true }, auth: { jwt_secret: 'p'.repeat(48) }, log: { level: 'silent' }, secrets: { encryption_keys: [{ id: 'k1', key: 'A'.repeat(43) + '=' }] } });
  });
  afterAll(async () => {
    await t?.stop();
  });

  test('HSTS and upgrade-insecure-requests are added', async () => {
    const res = await fetch(`${t.url}/v1/health`);
    await res.arrayBuffer();
    expectCommonHeaders(res);
    expect(res.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
    expect(csp(res).has('upgrade-insecure-requests')).toBe(true);

    const docs = await fetch(`${t.url}/v1/swagger-ui/`);
    await docs.arrayBuffer();
    expect(docs.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
    expect(csp(docs).has('upgrade-insecure-requests')).toBe(true);
  });
});
