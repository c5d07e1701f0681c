/**
 * The route index (src/http/operations.ts) against the lookup it replaces: express-openapi-validator's
 * metadata step (through its public `middleware()`; the library is a test oracle only, a
 * devDependency), run side by side on the same document for concrete paths of every route, in
 * other letter case, with a trailing slash, with encoded and malformed parameters, and with every
 * other method. Both must pick the same template with the same parameters, or refuse alike.
 *
 * Then the compiled validators (src/http/validator.ts): every operation's compile, and a response
 * that does not fit its declared schema is refused.
 */
import * as OpenApiValidator from 'express-openapi-validator';
import { openapiDocument } from '../../generated/openapi-document';
import { routes } from '../../generated/rest';
import { createOperationIndex, MALFORMED } from '../../src/http/operations';
import { prepareRequest } from '../../src/http/request';
import { documentValidators, ValidationRefusal } from '../../src/http/validator';
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
  let libraryLookup: (method: string, path: string) => Promise<Outcome>;
  const index = createOperationIndex(routes);
  const ours = (method: string, path: string): Outcome => {
    const found = index.resolve(method, path);
    if (found === MALFORMED) return { refused: 400 };
    if (found) return { route: `${found.route.method.toUpperCase()} ${found.route.path}`, params: found.params };
    return apiPath(path) ? { refused: 404 } : 'passed';
  };

  beforeAll(() => {
    const steps = OpenApiValidator.middleware({
      apiSpec: structuredClone(openapiDocument) as never,
      validateApiSpec: false,
      validateRequests: false,
      validateResponses: false,
      ignoreUndocumented: false,
      ignorePaths: (p: string) => !apiPath(p),
    }) as unknown as ((req: unknown, res: unknown, next: (error?: unknown) => void) => unknown)[];
    const step = steps.find((s) => s.name === 'metadataMiddleware');
    if (!step) throw new Error('express-openapi-validator: no metadata step');
    libraryLookup = async (method, path) => {
      const req = fakeRequest(method, path);
      const error = await new Promise<unknown>((resolve) => {
        try {
          void step(req, {}, resolve);
        } catch (thrown) {
          resolve(thrown ?? new Error('thrown'));
        }
      });
      if (error) {
        const status = (error as { status?: number }).status ?? 0;
        // The error mapper answers 404 and 405 alike (NOT_FOUND).
        return { refused: status === 405 ? 404 : status };
      }
      const openapi = req.openapi as { openApiRoute: string; pathParams: Record<string, string> } | undefined;
      if (openapi) return { route: `${method} ${openapi.openApiRoute}`, params: openapi.pathParams };
      return apiPath(path) ? { refused: 404 } : 'passed';
    };
  });

  test('every route, its method variants, case, trailing slash and parameter encodings', async () => {
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
        expect({ method, path, outcome: ours(method, path) }).toEqual({ method, path, outcome: await libraryLookup(method, path) });
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

describe('the validators compiled from the document', () => {
  const { request, response } = documentValidators(true);
  const resolve = (method: string, url: string) => {
    const found = createOperationIndex(routes).resolve(method, url.split('?')[0]!);
    if (!found || found === MALFORMED) throw new Error(`no operation for ${method} ${url}`);
    return found;
  };
  const refusalOf = (check: () => void) => {
    try {
      check();
    } catch (error) {
      return error;
    }
    return null;
  };

  test('every operation compiles (what the document uses, the validator implements)', () => {
    for (const route of routes) {
      const params = Object.fromEntries([...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => [m[1]!, 'x']));
      const req = prepareRequest({ method: route.method.toUpperCase(), url: route.path, headers: { 'content-type': 'application/json' } } as never);
      req.body = {};
      const refused = refusalOf(() => request.check(req, { route, params }));
      // Empty bodies and placeholder parameters are refused by schemas, never by a failed compile.
      if (refused && !(refused instanceof ValidationRefusal) && (refused as { code?: string }).code !== 'VALIDATION_ERROR') throw refused;
    }
  });

  test('a parameter is coerced and completed with its default; a body is not coerced', () => {
    const req = prepareRequest({ method: 'GET', url: '/v1/events?page=2', headers: {} } as never);
    request.check(req, resolve('GET', req.url!));
    expect(req.query).toEqual({ page: 2, limit: 25 });
    const emit = prepareRequest({ method: 'POST', url: '/v1/events/emit', headers: { 'content-type': 'application/json' } } as never);
    emit.body = { type: 'platform_a:follow', platform: 'platform_a', raw: {}, external_id: 5 };
    const refused = refusalOf(() => request.check(emit, resolve('POST', '/v1/events/emit'))) as ValidationRefusal;
    expect(refused).toBeInstanceOf(ValidationRefusal);
    expect(refused.errors).toEqual([{ path: '/body/external_id', message: 'must be string', errorCode: 'type.openapi.validation' }]);
  });

  test('a body for a media type the operation does not declare is 415; an unknown query parameter is named', () => {
    const emit = prepareRequest({ method: 'POST', url: '/v1/events/emit', headers: { 'content-type': 'text/plain' } } as never);
    expect((refusalOf(() => request.check(emit, resolve('POST', '/v1/events/emit'))) as ValidationRefusal).status).toBe(415);
    const unknown = prepareRequest({ method: 'GET', url: '/v1/events?nope=1', headers: {} } as never);
    expect((refusalOf(() => request.check(unknown, resolve('GET', unknown.url!))) as ValidationRefusal).errors).toEqual([{ path: '/query/nope', message: "Unknown query parameter 'nope'" }]);
  });

  test('a response that does not fit its schema is refused; one that fits passes', () => {
    const req = prepareRequest({ method: 'GET', url: '/v1/health', headers: {} } as never);
    const found = resolve('GET', '/v1/health');
    const res = { statusCode: 200, getHeader: () => undefined } as never;
    const refused = refusalOf(() => response.check(req, res, found.route, { unexpected: true })) as ValidationRefusal;
    expect(refused).toBeInstanceOf(ValidationRefusal);
    expect(refused.status).toBe(500);
    const undeclared = { statusCode: 418, getHeader: () => undefined } as never;
    expect((refusalOf(() => response.check(req, undeclared, found.route, {})) as ValidationRefusal).message).toBe("no schema defined for status code '418' in the openapi spec");
  });
});
