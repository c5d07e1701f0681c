/**
 * GraphQL input the fuzzer found reaching PostgreSQL: ids that are not UUIDs, strings
 * longer than their column, and bodies that are not JSON. Each is a 4xx with an error code, never
 * a 5xx, and the code is the one REST gives for the same input.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';

describe('GraphQL input that PostgreSQL would refuse', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });

  test.each([['99999999999999999999'], ['true'], ['""'], ['"not-a-uuid"'], ['"\\u00e9"']])('an inline id %s is a VALIDATION_ERROR, as on REST', async (literal) => {
    const user = await devLogin(t);
    const g = await gql(t.url, `mutation { revokeSession(id: ${literal}) }`, {}, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    const rest = await api(t, 'DELETE', '/auth/sessions/not-a-uuid', { token: user.accessToken });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toBe('VALIDATION_ERROR');
  });

  test.each([[12345], [['a']], ['x'.repeat(300)]])('an id variable %p is a VALIDATION_ERROR', async (value) => {
    const user = await devLogin(t);
    const g = await gql(t.url, 'mutation($id: UUID!) { revokeSession(id: $id) }', { id: value }, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
  });

  test('a well-formed id still reaches the operation', async () => {
    const user = await devLogin(t);
    const g = await gql(t.url, 'mutation($id: UUID!) { revokeSession(id: $id) }', { id: randomUUID() }, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  test('a name longer than its column is a 400 VALIDATION_ERROR on both protocols, and nothing is stored', async () => {
    const user = await devLogin(t);
    const name = 'n'.repeat(500);
    const g = await gql(t.url, 'mutation($name: String!) { createAccount(input: { name: $name }) { id } }', { name }, { authorization: `Bearer ${user.accessToken}` });
    expect(g.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    const rest = await api(t, 'POST', '/accounts', { token: user.accessToken, body: { name } });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toBe('VALIDATION_ERROR');
    const mine = await api<{ data: { name: string }[] }>(t, 'GET', '/accounts', { token: user.accessToken });
    expect(mine.body.data.some((a) => a.name === name)).toBe(false);
  });

  test.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/graphql'], [null]])('a %s body on /v1/gql is 415 UNSUPPORTED_MEDIA_TYPE with a JSON error body, as REST answers', async (type) => {
    const res = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers: type ? { 'content-type': type } : {}, body: type ? '{ __typename }' : undefined });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({ error: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported content type' });
    if (!type) return;
    const rest = await fetch(`${t.url}/v1/auth/dev/login`, { method: 'POST', headers: { 'content-type': type }, body: '{}' });
    expect(rest.status).toBe(415);
    expect(await rest.json()).toEqual({ error: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported content type' });
  });
});
