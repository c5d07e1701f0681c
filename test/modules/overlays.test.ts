/**
 * Overlays and widgets over real HTTP and WebSocket: create, list, delete; overlay token rotation,
 * shared overlay tokens with expires_at, widget token rotation and revocation (open sockets end
 * with TOKEN_REVOKED); widget access entries with the documented fields; account isolation; and
 * presence on an overlay resolved through this module's channel-account resolver.
 */
import { randomUUID } from 'node:crypto';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, within, type TestSocket } from '../helpers/ws';

const t = useTestApp({ rate_limits: { enabled: false } });
const opened = closeSocketsAfterEach();

let owner: LoggedIn;
let stranger: LoggedIn;
beforeAll(async () => {
  owner = await devLogin(t, `ov-${randomUUID()}@example.test`, 'Overlay Owner');
  stranger = await devLogin(t);
});

async function socketWith(token: string, channel: string): Promise<TestSocket> {
  const s = await connect(`${t.wsUrl}?token=${encodeURIComponent(token)}`);
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  s.send({ type: 'subscribe', channel });
  expect(await s.next()).toEqual({ type: 'subscribed', channel });
  return s;
}

const create = async (kind: 'overlays' | 'widgets', name: string) => {
  const res = await api(t, 'POST', `/${kind}`, { token: owner.accessToken, body: { name } });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; account_id: string; name: string; settings: Record<string, unknown>; version: number; created_at: string; updated_at: string };
};

describe('overlays', () => {
  test('create, list and delete; another account sees none of it', async () => {
    const overlay = await create('overlays', 'Alerts');
    expect(overlay).toEqual({ id: expect.any(String), account_id: owner.accountId, name: 'Alerts', settings: {}, version: 1, created_at: expect.any(String), updated_at: expect.any(String) });
    const list = await api(t, 'GET', '/overlays', { token: owner.accessToken });
    expect((list.body.data as { id: string }[]).map((o) => o.id)).toContain(overlay.id);
    expect((await api(t, 'GET', '/overlays', { token: stranger.accessToken })).body.data).toEqual([]);
    const foreign = await api(t, 'DELETE', `/overlays/${overlay.id}`, { token: stranger.accessToken });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ error: 'NOT_FOUND', message: 'Overlay not found' });
    expect((await api(t, 'DELETE', `/overlays/${overlay.id}`, { token: owner.accessToken })).body).toEqual({ success: true });
    expect((await api(t, 'GET', '/overlays', { token: owner.accessToken })).body.data).not.toContainEqual(expect.objectContaining({ id: overlay.id }));
  });

  test('the overlay token subscribes to its overlay; rotating it revokes the old one (TOKEN_REVOKED on its socket)', async () => {
    const overlay = await create('overlays', 'Scene');
    const first = await api(t, 'POST', `/overlays/${overlay.id}/token`, { token: owner.accessToken });
    expect(first.status).toBe(201);
    expect(first.body.data).toEqual({ id: expect.any(String), kind: 'overlay', token: expect.stringMatching(/^lm_overlay_/), subject_id: overlay.id, expires_at: null, created_at: expect.any(String) });
    const token = (first.body.data as { token: string }).token;
    const s = await socketWith(token, `overlay:${overlay.id}`);
    const second = await api(t, 'POST', `/overlays/${overlay.id}/token`, { token: owner.accessToken });
    expect(second.status).toBe(201);
    expect(await s.nextMatching((m) => m.type === 'error')).toMatchObject({ code: 'TOKEN_REVOKED' });
    expect((await within(s.closed, 3000, 'the close')).code).toBe(4002);
    await socketWith((second.body.data as { token: string }).token, `overlay:${overlay.id}`);
    // Only the hash is stored.
    const rows = await t.app.db.knex('credentials').where({ subject_id: overlay.id });
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  test('shared overlay tokens carry expires_at, refuse a past one, and are revoked one by one', async () => {
    const overlay = await create('overlays', 'Shared');
    const past = await api(t, 'POST', `/overlays/${overlay.id}/shared-tokens`, { token: owner.accessToken, body: { expires_at: new Date(Date.now() - 1000).toISOString() } });
    expect(past.status).toBe(400);
    expect(past.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'expires_at cannot be in the past' });
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const shared = await api(t, 'POST', `/overlays/${overlay.id}/shared-tokens`, { token: owner.accessToken, body: { expires_at: expiresAt } });
    expect(shared.status).toBe(201);
    const data = shared.body.data as { id: string; token: string; kind: string; expires_at: string };
    expect(data).toMatchObject({ kind: 'shared_overlay', token: expect.stringMatching(/^lm_share_/), expires_at: expiresAt });
    const s = await socketWith(data.token, `overlay:${overlay.id}`);
    expect((await api(t, 'DELETE', `/overlays/${overlay.id}/tokens/${randomUUID()}`, { token: owner.accessToken })).status).toBe(404);
    expect((await api(t, 'DELETE', `/overlays/${overlay.id}/tokens/${data.id}`, { token: owner.accessToken })).body).toEqual({ success: true });
    expect(await s.nextMatching((m) => m.type === 'error')).toMatchObject({ code: 'TOKEN_REVOKED' });
  });

  test('deleting an overlay revokes its tokens', async () => {
    const overlay = await create('overlays', 'Doomed');
    const issued = await api(t, 'POST', `/overlays/${overlay.id}/token`, { token: owner.accessToken });
    const s = await socketWith((issued.body.data as { token: string }).token, `overlay:${overlay.id}`);
    await api(t, 'DELETE', `/overlays/${overlay.id}`, { token: owner.accessToken });
    expect(await s.nextMatching((m) => m.type === 'error')).toMatchObject({ code: 'TOKEN_REVOKED' });
  });

  test('presence on an overlay resolves to the overlay account', async () => {
    const overlay = await create('overlays', 'Presence');
    const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${owner.accessToken}` } });
    opened.push(s);
    await s.next();
    s.send({ type: 'subscribe', channel: `presence:overlay:${overlay.id}` });
    expect(await s.next()).toEqual({ type: 'subscribed', channel: `presence:overlay:${overlay.id}` });
    expect(await s.next()).toMatchObject({ event_type: 'bootstrap' });
    const other = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${stranger.accessToken}` } });
    opened.push(other);
    await other.next();
    other.send({ type: 'subscribe', channel: `presence:overlay:${overlay.id}` });
    expect(await other.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' });
  });
});

describe('widgets', () => {
  test('create, list, token rotation and revocation', async () => {
    const widget = await create('widgets', 'Goal bar');
    expect((await api(t, 'GET', '/widgets', { token: owner.accessToken })).body.data).toContainEqual(widget);
    const issued = await api(t, 'POST', `/widgets/${widget.id}/token`, { token: owner.accessToken });
    expect(issued.body.data).toMatchObject({ kind: 'widget', token: expect.stringMatching(/^lm_widget_/), subject_id: widget.id });
    const s = await socketWith((issued.body.data as { token: string }).token, `widget:${widget.id}`);
    expect((await api(t, 'DELETE', `/widgets/${widget.id}/token`, { token: owner.accessToken })).body).toEqual({ success: true });
    expect(await s.nextMatching((m) => m.type === 'error')).toMatchObject({ code: 'TOKEN_REVOKED' });
    expect((await api(t, 'DELETE', `/widgets/${widget.id}/token`, { token: owner.accessToken })).body).toMatchObject({ error: 'NOT_FOUND', message: 'Token not found' });
    expect((await api(t, 'DELETE', `/widgets/${widget.id}`, { token: owner.accessToken })).body).toEqual({ success: true });
  });

  test('access entries: list with the documented fields, grant, conflict, non-member, revoke', async () => {
    const widget = await create('widgets', 'Chat box');
    // The grantee must be a member of the account: the owner is one.
    const member = owner;
    expect((await api(t, 'GET', `/widgets/${widget.id}/access`, { token: owner.accessToken })).body.data).toEqual([]);
    const granted = await api(t, 'POST', `/widgets/${widget.id}/access`, { token: owner.accessToken, body: { user_id: member.userId, role: 'editor' } });
    expect(granted.status).toBe(201);
    const entry = granted.body.data as { id: string };
    expect(entry).toEqual({ id: expect.any(String), widget_id: widget.id, user_id: member.userId, user_name: 'Overlay Owner', user_avatar: null, role: 'editor', granted_by: owner.userId, created_at: expect.any(String) });
    expect((await api(t, 'GET', `/widgets/${widget.id}/access`, { token: owner.accessToken })).body.data).toEqual([entry]);
    const again = await api(t, 'POST', `/widgets/${widget.id}/access`, { token: owner.accessToken, body: { user_id: member.userId, role: 'viewer' } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: 'CONFLICT', message: 'Access already granted' });
    const outsider = await api(t, 'POST', `/widgets/${widget.id}/access`, { token: owner.accessToken, body: { user_id: stranger.userId, role: 'viewer' } });
    expect(outsider.status).toBe(400);
    expect((await api(t, 'GET', `/widgets/${widget.id}/access`, { token: stranger.accessToken })).status).toBe(404);
    expect((await api(t, 'DELETE', `/widgets/${widget.id}/access/${entry.id}`, { token: owner.accessToken })).body).toEqual({ success: true });
    expect((await api(t, 'DELETE', `/widgets/${widget.id}/access/${entry.id}`, { token: owner.accessToken })).status).toBe(404);
  });
});

/** The published AsyncAPI document, registered whole so a schema's `$ref`s (a member's rule declared once as a component) resolve. */
const ASYNCAPI_ID = 'asyncapi.json';
const asyncapi = JSON.parse(readFileSync(path.join(__dirname, '../../spec/published/asyncapi.json'), 'utf8')) as object;
/** The data schema of `overlay:update` / `widget:update` as the WebSocket protocol (spec/published/asyncapi.json) declares it: the REST resource (components.schemas). */
function frameDataSchema(name: 'Overlay' | 'Widget'): object {
  return { $ref: `${ASYNCAPI_ID}#/components/schemas/${name}` };
}

describe('settings and versioned updates', () => {
  const ajv = addFormats(new Ajv({ strict: false })).addSchema(asyncapi, ASYNCAPI_ID);
  // A fresh account: the free plan's max_overlays (5) is spent by the tests above.
  beforeAll(async () => {
    owner = await devLogin(t, `ov2-${randomUUID()}@example.test`, 'Overlay Owner');
  });

  test('an overlay update at the current version applies, is published on overlay:{id} to its browser source, and a stale version is 409', async () => {
    const created = await api(t, 'POST', '/overlays', { token: owner.accessToken, body: { name: 'Live', settings: { theme: 'dark', slots: [1, 2] } } });
    expect(created.status).toBe(201);
    const overlay = created.body.data as { id: string; version: number };
    expect(created.body.data).toMatchObject({ settings: { theme: 'dark', slots: [1, 2] }, version: 1 });
    const token = ((await api(t, 'POST', `/overlays/${overlay.id}/token`, { token: owner.accessToken })).body.data as { token: string }).token;
    const source = await socketWith(token, `overlay:${overlay.id}`);

    const updated = await api(t, 'PATCH', `/overlays/${overlay.id}`, { token: owner.accessToken, body: { version: 1, settings: { theme: 'light' } } });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ id: overlay.id, name: 'Live', settings: { theme: 'light' }, version: 2 });
    const frame = (await source.nextMatching((m) => m.type === 'event')) as { type: string; channel: string; event_type: string; data: unknown };
    expect(frame).toEqual({ type: 'event', channel: `overlay:${overlay.id}`, event_type: 'overlay:update', data: updated.body.data, cursor: expect.any(String) });
    expect(ajv.validate(frameDataSchema('Overlay'), frame.data)).toBe(true);

    const stale = await api(t, 'PATCH', `/overlays/${overlay.id}`, { token: owner.accessToken, body: { version: 1, name: 'Lost' } });
    expect(stale.status).toBe(409);
    expect(stale.body).toEqual({ error: 'CONFLICT', message: 'Overlay was changed by someone else: reload it (current version 2)', details: { current_version: 2 } });
    expect(((await api(t, 'GET', `/overlays/${overlay.id}`, { token: owner.accessToken })).body.data as { name: string }).name).toBe('Live');
    // The GraphQL twin: same conflict, same words.
    const graphStale = await gql(t.url, 'mutation($id: UUID!) { updateOverlay(id: $id, input: { version: 1, name: "Lost" }) { id } }', { id: overlay.id }, { authorization: `Bearer ${owner.accessToken}` });
    expect(graphStale.body.errors?.[0]).toMatchObject({ message: stale.body.message, extensions: { code: 'CONFLICT' } });
    const graph = await gql(t.url, 'mutation($id: UUID!) { updateOverlay(id: $id, input: { version: 2, name: "Renamed" }) { name version settings } }', { id: overlay.id }, { authorization: `Bearer ${owner.accessToken}` });
    expect(graph.body.data?.updateOverlay).toEqual({ name: 'Renamed', version: 3, settings: { theme: 'light' } });
    expect(((await source.nextMatching((m) => m.type === 'event')) as { data: { name: string } }).data.name).toBe('Renamed');
  });

  test('two updates at the same version: exactly one applies', async () => {
    const overlay = await create('overlays', 'Race');
    const results = await Promise.all(['a', 'b', 'c'].map((v) => api(t, 'PATCH', `/overlays/${overlay.id}`, { token: owner.accessToken, body: { version: 1, settings: { v } } })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    expect(((await api(t, 'GET', `/overlays/${overlay.id}`, { token: owner.accessToken })).body.data as { version: number }).version).toBe(2);
  });

  test('widget type and settings: created, updated, published on widget:{id}; another account gets 404', async () => {
    const created = await api(t, 'POST', '/widgets', { token: owner.accessToken, body: { name: 'Goal', type: 'goal_bar', settings: { target: 100 } } });
    expect(created.status).toBe(201);
    const widget = created.body.data as { id: string };
    expect(created.body.data).toMatchObject({ type: 'goal_bar', settings: { target: 100 }, version: 1 });
    expect((await api(t, 'POST', '/widgets', { token: owner.accessToken, body: { name: 'Plain' } })).body.data).toMatchObject({ type: 'custom', settings: {} });
    const token = ((await api(t, 'POST', `/widgets/${widget.id}/token`, { token: owner.accessToken })).body.data as { token: string }).token;
    const source = await socketWith(token, `widget:${widget.id}`);
    const graph = await gql(t.url, 'mutation($id: UUID!, $i: UpdateWidgetInput!) { updateWidget(id: $id, input: $i) { id type settings version } }', { id: widget.id, i: { version: 1, type: 'goal_ring', settings: { target: 200 } } }, { authorization: `Bearer ${owner.accessToken}` });
    expect(graph.body.data?.updateWidget).toEqual({ id: widget.id, type: 'goal_ring', settings: { target: 200 }, version: 2 });
    const frame = (await source.nextMatching((m) => m.type === 'event')) as { channel: string; event_type: string; data: Record<string, unknown> };
    expect(frame).toMatchObject({ channel: `widget:${widget.id}`, event_type: 'widget:update', data: { id: widget.id, type: 'goal_ring', settings: { target: 200 }, version: 2 } });
    expect(ajv.validate(frameDataSchema('Widget'), frame.data)).toBe(true);
    expect((await api(t, 'PATCH', `/widgets/${widget.id}`, { token: stranger.accessToken, body: { version: 2, name: 'Mine' } })).status).toBe(404);
    const read = await gql(t.url, 'query($id: UUID!) { widget(id: $id) { name type version } widgets { id } }', { id: widget.id }, { authorization: `Bearer ${owner.accessToken}` });
    expect(read.body.data?.widget).toEqual({ name: 'Goal', type: 'goal_ring', version: 2 });
  });

  test('bounds: settings over 32768 bytes, a non-object, a bad type, a bad version: 400 with the same words on REST and GraphQL, nothing written', async () => {
    const overlay = await create('overlays', 'Bounds');
    const big = { blob: 'x'.repeat(32768) };
    const rest = await api(t, 'PATCH', `/overlays/${overlay.id}`, { token: owner.accessToken, body: { version: 1, settings: big } });
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'settings must be a JSON object of at most 32768 bytes' });
    const graph = await gql(t.url, 'mutation($id: UUID!, $s: JSON) { updateOverlay(id: $id, input: { version: 1, settings: $s }) { id } }', { id: overlay.id, s: big }, { authorization: `Bearer ${owner.accessToken}` });
    expect(graph.body.errors?.[0]).toMatchObject({ message: 'settings must be a JSON object of at most 32768 bytes', extensions: { code: 'VALIDATION_ERROR' } });
    const list = await gql(t.url, 'mutation($s: JSON) { createOverlay(input: { name: "L", settings: $s }) { id } }', { s: [1, 2] }, { authorization: `Bearer ${owner.accessToken}` });
    expect(list.body.errors?.[0]).toMatchObject({ message: 'settings must be a JSON object of at most 32768 bytes' });
    // Exactly at the bound passes (32768 bytes of JSON text).
    const exact = { b: 'y'.repeat(32768 - JSON.stringify({ b: '' }).length) };
    expect((await api(t, 'PATCH', `/overlays/${overlay.id}`, { token: owner.accessToken, body: { version: 1, settings: exact } })).status).toBe(200);
    const badType = 'type must be 1 to 50 lowercase letters, digits, _ or - (starting with a letter or digit)';
    const restType = await api(t, 'POST', '/widgets', { token: owner.accessToken, body: { name: 'T', type: 'Goal Bar' } });
    expect(restType.body).toMatchObject({ error: 'VALIDATION_ERROR', message: badType });
    const graphType = await gql(t.url, 'mutation { createWidget(input: { name: "T", type: "Goal Bar" }) { id } }', {}, { authorization: `Bearer ${owner.accessToken}` });
    expect(graphType.body.errors?.[0]).toMatchObject({ message: badType, extensions: { code: 'VALIDATION_ERROR' } });
    const graphName = await gql(t.url, 'mutation($n: String!) { createOverlay(input: { name: $n }) { id } }', { n: 'n'.repeat(101) }, { authorization: `Bearer ${owner.accessToken}` });
    expect(graphName.body.errors?.[0]).toMatchObject({ message: 'name must be 1 to 100 characters', extensions: { code: 'VALIDATION_ERROR' } });
    const restName = await api(t, 'POST', '/overlays', { token: owner.accessToken, body: { name: 'n'.repeat(101) } });
    expect(restName.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'name must be 1 to 100 characters' });
    const version = await api(t, 'PATCH', `/overlays/${overlay.id}`, { token: owner.accessToken, body: { version: 0 } });
    expect(version.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'version must be a positive integer' });
    const graphVersion = await gql(t.url, 'mutation($id: UUID!) { updateOverlay(id: $id, input: { version: 0 }) { id } }', { id: overlay.id }, { authorization: `Bearer ${owner.accessToken}` });
    expect(graphVersion.body.errors?.[0]).toMatchObject({ message: 'version must be a positive integer', extensions: { code: 'VALIDATION_ERROR' } });
  });
});
