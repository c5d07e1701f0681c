/**
 * The sound library (Part 2, "Sounds") over real HTTP, GraphQL and WebSocket, once per blob backend
 * (`sounds.blob_store: fs | database`): real WAV, MP3, OGG and FLAC uploads streamed through
 * multipart with the type detected from the bytes and the duration measured; the plan's limits at
 * their edges (exactly at the limit passes, one byte or one sound over fails) with nothing left
 * behind, also for an upload cut off mid-stream or one that passes the size limit mid-stream;
 * ranged streaming; play and stop on `sounds:{account_id}` with the target rules; the GraphQL
 * twins; and the per-extension limit overrides.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { AuthContext } from '../../src/auth/context';
import { createDatabaseBlobStore, createFsBlobStore } from '../../src/infra/blobs';
import type { SoundsService } from '../../src/modules/sounds/service';
import { fixtures, wav } from '../fixtures/audio/make';
import { gql, useTestApp, type TestApp } from '../helpers/app';
import { accountOnSoundPlan, blobCount as blobCountOf, soundRowCount, type SoundLimits } from '../helpers/sounds';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect } from '../helpers/ws';

const audio = (name: keyof typeof fixtures) => readFileSync(path.join(__dirname, '../fixtures/audio', name));
const TONE = audio('tone.wav');

/** A multipart body as a browser's FormData would send it. */
async function multipart(parts: { field: string; value: Buffer | string; filename?: string; type?: string }[]): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const part of parts) {
    if (typeof part.value === 'string' && part.filename === undefined) form.append(part.field, part.value);
    else form.append(part.field, new Blob([part.value], { type: part.type ?? 'application/octet-stream' }), part.filename ?? 'file.bin');
  }
  const encoded = new Request('http://local/', { method: 'POST', body: form });
  return { body: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type')! };
}

async function upload(t: Pick<TestApp, 'url'>, user: LoggedIn, file: Buffer | null, options: { filename?: string; type?: string; name?: string; extra?: { field: string; value: Buffer | string; filename?: string }[] } = {}) {
  const parts: { field: string; value: Buffer | string; filename?: string; type?: string }[] = [];
  if (options.name !== undefined) parts.push({ field: 'name', value: options.name });
  if (file) parts.push({ field: 'file', value: file, filename: options.filename ?? 'clip.wav', type: options.type ?? 'audio/wav' });
  parts.push(...(options.extra ?? []));
  const { body, contentType } = await multipart(parts);
  const res = await fetch(`${t.url}/v1/sounds`, { method: 'POST', headers: { authorization: `Bearer ${user.accessToken}`, 'content-type': contentType }, body });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, any>; error?: string; message?: string } };
}

describe.each(['fs', 'database'] as const)('sounds on the %s blob store', (backend) => {
  const operatorEmail = `ops-${randomUUID()}@example.test`;
  // The fs backend writes into a folder the test lists; the database backend into blob_chunks.
  const blobDir = mkdtempSync(path.join(tmpdir(), 'sounds-test-'));
  afterAll(async () => {
    await rm(blobDir, { recursive: true, force: true });
  });
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] }, sounds: { blob_store: backend, blob_dir: backend === 'fs' ? blobDir : null } });
  const opened = closeSocketsAfterEach();
  let ops: LoggedIn;
  let owner: LoggedIn;
  let other: LoggedIn;

  /** Stored blobs: files of the fs folder, or distinct keys of the chunk table. */
  const blobCount = () => blobCountOf(t, backend, blobDir);
  const rowCount = (accountId: string) => soundRowCount(t, accountId);

  const accountOnPlan = (limits: SoundLimits) => accountOnSoundPlan(t, ops, limits);

  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
    owner = await devLogin(t);
    other = await devLogin(t);
  });

  describe('upload', () => {
    test.each(Object.entries(fixtures))('%s: type detected from the bytes, duration measured, bytes streamed back', async (name, fixture) => {
      const bytes = audio(name as keyof typeof fixtures);
      // The declared type and extension are deliberately wrong: the bytes decide.
      const res = await upload(t, owner, bytes, { filename: `${name}.bin`, type: 'application/octet-stream' });
      expect(res.status).toBe(201);
      const sound = res.body.data!;
      expect(sound).toEqual({
        id: expect.any(String),
        account_id: owner.accountId,
        name,
        filename: `${name}.bin`,
        content_type: fixture.contentType,
        size_bytes: bytes.length,
        duration_ms: fixture.durationMs,
        waveform: null,
        created_at: expect.any(String),
        source_extension_name: null,
      });
      expect((res.body as { _links?: { self: string } })._links?.self).toBe(`/v1/sounds/${sound.id}`);
      const streamed = await fetch(`${t.url}/v1/sounds/${sound.id}/stream`, { headers: { authorization: `Bearer ${owner.accessToken}` } });
      expect(streamed.status).toBe(200);
      expect(streamed.headers.get('content-type')).toBe(fixture.contentType);
      expect(streamed.headers.get('cache-control')).toBe('private, max-age=86400, immutable');
      expect(streamed.headers.get('accept-ranges')).toBe('bytes');
      expect(streamed.headers.get('content-length')).toBe(String(bytes.length));
      expect(Buffer.from(await streamed.arrayBuffer()).equals(bytes)).toBe(true);
    });

    test('name defaults to the file name without its extension; a given name is trimmed', async () => {
      expect((await upload(t, owner, TONE, { filename: 'door bell.final.wav' })).body.data!.name).toBe('door bell.final');
      expect((await upload(t, owner, TONE, { name: '  Doorbell  ' })).body.data!.name).toBe('Doorbell');
      const blank = await upload(t, owner, TONE, { name: '   ' });
      expect(blank.status).toBe(400);
      expect(blank.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'name must be 1 to 100 characters' });
    });

    test('bytes that are no MP3, WAV, OGG or FLAC are refused whatever the declared type, and nothing is kept', async () => {
      const before = await blobCount();
      const rows = await rowCount(owner.accountId!);
      for (const bytes of [Buffer.from('ID3 not really an mp3, just text '.repeat(40)), Buffer.from('%PDF-1.4\n%âãÏÓ\n'.repeat(50)), Buffer.alloc(0)]) {
        const res = await upload(t, owner, bytes, { filename: 'song.mp3', type: 'audio/mpeg' });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'VALIDATION_ERROR', message: 'Unsupported audio type: upload an MP3, WAV, OGG or FLAC file', details: expect.any(Object) });
      }
      expect(await blobCount()).toBe(before);
      expect(await rowCount(owner.accountId!)).toBe(rows);
    });

    test('form mistakes: no file, a second file, an unknown field, a JSON body, a broken multipart body', async () => {
      const before = await blobCount();
      const none = await upload(t, owner, null, { name: 'x' });
      expect(none.status).toBe(400);
      expect(none.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'file is required' });
      const two = await upload(t, owner, TONE, { extra: [{ field: 'file', value: TONE, filename: 'b.wav' }] });
      expect(two.status).toBe(400);
      expect(two.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'Only one file may be uploaded' });
      const unknown = await upload(t, owner, TONE, { extra: [{ field: 'colour', value: 'blue' }] });
      expect(unknown.status).toBe(400);
      expect(unknown.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'Unexpected form field: colour' });
      const json = await api(t, 'POST', '/sounds', { token: owner.accessToken, body: { file: 'x' } });
      expect(json.status).toBe(415);
      expect(json.body).toMatchObject({ error: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported content type' });
      const broken = await fetch(`${t.url}/v1/sounds`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.accessToken}`, 'content-type': 'multipart/form-data; boundary=XYZ' },
        body: '--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF-and-then-the-body-just-stops',
      });
      expect(broken.status).toBe(400);
      expect(await broken.json()).toEqual({ error: 'BAD_REQUEST', message: 'Malformed multipart body' });
      expect(await blobCount()).toBe(before);
    });

    test('an upload cut off mid-stream leaves no row and no blob', async () => {
      const user = await devLogin(t);
      const before = await blobCount();
      const { body, contentType } = await multipart([{ field: 'file', value: wav(60_000), filename: 'long.wav', type: 'audio/wav' }]);
      const url = new URL(`${t.url}/v1/sounds`);
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: `Bearer ${user.accessToken}`, 'content-type': contentType, 'content-length': String(body.length) } });
      const ended = new Promise<void>((resolve) => {
        req.on('error', () => resolve());
        req.on('response', () => resolve());
      });
      // Most of the body, so that the server is storing it (polled: its blob shows up) ...
      req.write(body.subarray(0, 700_000));
      const until = async (condition: () => Promise<boolean>) => {
        for (let i = 0; i < 200 && !(await condition()); i++) await new Promise((r) => setTimeout(r, 25));
      };
      await until(async () => (await blobCount()) > before);
      expect(await blobCount()).toBe(before + 1);
      // ... then the connection drops, and the partial blob goes.
      req.destroy();
      await ended;
      await until(async () => (await blobCount()) === before);
      expect(await blobCount()).toBe(before);
      expect(await rowCount(user.accountId!)).toBe(0);
    });
  });

  describe('plan limits', () => {
    test('max_sound_file_size: exactly at the limit passes, one byte over is 400 (also mid-stream), nothing left behind', async () => {
      const user = await accountOnPlan({ max_sounds: 10, max_sound_file_size: TONE.length, max_sound_storage_bytes: 10_000_000 });
      expect((await upload(t, user, TONE)).status).toBe(201);
      const before = await blobCount();
      const over = await upload(t, user, Buffer.concat([TONE, Buffer.from([0])]));
      expect(over.status).toBe(400);
      expect(over.body).toEqual({ error: 'VALIDATION_ERROR', message: `Sound file too large: your plan allows ${TONE.length} bytes per file`, details: expect.any(Object) });
      const farOver = await upload(t, user, wav(30_000));
      expect(farOver.status).toBe(400);
      expect(farOver.body.message).toBe(`Sound file too large: your plan allows ${TONE.length} bytes per file`);
      expect(await blobCount()).toBe(before);
      expect(await rowCount(user.accountId!)).toBe(1);
    });

    test('max_sounds: the last allowed sound passes, one more is 403 PLAN_LIMIT_REACHED', async () => {
      const user = await accountOnPlan({ max_sounds: 2, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 10_000_000 });
      expect((await upload(t, user, TONE)).status).toBe(201);
      expect((await upload(t, user, audio('silence.ogg'))).status).toBe(201);
      const before = await blobCount();
      const third = await upload(t, user, audio('silence.flac'));
      expect(third.status).toBe(403);
      expect(third.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Sound limit reached: your plan allows 2 sound(s)' });
      expect(await blobCount()).toBe(before);
      expect(await rowCount(user.accountId!)).toBe(2);
      const list = await api(t, 'GET', '/sounds', { token: user.accessToken });
      expect(list.body.data).toMatchObject({ total_count: 2, user_sound_count: 2, max_sounds: 2, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 10_000_000, used_storage_bytes: TONE.length + audio('silence.ogg').length });
    });

    test('max_sound_storage_bytes: filling it exactly passes, one byte over is 403, nothing left behind', async () => {
      const exact = await accountOnPlan({ max_sounds: 10, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 2 * TONE.length });
      expect((await upload(t, exact, TONE)).status).toBe(201);
      expect((await upload(t, exact, TONE)).status).toBe(201);
      const before = await blobCount();
      const full = await upload(t, exact, audio('silence.ogg'));
      expect(full.status).toBe(403);
      expect(full.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: `Sound storage limit reached: your plan allows ${2 * TONE.length} bytes` });

      const short = await accountOnPlan({ max_sounds: 10, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 2 * TONE.length - 1 });
      expect((await upload(t, short, TONE)).status).toBe(201);
      const over = await upload(t, short, TONE);
      expect(over.status).toBe(403);
      expect(over.body.message).toBe(`Sound storage limit reached: your plan allows ${2 * TONE.length - 1} bytes`);
      // A file past both the storage left and the file limit is refused as too large.
      const both = await accountOnPlan({ max_sounds: 10, max_sound_file_size: TONE.length, max_sound_storage_bytes: TONE.length + 10 });
      expect((await upload(t, both, TONE)).status).toBe(201);
      expect((await upload(t, both, wav(1000))).body.error).toBe('VALIDATION_ERROR');
      expect(await blobCount()).toBe(before + 2);
      expect(await rowCount(exact.accountId!)).toBe(2);
      expect(await rowCount(short.accountId!)).toBe(1);
      expect(await rowCount(both.accountId!)).toBe(1);
    });

    test('concurrent uploads cannot pass the count limit together', async () => {
      const user = await accountOnPlan({ max_sounds: 1, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 10_000_000 });
      const results = await Promise.all([upload(t, user, TONE), upload(t, user, TONE), upload(t, user, TONE)]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 403, 403]);
      expect(await rowCount(user.accountId!)).toBe(1);
    });

    test('max_upload_size_bytes bounds every upload below a larger sound file limit: at it passes, one byte over is 400', async () => {
      const user = await accountOnPlan({ max_sounds: 10, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 10_000_000, max_upload_size_bytes: TONE.length });
      expect((await upload(t, user, TONE)).status).toBe(201);
      const before = await blobCount();
      const over = await upload(t, user, Buffer.concat([TONE, Buffer.from([0])]));
      expect(over.status).toBe(400);
      expect(over.body).toEqual({ error: 'VALIDATION_ERROR', message: `File too large: your plan allows ${TONE.length} bytes per upload`, details: expect.any(Object) });
      expect(await blobCount()).toBe(before);
      expect(await rowCount(user.accountId!)).toBe(1);
    });

    test("max_storage_bytes holds every byte the account stores (its extensions' sounds too): filling it exactly passes, one byte over is 403", async () => {
      const user = await accountOnPlan({ max_sounds: 10, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 10_000_000, max_storage_bytes: 2 * TONE.length });
      expect((await upload(t, user, TONE)).status).toBe(201);
      // A sound an extension stored in the account counts against the account's storage as well.
      const first = (await t.app.db.knex('sounds').where({ account_id: user.accountId }).first()) as Record<string, unknown>;
      await t.app.db.knex('sounds').insert({ ...first, id: randomUUID(), blob_key: `test-extension-${randomUUID()}`, source_extension_id: randomUUID(), source_extension_name: 'Ext', waveform: null });
      const before = await blobCount();
      const full = await upload(t, user, audio('silence.ogg'));
      expect(full.status).toBe(403);
      expect(full.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: `Storage limit reached: your plan allows ${2 * TONE.length} bytes` });
      expect(await blobCount()).toBe(before);
      const roomy = await accountOnPlan({ max_sounds: 10, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 10_000_000, max_storage_bytes: 2 * TONE.length });
      expect((await upload(t, roomy, TONE)).status).toBe(201);
      expect((await upload(t, roomy, TONE)).status).toBe(201);
      expect((await upload(t, roomy, Buffer.from(TONE.subarray(0, 100)))).body).toMatchObject({ error: 'PLAN_LIMIT_REACHED' });
    });

    test('concurrent uploads cannot pass the account storage limit together', async () => {
      const user = await accountOnPlan({ max_sounds: 10, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 10_000_000, max_storage_bytes: TONE.length + 10 });
      const results = await Promise.all([upload(t, user, TONE), upload(t, user, TONE)]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 403]);
      expect(results.find((r) => r.status === 403)!.body.message).toBe(`Storage limit reached: your plan allows ${TONE.length + 10} bytes`);
      expect(await rowCount(user.accountId!)).toBe(1);
    });
  });

  describe('library', () => {
    let ids: string[] = [];
    let user: LoggedIn;
    beforeAll(async () => {
      user = await devLogin(t);
      ids = [];
      for (const name of ['Airhorn', 'Drum roll', 'airhorn remix']) ids.push((await upload(t, user, TONE, { name })).body.data!.id as string);
    });

    test('list pages newest first with limit and offset, search matches part of the name case-insensitively', async () => {
      const all = await api(t, 'GET', '/sounds', { token: user.accessToken });
      expect(all.status).toBe(200);
      const data = all.body.data as { sounds: { id: string }[]; total_count: number };
      expect(data.sounds.map((s) => s.id)).toEqual([...ids].reverse());
      expect(data.total_count).toBe(3);
      const page = await api(t, 'GET', '/sounds', { token: user.accessToken, query: { limit: '1', offset: '1' } });
      expect((page.body.data as { sounds: { id: string }[] }).sounds.map((s) => s.id)).toEqual([ids[1]]);
      const found = await api(t, 'GET', '/sounds', { token: user.accessToken, query: { search: 'AIRHORN' } });
      expect((found.body.data as { sounds: unknown[]; total_count: number; user_sound_count: number })).toMatchObject({ total_count: 2, user_sound_count: 3 });
      expect((await api(t, 'GET', '/sounds', { token: user.accessToken, query: { search: '%' } })).body.data).toMatchObject({ total_count: 0 });
      expect((await api(t, 'GET', '/sounds', { token: user.accessToken, query: { limit: '101' } })).status).toBe(400);
      const gqlList = await gql(t.url, 'query { sounds(limit: 2, search: "air") { totalCount userSoundCount maxSounds maxSoundFileSize usedStorageBytes sounds { id name sizeBytes durationMs contentType sourceExtensionName } } }', {}, { authorization: `Bearer ${user.accessToken}` });
      expect(gqlList.body.data!.sounds).toMatchObject({ totalCount: 2, userSoundCount: 3, maxSounds: 50, usedStorageBytes: 3 * TONE.length, sounds: [{ id: ids[2], name: 'airhorn remix', sizeBytes: TONE.length, durationMs: 500, contentType: 'audio/wav', sourceExtensionName: null }, { id: ids[0] }] });
      const bad = await gql(t.url, 'query { sounds(limit: 0) { totalCount } }', {}, { authorization: `Bearer ${user.accessToken}` });
      expect(bad.body.errors?.[0]).toMatchObject({ message: 'query.limit must be >= 1', extensions: { code: 'VALIDATION_ERROR' } });
    });

    test('read, update and delete on both protocols; another account sees Sound not found', async () => {
      const auth = { authorization: `Bearer ${user.accessToken}` };
      const one = await api(t, 'GET', `/sounds/${ids[0]}`, { token: user.accessToken });
      expect(one.body.data).toMatchObject({ id: ids[0], name: 'Airhorn' });
      const patched = await api(t, 'PATCH', `/sounds/${ids[0]}`, { token: user.accessToken, body: { name: ' Horn ', duration_ms: 1234, waveform: { peaks: [0, 0.5, 1], sample_rate: 10 } } });
      expect(patched.status).toBe(200);
      expect(patched.body.data).toMatchObject({ name: 'Horn', duration_ms: 1234, waveform: { peaks: [0, 0.5, 1], sample_rate: 10 } });
      const viaGql = await gql(t.url, 'query($id: UUID!) { sound(id: $id) { name durationMs waveform } }', { id: ids[0] }, auth);
      expect(viaGql.body.data!.sound).toEqual({ name: 'Horn', durationMs: 1234, waveform: { peaks: [0, 0.5, 1], sample_rate: 10 } });
      const renamed = await gql(t.url, 'mutation($id: UUID!) { updateSound(id: $id, input: { name: "Bell", waveform: null }) { name waveform } }', { id: ids[0] }, auth);
      expect(renamed.body.data!.updateSound).toEqual({ name: 'Bell', waveform: null });
      for (const [body, message] of [
        [{ name: '' }, 'name must be 1 to 100 characters'],
        [{ duration_ms: -1 }, 'duration_ms must be an integer from 0 to 2147483647'],
        [{ waveform: { peaks: 'x'.repeat(65536) } }, 'waveform must be at most 65536 bytes as JSON'],
      ] as const) {
        const rest = await api(t, 'PATCH', `/sounds/${ids[0]}`, { token: user.accessToken, body });
        expect(rest.body).toMatchObject({ error: 'VALIDATION_ERROR', message });
      }
      const gqlBad = await gql(t.url, 'mutation($id: UUID!) { updateSound(id: $id, input: { durationMs: -1 }) { name } }', { id: ids[0] }, auth);
      expect(gqlBad.body.errors?.[0]).toMatchObject({ message: 'duration_ms must be an integer from 0 to 2147483647', extensions: { code: 'VALIDATION_ERROR' } });
      const gqlLarge = await gql(t.url, 'mutation($id: UUID!, $w: JSON) { updateSound(id: $id, input: { waveform: $w }) { name } }', { id: ids[0], w: { peaks: 'x'.repeat(65536) } }, auth);
      expect(gqlLarge.body.errors?.[0]).toMatchObject({ message: 'waveform must be at most 65536 bytes as JSON', extensions: { code: 'VALIDATION_ERROR' } });

      const foreign = await api(t, 'GET', `/sounds/${ids[0]}`, { token: other.accessToken });
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({ error: 'NOT_FOUND', message: 'Sound not found' });
      const foreignGql = await gql(t.url, 'query($id: UUID!) { sound(id: $id) { id } }', { id: ids[0] }, { authorization: `Bearer ${other.accessToken}` });
      expect(foreignGql.body.errors?.[0]).toMatchObject({ message: 'Sound not found', extensions: { code: 'NOT_FOUND' } });
      expect((await api(t, 'DELETE', `/sounds/${ids[0]}`, { token: other.accessToken })).status).toBe(404);

      const before = await blobCount();
      const deleted = await api(t, 'DELETE', `/sounds/${ids[0]}`, { token: user.accessToken });
      expect(deleted.status).toBe(204);
      expect(await blobCount()).toBe(before - 1);
      expect((await api(t, 'GET', `/sounds/${ids[0]}/stream`, { token: user.accessToken })).status).toBe(404);
      const gqlDelete = await gql(t.url, 'mutation($id: UUID!) { deleteSound(id: $id) }', { id: ids[1] }, auth);
      expect(gqlDelete.body.data).toEqual({ deleteSound: true });
      expect(await blobCount()).toBe(before - 2);
      const again = await gql(t.url, 'mutation($id: UUID!) { deleteSound(id: $id) }', { id: ids[1] }, auth);
      expect(again.body.errors?.[0]).toMatchObject({ message: 'Sound not found', extensions: { code: 'NOT_FOUND' } });
    });

    test('a viewer reads and streams but may not upload, edit or delete', async () => {
      const viewer = await joinAccount(t, user, await devLogin(t), { role: 'viewer' });
      expect((await api(t, 'GET', `/sounds/${ids[2]}`, { token: viewer.accessToken })).status).toBe(200);
      const streamed = await fetch(`${t.url}/v1/sounds/${ids[2]}/stream`, { headers: { authorization: `Bearer ${viewer.accessToken}` } });
      expect(streamed.status).toBe(200);
      expect(Buffer.from(await streamed.arrayBuffer()).equals(TONE)).toBe(true);
      expect((await upload(t, viewer, TONE)).body.error).toBe('FORBIDDEN');
      expect((await api(t, 'PATCH', `/sounds/${ids[2]}`, { token: viewer.accessToken, body: { name: 'x' } })).body.error).toBe('FORBIDDEN');
      expect((await api(t, 'DELETE', `/sounds/${ids[2]}`, { token: viewer.accessToken })).body.error).toBe('FORBIDDEN');
      expect((await api(t, 'POST', `/sounds/${ids[2]}/play`, { token: viewer.accessToken, body: {} })).body.error).toBe('FORBIDDEN');
    });
  });

  describe('stream ranges', () => {
    let id = '';
    let bytes: Buffer;
    let user: LoggedIn;
    beforeAll(async () => {
      user = await devLogin(t);
      bytes = audio('silence.mp3');
      id = (await upload(t, user, bytes, { filename: 's.mp3', type: 'audio/mpeg' })).body.data!.id as string;
    });
    const ranged = (range: string) => fetch(`${t.url}/v1/sounds/${id}/stream`, { headers: { authorization: `Bearer ${user.accessToken}`, range } });

    test.each([
      ['bytes=0-9', 0, 9],
      ['bytes=100-', 100, -1],
      ['bytes=-10', -10, -1],
      ['bytes=8000-999999', 8000, -1],
    ])('%s answers 206 with Content-Range and those bytes', async (range, from, to) => {
      const res = await ranged(range);
      expect(res.status).toBe(206);
      const start = from < 0 ? bytes.length + from : from;
      const end = to < 0 ? bytes.length - 1 : to;
      expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${bytes.length}`);
      expect(res.headers.get('content-length')).toBe(String(end - start + 1));
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      expect(res.headers.get('cache-control')).toBe('private, max-age=86400, immutable');
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes.subarray(start, end + 1))).toBe(true);
    });

    test('a range past the end is 416 with bytes */size; a malformed or multi-range header gets the whole file', async () => {
      for (const range of [`bytes=${bytes.length}-`, 'bytes=-0']) {
        const res = await ranged(range);
        expect(res.status).toBe(416);
        expect(res.headers.get('content-range')).toBe(`bytes */${bytes.length}`);
        await res.arrayBuffer();
      }
      for (const range of ['bytes=5-2', 'items=0-1', 'bytes=0-1,4-5', 'bytes=abc']) {
        const res = await ranged(range);
        expect(res.status).toBe(200);
        expect((await res.arrayBuffer()).byteLength).toBe(bytes.length);
      }
    });

    test('a large file streams whole and by ranges across storage chunks', async () => {
      const big = wav(40_000, 8000); // 640 KB: several database chunks
      const created = await upload(t, user, big);
      expect(created.status).toBe(201);
      const bigId = created.body.data!.id as string;
      const whole = await fetch(`${t.url}/v1/sounds/${bigId}/stream`, { headers: { authorization: `Bearer ${user.accessToken}` } });
      expect(Buffer.from(await whole.arrayBuffer()).equals(big)).toBe(true);
      const across = await fetch(`${t.url}/v1/sounds/${bigId}/stream`, { headers: { authorization: `Bearer ${user.accessToken}`, range: 'bytes=262000-530000' } });
      expect(across.status).toBe(206);
      expect(Buffer.from(await across.arrayBuffer()).equals(big.subarray(262000, 530001))).toBe(true);
    });
  });

  describe('play and stop', () => {
    let user: LoggedIn;
    let soundId = '';
    beforeAll(async () => {
      user = await devLogin(t);
      soundId = (await upload(t, user, TONE, { name: 'Chime' })).body.data!.id as string;
    });

    async function listening(token: string, accountId: string) {
      const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${token}` } });
      opened.push(s);
      expect((await s.next()).type).toBe('welcome');
      s.send({ type: 'subscribe', channel: `sounds:${accountId}` });
      expect(await s.next()).toEqual({ type: 'subscribed', channel: `sounds:${accountId}` });
      return s;
    }

    test('play without a target reaches every browser source with volume 1; stop follows', async () => {
      const s = await listening(user.accessToken, user.accountId!);
      const played = await api(t, 'POST', `/sounds/${soundId}/play`, { token: user.accessToken, body: {} });
      expect(played.status).toBe(200);
      expect(played.body).toEqual({ success: true });
      expect(await s.next()).toEqual({
        type: 'event',
        channel: `sounds:${user.accountId}`,
        event_type: 'sound:play',
        data: { sound_id: soundId, name: 'Chime', content_type: 'audio/wav', duration_ms: 500, volume: 1, target: null, stream_url: `/v1/sounds/${soundId}/stream` },
        cursor: expect.any(String),
      });
      expect((await api(t, 'POST', `/sounds/${soundId}/stop`, { token: user.accessToken })).body).toEqual({ success: true });
      expect(await s.next()).toEqual({ type: 'event', channel: `sounds:${user.accountId}`, event_type: 'sound:stop', data: { sound_id: soundId, target: null }, cursor: expect.any(String) });
    });

    test('targets: own widget and overlay pass (a widget token hears it); other types, bad ids and foreign ones are refused', async () => {
      const overlay = (await api(t, 'POST', '/overlays', { token: user.accessToken, body: { name: 'Main' } })).body.data as { id: string };
      const widget = (await api(t, 'POST', '/widgets', { token: user.accessToken, body: { name: 'Alerts' } })).body.data as { id: string };
      const widgetToken = ((await api(t, 'POST', `/widgets/${widget.id}/token`, { token: user.accessToken })).body.data as { token: string }).token;
      const s = await listening(widgetToken, user.accountId!);
      expect((await api(t, 'POST', `/sounds/${soundId}/play`, { token: user.accessToken, body: { volume: 0.25, target: { type: 'widget', id: widget.id } } })).status).toBe(200);
      expect(await s.next()).toMatchObject({ event_type: 'sound:play', data: { volume: 0.25, target: { type: 'widget', id: widget.id } } });
      const viaGql = await gql(t.url, 'mutation($id: UUID!, $t: SoundTargetInput) { playSound(id: $id, volume: 0, target: $t) { success } }', { id: soundId, t: { type: 'overlay', id: overlay.id } }, { authorization: `Bearer ${user.accessToken}` });
      expect(viaGql.body.data).toEqual({ playSound: { success: true } });
      expect(await s.next()).toMatchObject({ event_type: 'sound:play', data: { volume: 0, target: { type: 'overlay', id: overlay.id } } });
      const stopped = await gql(t.url, 'mutation($id: UUID!) { stopSound(id: $id, target: { type: "widget", id: "' + widget.id + '" }) { success } }', { id: soundId }, { authorization: `Bearer ${user.accessToken}` });
      expect(stopped.body.data).toEqual({ stopSound: { success: true } });
      expect(await s.next()).toMatchObject({ event_type: 'sound:stop', data: { sound_id: soundId, target: { type: 'widget', id: widget.id } } });

      const foreignOverlay = (await api(t, 'POST', '/overlays', { token: other.accessToken, body: { name: 'Theirs' } })).body.data as { id: string };
      const cases: [Record<string, unknown>, number, string, string][] = [
        [{ target: { type: 'scene', id: overlay.id } }, 400, 'VALIDATION_ERROR', 'target.type must be widget or overlay'],
        [{ target: { type: 'overlay', id: 'nope' } }, 400, 'VALIDATION_ERROR', 'target.id must be a UUID'],
        [{ volume: 1.5 }, 400, 'VALIDATION_ERROR', 'volume must be a number from 0.0 to 1.0'],
        [{ target: { type: 'overlay', id: foreignOverlay.id } }, 404, 'NOT_FOUND', 'Overlay not found'],
        [{ target: { type: 'widget', id: randomUUID() } }, 404, 'NOT_FOUND', 'Widget not found'],
      ];
      for (const [body, status, code, message] of cases) {
        const rest = await api(t, 'POST', `/sounds/${soundId}/play`, { token: user.accessToken, body });
        expect({ status: rest.status, body: rest.body }).toMatchObject({ status, body: { error: code, message } });
        const graphql = await gql(t.url, 'mutation($id: UUID!, $v: Float, $t: SoundTargetInput) { playSound(id: $id, volume: $v, target: $t) { success } }', { id: soundId, v: body.volume ?? null, t: body.target ?? null }, { authorization: `Bearer ${user.accessToken}` });
        expect(graphql.body.errors?.[0]).toMatchObject({ message, extensions: { code } });
      }
      const stopBad = await api(t, 'POST', `/sounds/${soundId}/stop`, { token: user.accessToken, body: { target: { type: 'screen', id: widget.id } } });
      expect(stopBad.body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'target.type must be widget or overlay' });
      expect((await api(t, 'POST', `/sounds/${randomUUID()}/play`, { token: user.accessToken, body: {} })).body).toEqual({ error: 'NOT_FOUND', message: 'Sound not found' });
    });

    test('another account cannot subscribe to the channel or play the sound', async () => {
      const s = await connect(t.wsUrl, { headers: { Authorization: `Bearer ${other.accessToken}` } });
      opened.push(s);
      await s.next();
      s.send({ type: 'subscribe', channel: `sounds:${user.accountId}` });
      expect(await s.next()).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' });
      expect((await api(t, 'POST', `/sounds/${soundId}/play`, { token: other.accessToken, body: {} })).status).toBe(404);
    });
  });

  describe('per-extension limits', () => {
    const service = () => t.app.modules.sounds as unknown as SoundsService;
    /** An upload as an extension's context would make it (extension tokens reach REST once installs grant permissions). */
    async function uploadAs(auth: AuthContext, file: Buffer) {
      const { body, contentType } = await multipart([{ field: 'file', value: file, filename: 'ext.wav', type: 'audio/wav' }]);
      return service().upload(auth, { body: Readable.from([body]), header: (name) => (name.toLowerCase() === 'content-type' ? contentType : undefined) });
    }

    test('overrides are stored per extension id and apply to that extension, else the plan; null clears one', async () => {
      const user = await accountOnPlan({ max_sounds: 1, max_sound_file_size: TONE.length, max_sound_storage_bytes: 10_000_000 });
      const extensionId = randomUUID();
      const ext: AuthContext = { kind: 'extension', userId: null, accountId: user.accountId, permissions: new Set(), adminPermissions: new Set(), userPermissions: new Set(), credentialId: 'x', label: null, binding: { extensionId, installId: randomUUID() } };
      expect(await t.app.modules.sounds.extensionLimits(extensionId)).toEqual({ maxSounds: null, maxSoundFileSize: null, maxSoundStorageBytes: null });

      // No override: the plan's limits, counted over the extension's own uploads.
      expect((await uploadAs(ext, TONE)).sourceExtensionName).toBe(extensionId);
      await expect(uploadAs(ext, TONE)).rejects.toMatchObject({ code: 'PLAN_LIMIT_REACHED', message: 'Sound limit reached: your plan allows 1 sound(s)' });
      // The account's own quota is separate.
      expect((await upload(t, user, TONE)).status).toBe(201);

      t.app.modules.sounds.useExtensionNames((id) => Promise.resolve(id === extensionId ? 'Alert Box' : null));
      await t.app.modules.sounds.setExtensionLimits(extensionId, { maxSounds: 3, maxSoundFileSize: TONE.length + 1 });
      expect(await t.app.modules.sounds.extensionLimits(extensionId)).toEqual({ maxSounds: 3, maxSoundFileSize: TONE.length + 1, maxSoundStorageBytes: null });
      const second = await uploadAs(ext, Buffer.concat([TONE, Buffer.from([0])]));
      expect(second).toMatchObject({ sourceExtensionName: 'Alert Box', sizeBytes: TONE.length + 1 });
      await expect(uploadAs(ext, Buffer.concat([TONE, Buffer.from([0, 0])]))).rejects.toMatchObject({ code: 'VALIDATION_ERROR', message: `Sound file too large: this extension allows ${TONE.length + 1} bytes per file` });
      await t.app.modules.sounds.setExtensionLimits(extensionId, { maxSoundStorageBytes: 2 * TONE.length + 1 });
      await expect(uploadAs(ext, TONE)).rejects.toMatchObject({ code: 'PLAN_LIMIT_REACHED', message: `Sound storage limit reached: this extension may store ${2 * TONE.length + 1} bytes` });
      await t.app.modules.sounds.setExtensionLimits(extensionId, { maxSounds: 2, maxSoundStorageBytes: null });
      await expect(uploadAs(ext, TONE)).rejects.toMatchObject({ code: 'PLAN_LIMIT_REACHED', message: 'Sound limit reached: this extension may store 2 sound(s)' });
      await expect(t.app.modules.sounds.setExtensionLimits(extensionId, { maxSounds: -1 })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
      expect(await t.app.modules.sounds.extensionLimits(extensionId)).toEqual({ maxSounds: 2, maxSoundFileSize: TONE.length + 1, maxSoundStorageBytes: null });

      const list = await api(t, 'GET', '/sounds', { token: user.accessToken });
      expect(list.body.data).toMatchObject({ total_count: 3, user_sound_count: 1, used_storage_bytes: TONE.length });
      expect(await rowCount(user.accountId!)).toBe(3);
    });
  });

  test('the orphan sweep removes blobs no sound points at, and keeps the rest', async () => {
    const user = await devLogin(t);
    const kept = (await upload(t, user, TONE)).body.data!.id as string;
    const blobs = t.app.modules.sounds as unknown as SoundsService;
    const before = await blobCount();
    // A blob left by a crashed upload: written, never recorded.
    const store = backend === 'database' ? createDatabaseBlobStore(t.app.db.knex) : createFsBlobStore({ dir: blobDir });
    await store.put('orphan0000', Readable.from([Buffer.from('left behind')]));
    expect(await blobCount()).toBe(before + 1);
    expect(await blobs.sweepOrphans(-60_000)).toBe(1);
    expect(await blobCount()).toBe(before);
    expect((await fetch(`${t.url}/v1/sounds/${kept}/stream`, { headers: { authorization: `Bearer ${user.accessToken}` } }).then((r) => r.arrayBuffer())).byteLength).toBe(TONE.length);
  });
});
