/**
 * `Idempotency-Key` on REST changes and GraphQL mutations: a repeat answers the first result and
 * does the work once; another request under the key, or another credential, is kept apart; a
 * failed first attempt keeps nothing; answers carrying a credential are never recorded.
 */
import { randomUUID } from 'node:crypto';
import { useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

describe('Idempotency-Key', () => {
  const t = useTestApp({ rate_limits: { enabled: false } });
  let owner: LoggedIn;

  beforeAll(async () => {
    owner = await devLogin(t, `idem-${randomUUID()}@idem.test`);
  });

  const emit = (token: string, key: string | null, body: Record<string, unknown>) =>
    fetch(`${t.url}/v1/events/emit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify(body),
    });
  const count = async (externalId: string) => {
    const rows = await t.app.db.knex('events').where({ account_id: owner.accountId, external_id: externalId }).count<{ count: string | number }[]>('* as count');
    return Number(rows[0]!.count);
  };

  test('a repeat with the same key and body answers the first result once more and stores one event', async () => {
    const key = randomUUID();
    const body = { type: 'platform_a:follow', platform: 'platform_a', raw: { n: 1 }, external_id: `idem-${key}` };
    const first = await emit(owner.accessToken, key, body);
    expect(first.status).toBe(201);
    const firstBody = await first.text();
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    for (let i = 0; i < 3; i++) {
      const again = await emit(owner.accessToken, key, body);
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.text()).toBe(firstBody);
    }
    expect(await count(`idem-${key}`)).toBe(1);
    // Kept in the relational store, so every node and a restart see it.
    const row = await t.app.db.knex('idempotency_keys').where({ key }).first('state', 'status');
    expect(row).toMatchObject({ state: 'done', status: 201 });
  });

  test('the same key with another body is 409 CONFLICT; another credential has keys of its own', async () => {
    const key = randomUUID();
    const body = { type: 'platform_a:follow', platform: 'platform_a', raw: { n: 2 }, external_id: `idem-${key}` };
    expect((await emit(owner.accessToken, key, body)).status).toBe(201);
    const other = await emit(owner.accessToken, key, { ...body, raw: { n: 3 } });
    expect(other.status).toBe(409);
    expect(await other.json()).toEqual({ error: 'CONFLICT', message: 'Idempotency-Key was already used with a different request' });
    const made = await api(t, 'POST', '/api-keys', { token: owner.accessToken, body: { label: 'idem', permissions: ['events:create', 'events:read'] } });
    const apiKey = (made.body.data as { key: string }).key;
    const second = await emit(apiKey, key, { ...body, external_id: `idem-other-${key}` });
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
  });

  test('a first attempt that failed keeps nothing: its retry runs again', async () => {
    const key = randomUUID();
    const missing = randomUUID();
    const patch = () =>
      fetch(`${t.url}/v1/overlays/${missing}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${owner.accessToken}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ name: 'x', version: 1 }),
      });
    const first = await patch();
    expect(first.status).toBe(404);
    const again = await patch();
    expect(again.status).toBe(404);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await t.app.db.knex('idempotency_keys').where({ key }).first()).toBeUndefined();
  });

  test('GraphQL mutations read the same header: one event, the first answer replayed', async () => {
    const key = randomUUID();
    const externalId = `idem-gql-${key}`;
    const query = 'mutation ($input: EmitEventInput!) { emitEvent(input: $input) { id } }';
    const send = () =>
      fetch(`${t.url}/v1/gql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.accessToken}`, 'content-type': 'application/json', accept: 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ query, variables: { input: { type: 'platform_a:follow', platform: 'platform_a', raw: { g: 1 }, externalId } } }),
      });
    const first = await send();
    const firstBody = (await first.json()) as { data?: { emitEvent: { id: string } }; errors?: unknown };
    expect(firstBody.errors).toBeUndefined();
    const again = await send();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(firstBody);
    expect(await count(externalId)).toBe(1);
  });

  test('an answer carrying a credential takes no key: a new API key is never kept in the store', async () => {
    const key = randomUUID();
    const create = () =>
      fetch(`${t.url}/v1/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.accessToken}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ label: `idem-${key.slice(0, 8)}`, permissions: ['events:read'] }),
      });
    const first = (await (await create()).json()) as { data: { key: string } };
    const second = (await (await create()).json()) as { data: { key: string } };
    expect(second.data.key).not.toBe(first.data.key);
    expect(await t.app.db.knex('idempotency_keys').where({ key }).first()).toBeUndefined();
  });
});
