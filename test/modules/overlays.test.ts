/**
 * Overlays and widgets over real HTTP and WebSocket: create, list, delete; overlay token rotation,
 * shared overlay tokens with expires_at, widget token rotation and revocation (open sockets end
 * with TOKEN_REVOKED); widget access entries with the documented fields; account isolation; and
 * presence on an overlay resolved through this module's channel-account resolver.
 */
import { randomUUID } from 'node:crypto';
import { useTestApp } from '../helpers/app';
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
  return res.body.data as { id: string; account_id: string; name: string; created_at: string };
};

describe('overlays', () => {
  test('create, list and delete; another account sees none of it', async () => {
    const overlay = await create('overlays', 'Alerts');
    expect(overlay).toEqual({ id: expect.any(String), account_id: owner.accountId, name: 'Alerts', created_at: expect.any(String) });
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
