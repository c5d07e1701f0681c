/**
 * Bundle serving over real HTTP, with the extension made, reviewed and installed through the API:
 * the version an install runs follows the review state (the latest published one; an approved
 * new version reaches the install without reinstalling), a developer with extension_dev_mode on
 * gets their latest upload instead, and each bundle is served under an immutable URL named by the
 * SHA-256 of its content, without credentials and with a year-long public cache lifetime. An
 * approval tells every install on its ext-storage:{install_id} channel (`extension:updated`), over
 * a real WebSocket.
 */
import { createHash, randomUUID } from 'node:crypto';
import { extensionMigrations } from '../../src/modules/extensions/migrations';
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const adminEmail = `ops-${randomUUID()}@example.test`;
const t = useTestApp({ auth: { bootstrap_admins: [adminEmail] } });
const opened = closeSocketsAfterEach();

type Json = Record<string, any>;
const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

let admin: LoggedIn;
let dev: LoggedIn;

beforeAll(async () => {
  admin = await devLogin(t, adminEmail);
  dev = await devLogin(t);
  const profileSlug = slug('studio');
  const applied = await api(t, 'POST', '/developer/application', {
    token: dev.accessToken,
    body: { application_type: 'solo', display_name: `Dev ${profileSlug}`, slug: profileSlug, description: 'Builds things', motivation: 'Fun', what_to_build: 'Widgets' },
  });
  expect(applied.status).toBe(201);
  expect((await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: admin.accessToken, body: {} })).status).toBe(200);
});

/** Creates and uploads a version; answers its id. */
async function upload(extId: string, version: string, code: string): Promise<string> {
  const created = await api(t, 'POST', `/developer/extensions/${extId}/versions`, { token: dev.accessToken, body: { version } });
  expect(created.status).toBe(201);
  const versionId = (created.body.data as Json).id as string;
  const manifest = { permissions: ['events:read'], handlers: ['run'], platforms: ['platform_a'] };
  expect((await api(t, 'PUT', `/developer/extensions/${extId}/versions/${versionId}/bundle`, { token: dev.accessToken, body: { manifest, handler_code: code } })).status).toBe(200);
  return versionId;
}

async function approve(extId: string, versionId: string): Promise<void> {
  expect((await api(t, 'POST', `/developer/extensions/${extId}/versions/${versionId}/publish`, { token: dev.accessToken })).status).toBe(200);
  expect((await api(t, 'POST', `/admin/extension-reviews/${versionId}/approve`, { token: admin.accessToken, body: {} })).status).toBe(200);
}

async function install(user: LoggedIn, extId: string): Promise<{ id: string; token: string }> {
  const res = await api(t, 'POST', '/extension-installs', { token: user.accessToken, body: { extension_id: extId, permissions: ['events:read'] } });
  expect(res.status).toBe(201);
  return { id: (res.body.data as Json).id as string, token: (res.body.data as Json).token.token as string };
}

const bundleOf = async (token: string, installId: string) => api(t, 'GET', `/extension-installs/${installId}/bundle`, { token });

test('an install runs the latest published version; each bundle has an immutable, content-hashed, public URL', async () => {
  const ext = (await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Bundled', slug: slug('ext') } })).body.data as Json;
  const v1 = await upload(ext.id, '1.0.0', 'export function run() { return 1; }');
  await approve(ext.id, v1);
  const owner = await devLogin(t);
  const own = await install(owner, ext.id);

  const first = await bundleOf(owner.accessToken, own.id);
  expect(first.status).toBe(200);
  const one = first.body.data as Json;
  expect(one).toEqual({ install_id: own.id, extension_id: ext.id, version_id: v1, version: '1.0.0', status: 'published', sha256: expect.stringMatching(/^[0-9a-f]{64}$/), url: `/v1/extension-bundles/${one.sha256}`, dev_mode: false });
  // The install's own extension token reads which bundle it runs (its install only).
  expect((await bundleOf(own.token, own.id)).body.data).toEqual(one);
  // GraphQL answers the same, to the account and to the install's token.
  const BUNDLE = 'query($id: UUID!) { extensionInstallBundle(id: $id) { installId extensionId versionId version status sha256 url devMode } }';
  const camel = { installId: one.install_id, extensionId: one.extension_id, versionId: one.version_id, version: one.version, status: one.status, sha256: one.sha256, url: one.url, devMode: false };
  for (const token of [owner.accessToken, own.token]) {
    expect((await gql(t.url, BUNDLE, { id: own.id }, { authorization: `Bearer ${token}` })).body.data).toEqual({ extensionInstallBundle: camel });
  }
  const elsewhere = await gql(t.url, BUNDLE, { id: randomUUID() }, { authorization: `Bearer ${own.token}` });
  expect(elsewhere.body.errors?.[0]).toEqual(expect.objectContaining({ message: 'Missing permission: extension-store:read', extensions: expect.objectContaining({ code: 'FORBIDDEN' }) }));

  // The bundle itself: no credential, cacheable for good, named by its content's hash.
  const served = await fetch(`${t.url}${one.url}`);
  expect(served.status).toBe(200);
  expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  expect(served.headers.get('etag')).toBe(`"${one.sha256}"`);
  const body = (await served.json()) as Json;
  expect(body.data).toEqual({ manifest: { handlers: ['run'], permissions: ['events:read'], platforms: ['platform_a'] }, handler_code: 'export function run() { return 1; }' });
  // The hash is the SHA-256 of the served data's JSON text, so a client can check what it loaded.
  expect(createHash('sha256').update(JSON.stringify(body.data)).digest('hex')).toBe(one.sha256);

  // A newer upload that is not approved yet changes nothing for the install.
  const v2 = await upload(ext.id, '1.1.0', 'export function run() { return 2; }');
  expect((await bundleOf(owner.accessToken, own.id)).body.data).toEqual(one);
  // Once approved, the install runs it without reinstalling; the old URL still serves the old content.
  await approve(ext.id, v2);
  const two = (await bundleOf(owner.accessToken, own.id)).body.data as Json;
  expect(two).toEqual(expect.objectContaining({ version_id: v2, version: '1.1.0', status: 'published', dev_mode: false }));
  expect(two.sha256).not.toBe(one.sha256);
  expect(((await (await fetch(`${t.url}${one.url}`)).json()) as Json).data.handler_code).toBe('export function run() { return 1; }');
  expect(((await (await fetch(`${t.url}${two.url}`)).json()) as Json).data.handler_code).toBe('export function run() { return 2; }');

  // Refusals: another account's install, an unknown hash, a malformed one, a member without extension-store:read.
  const stranger = await devLogin(t);
  expect((await bundleOf(stranger.accessToken, own.id)).body).toEqual({ error: 'NOT_FOUND', message: 'Extension install not found' });
  expect((await api(t, 'GET', `/extension-bundles/${'0'.repeat(64)}`)).body).toEqual({ error: 'NOT_FOUND', message: 'Extension bundle not found' });
  expect((await api(t, 'GET', '/extension-bundles/not-a-hash')).status).toBe(400);
  const limited = await joinAccount(t, owner, await devLogin(t), { roleName: `none-${randomUUID().slice(0, 8)}`, permissions: [] });
  expect((await bundleOf(limited.accessToken, own.id)).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:read' });
  expect((await bundleOf(own.token, randomUUID())).status).toBe(403);
});

test('extension_dev_mode: the developer gets their latest upload whatever its review state; nobody else does', async () => {
  const ext = (await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'In progress', slug: slug('ext') } })).body.data as Json;
  const v1 = await upload(ext.id, '1.0.0', 'export function run() { return "stable"; }');
  await approve(ext.id, v1);
  const mine = await install(dev, ext.id);
  const owner = await devLogin(t);
  const theirs = await install(owner, ext.id);
  const draft = await upload(ext.id, '2.0.0-beta.1', 'export function run() { return "beta"; }');

  // Dev mode off: the developer's install follows the review state like any other.
  expect((await bundleOf(dev.accessToken, mine.id)).body.data).toEqual(expect.objectContaining({ version_id: v1, dev_mode: false }));
  expect((await api(t, 'PATCH', '/me', { token: dev.accessToken, body: { extension_dev_mode: true } })).status).toBe(200);
  const dev1 = (await bundleOf(dev.accessToken, mine.id)).body.data as Json;
  expect(dev1).toEqual(expect.objectContaining({ version_id: draft, version: '2.0.0-beta.1', status: 'uploaded', dev_mode: true }));
  expect(((await (await fetch(`${t.url}${dev1.url}`)).json()) as Json).data.handler_code).toBe('export function run() { return "beta"; }');
  // Submitted for review, then rejected: still the developer's latest upload.
  expect((await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${draft}/publish`, { token: dev.accessToken })).status).toBe(200);
  expect((await bundleOf(dev.accessToken, mine.id)).body.data).toEqual(expect.objectContaining({ version_id: draft, status: 'pending_review', dev_mode: true }));
  expect((await api(t, 'POST', `/admin/extension-reviews/${draft}/reject`, { token: admin.accessToken, body: { notes: 'Not yet' } })).status).toBe(200);
  expect((await bundleOf(dev.accessToken, mine.id)).body.data).toEqual(expect.objectContaining({ version_id: draft, status: 'rejected', dev_mode: true }));

  // Another user with dev mode on does not develop it: the review state decides; so does the install's own token.
  expect((await api(t, 'PATCH', '/me', { token: owner.accessToken, body: { extension_dev_mode: true } })).status).toBe(200);
  expect((await bundleOf(owner.accessToken, theirs.id)).body.data).toEqual(expect.objectContaining({ version_id: v1, status: 'published', dev_mode: false }));
  expect((await bundleOf(mine.token, mine.id)).body.data).toEqual(expect.objectContaining({ version_id: v1, dev_mode: false }));
  // Dev mode off again: back to the published version.
  expect((await api(t, 'PATCH', '/me', { token: dev.accessToken, body: { extension_dev_mode: false } })).status).toBe(200);
  expect((await bundleOf(dev.accessToken, mine.id)).body.data).toEqual(expect.objectContaining({ version_id: v1, dev_mode: false }));
});

test('a tester\'s install of an unpublished extension runs the version it was made with', async () => {
  const ext = (await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Unreleased', slug: slug('ext') } })).body.data as Json;
  const v1 = await upload(ext.id, '0.1.0', 'export function run() {}');
  const tester = await devLogin(t);
  expect((await api(t, 'POST', `/developer/extensions/${ext.id}/testers`, { token: dev.accessToken, body: { user_id: tester.userId } })).status).toBe(201);
  const own = await install(tester, ext.id);
  expect((await bundleOf(tester.accessToken, own.id)).body.data).toEqual(expect.objectContaining({ version_id: v1, version: '0.1.0', status: 'uploaded', dev_mode: false }));
});

test('the migration hashes bundles uploaded before it, as an upload does, and leaves versions without a bundle alone', async () => {
  const knex = t.app.db.knex;
  const ext = (await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Older', slug: slug('ext') } })).body.data as Json;
  const uploadedId = await upload(ext.id, '3.0.0', 'export function run() { return "old"; }');
  const draft = ((await api(t, 'POST', `/developer/extensions/${ext.id}/versions`, { token: dev.accessToken, body: { version: '3.1.0' } })).body.data as Json).id as string;
  const hashes = async () => Object.fromEntries(((await knex('extension_versions').select('id', 'bundle_sha256')) as { id: string; bundle_sha256: string | null }[]).map((r) => [r.id, r.bundle_sha256?.trim() ?? null]));
  const byUpload = await hashes();
  expect(byUpload[uploadedId]).toMatch(/^[0-9a-f]{64}$/);
  expect(byUpload[draft]).toBeNull();

  // As before the migration: no hash column at all; then the migration adds and fills it.
  const migration = extensionMigrations.find((m) => m.name === '20261128170000_extension_bundle_hashes')!;
  await knex.transaction((trx) => migration.down(trx));
  await knex.transaction((trx) => migration.up(trx));
  expect(await hashes()).toEqual(byUpload);
  const owner = await devLogin(t);
  expect((await api(t, 'POST', `/developer/extensions/${ext.id}/testers`, { token: dev.accessToken, body: { user_id: owner.userId } })).status).toBe(201);
  const own = await install(owner, ext.id);
  const served = (await bundleOf(owner.accessToken, own.id)).body.data as Json;
  expect(served.sha256).toBe(byUpload[uploadedId]);
  expect(((await (await fetch(`${t.url}${served.url}`)).json()) as Json).data.handler_code).toBe('export function run() { return "old"; }');
});

test('an approval tells every install which bundle it runs now, on ext-storage:{install_id}; a rejection tells nobody', async () => {
  const ext = (await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Announced', slug: slug('ext') } })).body.data as Json;
  await approve(ext.id, await upload(ext.id, '1.0.0', 'export function run() { return 1; }'));
  const alice = await devLogin(t);
  const bob = await devLogin(t);
  const installs = [await install(alice, ext.id), await install(bob, ext.id)];
  const sockets: TestSocket[] = [];
  for (const [user, own] of [[alice, installs[0]!], [bob, installs[1]!]] as const) {
    const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${user.accessToken}` } });
    opened.push(s);
    expect((await s.next()).type).toBe('welcome');
    s.send({ type: 'subscribe', channel: `ext-storage:${own.id}` });
    expect(await s.nextMatching((m) => m.type === 'subscribed' || m.type === 'error')).toEqual({ type: 'subscribed', channel: `ext-storage:${own.id}` });
    sockets.push(s);
  }

  // A rejected version changes what nobody runs: the next frame is the storage write that follows.
  const rejected = await upload(ext.id, '1.0.1', 'export function run() { return "no"; }');
  expect((await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${rejected}/publish`, { token: dev.accessToken })).status).toBe(200);
  expect((await api(t, 'POST', `/admin/extension-reviews/${rejected}/reject`, { token: admin.accessToken, body: { notes: 'No' } })).status).toBe(200);
  expect((await api(t, 'PUT', `/extension-installs/${installs[0]!.id}/storage/k`, { token: alice.accessToken, body: { value: 1 } })).status).toBe(200);
  expect(await sockets[0]!.nextMatching((m) => m.type === 'event')).toEqual(expect.objectContaining({ event_type: 'storage:update' }));

  const v2 = await upload(ext.id, '1.1.0', 'export function run() { return 2; }');
  await approve(ext.id, v2);
  for (const [i, own] of installs.entries()) {
    const frame = (await sockets[i]!.nextMatching((m) => m.type === 'event')) as Json;
    const now = (await bundleOf(i === 0 ? alice.accessToken : bob.accessToken, own.id)).body.data as Json;
    expect(frame).toEqual({ type: 'event', channel: `ext-storage:${own.id}`, event_type: 'extension:updated', data: now, cursor: expect.any(String) });
    expect(now).toEqual(expect.objectContaining({ version_id: v2, version: '1.1.0', status: 'published', dev_mode: false }));
  }
});
