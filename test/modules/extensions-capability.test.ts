/**
 * What an installed extension's `lm_ext_` token reaches, over real HTTP, with the extension made
 * and installed through the API (developer creates it and a version, review approves it, an
 * account installs it granting some of what its manifest declares): exactly the REST and GraphQL
 * operations its granted permissions gate, one family at a time (events, sounds with the
 * extension's own limits, its install's storage), and nothing else (a declared but ungranted
 * permission, another install's storage, first-party operations), refused with the spec's
 * message on both protocols. Then the account-scoped secret store of installs: written by the
 * account's owner (or a popout holding `extension-store:configure`), sealed at rest, shown by name
 * only, read back with its value by the install's own token alone.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SEALED_COLUMNS, checkSealedValues } from '../../src/auth/sealed';
import { createSecretBox } from '../../src/auth/secrets';
import { gql, useTestApp } from '../helpers/app';
import { approvedDeveloper, installExtension, publishedExtension as publishedExtensionOf } from '../helpers/extensions';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const adminEmail = `ops-${randomUUID()}@example.test`;
const t = useTestApp({ auth: { bootstrap_admins: [adminEmail] } });

type Json = Record<string, any>;
const TONE = readFileSync(path.join(__dirname, '../fixtures/audio/tone.wav'));
const DECLARED = ['events:read', 'events:create', 'sounds:read', 'sounds:create', 'chat:read', 'tokens:create', 'apikeys:create'];
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let admin: LoggedIn;
let dev: LoggedIn;

beforeAll(async () => {
  admin = await devLogin(t, adminEmail);
  dev = await approvedDeveloper(t, admin);
});

/** A published extension (created, uploaded, submitted, approved) declaring DECLARED. */
const publishedExtension = (name: string) => publishedExtensionOf(t, dev, admin, name, DECLARED);

/** Installs `ext` into the user's account granting `permissions`; answers the install and its token. */
async function install(user: LoggedIn, ext: Json, permissions: string[]): Promise<{ id: string; token: string }> {
  const installed = await installExtension(t, user, ext, permissions);
  expect(installed.permissions).toEqual([...permissions].sort());
  return installed;
}

/** A refusal with the same code and message on REST and GraphQL. */
function expectRefused(rest: { status: number; body: Json }, graphql: { body: Json }, status: number, message: string): void {
  expect({ status: rest.status, body: rest.body }).toEqual({ status, body: { error: status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN', message } });
  expect(graphql.body.errors?.[0]).toEqual(expect.objectContaining({ message, extensions: expect.objectContaining({ code: rest.body.error }) }));
}

async function uploadSound(token: string, filename = 'ext.wav') {
  const form = new FormData();
  form.append('file', new Blob([TONE], { type: 'audio/wav' }), filename);
  const encoded = new Request('http://local/', { method: 'POST', body: form });
  const res = await fetch(`${t.url}/v1/sounds`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': encoded.headers.get('content-type')! }, body: Buffer.from(await encoded.arrayBuffer()) });
  return { status: res.status, body: (await res.json()) as Json };
}

describe('an extension token acts through the permissions its install granted', () => {
  test('events: events:read lists and reads events, events:create emits them, on REST and GraphQL', async () => {
    const ext = await publishedExtension('Eventful');
    const creator = await devLogin(t);
    const { token } = await install(creator, ext, ['events:read', 'events:create']);

    const me = await api(t, 'GET', '/tokens/me', { token });
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual(expect.objectContaining({ permissions: ['events:create', 'events:read'] }));

    const emitted = await api(t, 'POST', '/events/emit', { token, body: { type: 'platform_a:follower', platform: 'platform_a', raw: { user: 'ext' } } });
    expect(emitted.status).toBe(201);
    const viaGql = await gql(t.url, 'mutation($input: EmitEventInput!) { emitEvent(input: $input) { id } }', { input: { type: 'platform_a:raid', platform: 'platform_a', raw: {} } }, bearer(token));
    expect(viaGql.body.errors).toBeUndefined();

    const listed = await api(t, 'GET', '/events', { token });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain(emitted.body.data.id as string);
    expect((await api(t, 'GET', `/events/${emitted.body.data.id}`, { token })).status).toBe(200);
    const gqlList = await gql(t.url, 'query { events { total } }', {}, bearer(token));
    expect((gqlList.body.data as Json | undefined)?.events.total).toBe(2);
    // The account's owner sees what the extension emitted: it acted in that account.
    expect((await api(t, 'GET', `/events/${emitted.body.data.id}`, { token: creator.accessToken })).status).toBe(200);
  });

  test('refusals: a declared permission the install did not grant, other families, admin and first-party operations', async () => {
    const ext = await publishedExtension('Narrow');
    const creator = await devLogin(t);
    const { token } = await install(creator, ext, ['events:read']);

    // Declared by the manifest, not granted at install: refused like any missing permission.
    expectRefused(
      await api(t, 'POST', '/events/emit', { token, body: { type: 'platform_a:follower', platform: 'platform_a', raw: {} } }),
      await gql(t.url, 'mutation($input: EmitEventInput!) { emitEvent(input: $input) { id } }', { input: { type: 'platform_a:follower', platform: 'platform_a', raw: {} } }, bearer(token)),
      403,
      'Missing permission: events:create',
    );
    expectRefused(await api(t, 'GET', '/sounds', { token }), await gql(t.url, 'query { sounds { totalCount } }', {}, bearer(token)), 403, 'Missing permission: sounds:read');
    // First-party operations stay refused.
    expectRefused(await api(t, 'GET', '/me', { token }), await gql(t.url, 'query { me { id } }', {}, bearer(token)), 403, "This operation requires a user session or the user's own API key");
    expect(await api(t, 'GET', '/api-keys', { token })).toMatchObject({ status: 403, body: { error: 'FORBIDDEN' } });
    // The account's installs and other installs' storage need extension-store permissions it lacks.
    expect((await api(t, 'GET', '/extension-installs', { token })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:read' });
    // Admin scope is never an extension's.
    expect((await api(t, 'GET', '/admin/limit-requests', { token })).status).toBe(403);
  });

  test('the API key deny-list: granted at install, minting tokens and keys is still never an extension token\'s', async () => {
    const ext = await publishedExtension('Greedy');
    const creator = await devLogin(t);
    const { token } = await install(creator, ext, ['events:read', 'tokens:create', 'apikeys:create']);
    const me = await api(t, 'GET', '/tokens/me', { token });
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual(expect.objectContaining({ permissions: ['events:read'] }));
  });

  test('sounds: sounds:create uploads under the extension\'s own limits (PATCH /v1/admin/extensions/{id}/limits), apart from the account\'s', async () => {
    const ext = await publishedExtension('Soundboard');
    const creator = await devLogin(t);
    const { token } = await install(creator, ext, ['sounds:read', 'sounds:create']);
    expect((await api(t, 'PATCH', `/admin/extensions/${ext.id}/limits`, { token: admin.accessToken, body: { max_sounds: 1 } })).status).toBe(200);

    const first = await uploadSound(token);
    expect(first.status).toBe(201);
    expect(first.body.data).toEqual(expect.objectContaining({ source_extension_name: 'Soundboard', size_bytes: TONE.length }));
    const second = await uploadSound(token);
    expect(second).toEqual({ status: 403, body: { error: 'PLAN_LIMIT_REACHED', message: 'Sound limit reached: this extension may store 1 sound(s)' } });
    // The account's own uploads count against the plan, not the extension's override.
    expect((await uploadSound(creator.accessToken)).status).toBe(201);
    expect((await api(t, 'GET', '/sounds', { token })).status).toBe(200);
    const gqlSounds = await gql(t.url, 'query { sounds { totalCount sounds { sourceExtensionName } } }', {}, bearer(token));
    expect((gqlSounds.body.data as Json | undefined)?.sounds.totalCount).toBe(2);

    // A raised limit lets it upload again.
    expect((await api(t, 'PATCH', `/admin/extensions/${ext.id}/limits`, { token: admin.accessToken, body: { max_sounds: 2 } })).status).toBe(200);
    expect((await uploadSound(token)).status).toBe(201);
    // sounds:delete was not granted.
    expect((await api(t, 'DELETE', `/sounds/${first.body.data.id}`, { token })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: sounds:delete' });
  });

  test("storage: its own install's storage without extension-store permissions; another install's is refused", async () => {
    const ext = await publishedExtension('Keeper');
    const other = await publishedExtension('Neighbour');
    const creator = await devLogin(t);
    const own = await install(creator, ext, ['events:read']);
    const neighbour = await install(creator, other, ['events:read']);

    const set = await api(t, 'PUT', `/extension-installs/${own.id}/storage/score`, { token: own.token, body: { value: { points: 7 } } });
    expect(set.status).toBe(200);
    expect(set.body.data).toEqual({ key: 'score', value: { points: 7 }, updated_at: expect.any(String) });
    expect((await api(t, 'GET', `/extension-installs/${own.id}/storage`, { token: own.token })).body.data).toEqual([set.body.data]);
    // The account sees what its extension stored.
    expect((await api(t, 'GET', `/extension-installs/${own.id}/storage`, { token: creator.accessToken })).body.data).toEqual([set.body.data]);
    expect((await api(t, 'DELETE', `/extension-installs/${own.id}/storage/score`, { token: own.token })).status).toBe(200);

    await api(t, 'PUT', `/extension-installs/${neighbour.id}/storage/secret`, { token: creator.accessToken, body: { value: 1 } });
    expect((await api(t, 'GET', `/extension-installs/${neighbour.id}/storage`, { token: own.token })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:read' });
    expect((await api(t, 'PUT', `/extension-installs/${neighbour.id}/storage/secret`, { token: own.token, body: { value: 2 } })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:configure' });
    expect((await api(t, 'DELETE', `/extension-installs/${neighbour.id}/storage/secret`, { token: own.token })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:configure' });
    // Install settings stay the account's.
    expect((await api(t, 'PATCH', `/extension-installs/${own.id}`, { token: own.token, body: { enabled: false } })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:configure' });
  });
});

describe('the account-scoped extension secret store', () => {
  test('the owner writes secrets (sealed, shown by name only); the install\'s own token reads the value; nobody else does', async () => {
    const ext = await publishedExtension('Vaulted');
    const other = await publishedExtension('Curious');
    const owner = await devLogin(t);
    const own = await install(owner, ext, ['events:read']);
    const neighbour = await install(owner, other, ['events:read']);
    const secrets = `/extension-installs/${own.id}/secrets`;

    const put = await api(t, 'PUT', `${secrets}/api_key`, { token: owner.accessToken, body: { value: 'sk-live-123' } });
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({ name: 'api_key', created_at: expect.any(String), updated_at: expect.any(String) });
    expect((await api(t, 'PUT', `${secrets}/webhook.secret`, { token: owner.accessToken, body: { value: 'whsec' } })).status).toBe(200);
    const listed = await api(t, 'GET', secrets, { token: owner.accessToken });
    expect(listed.body.data).toEqual([put.body.data, { name: 'webhook.secret', created_at: expect.any(String), updated_at: expect.any(String) }]);
    expect(JSON.stringify(listed.body)).not.toContain('sk-live-123');

    // Sealed at rest, and covered by the start-up check of sealed values.
    const rows = (await t.app.db.knex('extension_install_secrets').where({ install_id: own.id }).select('value_sealed')) as { value_sealed: string }[];
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.value_sealed).toMatch(/^v1\./);
      expect(row.value_sealed).not.toContain('sk-live');
    }
    expect(SEALED_COLUMNS).toContainEqual({ table: 'extension_install_secrets', key: ['install_id', 'name'], columns: ['value_sealed'] });
    // A node without the sealing key names it (the start-up check counts these rows).
    const keyId = rows[0]!.value_sealed.split('.')[1]!;
    const foreign = createSecretBox([{ id: `other-${randomUUID().slice(0, 8)}`, key: randomBytes(32).toString('base64') }]);
    const report = await checkSealedValues(t.app.db.knex, foreign);
    expect(report.counts[keyId]).toBeGreaterThanOrEqual(2);
    expect(report.unopenable).toContain(keyId);

    // The install's own token reads the value; another install's token does not find it.
    const read = await api(t, 'GET', '/extension/secrets/api_key', { token: own.token });
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ name: 'api_key', value: 'sk-live-123', updated_at: expect.any(String) });
    expect((await api(t, 'GET', '/extension/secrets/api_key', { token: neighbour.token })).body).toEqual({ error: 'NOT_FOUND', message: 'Extension secret not found' });
    // The extension token manages no secrets (it lacks extension-store:configure).
    expect((await api(t, 'GET', secrets, { token: own.token })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:configure' });
    expect((await api(t, 'PUT', `${secrets}/api_key`, { token: own.token, body: { value: 'x' } })).status).toBe(403);

    // Replacing keeps created_at and changes the value.
    const replaced = await api(t, 'PUT', `${secrets}/api_key`, { token: owner.accessToken, body: { value: 'sk-live-456' } });
    expect(replaced.body.data.created_at).toBe(put.body.data.created_at);
    expect((await api(t, 'GET', '/extension/secrets/api_key', { token: own.token })).body.data.value).toBe('sk-live-456');

    // Only an extension token reads a value: a user session is refused at the gate.
    expect((await api(t, 'GET', '/extension/secrets/api_key', { token: owner.accessToken })).body).toEqual({ error: 'FORBIDDEN', message: 'This operation requires an extension token' });
    expect((await api(t, 'GET', '/extension/secrets/api_key')).status).toBe(401);

    expect((await api(t, 'DELETE', `${secrets}/api_key`, { token: owner.accessToken })).status).toBe(200);
    expect((await api(t, 'DELETE', `${secrets}/api_key`, { token: owner.accessToken })).body).toEqual({ error: 'NOT_FOUND', message: 'Extension secret not found' });
    expect((await api(t, 'GET', '/extension/secrets/api_key', { token: own.token })).status).toBe(404);

    // Uninstalling drops the install's secrets.
    expect((await api(t, 'DELETE', `/extension-installs/${own.id}`, { token: owner.accessToken })).status).toBe(200);
    expect(Number(((await t.app.db.knex('extension_install_secrets').where({ install_id: own.id }).count({ n: '*' })) as [{ n: unknown }])[0].n)).toBe(0);
  });

  test('who manages secrets: owner and administrator, a popout holding extension-store:configure; not a viewer, another account, or a developer key', async () => {
    const ext = await publishedExtension('Managed');
    const owner = await devLogin(t);
    const own = await install(owner, ext, ['events:read']);
    const path = (name: string) => `/extension-installs/${own.id}/secrets/${name}`;

    const administrator = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
    expect((await api(t, 'PUT', path('from_admin'), { token: administrator.accessToken, body: { value: 'a' } })).status).toBe(200);
    const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    expect((await api(t, 'GET', `/extension-installs/${own.id}/secrets`, { token: viewer.accessToken })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:configure' });
    const stranger = await devLogin(t);
    expect((await api(t, 'PUT', path('x'), { token: stranger.accessToken, body: { value: 'a' } })).body).toEqual({ error: 'NOT_FOUND', message: 'Extension install not found' });

    // A popout holding the permission drives the store (Part 1: unaffected by the first-party gate).
    const popout = await api(t, 'POST', '/tokens', { token: owner.accessToken, body: { permissions: ['extension-store:configure'] } });
    expect(popout.status).toBe(201);
    const popoutToken = (popout.body.data as Json).token as string;
    const viaPopout = await fetch(`${t.url}/v1${path('from_popout')}?token=${popoutToken}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 'p' }) });
    expect(viaPopout.status).toBe(200);

    // A developer key is refused (fail-closed), even the developer's own for this extension.
    const key = await api(t, 'POST', '/developer/api-keys', { token: dev.accessToken, body: { label: 'ci', permissions: ['extension-dev:read', 'extension-dev:edit'], team_id: null } });
    expect(key.status).toBe(201);
    const devKey = (key.body.data as Json).key as string;
    expect((await api(t, 'GET', `/extension-installs/${own.id}/secrets`, { token: devKey })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:configure' });
    expect((await api(t, 'PUT', path('x'), { token: devKey, body: { value: 'a' } })).status).toBe(403);
    expect((await api(t, 'GET', '/extension/secrets/from_admin', { token: devKey })).body).toEqual({ error: 'FORBIDDEN', message: 'This operation requires an extension token' });

    // Input: a bad name or an empty value is a 400; unknown installs a 404.
    expect((await api(t, 'PUT', path('bad name!'), { token: owner.accessToken, body: { value: 'a' } })).status).toBe(400);
    expect((await api(t, 'PUT', path('empty'), { token: owner.accessToken, body: { value: '' } })).status).toBe(400);
    expect((await api(t, 'PUT', `/extension-installs/${randomUUID()}/secrets/x`, { token: owner.accessToken, body: { value: 'a' } })).body).toEqual({ error: 'NOT_FOUND', message: 'Extension install not found' });
    expect(((await api(t, 'GET', `/extension-installs/${own.id}/secrets`, { token: owner.accessToken })).body.data as Json[]).map((s) => s.name)).toEqual(['from_admin', 'from_popout']);
    expect((await api(t, 'GET', '/extension/secrets/from_popout', { token: own.token })).body.data.value).toBe('p');
  });
});

describe('the secret store over GraphQL', () => {
  const LIST = 'query($installId: UUID!) { extensionInstallSecrets(installId: $installId) { name createdAt updatedAt } }';
  const SET = 'mutation($installId: UUID!, $name: String!, $value: String!) { setExtensionInstallSecret(installId: $installId, name: $name, value: $value) { name createdAt updatedAt } }';
  const DELETE = 'mutation($installId: UUID!, $name: String!) { deleteExtensionInstallSecret(installId: $installId, name: $name) }';
  const READ = 'query($name: String!) { extensionSecret(name: $name) { name value updatedAt } }';

  /** The same failure on both protocols: REST's status, code and message, and GraphQL's error with that code and message. */
  function expectSameFailure(rest: { status: number; body: Json }, graphql: { body: Json }, status: number, code: string, message: string): void {
    expect({ status: rest.status, error: rest.body.error, message: rest.body.message }).toEqual({ status, error: code, message });
    expect(graphql.body.data ?? null).toBeNull();
    expect(graphql.body.errors?.[0]).toEqual(expect.objectContaining({ message, extensions: expect.objectContaining({ code }) }));
  }

  test('the owner lists, writes and deletes, the install\'s token reads, with the answers and refusals of REST', async () => {
    const ext = await publishedExtension('Vaulted over GraphQL');
    const owner = await devLogin(t);
    const own = await install(owner, ext, ['events:read']);
    const as = bearer(owner.accessToken);

    const set = await gql(t.url, SET, { installId: own.id, name: 'api_key', value: 'sk-gql-1' }, as);
    expect(set.body.errors).toBeUndefined();
    const written = (set.body.data as Json).setExtensionInstallSecret as Json;
    expect(written).toEqual({ name: 'api_key', createdAt: expect.any(String), updatedAt: expect.any(String) });
    // What GraphQL wrote, REST lists (and the other way round), never with a value.
    expect((await api(t, 'PUT', `/extension-installs/${own.id}/secrets/b.rest`, { token: owner.accessToken, body: { value: 'from-rest' } })).status).toBe(200);
    const rest = await api(t, 'GET', `/extension-installs/${own.id}/secrets`, { token: owner.accessToken });
    const listed = await gql(t.url, LIST, { installId: own.id }, as);
    expect(((listed.body.data as Json).extensionInstallSecrets as Json[]).map((s) => s.name)).toEqual((rest.body.data as Json[]).map((s) => s.name));
    expect((listed.body.data as Json).extensionInstallSecrets[0]).toEqual({ name: 'api_key', createdAt: written.createdAt, updatedAt: written.updatedAt });
    expect(JSON.stringify(listed.body)).not.toContain('sk-gql-1');

    // The install's own token reads the value over GraphQL; a user session is refused as on REST.
    const read = await gql(t.url, READ, { name: 'api_key' }, bearer(own.token));
    expect(read.body.data).toEqual({ extensionSecret: { name: 'api_key', value: 'sk-gql-1', updatedAt: expect.any(String) } });
    expectSameFailure(await api(t, 'GET', '/extension/secrets/api_key', { token: owner.accessToken }), await gql(t.url, READ, { name: 'api_key' }, as), 403, 'FORBIDDEN', 'This operation requires an extension token');
    expectSameFailure(await api(t, 'GET', '/extension/secrets/missing', { token: own.token }), await gql(t.url, READ, { name: 'missing' }, bearer(own.token)), 404, 'NOT_FOUND', 'Extension secret not found');
    // The extension token manages no secrets.
    expectSameFailure(await api(t, 'GET', `/extension-installs/${own.id}/secrets`, { token: own.token }), await gql(t.url, LIST, { installId: own.id }, bearer(own.token)), 403, 'FORBIDDEN', 'Missing permission: extension-store:configure');

    // Input refusals read the same on both protocols.
    const unknown = randomUUID();
    expectSameFailure(
      await api(t, 'PUT', `/extension-installs/${unknown}/secrets/x`, { token: owner.accessToken, body: { value: 'a' } }),
      await gql(t.url, SET, { installId: unknown, name: 'x', value: 'a' }, as),
      404, 'NOT_FOUND', 'Extension install not found',
    );
    expectSameFailure(
      await api(t, 'PUT', `/extension-installs/${own.id}/secrets/${encodeURIComponent('bad name!')}`, { token: owner.accessToken, body: { value: 'a' } }),
      await gql(t.url, SET, { installId: own.id, name: 'bad name!', value: 'a' }, as),
      400, 'VALIDATION_ERROR', 'Secret name must be 1 to 100 letters, digits, _, . or -',
    );
    expectSameFailure(
      await api(t, 'PUT', `/extension-installs/${own.id}/secrets/${'n'.repeat(101)}`, { token: owner.accessToken, body: { value: 'a' } }),
      await gql(t.url, SET, { installId: own.id, name: 'n'.repeat(101), value: 'a' }, as),
      400, 'VALIDATION_ERROR', 'Secret name must be 1 to 100 letters, digits, _, . or -',
    );
    for (const value of ['', 'v'.repeat(8193)]) {
      expectSameFailure(
        await api(t, 'PUT', `/extension-installs/${own.id}/secrets/empty`, { token: owner.accessToken, body: { value } }),
        await gql(t.url, SET, { installId: own.id, name: 'empty', value }, as),
        400, 'VALIDATION_ERROR', 'Secret value must be 1 to 8192 characters',
      );
    }
    expectSameFailure(
      await api(t, 'GET', '/extension/secrets/bad%20name', { token: own.token }),
      await gql(t.url, READ, { name: 'bad name' }, bearer(own.token)),
      400, 'VALIDATION_ERROR', 'Secret name must be 1 to 100 letters, digits, _, . or -',
    );

    // Deleting: true once, then the REST 404's words.
    expect((await gql(t.url, DELETE, { installId: own.id, name: 'api_key' }, as)).body.data).toEqual({ deleteExtensionInstallSecret: true });
    expectSameFailure(
      await api(t, 'DELETE', `/extension-installs/${own.id}/secrets/api_key`, { token: owner.accessToken }),
      await gql(t.url, DELETE, { installId: own.id, name: 'api_key' }, as),
      404, 'NOT_FOUND', 'Extension secret not found',
    );
    expect((await gql(t.url, READ, { name: 'api_key' }, bearer(own.token))).body.errors?.[0]?.message).toBe('Extension secret not found');
  });

  test('an install holds at most 100 secrets: the 101st is a 409 on both protocols, replacing one at the cap is not', async () => {
    const ext = await publishedExtension('Full vault');
    const owner = await devLogin(t);
    const own = await install(owner, ext, ['events:read']);
    for (let i = 0; i < 100; i += 1) {
      const name = `s${String(i).padStart(3, '0')}`;
      // Half over each protocol: both count toward the same cap.
      if (i % 2 === 0) expect((await api(t, 'PUT', `/extension-installs/${own.id}/secrets/${name}`, { token: owner.accessToken, body: { value: 'v' } })).status).toBe(200);
      else expect((await gql(t.url, SET, { installId: own.id, name, value: 'v' }, bearer(owner.accessToken))).body.errors).toBeUndefined();
    }
    expectSameFailure(
      await api(t, 'PUT', `/extension-installs/${own.id}/secrets/one_more`, { token: owner.accessToken, body: { value: 'v' } }),
      await gql(t.url, SET, { installId: own.id, name: 'one_more', value: 'v' }, bearer(owner.accessToken)),
      409, 'CONFLICT', 'Too many secrets for this install',
    );
    // Replacing an existing secret at the cap stays allowed, and after a delete there is room again.
    expect((await api(t, 'PUT', `/extension-installs/${own.id}/secrets/s000`, { token: owner.accessToken, body: { value: 'w' } })).status).toBe(200);
    expect((await gql(t.url, SET, { installId: own.id, name: 's001', value: 'w' }, bearer(owner.accessToken))).body.errors).toBeUndefined();
    expect(((await gql(t.url, LIST, { installId: own.id }, bearer(owner.accessToken))).body.data as Json).extensionInstallSecrets).toHaveLength(100);
    expect((await gql(t.url, DELETE, { installId: own.id, name: 's099' }, bearer(owner.accessToken))).body.data).toEqual({ deleteExtensionInstallSecret: true });
    expect((await gql(t.url, SET, { installId: own.id, name: 'one_more', value: 'v' }, bearer(owner.accessToken))).body.errors).toBeUndefined();
  });
});

describe('audit rows of the secret store', () => {
  const SET = 'mutation($installId: UUID!, $name: String!, $value: String!) { setExtensionInstallSecret(installId: $installId, name: $name, value: $value) { name } }';
  const DELETE = 'mutation($installId: UUID!, $name: String!) { deleteExtensionInstallSecret(installId: $installId, name: $name) }';

  test('every set and delete, on both protocols, is in the account\'s audit log with who, the install and the name, never the value', async () => {
    const ext = await publishedExtension('Audited vault');
    const owner = await devLogin(t);
    const own = await install(owner, ext, ['events:read']);
    const administrator = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
    const secrets = `/extension-installs/${own.id}/secrets`;
    const values = ['sk-audit-first-7f3a', 'sk-audit-second-91bc', 'whsec-audit-graphql-55de'];

    expect((await api(t, 'PUT', `${secrets}/api_key`, { token: owner.accessToken, body: { value: values[0] } })).status).toBe(200);
    expect((await api(t, 'PUT', `${secrets}/api_key`, { token: administrator.accessToken, body: { value: values[1] } })).status).toBe(200);
    const gSet = await gql(t.url, SET, { installId: own.id, name: 'hook.secret', value: values[2] }, bearer(owner.accessToken));
    expect(gSet.body.data).toEqual({ setExtensionInstallSecret: { name: 'hook.secret' } });
    const gDelete = await gql(t.url, DELETE, { installId: own.id, name: 'hook.secret' }, bearer(administrator.accessToken));
    expect(gDelete.body.data).toEqual({ deleteExtensionInstallSecret: true });
    expect((await api(t, 'DELETE', `${secrets}/api_key`, { token: owner.accessToken })).status).toBe(200);
    // Refused writes leave no row.
    expect((await api(t, 'DELETE', `${secrets}/api_key`, { token: owner.accessToken })).status).toBe(404);
    expect((await api(t, 'PUT', `${secrets}/bad name!`, { token: owner.accessToken, body: { value: 'x' } })).status).toBe(400);

    const rowsOf = async (type: string) => {
      const log = await api(t, 'GET', '/account/audit-log', { token: owner.accessToken, query: { type } });
      expect(log.status).toBe(200);
      return log.body.items as Json[];
    };
    /** The same rows in any order (two writes may share a millisecond). */
    const sameRows = (got: Json[], want: unknown[]) => {
      expect(got).toHaveLength(want.length);
      expect(got).toEqual(expect.arrayContaining(want));
    };
    const row = (actor: LoggedIn, name: string, extra: Json = {}) =>
      expect.objectContaining({ scope: 'account', account_id: owner.accountId, user_id: actor.userId, actor_id: actor.userId, metadata: { install_id: own.id, extension_id: ext.id, name, ...extra } });
    const set = await rowsOf('account:extension_secret_set');
    sameRows(set, [row(owner, 'api_key', { replaced: false }), row(administrator, 'api_key', { replaced: true }), row(owner, 'hook.secret', { replaced: false })]);
    const deleted = await rowsOf('account:extension_secret_deleted');
    sameRows(deleted, [row(administrator, 'hook.secret'), row(owner, 'api_key')]);

    // Neither the value nor its sealed form is in any audit row (the account's, or the whole table).
    const sealed = (await t.app.db.knex('audit_log').where({ account_id: owner.accountId }).select('metadata')) as { metadata: unknown }[];
    const everything = JSON.stringify([set, deleted, sealed]);
    for (const value of values) expect(everything).not.toContain(value);
    expect(everything).not.toMatch(/v1\.[^"]*\./);
  });
});
