/**
 * The route index (src/http/operations.ts) against the lookup it replaces: express-openapi-validator's
 * own metadata step, run side by side on the same document for concrete paths of every route, in
 * other letter case, with a trailing slash, with encoded and malformed parameters, and with every
 * other method. Both must pick the same template with the same parameters, or refuse alike.
 */
import { applyOpenApiMetadata } from 'express-openapi-validator/dist/middlewares';
import { OpenApiContext } from 'express-openapi-validator/dist/framework/openapi.context';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader';
import { openapiDocument } from '../../generated/openapi-document';
import { routes } from '../../generated/rest';
import { createOperationIndex, MALFORMED } from '../../src/http/operations';
import { useTestApp } from '../helpers/app';
import { devLogin } from '../helpers/users';

type Outcome = { route: string; params: Record<string, string> } | { refused: number } | 'passed';

/** What app.ts validates: /v1 and below, in any letter case. */
const apiPath = (path: string) => /^\/v1(\/|$)/i.test(path);
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];

function fakeRequest(method: string, path: string) {
  return { method, path, url: path, originalUrl: path, baseUrl: '', app: { enabled: () => false }, params: {} } as Record<string, unknown>;
}

describe('the route index picks what the validator picked', () => {
  let libraryLookup: (method: string, path: string) => Outcome;
  const index = createOperationIndex(routes);
  const ours = (method: string, path: string): Outcome => {
    const found = index.resolve(method, path);
    if (found === MALFORMED) return { refused: 400 };
    if (found) return { route: `${found.route.method.toUpperCase()} ${found.route.path}`, params: found.params };
    return apiPath(path) ? { refused: 404 } : 'passed';
  };

  beforeAll(async () => {
    const spec = await new OpenApiSpecLoader({ apiDoc: structuredClone(openapiDocument) as never, validateApiSpec: false, $refParser: { mode: 'bundle' } }).load();
    const context = new OpenApiContext(spec, (p: string) => !apiPath(p), false, false);
    const step = applyOpenApiMetadata(context, undefined as never);
    libraryLookup = (method, path) => {
      const req = fakeRequest(method, path);
      try {
        let passed = false;
        step(req as never, {} as never, () => {
          passed = true;
        });
        const openapi = req.openapi as { openApiRoute: string; pathParams: Record<string, string> } | undefined;
        if (openapi) return { route: `${method} ${openapi.openApiRoute}`, params: openapi.pathParams };
        return passed ? (apiPath(path) ? { refused: 404 } : 'passed') : { refused: 0 };
      } catch (error) {
        const status = (error as { status?: number }).status ?? 0;
        // The error mapper answers 404 and 405 alike (NOT_FOUND).
        return { refused: status === 405 ? 404 : status };
      }
    };
  });

  test('every route, its method variants, case, trailing slash and parameter encodings', () => {
    const paths = new Set<string>();
    for (const route of routes) {
      const fill = (value: string) => route.path.replace(/\{[^}]+\}/g, value);
      for (const value of ['abc', 'x%20y', 'ideas', 'categories', '%E2%82%AC', 'a.b']) paths.add(fill(value));
      paths.add(fill('abc').toUpperCase().replace('/V1/', '/v1/'));
      paths.add(`${fill('abc')}/`);
      paths.add(`${fill('abc')}/extra`);
      if (route.path.includes('{')) paths.add(fill('%E0%A4%A'));
    }
    for (const extra of ['/v1/', '/v1', '/v1//health', '/v1/health//', '/other', '/V1/HEALTH']) paths.add(extra);
    let compared = 0;
    for (const path of paths) {
      for (const method of METHODS) {
        expect({ method, path, outcome: ours(method, path) }).toEqual({ method, path, outcome: libraryLookup(method, path) });
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(routes.length * 6);
  });
});

describe('the letter case of /v1 changes nothing', () => {
  const t = useTestApp();

  test('/V1/... is rate-limited and validated like /v1/...', async () => {
    const user = await devLogin(t);
    const headers = { authorization: `Bearer ${user.accessToken}` };
    const upper = await fetch(`${t.url}/V1/EVENTS?limit=1000`, { headers });
    expect(upper.status).toBe(400);
    expect(((await upper.json()) as { error: string }).error).toBe('VALIDATION_ERROR');
    const health = await fetch(`${t.url}/V1/Health`);
    expect(health.status).toBe(200);
    expect(health.headers.get('x-ratelimit-limit')).not.toBeNull();
    const fine = await fetch(`${t.url}/V1/events?limit=5`, { headers });
    expect(fine.status).toBe(200);
  });
});
