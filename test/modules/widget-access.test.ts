/**
 * Widget access entries grant what they say, over real HTTP on REST and GraphQL alike: a member
 * whose role lacks `widgets:read` reads (and lists) exactly the widgets a `viewer` or `editor`
 * entry names, an `editor` entry also updates its widget without `widgets:edit`, the refusal
 * without an entry is the permission's own on both protocols, revoking an entry ends it with
 * the next request, and the member's API key keeps exactly its own scope. The gates declare the grant (`x-resource-grant`, `@gate(resourceGrant)`); the
 * overlays module answers it.
 */
import { randomUUID } from 'node:crypto';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const t = useTestApp({ rate_limits: { enabled: false } });

type Json = Record<string, any>;
let owner: LoggedIn;
let member: LoggedIn;

beforeAll(async () => {
  owner = await devLogin(t);
  // A custom role without any widgets:* permission.
  member = await joinAccount(t, owner, await devLogin(t), { roleName: `no-widgets-${randomUUID().slice(0, 8)}`, permissions: ['events:read'] });
});

const create = async (name: string): Promise<Json> => {
  const res = await api(t, 'POST', '/widgets', { token: owner.accessToken, body: { name } });
  expect(res.status).toBe(201);
  return res.body.data as Json;
};
const grant = async (widgetId: string, role: 'viewer' | 'editor'): Promise<string> => {
  const res = await api(t, 'POST', `/widgets/${widgetId}/access`, { token: owner.accessToken, body: { user_id: member.userId, role } });
  expect(res.status).toBe(201);
  return (res.body.data as Json).id as string;
};
const revoke = async (widgetId: string, entryId: string) => {
  expect((await api(t, 'DELETE', `/widgets/${widgetId}/access/${entryId}`, { token: owner.accessToken })).body).toEqual({ success: true });
};
const asMember = (query: string, variables?: Json) => gql(t.url, query, variables, { authorization: `Bearer ${member.accessToken}` });
const ids = (list: Json[]) => list.map((w) => w.id as string);

const forbidden = (permission: string) => ({ error: 'FORBIDDEN', message: `Missing permission: ${permission}` });
function expectGqlForbidden(res: { body: Json }, permission: string) {
  expect(res.body.data).toBeNull();
  expect(res.body.errors?.[0]).toMatchObject({ message: `Missing permission: ${permission}`, extensions: { code: 'FORBIDDEN' } });
}

describe('widget access entries as grants', () => {
  test('without an entry the member gets the permission refusal on REST and GraphQL', async () => {
    const widget = await create('Locked');
    const rest = await api(t, 'GET', `/widgets/${widget.id}`, { token: member.accessToken });
    expect(rest.status).toBe(403);
    expect(rest.body).toEqual(forbidden('widgets:read'));
    expect((await api(t, 'GET', '/widgets', { token: member.accessToken })).body).toEqual(forbidden('widgets:read'));
    expectGqlForbidden(await asMember('query($id: UUID!) { widget(id: $id) { id } }', { id: widget.id }), 'widgets:read');
    expectGqlForbidden(await asMember('{ widgets { id } }'), 'widgets:read');
    const patch = await api(t, 'PATCH', `/widgets/${widget.id}`, { token: member.accessToken, body: { version: 1, name: 'Mine' } });
    expect(patch.status).toBe(403);
    expect(patch.body).toEqual(forbidden('widgets:edit'));
  });

  test('a viewer entry reads that widget, an editor entry also updates it; the list shows only those; revoking ends it at once', async () => {
    const seen = await create('Seen');
    const edited = await create('Edited');
    const hidden = await create('Hidden');
    const viewerEntry = await grant(seen.id, 'viewer');
    const editorEntry = await grant(edited.id, 'editor');

    // Read: REST and GraphQL, the widget itself and the list.
    const read = await api(t, 'GET', `/widgets/${seen.id}`, { token: member.accessToken });
    expect(read.status).toBe(200);
    expect((read.body.data as Json).id).toBe(seen.id);
    expect((await api(t, 'GET', `/widgets/${edited.id}`, { token: member.accessToken })).status).toBe(200);
    expect((await api(t, 'GET', `/widgets/${hidden.id}`, { token: member.accessToken })).body).toEqual(forbidden('widgets:read'));
    // A path id that is no UUID fails the grant closed (the gate runs before validation).
    expect((await api(t, 'GET', '/widgets/not-a-uuid', { token: member.accessToken })).body).toEqual(forbidden('widgets:read'));
    expect(ids((await api(t, 'GET', '/widgets', { token: member.accessToken })).body.data as Json[])).toEqual([seen.id, edited.id]);
    expect(ids((await api(t, 'GET', '/widgets', { token: owner.accessToken })).body.data as Json[])).toEqual(expect.arrayContaining([seen.id, edited.id, hidden.id]));
    const graph = await asMember('query($id: UUID!) { widget(id: $id) { id name } widgets { id } }', { id: seen.id });
    expect(graph.body.errors).toBeUndefined();
    expect(graph.body.data).toEqual({ widget: { id: seen.id, name: 'Seen' }, widgets: [{ id: seen.id }, { id: edited.id }] });
    expectGqlForbidden(await asMember(`{ widget(id: "${hidden.id}") { id } }`), 'widgets:read');
    // A variable's default names the widget as a value sent would.
    expect((await asMember(`query($id: UUID! = "${seen.id}") { widget(id: $id) { id } }`)).body).toEqual({ data: { widget: { id: seen.id } } });
    expectGqlForbidden(await asMember(`query($id: UUID! = "${hidden.id}") { widget(id: $id) { id } }`), 'widgets:read');
    // Each selection is checked on the widget it names: an alias cannot ride on another's grant.
    expectGqlForbidden(await asMember('query($a: UUID!, $b: UUID!) { a: widget(id: $a) { id } b: widget(id: $b) { id } }', { a: seen.id, b: hidden.id }), 'widgets:read');

    // Update: an editor entry only.
    const viewerPatch = await api(t, 'PATCH', `/widgets/${seen.id}`, { token: member.accessToken, body: { version: 1, name: 'Nope' } });
    expect(viewerPatch.status).toBe(403);
    expect(viewerPatch.body).toEqual(forbidden('widgets:edit'));
    expectGqlForbidden(await asMember('mutation($id: UUID!) { updateWidget(id: $id, input: { version: 1, name: "Nope" }) { id } }', { id: seen.id }), 'widgets:edit');
    const patched = await api(t, 'PATCH', `/widgets/${edited.id}`, { token: member.accessToken, body: { version: 1, name: 'Edited by member' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toEqual(expect.objectContaining({ id: edited.id, name: 'Edited by member', version: 2 }));
    const graphPatch = await asMember('mutation($id: UUID!) { updateWidget(id: $id, input: { version: 2, name: "Twice" }) { name version } }', { id: edited.id });
    expect(graphPatch.body).toEqual({ data: { updateWidget: { name: 'Twice', version: 3 } } });
    // The entry grants reading and updating, nothing else.
    expect((await api(t, 'DELETE', `/widgets/${edited.id}`, { token: member.accessToken })).body).toEqual(forbidden('widgets:delete'));
    expect((await api(t, 'POST', `/widgets/${edited.id}/token`, { token: member.accessToken })).body).toEqual(forbidden('widgets:edit'));
    expect((await api(t, 'GET', `/widgets/${edited.id}/access`, { token: member.accessToken })).body).toEqual(forbidden('widgets:access-read'));

    // Revoked: ends with the next request, on both protocols.
    await revoke(seen.id, viewerEntry);
    expect((await api(t, 'GET', `/widgets/${seen.id}`, { token: member.accessToken })).body).toEqual(forbidden('widgets:read'));
    expectGqlForbidden(await asMember('query($id: UUID!) { widget(id: $id) { id } }', { id: seen.id }), 'widgets:read');
    expect(ids((await api(t, 'GET', '/widgets', { token: member.accessToken })).body.data as Json[])).toEqual([edited.id]);
    await revoke(edited.id, editorEntry);
    expect((await api(t, 'PATCH', `/widgets/${edited.id}`, { token: member.accessToken, body: { version: 3, name: 'Late' } })).body).toEqual(forbidden('widgets:edit'));
    expect((await api(t, 'GET', '/widgets', { token: member.accessToken })).body).toEqual(forbidden('widgets:read'));
    expectGqlForbidden(await asMember('{ widgets { id } }'), 'widgets:read');
  });

  test("only the member's own session holds the grant: its API key keeps exactly the key's scope", async () => {
    const keyed = await joinAccount(t, owner, await devLogin(t), { roleName: `keys-${randomUUID().slice(0, 8)}`, permissions: ['events:read', 'apikeys:create'] });
    const widget = await create('Keyed');
    expect((await api(t, 'POST', `/widgets/${widget.id}/access`, { token: owner.accessToken, body: { user_id: keyed.userId, role: 'editor' } })).status).toBe(201);
    expect((await api(t, 'GET', `/widgets/${widget.id}`, { token: keyed.accessToken })).status).toBe(200);
    const key = await api(t, 'POST', '/api-keys', { token: keyed.accessToken, body: { label: 'script', permissions: ['events:read'] } });
    expect(key.status).toBe(201);
    const apiKey = (key.body.data as Json).key as string;
    expect((await api(t, 'GET', `/widgets/${widget.id}`, { token: apiKey })).body).toEqual(forbidden('widgets:read'));
    expect((await api(t, 'PATCH', `/widgets/${widget.id}`, { token: apiKey, body: { version: 1, name: 'Scripted' } })).body).toEqual(forbidden('widgets:edit'));
    expect((await api(t, 'GET', '/widgets', { token: apiKey })).body).toEqual(forbidden('widgets:read'));
  });
});

