/**
 * GraphQL's uploadSound over real HTTP, once per blob backend: a multipart request (the GraphQL
 * multipart request convention: `operations`, `map`, then the file) creates the same sound REST's
 * POST /v1/sounds creates from the same bytes; every refusal answers the code and message REST
 * answers (unsupported type, too large also mid-stream, no file, the plan's count and storage
 * limits, a bad name, the gate, an extension's own limits) and leaves no row and no blob; a malformed multipart shape is a
 * 400 BAD_REQUEST before anything runs; the preflight header guards against cross-site posts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CORS_ALLOWED_HEADERS } from '../../src/http/cors';
import { fixtures, wav } from '../fixtures/audio/make';
import { gql, useTestApp, type TestApp } from '../helpers/app';
import { approvedDeveloper, installExtension, publishedExtension } from '../helpers/extensions';
import { accountOnSoundPlan, blobCount as blobCountOf, soundRowCount, type SoundLimits } from '../helpers/sounds';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const audio = (name: keyof typeof fixtures) => readFileSync(path.join(__dirname, '../fixtures/audio', name));
const TONE = audio('tone.wav');

const UPLOAD = 'mutation Up($file: Upload, $name: String) { uploadSound(file: $file, name: $name) { id accountId name filename contentType sizeBytes durationMs waveform createdAt sourceExtensionName } }';

type Part = { field: string; value: Buffer | string; filename?: string; type?: string };

/** A multipart body as a browser's FormData would send it, parts in the order given. */
async function encode(parts: Part[]): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const part of parts) {
    if (typeof part.value === 'string' && part.filename === undefined) form.append(part.field, part.value);
    else form.append(part.field, new Blob([part.value], { type: part.type ?? 'application/octet-stream' }), part.filename ?? 'file.bin');
  }
  const encoded = new Request('http://local/', { method: 'POST', body: form });
  return { body: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type')! };
}

interface GqlAnswer {
  status: number;
  body: { data?: Record<string, any> | null; errors?: { message: string; extensions?: { code?: string } }[] };
}

async function postParts(t: Pick<TestApp, 'url'>, token: string | null, parts: Part[], headers: Record<string, string> = { 'graphql-require-preflight': '1' }): Promise<GqlAnswer> {
  const { body, contentType } = await encode(parts);
  const res = await fetch(`${t.url}/v1/gql`, { method: 'POST', headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': contentType, ...headers }, body });
  return { status: res.status, body: (await res.json()) as GqlAnswer['body'] };
}

/** uploadSound through GraphQL: `file` null sends no file (and an empty map). */
function gqlUpload(t: Pick<TestApp, 'url'>, user: LoggedIn, file: Buffer | null, options: { filename?: string; name?: string; headers?: Record<string, string> } = {}) {
  const variables: Record<string, unknown> = { file: null, ...(options.name !== undefined ? { name: options.name } : {}) };
  const parts: Part[] = [
    { field: 'operations', value: JSON.stringify({ query: UPLOAD, variables }) },
    { field: 'map', value: JSON.stringify(file ? { 0: ['variables.file'] } : {}) },
  ];
  if (file) parts.push({ field: '0', value: file, filename: options.filename ?? 'clip.wav', type: 'audio/wav' });
  return postParts(t, user.accessToken, parts, options.headers);
}

async function restUpload(t: Pick<TestApp, 'url'>, user: LoggedIn, file: Buffer | null, options: { filename?: string; name?: string } = {}) {
  const parts: Part[] = [];
  if (options.name !== undefined) parts.push({ field: 'name', value: options.name });
  if (file) parts.push({ field: 'file', value: file, filename: options.filename ?? 'clip.wav', type: 'audio/wav' });
  const { body, contentType } = await encode(parts);
  const res = await fetch(`${t.url}/v1/sounds`, { method: 'POST', headers: { authorization: `Bearer ${user.accessToken}`, 'content-type': contentType }, body });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, any>; error?: string; message?: string } };
}

/** The one error of a GraphQL answer as REST words it. */
const asRest = (answer: GqlAnswer) => ({ error: answer.body.errors?.[0]?.extensions?.code, message: answer.body.errors?.[0]?.message });

describe.each(['fs', 'database'] as const)('GraphQL uploadSound on the %s blob store', (backend) => {
  const operatorEmail = `ops-${randomUUID()}@example.test`;
  const blobDir = mkdtempSync(path.join(tmpdir(), 'sounds-gql-test-'));
  afterAll(async () => {
    await rm(blobDir, { recursive: true, force: true });
  });
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] }, sounds: { blob_store: backend, blob_dir: backend === 'fs' ? blobDir : null } });
  let ops: LoggedIn;
  let owner: LoggedIn;

  const blobCount = () => blobCountOf(t, backend, blobDir);
  const rowCount = (accountId: string) => soundRowCount(t, accountId);

  const accountOnPlan = (limits: SoundLimits, features = true) => accountOnSoundPlan(t, ops, limits, features);

  /** Runs `attempt` and expects it to leave the account's rows and the store's blobs as they were. */
  async function leavesNothing<T>(user: LoggedIn, attempt: () => Promise<T>): Promise<T> {
    const blobs = await blobCount();
    const rows = await rowCount(user.accountId!);
    const result = await attempt();
    expect(await blobCount()).toBe(blobs);
    expect(await rowCount(user.accountId!)).toBe(rows);
    return result;
  }

  beforeAll(async () => {
    ops = await devLogin(t, operatorEmail);
    owner = await devLogin(t);
  });

  test.each(Object.keys(fixtures))('%s: the same sound REST creates from the same bytes, bytes streamed back', async (name) => {
    const bytes = audio(name as keyof typeof fixtures);
    const viaRest = await restUpload(t, owner, bytes, { filename: `${name}.bin` });
    expect(viaRest.status).toBe(201);
    const viaGql = await gqlUpload(t, owner, bytes, { filename: `${name}.bin` });
    expect(viaGql.status).toBe(200);
    expect(viaGql.body.errors).toBeUndefined();
    const created = viaGql.body.data!.uploadSound as Record<string, unknown>;
    // Read back through REST: the two sounds differ in their id and time only.
    const read = await api(t, 'GET', `/sounds/${created.id as string}`, { token: owner.accessToken });
    expect(read.status).toBe(200);
    const strip = ({ id: _id, created_at: _at, ...rest }: Record<string, unknown>) => rest;
    expect(strip(read.body.data as Record<string, unknown>)).toEqual(strip(viaRest.body.data!));
    expect(created).toEqual({
      id: expect.any(String),
      accountId: owner.accountId,
      name,
      filename: `${name}.bin`,
      contentType: viaRest.body.data!.content_type,
      sizeBytes: bytes.length,
      durationMs: viaRest.body.data!.duration_ms,
      waveform: null,
      createdAt: expect.any(String),
      sourceExtensionName: null,
    });
    const streamed = await fetch(`${t.url}/v1/sounds/${created.id as string}/stream`, { headers: { authorization: `Bearer ${owner.accessToken}` } });
    expect(Buffer.from(await streamed.arrayBuffer()).equals(bytes)).toBe(true);
  });

  test('a given name is used (trimmed), Apollo-Require-Preflight is taken too', async () => {
    const res = await gqlUpload(t, owner, TONE, { name: '  Doorbell  ', headers: { 'apollo-require-preflight': 'true' } });
    expect(res.body.data?.uploadSound).toMatchObject({ name: 'Doorbell', filename: 'clip.wav' });
  });

  test('every refusal answers the code and message REST answers, and leaves nothing behind', async () => {
    const user = await accountOnPlan({ max_sounds: 2, max_sound_file_size: TONE.length, max_sound_storage_bytes: 2 * TONE.length + 10 });
    const same = async (file: Buffer | null, options: { name?: string } = {}) => {
      const rest = await leavesNothing(user, () => restUpload(t, user, file, options));
      expect(rest.status).toBeGreaterThanOrEqual(400);
      const graph = await leavesNothing(user, () => gqlUpload(t, user, file, options));
      expect(graph.body.data ?? null).toBeNull();
      expect(asRest(graph)).toEqual({ error: rest.body.error, message: rest.body.message });
      return asRest(graph);
    };
    expect(await same(Buffer.from('%PDF-1.4\n'.repeat(40)))).toEqual({ error: 'VALIDATION_ERROR', message: 'Unsupported audio type: upload an MP3, WAV, OGG or FLAC file' });
    expect(await same(Buffer.concat([TONE, Buffer.from([0])]))).toEqual({ error: 'VALIDATION_ERROR', message: `Sound file too large: your plan allows ${TONE.length} bytes per file` });
    // Far over the limit: refused while it streams.
    expect(await same(wav(30_000))).toEqual({ error: 'VALIDATION_ERROR', message: `Sound file too large: your plan allows ${TONE.length} bytes per file` });
    expect(await same(null)).toEqual({ error: 'VALIDATION_ERROR', message: 'file is required' });
    expect(await same(TONE, { name: '   ' })).toEqual({ error: 'VALIDATION_ERROR', message: 'name must be 1 to 100 characters' });

    // The storage limit: two tones fit, the third does not (10 bytes left).
    expect((await gqlUpload(t, user, TONE)).body.errors).toBeUndefined();
    expect((await restUpload(t, user, TONE)).status).toBe(201);
    // The count limit (2) is reached now; raise it to reach the storage limit instead.
    expect(await same(TONE)).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Sound limit reached: your plan allows 2 sound(s)' });
    const roomy = await accountOnPlan({ max_sounds: 10, max_sound_file_size: TONE.length, max_sound_storage_bytes: TONE.length + 10 });
    expect((await gqlUpload(t, roomy, TONE)).body.errors).toBeUndefined();
    const rest = await leavesNothing(roomy, () => restUpload(t, roomy, TONE));
    const graph = await leavesNothing(roomy, () => gqlUpload(t, roomy, TONE));
    expect(rest.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: `Sound storage limit reached: your plan allows ${TONE.length + 10} bytes` });
    expect(asRest(graph)).toEqual(rest.body);
  });

  test('gates as on REST: a viewer lacks sounds:create, a plan without feature:sounds is refused, an anonymous caller too', async () => {
    const viewer = await joinAccount(t, owner, await devLogin(t), { role: 'viewer' });
    const rest = await restUpload(t, viewer, TONE);
    const graph = await leavesNothing(owner, () => gqlUpload(t, viewer, TONE));
    expect(asRest(graph)).toEqual({ error: rest.body.error, message: rest.body.message });
    expect(rest.body.error).toBe('FORBIDDEN');

    const off = await accountOnPlan({ max_sounds: 10, max_sound_file_size: 1_000_000, max_sound_storage_bytes: 1_000_000 }, false);
    const restOff = await restUpload(t, off, TONE);
    const graphOff = await leavesNothing(off, () => gqlUpload(t, off, TONE));
    expect(restOff.body.error).toBe('FEATURE_DISABLED');
    expect(asRest(graphOff)).toEqual({ error: restOff.body.error, message: restOff.body.message });

    const anonymous = await postParts(t, null, [
      { field: 'operations', value: JSON.stringify({ query: UPLOAD, variables: { file: null } }) },
      { field: 'map', value: JSON.stringify({ 0: ['variables.file'] }) },
      { field: '0', value: TONE, filename: 'a.wav' },
    ]);
    expect(asRest(anonymous).error).toBe('UNAUTHORIZED');
  });

  test('CSRF: a multipart request without a preflight header is refused before anything is read or stored', async () => {
    const res = await leavesNothing(owner, () => gqlUpload(t, owner, TONE, { headers: {} }));
    expect(res.status).toBe(400);
    expect(asRest(res)).toEqual({ error: 'BAD_REQUEST', message: 'A multipart GraphQL request must carry a GraphQL-Require-Preflight or Apollo-Require-Preflight header' });
    const blank = await gqlUpload(t, owner, TONE, { headers: { 'graphql-require-preflight': ' ' } });
    expect(blank.status).toBe(400);
    // A page of an allowed origin may send either header (the CORS preflight allows them).
    expect(CORS_ALLOWED_HEADERS).toEqual(expect.arrayContaining(['GraphQL-Require-Preflight', 'Apollo-Require-Preflight']));
  });

  describe('malformed multipart shapes: 400 BAD_REQUEST before anything runs, nothing stored', () => {
    const ops = (variables: Record<string, unknown> = { file: null }) => ({ field: 'operations', value: JSON.stringify({ query: UPLOAD, variables }) });
    const map = (value: unknown = { 0: ['variables.file'] }) => ({ field: 'map', value: JSON.stringify(value) });
    const file = (field = '0') => ({ field, value: TONE, filename: 'a.wav', type: 'audio/wav' });
    const cases: [string, () => Part[], string][] = [
      ['no operations field', () => [map(), file()], 'The first field of a multipart GraphQL request must be operations'],
      ['operations that are not JSON', () => [{ field: 'operations', value: '{nope' }, map(), file()], 'operations must be a JSON object with a query'],
      ['operations without a query', () => [{ field: 'operations', value: '{"variables":{}}' }, map(), file()], 'operations must be a JSON object with a query'],
      ['a batch', () => [{ field: 'operations', value: JSON.stringify([{ query: UPLOAD, variables: { file: null } }]) }, map({ 0: ['0.variables.file'] }), file()], 'Batched operations are not supported'],
      ['no map field', () => [ops(), file()], 'The second field of a multipart GraphQL request must be map'],
      ['a map that is not JSON', () => [ops(), { field: 'map', value: '[' }, file()], 'map must be a JSON object naming each file field with one variables path'],
      ['a map with two paths for a file', () => [ops(), map({ 0: ['variables.file', 'variables.name'] }), file()], 'map must be a JSON object naming each file field with one variables path'],
      ['a map path outside the variables', () => [ops(), map({ 0: ['query'] }), file()], 'map path query does not name a null variable of operations'],
      ['a map path at a set variable', () => [ops({ file: 'x' }), map(), file()], 'map path variables.file does not name a null variable of operations'],
      ['a map path into the prototype', () => [ops(), map({ 0: ['variables.__proto__'] }), file()], 'map path variables.__proto__ does not name a null variable of operations'],
      ['a map naming more files than allowed', () => [ops(), map({ 0: ['variables.file'], 1: ['variables.name'] }), file()], 'A multipart GraphQL request may carry at most 1 file(s)'],
      ['a file not in the map', () => [ops(), map(), file('7')], 'File field 7 is not in the map'],
      ['a map naming a file that is not sent', () => [ops(), map()], 'File field 0 of the map was not sent'],
      ['a file before the map', () => [ops(), file(), map()], 'The second field of a multipart GraphQL request must be map'],
      ['a query instead of an upload', () => [{ field: 'operations', value: JSON.stringify({ query: '{ sounds { totalCount } }' }) }, map({})], 'A multipart GraphQL request must be a mutation whose fields all take an upload'],
      ['two uploads of one file', () => [{ field: 'operations', value: JSON.stringify({ query: 'mutation($file: Upload) { a: uploadSound(file: $file) { id } b: uploadSound(file: $file) { id } }', variables: { file: null } }) }, map(), file()], 'A multipart GraphQL request may run one upload per file'],
      ['another mutation beside the upload', () => [{ field: 'operations', value: JSON.stringify({ query: `mutation($file: Upload) { uploadSound(file: $file) { id } deleteSound(id: "${randomUUID()}") }`, variables: { file: null } }) }, map(), file()], 'A multipart GraphQL request must be a mutation whose fields all take an upload'],
    ];
    test.each(cases)('%s', async (_name, parts, message) => {
      const res = await leavesNothing(owner, () => postParts(t, owner.accessToken, parts()));
      expect({ status: res.status, ...asRest(res), data: res.body.data }).toEqual({ status: 400, error: 'BAD_REQUEST', message, data: undefined });
    });

    test('a second file after the mapped one: 400, the first not recorded', async () => {
      const res = await leavesNothing(owner, () => postParts(t, owner.accessToken, [ops(), map(), file(), file('1')]));
      expect({ status: res.status, ...asRest(res) }).toEqual({ status: 400, error: 'BAD_REQUEST', message: 'A multipart GraphQL request may carry at most 1 file(s)' });
    });

    test('a field after the file: 400, the upload not recorded', async () => {
      const res = await leavesNothing(owner, () => postParts(t, owner.accessToken, [ops(), map(), file(), { field: 'name', value: 'late' }]));
      expect({ status: res.status, ...asRest(res) }).toEqual({ status: 400, error: 'BAD_REQUEST', message: 'Unexpected form field: name' });
    });

    test('a broken multipart body is Malformed multipart body, as on REST', async () => {
      const res = await fetch(`${t.url}/v1/gql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.accessToken}`, 'content-type': 'multipart/form-data; boundary=XYZ', 'graphql-require-preflight': '1' },
        body: `--XYZ\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${JSON.stringify({ query: UPLOAD, variables: { file: null } })}\r\n--XYZ\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.file"]}\r\n--XYZ\r\nContent-Disposition: form-data; name="0"; filename="a.wav"\r\n\r\nRIFF-and-then-the-body-just-stops`,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ errors: [{ message: 'Malformed multipart body', extensions: { code: 'BAD_REQUEST' } }] });
    });

    test('an upload cut off mid-stream leaves no row and no blob', async () => {
      const user = await devLogin(t);
      const before = await blobCount();
      const { body, contentType } = await encode([ops(), map(), { field: '0', value: wav(60_000), filename: 'long.wav', type: 'audio/wav' }]);
      const url = new URL(`${t.url}/v1/gql`);
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { authorization: `Bearer ${user.accessToken}`, 'content-type': contentType, 'content-length': String(body.length), 'graphql-require-preflight': '1' } });
      const ended = new Promise<void>((resolve) => {
        req.on('error', () => resolve());
        req.on('response', () => resolve());
      });
      req.write(body.subarray(0, 700_000));
      const until = async (condition: () => Promise<boolean>) => {
        for (let i = 0; i < 200 && !(await condition()); i++) await new Promise((r) => setTimeout(r, 25));
      };
      await until(async () => (await blobCount()) > before);
      expect(await blobCount()).toBe(before + 1);
      req.destroy();
      await ended;
      await until(async () => (await blobCount()) === before);
      expect(await blobCount()).toBe(before);
      expect(await rowCount(user.accountId!)).toBe(0);
    });
  });

  test('a JSON request cannot fill an Upload: 400 VALIDATION_ERROR', async () => {
    const res = await gql(t.url, UPLOAD, { file: { upload: '0' } }, { authorization: `Bearer ${owner.accessToken}` });
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]).toMatchObject({ extensions: { code: 'VALIDATION_ERROR' } });
  });

  test('the service still answers after every refusal', async () => {
    expect((await gqlUpload(t, owner, TONE, { name: 'after' })).body.data?.uploadSound).toMatchObject({ name: 'after' });
  });
});

describe('GraphQL uploadSound with an extension token', () => {
  const adminEmail = `ops-${randomUUID()}@example.test`;
  const t = useTestApp({ auth: { bootstrap_admins: [adminEmail] } });

  test("held to the extension's own limits with REST's codes and messages; the sound names the extension", async () => {
    const admin = await devLogin(t, adminEmail);
    const dev = await approvedDeveloper(t, admin);
    const ext = await publishedExtension(t, dev, admin, 'Soundboard', ['sounds:read', 'sounds:create']);
    const creator = await devLogin(t);
    const { token } = await installExtension(t, creator, ext, ['sounds:read', 'sounds:create']);
    const asExtension = { ...creator, accessToken: token };
    expect((await api(t, 'PATCH', `/admin/extensions/${ext.id as string}/limits`, { token: admin.accessToken, body: { max_sounds: 1, max_sound_file_size: TONE.length } })).status).toBe(200);

    // One byte over the extension's file limit: refused alike on both protocols.
    const bigger = Buffer.concat([TONE, Buffer.from([0])]);
    const restOver = await restUpload(t, asExtension, bigger);
    const gqlOver = await gqlUpload(t, asExtension, bigger);
    expect(restOver.body).toEqual({ error: 'VALIDATION_ERROR', message: `Sound file too large: this extension allows ${TONE.length} bytes per file`, details: expect.any(Object) });
    expect(asRest(gqlOver)).toEqual({ error: restOver.body.error, message: restOver.body.message });

    const first = await gqlUpload(t, asExtension, TONE);
    expect(first.body.data?.uploadSound).toMatchObject({ sourceExtensionName: 'Soundboard', sizeBytes: TONE.length });
    const restSecond = await restUpload(t, asExtension, TONE);
    const gqlSecond = await gqlUpload(t, asExtension, TONE);
    expect(restSecond.body).toEqual({ error: 'PLAN_LIMIT_REACHED', message: 'Sound limit reached: this extension may store 1 sound(s)' });
    expect(asRest(gqlSecond)).toEqual(restSecond.body);
    // The account's own quota is apart from the extension's.
    expect((await gqlUpload(t, creator, TONE)).body.data?.uploadSound).toMatchObject({ sourceExtensionName: null });
  });
});
