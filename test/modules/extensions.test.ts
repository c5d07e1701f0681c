/**
 * The extensions module over real HTTP and WebSocket: the publishing
 * routes a developer reaches with a session or a developer key (scope gate declared in the spec,
 * ownership and team permissions in the service), versions and bundles, screenshots, testers,
 * analytics and purchases, limit requests with their timeline and review, the admin limit lever,
 * public developer and team profiles, account installs, the internal bot and automation feeds
 * with the per-install override rule, and the `ext-storage:{install_id}` / `ext-logs:{extension_id}`
 * channel gates. Developers, teams and keys are made through the developer module's own routes.
 */
import { randomUUID } from 'node:crypto';
import { systemKey, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect } from '../helpers/ws';

const bot = systemKey('bot-runtime', []);
const adminEmail = `ops-${randomUUID()}@example.test`;
const t = useTestApp({ auth: { system_keys: [bot.config], bootstrap_admins: [adminEmail] } });
const opened = closeSocketsAfterEach();

type Json = Record<string, any>;
const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

let admin: LoggedIn;
let dev: LoggedIn;
let devSlug: string;
let other: LoggedIn;
let creator: LoggedIn;

/** An approved developer: application, then the operator's approval. */
async function becomeDeveloper(user: LoggedIn, profileSlug: string): Promise<void> {
  const applied = await api(t, 'POST', '/developer/application', {
    token: user.accessToken,
    body: { application_type: 'solo', display_name: `Dev ${profileSlug}`, slug: profileSlug, description: 'Builds things', motivation: 'Fun', what_to_build: 'Bots' },
  });
  expect(applied.status).toBe(201);
  const approved = await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: admin.accessToken, body: {} });
  expect(approved.status).toBe(200);
}

async function devKey(user: LoggedIn, permissions: string[], teamId?: string): Promise<string> {
  const res = await api(t, 'POST', '/developer/api-keys', { token: user.accessToken, body: { label: 'ci', permissions, ...(teamId ? { team_id: teamId } : {}) } });
  expect(res.status).toBe(201);
  return (res.body.data as Json).key as string;
}

async function createExtension(user: LoggedIn, body: Json = {}): Promise<Json> {
  const res = await api(t, 'POST', '/developer/extensions', { token: user.accessToken, body: { name: 'Greeter', slug: slug('ext'), ...body } });
  expect(res.status).toBe(201);
  return res.body.data as Json;
}

const MANIFEST = {
  commands: [
    { name: '!hi', handler: 'greet', cooldown_global: 5 },
    { name: '!bye', handler: 'farewell', alias: '!cya' },
  ],
  keywords: [{ value: 'hello', handler: 'greet' }],
  patterns: [{ regex: '^gg+$', handler: 'cheer', enabled: false }],
  handlers: ['greet', 'farewell', 'cheer'],
  platforms: ['platform_a', 'platform_b'],
  has_moderate: true,
};

async function publishVersion(user: LoggedIn, extensionId: string, version: string, manifest: Json = MANIFEST, code = 'export function greet() {}'): Promise<Json> {
  const created = await api(t, 'POST', `/developer/extensions/${extensionId}/versions`, { token: user.accessToken, body: { version } });
  expect(created.status).toBe(201);
  const versionId = (created.body.data as Json).id as string;
  const uploaded = await api(t, 'PUT', `/developer/extensions/${extensionId}/versions/${versionId}/bundle`, { token: user.accessToken, body: { manifest, handler_code: code } });
  expect(uploaded.status).toBe(200);
  const submitted = await api(t, 'POST', `/developer/extensions/${extensionId}/versions/${versionId}/publish`, { token: user.accessToken });
  expect(submitted.status).toBe(200);
  // Publishing goes through review: the operator approves the submitted version.
  const approved = await api(t, 'POST', `/admin/extension-reviews/${versionId}/approve`, { token: admin.accessToken, body: {} });
  expect(approved.status).toBe(200);
  return (await api(t, 'GET', `/developer/extensions/${extensionId}/versions`, { token: user.accessToken })).body.data.find((v: Json) => v.id === versionId) as Json;
}

beforeAll(async () => {
  admin = await devLogin(t, adminEmail);
  dev = await devLogin(t);
  other = await devLogin(t);
  creator = await devLogin(t);
  devSlug = slug('studio');
  await becomeDeveloper(dev, devSlug);
});

describe('publishing routes', () => {
  test('a developer creates, lists, reads, updates and deletes an own extension', async () => {
    const ext = await createExtension(dev, { description: 'Says hi', category: 'chat' });
    expect(ext).toEqual(
      expect.objectContaining({ name: 'Greeter', description: 'Says hi', category: 'chat', status: 'draft', pricing_type: 'free', install_count: 0, rating_avg: null, rating_count: 0, published_at: null, team_id: null }),
    );
    expect(ext.short_id).toHaveLength(10);
    expect(ext.developer_id).toEqual(expect.any(String));
    const list = await api(t, 'GET', '/developer/extensions', { token: dev.accessToken });
    expect(list.status).toBe(200);
    expect((list.body.data as Json[]).map((e) => e.id)).toContain(ext.id);
    const one = await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: dev.accessToken });
    expect(one.body.data).toEqual(ext);
    expect((one.body._links as Json).self).toBe(`/v1/developer/extensions/${ext.id}`);
    const updated = await api(t, 'PATCH', `/developer/extensions/${ext.id}`, { token: dev.accessToken, body: { name: 'Greeter 2', pricing_type: 'one_time', pricing_amount: 499, pricing_currency: 'USD' } });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toEqual(expect.objectContaining({ name: 'Greeter 2', pricing_type: 'one_time', pricing_amount: 499, pricing_currency: 'USD' }));
    const deleted = await api(t, 'DELETE', `/developer/extensions/${ext.id}`, { token: dev.accessToken });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: dev.accessToken })).status).toBe(404);
  });

  test('create refuses a non-developer, a taken slug and a paid extension without a price', async () => {
    const refused = await api(t, 'POST', '/developer/extensions', { token: other.accessToken, body: { name: 'X', slug: slug('x') } });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'FORBIDDEN', message: 'You must be an approved developer to create extensions' });
    const ext = await createExtension(dev);
    const taken = await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Y', slug: ext.slug } });
    expect(taken.status).toBe(409);
    expect(taken.body.message).toBe('Extension slug is already taken');
    const unpriced = await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'Z', slug: slug('z'), pricing_type: 'subscription' } });
    expect(unpriced.status).toBe(400);
    expect(unpriced.body).toEqual({ error: 'VALIDATION_ERROR', message: 'A paid extension needs pricing_amount and pricing_currency' });
    // The rule is the spec's (a body rule of the create request): refused before anything is looked up.
    const unpricedByAnyone = await api(t, 'POST', '/developer/extensions', { token: other.accessToken, body: { name: 'Z', slug: slug('z'), pricing_type: 'one_time', pricing_amount: 500 } });
    expect(unpricedByAnyone.body).toEqual({ error: 'VALIDATION_ERROR', message: 'A paid extension needs pricing_amount and pricing_currency' });
    const anonymous = await api(t, 'GET', '/developer/extensions');
    expect(anonymous.status).toBe(401);
  });

  test("another user's extension is invisible (404), never forbidden", async () => {
    const ext = await createExtension(dev);
    for (const [method, path] of [
      ['GET', `/developer/extensions/${ext.id}`],
      ['GET', `/developer/extensions/${ext.id}/versions`],
      ['DELETE', `/developer/extensions/${ext.id}`],
    ] as const) {
      const res = await api(t, method, path, { token: other.accessToken });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'NOT_FOUND', message: 'Extension not found' });
    }
    expect(((await api(t, 'GET', '/developer/extensions', { token: other.accessToken })).body.data as Json[]).length).toBe(0);
  });
});

describe('developer keys', () => {
  test('a key reaches the publishing routes its scope names and is refused (403) on the others', async () => {
    const ext = await createExtension(dev);
    const reader = await devKey(dev, ['extension-dev:read']);
    const list = await api(t, 'GET', '/developer/extensions', { token: reader });
    expect(list.status).toBe(200);
    expect((list.body.data as Json[]).map((e) => e.id)).toContain(ext.id);
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}/screenshots`, { token: reader })).status).toBe(200);
    const patch = await api(t, 'PATCH', `/developer/extensions/${ext.id}`, { token: reader, body: { name: 'Nope' } });
    expect(patch.status).toBe(403);
    expect(patch.body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-dev:edit' });
    const analytics = await api(t, 'GET', `/developer/extensions/${ext.id}/analytics`, { token: reader });
    expect(analytics.status).toBe(403);
    expect(analytics.body.message).toBe('Missing permission: extension-dev:analytics');

    const editor = await devKey(dev, ['extension-dev:read', 'extension-dev:edit', 'extension-dev:create']);
    const edited = await api(t, 'PATCH', `/developer/extensions/${ext.id}`, { token: editor, body: { name: 'By key' } });
    expect(edited.status).toBe(200);
    expect((edited.body.data as Json).name).toBe('By key');
    const version = await api(t, 'POST', `/developer/extensions/${ext.id}/versions`, { token: editor, body: { version: '0.1.0' } });
    expect(version.status).toBe(201);
  });

  test('a key is refused fail-closed on the first-party developer surface', async () => {
    const ext = await createExtension(dev);
    const key = await devKey(dev, ['extension-dev:read', 'extension-dev:create', 'extension-dev:edit', 'extension-dev:publish']);
    const refusals = [
      await api(t, 'POST', '/developer/extensions', { token: key, body: { name: 'K', slug: slug('k') } }),
      await api(t, 'POST', '/developer/limits/requests', { token: key, body: { extension_id: ext.id, requested_limits: { max_sounds: 5 } } }),
      await api(t, 'GET', '/developer/limits/requests', { token: key }),
      await api(t, 'GET', '/developer/limits', { token: key, query: { extension_id: ext.id } }),
      await api(t, 'POST', `/developer/extensions/${ext.id}/testers`, { token: key, body: { user_id: other.userId } }),
      await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${randomUUID()}/publish`, { token: key }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('FORBIDDEN');
    }
  });

  test("a key never reaches another developer's extension", async () => {
    const second = await devLogin(t);
    await becomeDeveloper(second, slug('second'));
    const theirs = await createExtension(second);
    const key = await devKey(dev, ['extension-dev:read', 'extension-dev:edit']);
    expect((await api(t, 'GET', `/developer/extensions/${theirs.id}`, { token: key })).status).toBe(404);
    expect((await api(t, 'PATCH', `/developer/extensions/${theirs.id}`, { token: key, body: { name: 'x' } })).status).toBe(404);
  });
});

describe('versions, screenshots, testers', () => {
  test('draft, upload, publish; a published version is immutable; handlers must be declared', async () => {
    const ext = await createExtension(dev);
    const created = await api(t, 'POST', `/developer/extensions/${ext.id}/versions`, { token: dev.accessToken, body: { version: '1.0.0', changelog: 'first' } });
    expect(created.status).toBe(201);
    const version = created.body.data as Json;
    expect(version).toEqual(expect.objectContaining({ extension_id: ext.id, version: '1.0.0', status: 'draft', has_bundle: false, changelog: 'first', uploaded_at: null, published_at: null }));
    expect(version.manifest).toBeUndefined();
    expect((created.body._links as Json).self).toBe(`/v1/developer/extensions/${ext.id}/versions/${version.id}`);
    const duplicate = await api(t, 'POST', `/developer/extensions/${ext.id}/versions`, { token: dev.accessToken, body: { version: '1.0.0' } });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.message).toBe('Version already exists');
    const badVersion = await api(t, 'POST', `/developer/extensions/${ext.id}/versions`, { token: dev.accessToken, body: { version: 'one' } });
    expect(badVersion.status).toBe(400);

    const early = await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${version.id}/publish`, { token: dev.accessToken });
    expect(early.status).toBe(409);
    expect(early.body.message).toBe("Upload the version's bundle before publishing");

    const bundle = `/developer/extensions/${ext.id}/versions/${version.id}/bundle`;
    const unknownHandler = await api(t, 'PUT', bundle, { token: dev.accessToken, body: { manifest: { commands: [{ name: '!x', handler: 'missing' }], handlers: ['greet'] }, handler_code: 'x' } });
    expect(unknownHandler.status).toBe(400);
    expect(unknownHandler.body.message).toBe('Unknown handler: missing');
    const badRegex = await api(t, 'PUT', bundle, { token: dev.accessToken, body: { manifest: { patterns: [{ regex: '([', handler: 'greet' }], handlers: ['greet'] }, handler_code: 'x' } });
    expect(badRegex.status).toBe(400);
    const uploaded = await api(t, 'PUT', bundle, { token: dev.accessToken, body: { manifest: MANIFEST, handler_code: 'export function greet() {}' } });
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.data).toEqual(expect.objectContaining({ status: 'uploaded', has_bundle: true, manifest: MANIFEST, uploaded_at: expect.any(String) }));

    const submitted = await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${version.id}/publish`, { token: dev.accessToken });
    expect(submitted.status).toBe(200);
    expect(submitted.body.data).toEqual(expect.objectContaining({ status: 'pending_review', published_at: null }));
    const published = await api(t, 'POST', `/admin/extension-reviews/${version.id}/approve`, { token: admin.accessToken, body: {} });
    expect(published.status).toBe(200);
    expect(published.body.data).toEqual(expect.objectContaining({ status: 'published', reviewed_by: admin.userId }));
    const after = (await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: dev.accessToken })).body.data as Json;
    expect(after.status).toBe('published');
    expect(after.published_at).toEqual(expect.any(String));
    const frozen = await api(t, 'PUT', bundle, { token: dev.accessToken, body: { manifest: MANIFEST, handler_code: 'changed' } });
    expect(frozen.status).toBe(409);
    expect(frozen.body.message).toBe('A published version cannot be changed');
    const listed = await api(t, 'GET', `/developer/extensions/${ext.id}/versions`, { token: dev.accessToken });
    expect((listed.body.data as Json[]).map((v) => v.version)).toEqual(['1.0.0']);
    expect((await api(t, 'PUT', `/developer/extensions/${ext.id}/versions/${randomUUID()}/bundle`, { token: dev.accessToken, body: { manifest: {}, handler_code: 'x' } })).status).toBe(404);
  });

  test('screenshots are metadata records ordered by position', async () => {
    const ext = await createExtension(dev);
    const path = `/developer/extensions/${ext.id}/screenshots`;
    const second = await api(t, 'POST', path, { token: dev.accessToken, body: { url: 'https://cdn.example.test/b.png', caption: 'B', position: 2 } });
    expect(second.status).toBe(201);
    const first = await api(t, 'POST', path, { token: dev.accessToken, body: { key: 'uploads/a.png', position: 1 } });
    expect(first.body.data).toEqual(expect.objectContaining({ key: 'uploads/a.png', url: null, caption: null, position: 1, extension_id: ext.id }));
    const none = await api(t, 'POST', path, { token: dev.accessToken, body: { caption: 'no source' } });
    expect(none.status).toBe(400);
    expect(none.body.message).toBe('A screenshot needs a key or a url');
    // The rule is the spec's (anyOf key, url): refused before the extension is looked up, nulls included.
    expect(await api(t, 'POST', `/developer/extensions/${randomUUID()}/screenshots`, { token: dev.accessToken, body: { key: null, url: null } })).toMatchObject({
      status: 400,
      body: { error: 'VALIDATION_ERROR', message: 'A screenshot needs a key or a url' },
    });
    expect((await api(t, 'POST', path, { token: dev.accessToken, body: { key: 'uploads/c.png', url: 'https://cdn.example.test/c.png', position: 3 } })).status).toBe(201);
    const list = await api(t, 'GET', path, { token: dev.accessToken });
    expect((list.body.data as Json[]).map((s) => s.position)).toEqual([1, 2, 3]);
    expect((await api(t, 'DELETE', `${path}/${(first.body.data as Json).id}`, { token: dev.accessToken })).body).toEqual({ success: true });
    const gone = await api(t, 'DELETE', `${path}/${(first.body.data as Json).id}`, { token: dev.accessToken });
    expect(gone.status).toBe(404);
    expect(gone.body.message).toBe('Screenshot not found');
  });

  test('testers: invite, list, duplicates, unknown users, removal', async () => {
    const ext = await createExtension(dev);
    const path = `/developer/extensions/${ext.id}/testers`;
    const added = await api(t, 'POST', path, { token: dev.accessToken, body: { user_id: other.userId } });
    expect(added.status).toBe(201);
    expect(added.body.data).toEqual({ user_id: other.userId, display_name: expect.any(String), avatar_url: null, added_by: dev.userId, created_at: expect.any(String) });
    expect((await api(t, 'POST', path, { token: dev.accessToken, body: { user_id: other.userId } })).body.message).toBe('User is already a tester');
    const unknown = await api(t, 'POST', path, { token: dev.accessToken, body: { user_id: randomUUID() } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('User not found');
    expect(((await api(t, 'GET', path, { token: dev.accessToken })).body.data as Json[]).map((x) => x.user_id)).toEqual([other.userId]);
    expect((await api(t, 'DELETE', `${path}/${other.userId}`, { token: dev.accessToken })).status).toBe(200);
    const again = await api(t, 'DELETE', `${path}/${other.userId}`, { token: dev.accessToken });
    expect(again.status).toBe(404);
    expect(again.body.message).toBe('Tester not found');
  });
});

describe('teams', () => {
  test('members act through their team permissions; outsiders see nothing', async () => {
    const team = await api(t, 'POST', '/developer/teams', { token: dev.accessToken, body: { name: 'Crew', slug: slug('crew') } });
    expect(team.status).toBe(201);
    const teamId = (team.body.data as Json).id as string;
    const ext = await createExtension(dev, { team_id: teamId });
    expect(ext).toEqual(expect.objectContaining({ team_id: teamId, developer_id: null }));

    const member = await devLogin(t);
    const invite = await api(t, 'POST', `/developer/teams/${teamId}/invites`, { token: dev.accessToken, body: {} });
    expect(invite.status).toBe(201);
    const accepted = await api(t, 'POST', `/developer/team-invites/${(invite.body.data as Json).code}/accept`, { token: member.accessToken });
    expect(accepted.status).toBe(200);

    // team-member: may read and edit, may not delete or publish.
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: member.accessToken })).status).toBe(200);
    expect((await api(t, 'PATCH', `/developer/extensions/${ext.id}`, { token: member.accessToken, body: { name: 'Team edit' } })).status).toBe(200);
    const deleted = await api(t, 'DELETE', `/developer/extensions/${ext.id}`, { token: member.accessToken });
    expect(deleted.status).toBe(403);
    expect(deleted.body).toEqual({ error: 'FORBIDDEN', message: 'Missing team permission: team-extensions:delete' });
    const payouts = await api(t, 'GET', `/developer/extensions/${ext.id}/purchases`, { token: member.accessToken });
    expect(payouts.status).toBe(403);
    expect(payouts.body.message).toBe('Missing team permission: team-payouts:read');
    const createForTeam = await api(t, 'POST', '/developer/extensions', { token: member.accessToken, body: { name: 'M', slug: slug('m'), team_id: teamId } });
    expect(createForTeam.status).toBe(201);

    // An outsider, and a team unknown to the caller.
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: other.accessToken })).status).toBe(404);
    const outsiderCreate = await api(t, 'POST', '/developer/extensions', { token: other.accessToken, body: { name: 'O', slug: slug('o'), team_id: teamId } });
    expect(outsiderCreate.status).toBe(403);
    expect(outsiderCreate.body.message).toBe('Missing team permission: team-extensions:create');
    const noTeam = await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name: 'N', slug: slug('n'), team_id: randomUUID() } });
    expect(noTeam.status).toBe(404);
    expect(noTeam.body.message).toBe('Team not found');

    // A team key reaches the team's extensions only.
    const teamKey = await devKey(dev, ['extension-dev:read'], teamId);
    const teamList = await api(t, 'GET', '/developer/extensions', { token: teamKey });
    expect((teamList.body.data as Json[]).map((e) => e.team_id)).toEqual([teamId, teamId]);

    // The public team profile lists members and published extensions.
    await publishVersion(dev, ext.id as string, '1.0.0');
    const profile = await api(t, 'GET', `/developer/teams/${(team.body.data as Json).slug}/profile`);
    expect(profile.status).toBe(200);
    const data = profile.body.data as Json;
    expect(data).toEqual(expect.objectContaining({ id: teamId, name: 'Crew', stats: { extension_count: 1, total_installs: 0, avg_rating: null } }));
    expect((data.members as Json[]).map((x) => x.user_id).sort()).toEqual([dev.userId, member.userId].sort());
    expect((data.extensions as Json[]).map((e) => e.id)).toEqual([ext.id]);
  });
});

describe('limit requests', () => {
  test('open -> in_review -> approved applies the limits; the timeline records each move', async () => {
    const ext = await createExtension(dev);
    const before = await api(t, 'GET', '/developer/limits', { token: dev.accessToken, query: { extension_id: ext.id } });
    expect(before.status).toBe(200);
    expect(before.body.data).toEqual({ extension_id: ext.id, max_sounds: null, max_sound_file_size: null, max_sound_storage_bytes: null });

    const created = await api(t, 'POST', '/developer/limits/requests', { token: dev.accessToken, body: { extension_id: ext.id, requested_limits: { max_sounds: 250, max_sound_file_size: 10485760 }, reason: 'Soundboard' } });
    expect(created.status).toBe(201);
    const request = created.body.data as Json;
    expect(request).toEqual(
      expect.objectContaining({ extension_id: ext.id, extension_name: 'Greeter', status: 'open', requested_by: dev.userId, requested_limits: { max_sounds: 250, max_sound_file_size: 10485760 }, reason: 'Soundboard', review_notes: null }),
    );
    const second = await api(t, 'POST', '/developer/limits/requests', { token: dev.accessToken, body: { extension_id: ext.id, requested_limits: { max_sounds: 1 } } });
    expect(second.status).toBe(409);
    expect(second.body.message).toBe('This extension already has an open limit request');
    const empty = await api(t, 'POST', '/developer/limits/requests', { token: dev.accessToken, body: { extension_id: ext.id, requested_limits: {} } });
    expect(empty.status).toBe(400);

    const mine = await api(t, 'GET', '/developer/limits/requests', { token: dev.accessToken });
    expect((mine.body.data as Json[]).map((r) => r.id)).toContain(request.id);
    const open = await api(t, 'GET', '/admin/limit-requests', { token: admin.accessToken, query: { status: 'open' } });
    expect(open.status).toBe(200);
    expect((open.body.data as Json[]).map((r) => r.id)).toContain(request.id);

    const review = await api(t, 'POST', `/admin/limit-requests/${request.id}/start-review`, { token: admin.accessToken });
    expect(review.status).toBe(200);
    expect((review.body.data as Json).status).toBe('in_review');
    const reviewAgain = await api(t, 'POST', `/admin/limit-requests/${request.id}/start-review`, { token: admin.accessToken });
    expect(reviewAgain.status).toBe(409);
    expect(reviewAgain.body.message).toBe('Limit request is already in_review');

    const approved = await api(t, 'PUT', `/admin/limit-requests/${request.id}`, { token: admin.accessToken, body: { action: 'approve', notes: 'ok' } });
    expect(approved.status).toBe(200);
    expect(approved.body.data).toEqual(expect.objectContaining({ id: request.id, status: 'approved', review_notes: 'ok', reviewed_by: admin.userId, reviewed_at: expect.any(String) }));
    const applied = await api(t, 'GET', `/developer/extensions/${ext.id}/limits`, { token: dev.accessToken });
    expect(applied.body.data).toEqual({ extension_id: ext.id, max_sounds: 250, max_sound_file_size: 10485760, max_sound_storage_bytes: null });

    const twice = await api(t, 'PUT', `/admin/limit-requests/${request.id}`, { token: admin.accessToken, body: { action: 'reject', notes: 'changed my mind' } });
    expect(twice.status).toBe(409);
    expect(twice.body).toEqual({ error: 'CONFLICT', message: 'Limit request is already approved' });

    const events = await api(t, 'GET', `/admin/limit-requests/${request.id}/events`, { token: admin.accessToken });
    expect(events.status).toBe(200);
    expect(events.body.data).toEqual([
      { event_type: 'created', actor_id: dev.userId, details: { requested_limits: { max_sounds: 250, max_sound_file_size: 10485760 }, reason: 'Soundboard' }, created_at: expect.any(String) },
      { event_type: 'in_review', actor_id: admin.userId, details: {}, created_at: expect.any(String) },
      { event_type: 'approved', actor_id: admin.userId, details: { limits: { max_sounds: 250, max_sound_file_size: 10485760 }, notes: 'ok' }, created_at: expect.any(String) },
    ]);
    const devEvents = await api(t, 'GET', `/developer/limits/requests/${request.id}/events`, { token: dev.accessToken });
    expect(devEvents.body.data).toEqual(events.body.data);
    expect((await api(t, 'GET', `/developer/limits/requests/${request.id}/events`, { token: other.accessToken })).status).toBe(404);

    const byDeveloper = await api(t, 'GET', `/admin/developers/${ext.developer_id}/limit-requests`, { token: admin.accessToken });
    expect((byDeveloper.body.data as Json[]).map((r) => r.id)).toContain(request.id);
  });

  test('reject needs notes; unknown requests are 404; non-admins are refused', async () => {
    const ext = await createExtension(dev);
    const created = await api(t, 'POST', '/developer/limits/requests', { token: dev.accessToken, body: { extension_id: ext.id, requested_limits: { max_sound_storage_bytes: 1073741824 } } });
    const id = (created.body.data as Json).id as string;
    const noNotes = await api(t, 'PUT', `/admin/limit-requests/${id}`, { token: admin.accessToken, body: { action: 'reject' } });
    expect(noNotes.status).toBe(400);
    expect(noNotes.body).toEqual(expect.objectContaining({ error: 'VALIDATION_ERROR', message: 'Notes are required to reject a limit request' }));
    const blank = await api(t, 'PUT', `/admin/limit-requests/${id}`, { token: admin.accessToken, body: { action: 'reject', notes: '   ' } });
    expect(blank.status).toBe(400);
    // The rule is the spec's: refused before the request is looked up, naming notes.
    expect(await api(t, 'PUT', `/admin/limit-requests/${randomUUID()}`, { token: admin.accessToken, body: { action: 'reject', notes: null } })).toMatchObject({
      status: 400,
      body: { error: 'VALIDATION_ERROR', message: 'Notes are required to reject a limit request', details: { fields: [{ field: 'notes', message: 'Notes are required to reject a limit request' }] } },
    });
    const rejected = await api(t, 'PUT', `/admin/limit-requests/${id}`, { token: admin.accessToken, body: { action: 'reject', notes: 'Too much' } });
    expect(rejected.status).toBe(200);
    expect(rejected.body.data).toEqual(expect.objectContaining({ status: 'rejected', review_notes: 'Too much' }));
    const limits = await api(t, 'GET', '/developer/limits', { token: dev.accessToken, query: { extension_id: ext.id } });
    expect((limits.body.data as Json).max_sound_storage_bytes).toBeNull();
    const events = await api(t, 'GET', `/admin/limit-requests/${id}/events`, { token: admin.accessToken });
    expect((events.body.data as Json[]).map((e) => e.event_type)).toEqual(['created', 'rejected']);

    const unknown = await api(t, 'PUT', `/admin/limit-requests/${randomUUID()}`, { token: admin.accessToken, body: { action: 'approve' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('Limit request not found');
    expect((await api(t, 'GET', `/admin/limit-requests/${randomUUID()}/events`, { token: admin.accessToken })).status).toBe(404);
    const notAdmin = await api(t, 'GET', '/admin/limit-requests', { token: dev.accessToken });
    expect(notAdmin.status).toBe(403);
    expect(notAdmin.body.message).toBe('Missing permission: developer-limits:read');
    const notOwner = await api(t, 'POST', '/developer/limits/requests', { token: other.accessToken, body: { extension_id: ext.id, requested_limits: { max_sounds: 1 } } });
    expect(notOwner.status).toBe(404);
  });

  test('the admin limits lever sets and clears overrides; unknown extensions are 404', async () => {
    const ext = await createExtension(dev);
    const set = await api(t, 'PATCH', `/admin/extensions/${ext.id}/limits`, { token: admin.accessToken, body: { max_sounds: 40, max_sound_storage_bytes: 5000 } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ data: { success: true } });
    const read = async () => (await api(t, 'GET', `/developer/extensions/${ext.id}/limits`, { token: dev.accessToken })).body.data as Json;
    expect(await read()).toEqual({ extension_id: ext.id, max_sounds: 40, max_sound_file_size: null, max_sound_storage_bytes: 5000 });
    await api(t, 'PATCH', `/admin/extensions/${ext.id}/limits`, { token: admin.accessToken, body: { max_sounds: null } });
    expect(await read()).toEqual({ extension_id: ext.id, max_sounds: null, max_sound_file_size: null, max_sound_storage_bytes: 5000 });
    const unknown = await api(t, 'PATCH', `/admin/extensions/${randomUUID()}/limits`, { token: admin.accessToken, body: { max_sounds: 1 } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('Extension not found');
    expect((await api(t, 'PATCH', `/admin/extensions/${ext.id}/limits`, { token: dev.accessToken, body: { max_sounds: 1 } })).status).toBe(403);
  });
});

describe('public profiles', () => {
  test('a developer profile shows published extensions with stats; unknown slugs are 404', async () => {
    const published = await createExtension(dev, { name: 'Public one' });
    await publishVersion(dev, published.id as string, '1.0.0');
    await createExtension(dev, { name: 'Still a draft' });
    const res = await api(t, 'GET', `/developer/profiles/${devSlug}`);
    expect(res.status).toBe(200);
    const data = res.body.data as Json;
    expect(Object.keys(data).sort()).toEqual(['avatar_key', 'created_at', 'description', 'display_name', 'extensions', 'github_url', 'id', 'slug', 'stats', 'website_url']);
    expect(data.slug).toBe(devSlug);
    const names = (data.extensions as Json[]).map((e) => e.name);
    expect(names).toContain('Public one');
    expect(names).not.toContain('Still a draft');
    expect(Object.keys((data.extensions as Json[])[0]!).sort()).toEqual(
      ['category', 'description', 'icon_key', 'id', 'install_count', 'name', 'pricing_amount', 'pricing_currency', 'pricing_type', 'published_at', 'rating_avg', 'rating_count', 'short_id', 'slug'],
    );
    expect(data.stats).toEqual({ extension_count: (data.extensions as Json[]).length, total_installs: expect.any(Number), avg_rating: null });
    const unknown = await api(t, 'GET', `/developer/profiles/${slug('nobody')}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'NOT_FOUND', message: 'Developer not found' });
    const unknownTeam = await api(t, 'GET', `/developer/teams/${slug('noteam')}/profile`);
    expect(unknownTeam.status).toBe(404);
    expect(unknownTeam.body).toEqual({ error: 'NOT_FOUND', message: 'Team not found' });
  });
});

describe('installs, purchases and the internal feeds', () => {
  let ext: Json;
  let automation: Json;
  beforeAll(async () => {
    ext = await createExtension(dev, { name: 'Bot module' });
    await publishVersion(dev, ext.id as string, '1.0.0');
    automation = await createExtension(dev, { name: 'Node' });
    await publishVersion(dev, automation.id as string, '2.0.0', { handlers: ['run'], node_type: 'action', node_handler: 'run' }, 'export function run() {}');
  });

  test('install, configure, disable and uninstall; unknown installs are 404', async () => {
    const installed = await api(t, 'POST', '/extension-installs', { token: creator.accessToken, body: { extension_id: ext.id } });
    expect(installed.status).toBe(201);
    const install = installed.body.data as Json;
    expect(install).toEqual(
      expect.objectContaining({ account_id: creator.accountId, extension_id: ext.id, extension_name: 'Bot module', version: '1.0.0', enabled: true, config: {}, installed_by: creator.userId }),
    );
    expect((installed.body._links as Json).self).toBe(`/v1/extension-installs/${install.id}`);
    const again = await api(t, 'POST', '/extension-installs', { token: creator.accessToken, body: { extension_id: ext.id } });
    expect(again.status).toBe(409);
    expect(again.body.message).toBe('Extension is already installed');
    const unknownVersion = await api(t, 'POST', '/extension-installs', { token: other.accessToken, body: { extension_id: ext.id, version: '9.9.9' } });
    expect(unknownVersion.status).toBe(404);
    expect(unknownVersion.body.message).toBe('Version not found');
    const list = await api(t, 'GET', '/extension-installs', { token: creator.accessToken });
    expect((list.body.data as Json[]).map((i) => i.id)).toEqual([install.id]);
    expect(((await api(t, 'GET', '/extension-installs', { token: other.accessToken })).body.data as Json[]).length).toBe(0);

    const patched = await api(t, 'PATCH', `/extension-installs/${install.id}`, { token: creator.accessToken, body: { enabled: false, config: { greeting: 'Yo', commands: [{ name: '!hi', cooldown_user: 9 }] } } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toEqual(expect.objectContaining({ enabled: false, config: { greeting: 'Yo', commands: [{ name: '!hi', cooldown_user: 9 }] } }));
    const badConfig = await api(t, 'PATCH', `/extension-installs/${install.id}`, { token: creator.accessToken, body: { config: { commands: [{ cooldown_user: 9 }] } } });
    expect(badConfig.status).toBe(400);
    const foreign = await api(t, 'PATCH', `/extension-installs/${install.id}`, { token: other.accessToken, body: { enabled: true } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe('Extension install not found');
    expect((await api(t, 'DELETE', `/extension-installs/${install.id}`, { token: creator.accessToken })).body).toEqual({ success: true });
    expect((await api(t, 'DELETE', `/extension-installs/${install.id}`, { token: creator.accessToken })).status).toBe(404);
  });

  test('an unpublished extension installs only for testers and its developers', async () => {
    const draft = await createExtension(dev, { name: 'Beta' });
    const v = await api(t, 'POST', `/developer/extensions/${draft.id}/versions`, { token: dev.accessToken, body: { version: '0.1.0' } });
    await api(t, 'PUT', `/developer/extensions/${draft.id}/versions/${(v.body.data as Json).id}/bundle`, { token: dev.accessToken, body: { manifest: MANIFEST, handler_code: 'beta' } });
    const refused = await api(t, 'POST', '/extension-installs', { token: other.accessToken, body: { extension_id: draft.id } });
    expect(refused.status).toBe(404);
    expect(refused.body.message).toBe('Extension not found');
    await api(t, 'POST', `/developer/extensions/${draft.id}/testers`, { token: dev.accessToken, body: { user_id: other.userId } });
    const tester = await api(t, 'POST', '/extension-installs', { token: other.accessToken, body: { extension_id: draft.id } });
    expect(tester.status).toBe(201);
    expect((tester.body.data as Json).version).toBe('0.1.0');
    const developerInstall = await api(t, 'POST', '/extension-installs', { token: dev.accessToken, body: { extension_id: draft.id } });
    expect(developerInstall.status).toBe(201);
  });

  test('install gates: permission and feature flag', async () => {
    const anonymous = await api(t, 'GET', '/extension-installs');
    expect(anonymous.status).toBe(401);
    const off = await api(t, 'PUT', '/admin/feature-flags/feature:extensions', { token: admin.accessToken, body: { enabled: false } });
    expect(off.status).toBe(200);
    try {
      const disabled = await api(t, 'GET', '/extension-installs', { token: creator.accessToken });
      expect(disabled.status).toBe(403);
      expect(disabled.body.error).toBe('FEATURE_DISABLED');
    } finally {
      await api(t, 'PUT', '/admin/feature-flags/feature:extensions', { token: admin.accessToken, body: { enabled: true } });
    }
  });

  test('the triggers feed applies per-install overrides; disabled installs stay out of it but not out of the handlers feed', async () => {
    const account = await devLogin(t);
    const installed = await api(t, 'POST', '/extension-installs', { token: account.accessToken, body: { extension_id: ext.id } });
    const installId = (installed.body.data as Json).id as string;
    await api(t, 'POST', '/extension-installs', { token: account.accessToken, body: { extension_id: automation.id } });
    const config = {
      theme: 'dark',
      commands: [{ name: '!hi', cooldown_global: 30, enabled: false }, { name: '!extra', handler: 'greet' }, { name: '!rogue', handler: 'undeclared' }],
      keywords: [{ value: 'hello', handler: 'farewell' }],
      patterns: [{ regex: '^gg+$', enabled: true }],
    };
    expect((await api(t, 'PATCH', `/extension-installs/${installId}`, { token: account.accessToken, body: { config } })).status).toBe(200);

    const feed = await api(t, 'GET', `/internal/bot-modules/${account.accountId}/triggers`, { token: bot.key });
    expect(feed.status).toBe(200);
    expect(feed.body).toEqual({
      installs: [
        {
          install_id: installId,
          extension_id: ext.id,
          extension_name: 'Bot module',
          commands: [
            { name: '!hi', alias: null, cooldown_global: 30, cooldown_user: 0, min_role: 'everyone', enabled: false, handler: 'greet' },
            { name: '!bye', alias: '!cya', cooldown_global: 0, cooldown_user: 0, min_role: 'everyone', enabled: true, handler: 'farewell' },
            { name: '!extra', alias: null, cooldown_global: 0, cooldown_user: 0, min_role: 'everyone', enabled: true, handler: 'greet' },
          ],
          keywords: [{ value: 'hello', enabled: true, handler: 'farewell' }],
          patterns: [{ regex: '^gg+$', enabled: true, handler: 'cheer' }],
          has_moderate: true,
          platforms: ['platform_a', 'platform_b'],
        },
      ],
      killed: false,
    });

    const handlers = await api(t, 'GET', '/internal/bot-modules/handlers', { token: bot.key, query: { account_id: account.accountId! } });
    expect(handlers.status).toBe(200);
    expect(handlers.body).toEqual({
      installs: [
        {
          install_id: installId,
          extension_id: ext.id,
          account_id: account.accountId,
          extension_name: 'Bot module',
          version: '1.0.0',
          install_config: config,
          enabled: true,
          platforms: ['platform_a', 'platform_b'],
          has_moderate: true,
          handlers: ['greet', 'farewell', 'cheer'],
          handler_code: 'export function greet() {}',
        },
      ],
    });

    await api(t, 'PATCH', `/extension-installs/${installId}`, { token: account.accessToken, body: { enabled: false } });
    expect((await api(t, 'GET', `/internal/bot-modules/${account.accountId}/triggers`, { token: bot.key })).body).toEqual({ installs: [], killed: false });
    const byInstall = await api(t, 'GET', '/internal/bot-modules/handlers', { token: bot.key, query: { install_id: installId } });
    expect((byInstall.body.installs as Json[]).map((i) => [i.install_id, i.enabled])).toEqual([[installId, false]]);
    const snapshot = await api(t, 'GET', '/internal/bot-modules/handlers', { token: bot.key });
    expect((snapshot.body.installs as Json[]).map((i) => i.install_id)).toContain(installId);

    const nodes = await api(t, 'GET', '/internal/automation-nodes/handlers', { token: bot.key, query: { account_id: account.accountId! } });
    expect(nodes.status).toBe(200);
    expect(nodes.body).toEqual({
      installs: [
        expect.objectContaining({ extension_id: automation.id, account_id: account.accountId, version: '2.0.0', enabled: true, node_type: 'action', node_handler: 'run', handlers: ['run'], handler_code: 'export function run() {}', install_config: {} }),
      ],
    });
  });

  test('the internal feeds answer system keys only', async () => {
    for (const path of [`/internal/bot-modules/${creator.accountId}/triggers`, '/internal/bot-modules/handlers', '/internal/automation-nodes/handlers']) {
      expect((await api(t, 'GET', path)).status).toBe(401);
      const user = await api(t, 'GET', path, { token: admin.accessToken });
      expect(user.status).toBe(403);
      expect(user.body.message).toBe('This operation requires a system key');
    }
    const published = await api(t, 'GET', '/openapi.json');
    if (published.status === 200) expect(Object.keys((published.body as Json).paths)).not.toContain('/internal/bot-modules/handlers');
  });

  test('purchases recorded by the payment receiver are idempotent, listed to the owner and counted in analytics', async () => {
    const purchases = t.app.modules.extensions;
    const externalId = `cs_${randomUUID()}`;
    await purchases.recordPurchase({ externalId, extensionId: ext.id as string, accountId: creator.accountId, buyerUserId: creator.userId, amountCents: 499, currency: 'usd' });
    await purchases.recordPurchase({ externalId, extensionId: ext.id as string, accountId: creator.accountId, buyerUserId: creator.userId, amountCents: 499, currency: 'usd' });
    const refundedId = `cs_${randomUUID()}`;
    await purchases.recordPurchase({ externalId: refundedId, extensionId: ext.id as string, accountId: null, buyerUserId: null, amountCents: 100, currency: 'EUR' });
    await purchases.refundPurchase(refundedId);
    await purchases.refundPurchase('cs_unknown');
    await purchases.recordPurchase({ externalId: `cs_${randomUUID()}`, extensionId: randomUUID(), accountId: null, buyerUserId: null, amountCents: 1, currency: 'USD' });

    const list = await api(t, 'GET', `/developer/extensions/${ext.id}/purchases`, { token: dev.accessToken });
    expect(list.status).toBe(200);
    expect(list.body._meta).toEqual(expect.objectContaining({ total: 2 }));
    const rows = list.body.data as Json[];
    expect(rows.find((r) => r.external_id === externalId)).toEqual(expect.objectContaining({ amount_cents: 499, currency: 'USD', status: 'completed', account_id: creator.accountId, refunded_at: null }));
    expect(rows.find((r) => r.external_id === refundedId)).toEqual(expect.objectContaining({ status: 'refunded', refunded_at: expect.any(String) }));

    const analytics = await api(t, 'GET', `/developer/extensions/${ext.id}/analytics`, { token: dev.accessToken });
    expect(analytics.status).toBe(200);
    expect(analytics.body.data).toEqual({
      extension_id: ext.id,
      install_count: expect.any(Number),
      enabled_install_count: expect.any(Number),
      purchase_count: 1,
      refunded_purchase_count: 1,
      revenue: [{ currency: 'USD', amount_cents: 499 }],
    });
    const payoutKey = await devKey(dev, ['extension-dev:payouts']);
    expect((await api(t, 'GET', `/developer/extensions/${ext.id}/purchases`, { token: payoutKey })).status).toBe(200);
  });
});

describe('extension channels', () => {
  test('ext-storage:{install_id} admits members of the installing account only', async () => {
    const ext = await createExtension(dev, { name: 'Storage' });
    await publishVersion(dev, ext.id as string, '1.0.0');
    const owner = await devLogin(t);
    const installed = await api(t, 'POST', '/extension-installs', { token: owner.accessToken, body: { extension_id: ext.id } });
    const channel = `ext-storage:${(installed.body.data as Json).id}`;
    const mine = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${owner.accessToken}` } });
    opened.push(mine);
    expect((await mine.next()).type).toBe('welcome');
    mine.send({ type: 'subscribe', channel });
    expect(await mine.next()).toEqual({ type: 'subscribed', channel });
    const theirs = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${other.accessToken}` } });
    opened.push(theirs);
    expect((await theirs.next()).type).toBe('welcome');
    theirs.send({ type: 'subscribe', channel });
    expect(await theirs.next()).toEqual(expect.objectContaining({ type: 'error', code: 'UNAUTHORIZED' }));
    theirs.send({ type: 'subscribe', channel: `ext-storage:${randomUUID()}` });
    expect(await theirs.next()).toEqual(expect.objectContaining({ type: 'error', code: 'UNAUTHORIZED' }));
  });

  test('ext-logs:{extension_id} admits the extension developers (session or key) only', async () => {
    const ext = await createExtension(dev, { name: 'Logged' });
    const channel = `ext-logs:${ext.id}`;
    const subscribe = async (token: string) => {
      const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${token}` } });
      opened.push(s);
      expect((await s.next()).type).toBe('welcome');
      s.send({ type: 'subscribe', channel });
      return s.next();
    };
    expect(await subscribe(dev.accessToken)).toEqual({ type: 'subscribed', channel });
    expect(await subscribe(await devKey(dev, ['extension-dev:read']))).toEqual({ type: 'subscribed', channel });
    expect(await subscribe(other.accessToken)).toEqual(expect.objectContaining({ type: 'error', code: 'UNAUTHORIZED' }));
    const anonymous = await connect(t.wsUrl);
    opened.push(anonymous);
    expect((await anonymous.next()).type).toBe('welcome');
    anonymous.send({ type: 'subscribe', channel });
    expect(await anonymous.next()).toEqual(expect.objectContaining({ type: 'error', code: 'UNAUTHORIZED' }));
  });
});
