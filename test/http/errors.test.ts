/**
 * The one error mapping (Part 1, "Errors"): body-parser, router and OpenAPI validator failures on
 * the real app; scrubbed 5xx through the real REST error handler and GraphQL formatter; request
 * ids; GraphQL parse/validation failures and the refusal of subscriptions.
 */
import express from 'express';
import { GraphQLError } from 'graphql';
import request from 'supertest';
import { AppError } from '../../src/errors';
import { errorHandler, notFoundHandler } from '../../src/http/errors';
import { formatGraphQLError } from '../../src/http/graphql/endpoint';
import { createLogger } from '../../src/infra/logger';
import { gql, useTestApp } from '../helpers/app';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** An error body has exactly error and message, plus details when present. */
function expectErrorBody(body: unknown, error: string, message?: string | RegExp) {
  expect(typeof body).toBe('object');
  const b = body as Record<string, unknown>;
  const keys = Object.keys(b).sort();
  expect(keys.every((k) => ['details', 'error', 'message'].includes(k))).toBe(true);
  expect(keys).toEqual(expect.arrayContaining(['error', 'message']));
  expect(b.error).toBe(error);
  expect(typeof b.message).toBe('string');
  if (typeof message === 'string') expect(b.message).toBe(message);
  else if (message) expect(b.message).toMatch(message);
  if ('details' in b) expect(typeof b.details === 'object' && b.details !== null && !Array.isArray(b.details)).toBe(true);
}

describe('REST error mapping on the real app', () => {
  const t = useTestApp();

  test('malformed JSON body → 400 BAD_REQUEST "Malformed JSON in request body"', async () => {
    const res = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error: 'BAD_REQUEST', message: 'Malformed JSON in request body' });
  });

  test('unknown path → 404 NOT_FOUND "Resource not found"', async () => {
    const res = await fetch(`${t.url}/v1/does-not-exist`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: 'Resource not found' });
  });

  test('unknown path outside /v1 → 404 NOT_FOUND', async () => {
    const res = await fetch(`${t.url}/nowhere`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: 'Resource not found' });
  });

  test('undeclared method on a declared path → 404 NOT_FOUND', async () => {
    const res = await fetch(`${t.url}/v1/health`, { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: 'Resource not found' });
  });

  test('unknown query parameter → 400 VALIDATION_ERROR naming it, with details.fields', async () => {
    const res = await fetch(`${t.url}/v1/health?bogus=1`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; message: string; details?: { fields?: unknown } };
    expectErrorBody(body, 'VALIDATION_ERROR', /bogus/);
    expect(Array.isArray(body.details?.fields)).toBe(true);
    const fields = body.details!.fields as { field: string; message: string }[];
    expect(fields.length).toBeGreaterThan(0);
    for (const f of fields) expect(f).toEqual({ field: expect.any(String), message: expect.any(String) });
    expect(fields.some((f) => `${f.field} ${f.message}`.includes('bogus'))).toBe(true);
  });

  test('every error body has only error, message and optionally details', async () => {
    const cases: [string, RequestInit | undefined][] = [
      ['/v1/does-not-exist', undefined],
      ['/v1/health', { method: 'DELETE' }],
      ['/v1/health?bogus=1', undefined],
      ['/v1/tokens/me', undefined],
      ['/v1/gql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' }],
    ];
    for (const [path, init] of cases) {
      const res = await fetch(`${t.url}${path}`, init);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const body = (await res.json()) as { error: string };
      expectErrorBody(body, body.error);
    }
  });

  test('X-Request-Id: a valid client id is echoed', async () => {
    const res = await fetch(`${t.url}/v1/health`, { headers: { 'x-request-id': 'client-req.42:abc_DEF' } });
    expect(res.headers.get('x-request-id')).toBe('client-req.42:abc_DEF');
    await res.text();
    const err = await fetch(`${t.url}/v1/does-not-exist`, { headers: { 'x-request-id': 'trace-1' } });
    expect(err.headers.get('x-request-id')).toBe('trace-1');
    await err.text();
  });

  test('X-Request-Id: absent or invalid → a generated uuid', async () => {
    const none = await fetch(`${t.url}/v1/health`);
    expect(none.headers.get('x-request-id')).toMatch(UUID);
    await none.text();
    for (const bad of ['has spaces in it', 'x'.repeat(129), 'semi;colon', '<script>']) {
      const res = await fetch(`${t.url}/v1/health`, { headers: { 'x-request-id': bad } });
      const id = res.headers.get('x-request-id');
      expect({ bad, id: UUID.test(id ?? '') }).toEqual({ bad, id: true });
      await res.text();
    }
    const a = (await fetch(`${t.url}/v1/health`)).headers.get('x-request-id');
    const b = (await fetch(`${t.url}/v1/health`)).headers.get('x-request-id');
    expect(a).not.toBe(b);
  });
});

describe('5xx scrubbing through the real REST error handler', () => {
  const log = createLogger({ level: 'silent', service: 'x', env: 'test', version: '0' });
  const app = express();
  app.get('/plain', () => {
    throw new Error('secret detail');
  });
  app.get('/async', async () => {
    await Promise.resolve();
    throw new Error('secret async detail');
  });
  app.get('/pg', () => {
    throw Object.assign(new Error('relation "secret_table" does not exist'), { severity: 'ERROR', code: '42P01' });
  });
  app.get('/redis', () => {
    const error = new Error('WRONGTYPE secret key holds the wrong kind of value');
    error.name = 'ReplyError';
    throw error;
  });
  app.get('/app-db', () => {
    throw new AppError('DATABASE_ERROR', 'leaky text');
  });
  app.get('/app-internal', () => {
    throw new AppError('INTERNAL_SERVER_ERROR', 'leaky internal', { secret: 'x' });
  });
  app.get('/forbidden', () => {
    throw AppError.forbidden('Missing permission: x:y');
  });
  // A store outage: pg's refused connection, a server shutting down (57P01), the pool waiting in vain.
  app.get('/db-refused', () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432 secret'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' });
  });
  app.get('/db-shutdown', () => {
    throw Object.assign(new Error('terminating connection due to administrator command'), { severity: 'FATAL', code: '57P01' });
  });
  app.get('/db-terminated', () => {
    throw new Error('Connection terminated unexpectedly');
  });
  app.get('/pool-timeout', () => {
    const error = new Error('Knex: Timeout acquiring a connection. The pool is probably full.');
    error.name = 'KnexTimeoutError';
    throw error;
  });
  app.get('/throws-string', () => {
    throw 'a string with a secret';
  });
  app.use(notFoundHandler);
  app.use(errorHandler(log));

  test('a plain Error → 500 INTERNAL_SERVER_ERROR, message scrubbed', async () => {
    for (const path of ['/plain', '/async', '/throws-string']) {
      const res = await request(app).get(path);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'INTERNAL_SERVER_ERROR', message: 'An internal server error occurred' });
      expect(res.text).not.toContain('secret');
    }
  });

  test('a pg-like error (severity + SQLSTATE) → 500 DATABASE_ERROR, scrubbed', async () => {
    const res = await request(app).get('/pg');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'DATABASE_ERROR', message: 'An internal database error occurred' });
    expect(res.text).not.toContain('secret');
  });

  test('a store outage → 503 SERVICE_UNAVAILABLE with Retry-After, scrubbed, never a 500', async () => {
    for (const path of ['/db-refused', '/db-shutdown', '/db-terminated', '/pool-timeout']) {
      const res = await request(app).get(path);
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 503, body: { error: 'SERVICE_UNAVAILABLE', message: 'The service is temporarily unavailable' } });
      expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      expect(res.text).not.toContain('secret');
    }
  });

  test('an ioredis ReplyError → 500 REDIS_ERROR, scrubbed', async () => {
    const res = await request(app).get('/redis');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'REDIS_ERROR', message: 'An internal cache error occurred' });
    expect(res.text).not.toContain('secret');
  });

  test('an AppError with a 5xx code has its message and details scrubbed', async () => {
    const db = await request(app).get('/app-db');
    expect(db.status).toBe(500);
    expect(db.body).toEqual({ error: 'DATABASE_ERROR', message: 'An internal database error occurred' });
    const internal = await request(app).get('/app-internal');
    expect(internal.status).toBe(500);
    expect(internal.body).toEqual({ error: 'INTERNAL_SERVER_ERROR', message: 'An internal server error occurred' });
  });

  test('a 4xx AppError is returned verbatim; unmatched routes are NOT_FOUND', async () => {
    const res = await request(app).get('/forbidden');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: x:y' });
    const missing = await request(app).get('/missing');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'NOT_FOUND', message: 'Resource not found' });
  });
});

describe('formatGraphQLError', () => {
  const log = createLogger({ level: 'silent', service: 'x', env: 'test', version: '0' });
  const wrap = (original: Error) => new GraphQLError(original.message, { originalError: original, path: ['myPermissions'] });

  test('a plain Error becomes INTERNAL_SERVER_ERROR with the scrubbed message', () => {
    const formatted = formatGraphQLError(wrap(new Error('secret detail')), log);
    expect(formatted.message).toBe('An internal server error occurred');
    expect(formatted.extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR' });
    expect(formatted.path).toEqual(['myPermissions']);
    expect(JSON.stringify(formatted)).not.toContain('secret');
  });

  test('database and cache failures keep their code, scrubbed', () => {
    const pg = formatGraphQLError(wrap(Object.assign(new Error('secret sql'), { severity: 'ERROR', code: '42P01' })), log);
    expect(pg).toMatchObject({ message: 'An internal database error occurred', extensions: { code: 'DATABASE_ERROR' } });
    const redisError = new Error('secret reply');
    redisError.name = 'ReplyError';
    const redis = formatGraphQLError(wrap(redisError), log);
    expect(redis).toMatchObject({ message: 'An internal cache error occurred', extensions: { code: 'REDIS_ERROR' } });
    const leaky = formatGraphQLError(wrap(new AppError('DATABASE_ERROR', 'leaky text')), log);
    expect(leaky).toMatchObject({ message: 'An internal database error occurred', extensions: { code: 'DATABASE_ERROR' } });
  });

  test('a store outage is SERVICE_UNAVAILABLE with the same message as on REST', () => {
    const refused = formatGraphQLError(wrap(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })), log);
    expect(refused).toMatchObject({ message: 'The service is temporarily unavailable', extensions: { code: 'SERVICE_UNAVAILABLE' } });
    const platform = formatGraphQLError(wrap(new AppError('PLATFORM_UNAVAILABLE', 'leaky platform text')), log);
    expect(platform).toMatchObject({ message: 'The platform is unavailable', extensions: { code: 'PLATFORM_UNAVAILABLE' } });
  });

  test('an AppError keeps its code and message', () => {
    const formatted = formatGraphQLError(wrap(new AppError('FORBIDDEN', 'Missing permission: x:y')), log);
    expect(formatted.message).toBe('Missing permission: x:y');
    expect(formatted.extensions).toEqual({ code: 'FORBIDDEN' });
    const withDetails = formatGraphQLError(wrap(AppError.validation('label is invalid', { fields: [{ field: 'label', message: 'is invalid' }] })), log);
    expect(withDetails.extensions).toEqual({ code: 'VALIDATION_ERROR', details: { fields: [{ field: 'label', message: 'is invalid' }] } });
  });

  test('parse/validation errors (no original error) are BAD_REQUEST; variable errors VALIDATION_ERROR', () => {
    expect(formatGraphQLError(new GraphQLError('Syntax Error: Expected Name, found <EOF>.'), log).extensions).toEqual({ code: 'BAD_REQUEST' });
    expect(formatGraphQLError(new GraphQLError('Variable "$id" of required type "ID!" was not provided.'), log).extensions).toEqual({
      code: 'VALIDATION_ERROR',
    });
  });
});

describe('GraphQL request errors on the real app', () => {
  const t = useTestApp();

  // With `accept: application/json` the GraphQL-over-HTTP spec answers request errors with 200;
  // never with a 5xx.
  test('a syntax error → BAD_REQUEST', async () => {
    const res = await gql(t.url, '{ myPermissions { context ');
    expect(res.status).toBeLessThan(500);
    expect(res.body.data ?? null).toBeNull();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(res.body.errors?.[0]?.message).toMatch(/^Syntax Error/);
  });

  test('an unknown field → BAD_REQUEST naming it', async () => {
    const res = await gql(t.url, '{ noSuchField }');
    expect(res.status).toBeLessThan(500);
    expect(res.body.data ?? null).toBeNull();
    expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(res.body.errors?.[0]?.message).toContain('noSuchField');
  });

  test('subscriptions are refused', async () => {
    for (const query of ['subscription { x }', 'subscription { myPermissions { context } }']) {
      const res = await gql(t.url, query);
      expect(res.status).toBeLessThan(500);
      expect(res.body.data ?? null).toBeNull();
      expect(res.body.errors?.length).toBeGreaterThan(0);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    }
  });

  test('with accept: application/graphql-response+json a request error is HTTP 400', async () => {
    const res = await fetch(`${t.url}/v1/gql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query: '{ noSuchField }' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { errors: { extensions: { code: string } }[] };
    expect(body.errors[0]!.extensions.code).toBe('BAD_REQUEST');
  });

  test('a request without a query is refused, not a 500', async () => {
    const res = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: '{}' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    await res.text();
  });
});
