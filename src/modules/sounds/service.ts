/**
 * The sound library (Part 2, "Sounds"): uploads streamed from a multipart body into the blob store
 * (src/infra/blobs.ts) with the type detected from the bytes and the duration measured
 * (music-metadata), the plan's and per-extension limits, ranged streaming, and play and stop
 * published on `sounds:{account_id}`. Gates are enforced by shared code; this service checks
 * ownership, input and quotas. Owns the `sounds` and `sound_extension_limits` tables; the blobs
 * of its sounds are its own too, so a refused upload and a deleted sound leave no bytes behind.
 */
import { randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { Knex } from 'knex';
import type * as MusicMetadataModule from 'music-metadata';
import type { components } from '../../../generated/openapi';
import { requireAccountId, type AuthContext } from '../../auth/context';
import { AppError, messages } from '../../errors';
import type { RawRequest } from '../../http/context';
import { malformedMultipart, readForm, type FormLimits } from '../../http/multipart';
import { hasInvalidCharacters } from '../../http/input-guard';
import type { Camelize } from '../../http/mapping';
import { newBlobKey, type BlobStore } from '../../infra/blobs';
import type { Bus } from '../../infra/bus';
import { jsonTextWithin } from '../../infra/json-bytes';
import type { Logger } from '../../infra/logger';
import type { ModuleApis } from '../contract';
import { MAX_WAVEFORM_BYTES, soundMessages, type LimitHolder } from './errors';
import type { LimitOverrides, Sound, SoundsRepo, StoredSound } from './repo';
import { UUID_RE } from '../../infra/ids';

export type { Sound } from './repo';
export type SoundContentType = Sound['contentType'];
export type SoundLibrary = Camelize<components['schemas']['SoundLibrary']>;

/** The spec's SoundTarget, its `type` as received: the service answers its own 400 for an unknown one. */
export type SoundTarget = Omit<components['schemas']['SoundTarget'], 'type'> & { type: string };

/** A ranged or whole read of a sound's audio, ready for the REST binding. */
export interface SoundStream {
  status: 200 | 206 | 416;
  headers: Record<string, string>;
  body: Readable | undefined;
}

/**
 * A file of a multipart request other than REST's form (GraphQL's `Upload`, src/http/graphql/upload.ts):
 * its part once it starts, and the end of the whole request body.
 */
export interface IncomingFile {
  /** The file part: its bytes and base name; rejects when the request fails before it starts. */
  open(): Promise<{ stream: Readable; filename: string }>;
  /** Settles once the whole request body is read; rejects with the request's refusal. */
  readonly complete: Promise<void>;
}

/** REST's form: one file, a `name` field, nothing else (one part more is malformed). */
const FORM_LIMITS: FormLimits = { files: 1, fields: 5, fieldSize: 4096, parts: 10 };

/** Per-extension overrides of the plan's sound limits; null: the plan's value applies. */
export type ExtensionSoundLimits = LimitOverrides;

/** The name an extension is shown by (the extensions module registers the resolver). */
export type ExtensionNameResolver = (extensionId: string) => Promise<string | null>;

const INT32_MAX = 2147483647;
const CACHE_CONTROL = 'private, max-age=86400, immutable';

type MusicMetadata = typeof MusicMetadataModule;
// music-metadata 11 is ESM-only and the build is CommonJS, where TypeScript would turn `import()`
// into `require()`; a Function keeps the native dynamic import (Node, tsx and jest's vm modules).
// Its source carries a tag unique to this evaluation of the module: V8 caches compiled Function
// bodies by source text, and a cached body keeps the import hook of the context that first compiled
// it. Under jest, which evaluates this module again in a fresh context for every test file, a shared
// body would route a later file's import to an earlier file's torn-down environment.
const importEsm = new Function(
  'specifier',
  `return import(specifier); // ${randomUUID()}`,
) as (specifier: string) => Promise<MusicMetadata>;
let musicMetadata: Promise<MusicMetadata> | undefined;
/**
 * The loaded module, shared by every upload. A failed load is not kept (the next upload tries
 * again): a rejected promise cached here would fail every later upload of the process with a 500.
 */
const loadMusicMetadata = (): Promise<MusicMetadata> =>
  (musicMetadata ??= importEsm('music-metadata')
    .catch((error: unknown) => {
      musicMetadata = undefined;
      throw error;
    }));

/** The content type of a supported format, from what music-metadata found in the bytes; null otherwise. */
function contentTypeOf(format: { container?: string; codec?: string }): SoundContentType | null {
  const container = (format.container ?? '').toUpperCase();
  const codec = format.codec ?? '';
  if (container === 'WAVE') return 'audio/wav';
  if (container === 'FLAC') return 'audio/flac';
  if (container === 'OGG' && /vorbis|opus|speex|flac/i.test(codec)) return 'audio/ogg';
  if (container === 'MPEG' && /layer 3/i.test(codec)) return 'audio/mpeg';
  return null;
}

/** A limit and who set it (the message names the holder). */
interface Limit {
  value: number;
  holder: LimitHolder;
}

interface EffectiveLimits {
  maxSounds: Limit;
  /** The smaller of the sound file limit and the plan's `max_upload_size_bytes`. */
  maxSoundFileSize: Limit;
  maxSoundStorageBytes: Limit;
  /** The plan's `max_storage_bytes`, held against every byte the account stores. */
  maxStorageBytes: Limit;
}

/** The storage an upload may still take, and the limit that leaves it. */
interface Storage {
  left: number;
  limit: Limit;
}

/** What a received upload gives: its stored size, the file's base name and the `name` given, if any. */
interface Received {
  size: number;
  filename: string;
  name: string | undefined;
}

/** The single byte range of a `Range` header against `size`: null = serve the whole file, 'unsatisfiable' = 416. */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  const [, from, to] = match as unknown as [string, string, string];
  if (from === '') {
    const suffix = Number(to);
    if (!Number.isSafeInteger(suffix)) return null;
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(from);
  const end = to === '' ? Math.max(start, size - 1) : Number(to);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}

function cleanText(value: string, field: string): string {
  if (hasInvalidCharacters(value)) throw AppError.validation(messages.invalidCharacters(field), { fields: [{ field, message: messages.invalidCharactersDetail }] });
  return value;
}

function validName(value: string): string {
  const name = value.trim();
  if (name.length < 1 || name.length > 100) throw AppError.validation(soundMessages.invalidName, { fields: [{ field: 'name', message: soundMessages.invalidName }] });
  return name;
}

export function createSoundsService(deps: {
  repo: SoundsRepo;
  knex: Knex;
  blobs: BlobStore;
  bus: Bus;
  log: Logger;
  overlays: Pick<ModuleApis['overlays'], 'channelAccounts'>;
  quotas: Pick<ModuleApis['plans']['quotas'], 'limits'>;
}) {
  const { repo, knex, blobs, bus, log } = deps;
  let extensionNames: ExtensionNameResolver | null = null;

  async function owned(auth: AuthContext, id: string): Promise<Sound>;
  async function owned(auth: AuthContext, id: string, stored: true): Promise<StoredSound>;
  async function owned(auth: AuthContext, id: string, stored = false): Promise<Sound> {
    const accountId = requireAccountId(auth);
    const row = UUID_RE.test(id) ? await (stored ? repo.storedById(accountId, id) : repo.byId(accountId, id)) : undefined;
    if (!row) throw AppError.notFound(soundMessages.soundNotFound);
    return row;
  }

  /** The extension an upload comes from (an extension token's context), or null for the account's own. */
  const extensionOf = (auth: AuthContext): string | null => (auth.kind === 'extension' ? (auth.binding?.extensionId ?? null) : null);

  async function limitsFor(accountId: string, extensionId: string | null, db: Knex | Knex.Transaction = knex): Promise<EffectiveLimits> {
    const plan = await repo.planLimits(accountId, db);
    const overrides = extensionId ? await repo.overrides(extensionId, db) : { maxSounds: null, maxSoundFileSize: null, maxSoundStorageBytes: null };
    const quotas = await deps.quotas.limits(accountId, db);
    const pick = (own: number | null, planned: number): Limit => (own === null ? { value: planned, holder: 'plan' } : { value: own, holder: 'extension' });
    const fileSize = pick(overrides.maxSoundFileSize, plan.maxSoundFileSize);
    return {
      maxSounds: pick(overrides.maxSounds, plan.maxSounds),
      // Every upload is bounded by the plan's max_upload_size_bytes, whatever the sound limits say.
      maxSoundFileSize: quotas.maxUploadSizeBytes < fileSize.value ? { value: quotas.maxUploadSizeBytes, holder: 'upload' } : fileSize,
      maxSoundStorageBytes: pick(overrides.maxSoundStorageBytes, plan.maxSoundStorageBytes),
      maxStorageBytes: { value: quotas.maxStorageBytes, holder: 'storage' },
    };
  }

  const countReached = (limit: Limit) => new AppError('PLAN_LIMIT_REACHED', soundMessages.countReached(limit.value, limit.holder));
  const storageReached = (limit: Limit) => new AppError('PLAN_LIMIT_REACHED', soundMessages.storageReached(limit.value, limit.holder));
  const tooLarge = (limit: Limit) => AppError.validation(soundMessages.fileTooLarge(limit.value, limit.holder), { fields: [{ field: 'file', message: soundMessages.fileTooLarge(limit.value, limit.holder) }] });

  /** A refused upload's blob, removed; a failure to remove it is logged, never the upload's answer. */
  const dropBlob = (key: string) => blobs.delete(key).catch((cleanup: unknown) => log.warn({ err: cleanup }, 'sound blob cleanup failed'));

  /**
   * Streams one file into the blob store under `key`, holding it to the file size limit as it
   * streams and counting (but no longer keeping) the bytes past the storage left. Settles once the
   * stored bytes are final; on a refusal (too large, over the storage, the stream broken off) the
   * blob is gone and the rest of the file drained before it rejects.
   */
  async function storeFile(source: Readable, key: string, limits: EffectiveLimits, storage: Storage): Promise<number> {
    let received = 0;
    let overStorage = false;
    let refusal: AppError | null = null;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        // Exactly the limit is accepted; the first byte over it refuses the file mid-stream.
        if (received > limits.maxSoundFileSize.value) {
          refusal = tooLarge(limits.maxSoundFileSize);
          callback(refusal);
          return;
        }
        // Past the storage left, bytes are counted but not kept: the file may still prove too large.
        if (received > storage.left) {
          overStorage = true;
          callback();
          return;
        }
        callback(null, chunk);
      },
    });
    // The source broken off (the client gone, the form refused), maybe before it reached here: the
    // store fails with it.
    const brokenOff = () => (source.errored as Error | null) ?? malformedMultipart();
    if (source.destroyed) meter.destroy(brokenOff());
    source.on('error', (error: Error) => meter.destroy(error));
    source.on('close', () => {
      if (!source.readableEnded) meter.destroy(brokenOff());
    });
    source.pipe(meter);
    try {
      const { size } = await blobs.put(key, meter);
      if (overStorage) throw storageReached(storage.limit);
      return size;
    } catch (error) {
      source.unpipe(meter);
      source.resume();
      await dropBlob(key);
      throw refusal ?? (error instanceof AppError ? error : malformedMultipart());
    }
  }

  const fileRequired = () => AppError.validation(soundMessages.fileRequired, { fields: [{ field: 'file', message: soundMessages.fileRequired }] });

  /**
   * REST's form (POST /v1/sounds): one `file` part and an optional `name` field, read with the
   * shared form reader (src/http/multipart.ts). Settles once the whole body is read and the
   * stored bytes are final: on any refusal the blob is gone before it rejects.
   */
  async function receiveForm(raw: RawRequest, key: string, limits: EffectiveLimits, storage: Storage): Promise<Received> {
    let stored: Promise<number> | null = null;
    let filename = '';
    let name: string | undefined;
    const form = readForm(raw, FORM_LIMITS, {
      field(field, value) {
        if (field !== 'name') throw AppError.validation(soundMessages.unexpectedField(field.slice(0, 100)));
        name = value;
      },
      file(file) {
        if (file.field !== 'file') throw AppError.validation(soundMessages.unexpectedField(file.field.slice(0, 100)));
        filename = file.filename;
        stored = storeFile(file.stream, key, limits, storage);
        // A refused file ends the form at once: the rest of the body is drained, not parsed.
        stored.catch((error: Error) => form.fail(error));
      },
      tooManyFiles: () => AppError.validation(soundMessages.oneFile),
    });
    let failure: unknown = null;
    await form.done.catch((error: unknown) => {
      failure = error;
    });
    const size = stored === null ? 0 : await (stored as Promise<number>).catch((error: unknown) => {
      failure ??= error;
      return 0;
    });
    if (!failure && stored === null) failure = fileRequired();
    if (failure) {
      await dropBlob(key);
      throw failure;
    }
    return { size, filename, name };
  }

  /**
   * A file of another multipart request (GraphQL's `uploadSound`): its part, stored as it streams
   * with the same limits as REST's, and then the end of the whole request, whose refusal (a file
   * too many, a body cut short) is the upload's too.
   */
  async function receiveFile(file: IncomingFile | null | undefined, name: string | undefined, key: string, limits: EffectiveLimits, storage: Storage): Promise<Received> {
    if (!file) throw fileRequired();
    const part = await file.open();
    const size = await storeFile(part.stream, key, limits, storage);
    try {
      await file.complete;
    } catch (error) {
      await dropBlob(key);
      throw error;
    }
    return { size, filename: part.filename, name };
  }

  /** What the bytes are: a supported content type and the duration, or 400. */
  async function detect(key: string): Promise<{ contentType: SoundContentType; durationMs: number }> {
    const mm = await loadMusicMetadata();
    const stream = blobs.read(key);
    try {
      const metadata = await mm.parseStream(stream, undefined, { duration: true, skipCovers: true });
      const contentType = contentTypeOf(metadata.format);
      const duration = metadata.format.duration;
      if (contentType && typeof duration === 'number' && Number.isFinite(duration) && duration >= 0) {
        return { contentType, durationMs: Math.min(INT32_MAX, Math.round(duration * 1000)) };
      }
    } catch {
      // Not a file music-metadata recognises: refused below like any other unsupported type.
    } finally {
      stream.destroy();
    }
    throw AppError.validation(soundMessages.unsupportedType, { fields: [{ field: 'file', message: soundMessages.unsupportedType }] });
  }

  function validTarget(target: SoundTarget | null | undefined): SoundTarget | null {
    if (target === undefined || target === null) return null;
    if (target.type !== 'widget' && target.type !== 'overlay') throw AppError.validation(soundMessages.invalidTargetType, { fields: [{ field: 'target.type', message: soundMessages.invalidTargetType }] });
    if (typeof target.id !== 'string' || !UUID_RE.test(target.id)) throw AppError.validation(soundMessages.invalidTargetId, { fields: [{ field: 'target.id', message: soundMessages.invalidTargetId }] });
    return { type: target.type, id: target.id.toLowerCase() };
  }

  /** The target must be one of the account's own widgets or overlays (404 otherwise, as reading it would). */
  async function checkTarget(accountId: string, target: SoundTarget | null): Promise<void> {
    if (!target) return;
    const resolvers = deps.overlays.channelAccounts;
    const owner = target.type === 'overlay' ? await resolvers.key!({ key: target.id }) : await resolvers.widget_instance_id!({ widget_instance_id: target.id });
    if (owner !== accountId) throw AppError.notFound(target.type === 'overlay' ? soundMessages.overlayNotFound : soundMessages.widgetNotFound);
  }

  const publish = (accountId: string, eventType: 'sound:play' | 'sound:stop', data: Record<string, unknown>) =>
    bus.publish(`sounds:${accountId}`, JSON.stringify({ event_type: eventType, data }));

  /**
   * An upload (REST's or GraphQL's): the count limit is checked before a byte is read; the size
   * and storage limits while the file streams; the type and duration from the stored bytes; every
   * limit again under the account's row lock when the row is written, so concurrent uploads cannot
   * pass a quota together. Any refusal removes the stored bytes.
   */
  async function accept(auth: AuthContext, receive: (key: string, limits: EffectiveLimits, storage: Storage) => Promise<Received>): Promise<Sound> {
    const accountId = requireAccountId(auth);
    const extensionId = extensionOf(auth);
    const limits = await limitsFor(accountId, extensionId);
    const [usage, stored] = await Promise.all([repo.usage(accountId, extensionId), repo.accountBytes(accountId)]);
    if (usage.count >= limits.maxSounds.value) throw countReached(limits.maxSounds);
    const key = newBlobKey();
    // The nearer of the two storage limits: the sound storage of this source, the account's whole storage.
    const soundLeft = Math.max(0, limits.maxSoundStorageBytes.value - usage.bytes);
    const accountLeft = Math.max(0, limits.maxStorageBytes.value - stored);
    const storage = accountLeft < soundLeft ? { left: accountLeft, limit: limits.maxStorageBytes } : { left: soundLeft, limit: limits.maxSoundStorageBytes };
    const upload = await receive(key, limits, storage);
    try {
      // A file part with an empty file name and no bytes is a browser's file input left empty: no file.
      if (upload.size === 0 && upload.filename === '') throw fileRequired();
      const filename = cleanText(upload.filename, 'filename');
      const fallback = filename.replace(/\.[^.]*$/, '').trim().slice(0, 100) || 'sound';
      const name = upload.name === undefined ? fallback : validName(cleanText(upload.name, 'name'));
      const { contentType, durationMs } = await detect(key);
      const extensionName = extensionId ? ((await extensionNames?.(extensionId).catch(() => null)) ?? extensionId) : null;
      const row = await knex.transaction(async (trx) => {
        if (!(await repo.lockAccount(trx, accountId))) throw AppError.unauthorized(messages.noActiveAccount);
        const current = await limitsFor(accountId, extensionId, trx);
        const now = await repo.usage(accountId, extensionId, trx);
        if (now.count >= current.maxSounds.value) throw countReached(current.maxSounds);
        if (upload.size > current.maxSoundFileSize.value) throw tooLarge(current.maxSoundFileSize);
        if (now.bytes + upload.size > current.maxSoundStorageBytes.value) throw storageReached(current.maxSoundStorageBytes);
        if ((await repo.accountBytes(accountId, trx)) + upload.size > current.maxStorageBytes.value) throw storageReached(current.maxStorageBytes);
        return repo.insert(trx, {
          id: randomUUID(),
          account_id: accountId,
          name,
          filename,
          content_type: contentType,
          size_bytes: upload.size,
          duration_ms: durationMs,
          waveform: null,
          blob_key: key,
          source_extension_id: extensionId,
          source_extension_name: extensionName ? extensionName.slice(0, 200) : null,
        });
      });
      return row;
    } catch (error) {
      await dropBlob(key);
      throw error;
    }
  }

  return {
    /** An account's sound usage beside its plan's limit (the operators module's usage report). */
    async accountUsage(accountId: string): Promise<{ sounds: number; maxSounds: number; storageBytes: number }> {
      const [own, bytes, limits] = await Promise.all([repo.usage(accountId, null), repo.accountBytes(accountId), repo.planLimits(accountId)]);
      return { sounds: own.count, maxSounds: limits.maxSounds, storageBytes: bytes };
    },

    async list(auth: AuthContext, query: { limit?: number | null; offset?: number | null; search?: string | null }): Promise<SoundLibrary> {
      const accountId = requireAccountId(auth);
      const limit = query.limit ?? 20;
      const offset = query.offset ?? 0;
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw AppError.validation(soundMessages.invalidLimit, { fields: [{ field: 'limit', message: soundMessages.invalidLimit }] });
      if (!Number.isInteger(offset) || offset < 0 || offset > INT32_MAX) throw AppError.validation(soundMessages.invalidOffset, { fields: [{ field: 'offset', message: soundMessages.invalidOffset }] });
      const search = query.search?.trim() ? query.search.trim().slice(0, 100) : undefined;
      const [page, usage, limits] = await Promise.all([repo.page(accountId, search, limit, offset), repo.usage(accountId, null), repo.planLimits(accountId)]);
      return {
        sounds: page.rows,
        totalCount: page.total,
        userSoundCount: usage.count,
        maxSounds: limits.maxSounds,
        maxSoundFileSize: limits.maxSoundFileSize,
        maxSoundStorageBytes: limits.maxSoundStorageBytes,
        usedStorageBytes: usage.bytes,
      };
    },

    async get(auth: AuthContext, id: string): Promise<Sound> {
      return owned(auth, id);
    },

    /** POST /v1/sounds: the multipart form read and stored as it streams (`accept`). */
    async upload(auth: AuthContext, raw: RawRequest | undefined): Promise<Sound> {
      requireAccountId(auth);
      if (!raw) throw malformedMultipart();
      return accept(auth, (key, limits, storage) => receiveForm(raw, key, limits, storage));
    },

    /**
     * GraphQL's uploadSound: the same upload from a file of a multipart request (absent: `file is
     * required`, after the count limit as on REST), `name` given as an argument (null: absent).
     */
    async uploadFile(auth: AuthContext, file: IncomingFile | null | undefined, name: string | null | undefined): Promise<Sound> {
      return accept(auth, (key, limits, storage) => receiveFile(file, name ?? undefined, key, limits, storage));
    },

    async update(auth: AuthContext, id: string, input: { name?: string | null; durationMs?: number | null; waveform?: unknown }): Promise<Sound> {
      const patch: { name?: string; duration_ms?: number; waveform?: unknown } = {};
      if (input.name !== undefined && input.name !== null) patch.name = validName(input.name);
      else if (input.name === null) throw AppError.validation(soundMessages.invalidName, { fields: [{ field: 'name', message: soundMessages.invalidName }] });
      if (input.durationMs !== undefined) {
        const d = input.durationMs;
        if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > INT32_MAX) throw AppError.validation(soundMessages.invalidDuration, { fields: [{ field: 'duration_ms', message: soundMessages.invalidDuration }] });
        patch.duration_ms = d;
      }
      if (input.waveform !== undefined) {
        if (jsonTextWithin(input.waveform, MAX_WAVEFORM_BYTES) === null) throw AppError.validation(soundMessages.waveformTooLarge, { fields: [{ field: 'waveform', message: soundMessages.waveformTooLarge }] });
        patch.waveform = input.waveform;
      }
      const sound = await owned(auth, id);
      const row = await repo.update(sound.accountId, sound.id, patch);
      if (!row) throw AppError.notFound(soundMessages.soundNotFound);
      return row;
    },

    async remove(auth: AuthContext, id: string): Promise<void> {
      const sound = await owned(auth, id);
      const key = await repo.delete(sound.accountId, sound.id);
      if (!key) throw AppError.notFound(soundMessages.soundNotFound);
      await blobs.delete(key).catch((error: unknown) => log.warn({ err: error }, 'sound blob delete failed; the orphan sweep retries'));
    },

    /** GET /v1/sounds/{id}/stream: the whole file (200), one range (206) or 416, with the documented headers. */
    async stream(auth: AuthContext, id: string, rangeHeader: string | undefined): Promise<SoundStream> {
      const sound = await owned(auth, id, true);
      const size = sound.sizeBytes;
      const base = { 'Content-Type': sound.contentType, 'Cache-Control': CACHE_CONTROL, 'Accept-Ranges': 'bytes', ETag: `"${sound.id}"` };
      const range = parseRange(rangeHeader, size);
      if (range === 'unsatisfiable') return { status: 416, headers: { 'Content-Range': `bytes */${size}`, 'Cache-Control': CACHE_CONTROL }, body: undefined };
      if (range === null) return { status: 200, headers: { ...base, 'Content-Length': String(size) }, body: blobs.read(sound.blobKey) };
      return {
        status: 206,
        headers: { ...base, 'Content-Length': String(range.end - range.start + 1), 'Content-Range': `bytes ${range.start}-${range.end}/${size}` },
        body: blobs.read(sound.blobKey, range),
      };
    },

    async play(auth: AuthContext, id: string, input: { volume?: number | null; target?: SoundTarget | null }): Promise<void> {
      const volume = input.volume ?? 1;
      if (typeof volume !== 'number' || !Number.isFinite(volume) || volume < 0 || volume > 1) throw AppError.validation(soundMessages.invalidVolume, { fields: [{ field: 'volume', message: soundMessages.invalidVolume }] });
      const target = validTarget(input.target);
      const sound = await owned(auth, id);
      await checkTarget(sound.accountId, target);
      await publish(sound.accountId, 'sound:play', {
        sound_id: sound.id,
        name: sound.name,
        content_type: sound.contentType,
        duration_ms: sound.durationMs,
        volume,
        target,
        stream_url: `/v1/sounds/${sound.id}/stream`,
      });
    },

    async stop(auth: AuthContext, id: string, input: { target?: SoundTarget | null }): Promise<void> {
      const target = validTarget(input.target);
      const sound = await owned(auth, id);
      await checkTarget(sound.accountId, target);
      await publish(sound.accountId, 'sound:stop', { sound_id: sound.id, target });
    },

    /** Sets the overrides present in `limits` (absent keys stay as they are; null clears one). */
    async setExtensionLimits(extensionId: string, limits: Partial<ExtensionSoundLimits>): Promise<void> {
      if (!UUID_RE.test(extensionId)) throw AppError.notFound();
      const columns = { maxSounds: 'max_sounds', maxSoundFileSize: 'max_sound_file_size', maxSoundStorageBytes: 'max_sound_storage_bytes' } as const;
      const values: Partial<Record<(typeof columns)[keyof typeof columns], number | null>> = {};
      for (const [field, column] of Object.entries(columns) as [keyof ExtensionSoundLimits, (typeof columns)[keyof typeof columns]][]) {
        const value = limits[field];
        if (value === undefined) continue;
        const max = field === 'maxSounds' ? INT32_MAX : Number.MAX_SAFE_INTEGER;
        if (value !== null && (!Number.isInteger(value) || value < 0 || value > max)) throw AppError.validation(soundMessages.invalidLimitOverride(column), { fields: [{ field: column, message: soundMessages.invalidLimitOverride(column) }] });
        values[column] = value;
      }
      if (Object.keys(values).length > 0) await repo.setOverrides(extensionId, values);
    },

    async extensionLimits(extensionId: string): Promise<ExtensionSoundLimits> {
      if (!UUID_RE.test(extensionId)) return { maxSounds: null, maxSoundFileSize: null, maxSoundStorageBytes: null };
      return repo.overrides(extensionId);
    },

    /** Registers how an extension's display name is found (the extensions module, built later). */
    useExtensionNames(resolver: ExtensionNameResolver): void {
      extensionNames = resolver;
    },

    /** Removes blobs older than `olderThanMs` that no sound points at (crashed uploads, dissolved accounts). */
    async sweepOrphans(olderThanMs = 3_600_000): Promise<number> {
      const keys = await blobs.keysBefore(new Date(Date.now() - olderThanMs));
      const referenced = await repo.referencedKeys(keys);
      const orphans = keys.filter((k) => !referenced.has(k));
      for (const key of orphans) await blobs.delete(key);
      return orphans.length;
    },
  };
}

export type SoundsService = ReturnType<typeof createSoundsService>;
