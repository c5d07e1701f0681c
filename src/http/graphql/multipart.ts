/**
 * GraphQL multipart requests (https://github.com/jaydenseric/graphql-multipart-request-spec): a
 * `multipart/form-data` POST to /v1/gql whose first field is `operations` (the JSON request, its
 * file variables null), whose second is `map` (`{ "<file field>": ["variables.<path>"] }`), and
 * whose files follow. Read with the shared form reader (../multipart.ts) as it streams: the
 * operation runs once `operations`, `map` and the start of every mapped file have arrived, and a
 * resolver stores its file while it is still arriving (upload.ts).
 *
 * Every malformed shape is refused before anything runs, as a request that cannot run (400
 * BAD_REQUEST): `operations` or `map` missing, out of order, not JSON of the right shape, too
 * large; a batch (an array of operations); a map path that names no null variable; a file the map
 * does not name, or one it names that never comes; more than MAX_FILES files; a field after the
 * files. A refusal that can only show once the operation runs (a file too many after the mapped
 * one, a body cut short) fails the upload that waits for the whole body before it records
 * anything (`Upload.complete`), and the endpoint answers it as 400 as well.
 */
import type { Readable } from 'node:stream';
import { AppError, messages } from '../../errors';
import { readForm } from '../multipart';
import { Upload } from './upload';

/** Files one request may carry: every upload field takes one file, and a file fills one argument. */
export const MAX_FILES = 1;
/** Bytes of the `operations` and `map` fields, as the JSON body of /v1/gql may take. */
export const MAX_OPERATIONS_BYTES = 1024 * 1024;

/** Requires a header no HTML form or other "simple" cross-site request can send (see docs/guides/using-the-api.md). */
export const PREFLIGHT_HEADERS = ['graphql-require-preflight', 'apollo-require-preflight'] as const;

export interface MultipartRequest {
  /** The request as its JSON form would have it, each mapped variable holding its `Upload`. */
  readonly body: Record<string, unknown>;
  /** Files the map names. */
  readonly files: number;
  /** The refusal of the body once the operation was running, if any (read after the answer is made). */
  failure(): Error | null;
  /** Once answered: the files nobody opened are drained unread. */
  release(): void;
}

const bad = (message: string) => new AppError('BAD_REQUEST', message);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Names that would reach an object's prototype rather than a member of it. */
const FORBIDDEN_SEGMENTS = new Set(['__proto__', 'constructor', 'prototype']);

function parseJson(value: string, truncated: boolean, field: 'operations' | 'map'): unknown {
  if (truncated) throw bad(messages.multipartFieldTooLarge(field, MAX_OPERATIONS_BYTES));
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw bad(field === 'operations' ? messages.multipartInvalidOperations : messages.multipartInvalidMap);
  }
}

function checkOperations(value: unknown): Record<string, unknown> {
  if (Array.isArray(value)) throw bad(messages.multipartBatching);
  if (!isObject(value) || typeof value.query !== 'string') throw bad(messages.multipartInvalidOperations);
  if (value.variables !== undefined && value.variables !== null && !isObject(value.variables)) throw bad(messages.multipartInvalidOperations);
  return value;
}

/** The map's entries: each file field with its one path (a file read as it streams fills one argument). */
function checkMap(value: unknown): [string, string][] {
  if (!isObject(value)) throw bad(messages.multipartInvalidMap);
  const entries = Object.entries(value);
  if (entries.length > MAX_FILES) throw bad(messages.multipartTooManyFiles(MAX_FILES));
  return entries.map(([field, paths]) => {
    if (field === '' || !Array.isArray(paths) || paths.length !== 1 || typeof paths[0] !== 'string') throw bad(messages.multipartInvalidMap);
    return [field, paths[0]];
  });
}

/** Puts `upload` where `path` points in `operations`: a null (or absent) member under `variables`. */
function place(operations: Record<string, unknown>, path: string, upload: Upload): void {
  const refused = () => bad(messages.multipartInvalidMapPath(path.slice(0, 200)));
  const segments = path.split('.');
  if (segments.length < 2 || segments[0] !== 'variables' || segments.some((s) => s === '' || FORBIDDEN_SEGMENTS.has(s))) throw refused();
  operations.variables ??= {};
  let container: unknown = operations;
  for (const segment of segments.slice(0, -1)) {
    container = isObject(container) || Array.isArray(container) ? (container as Record<string, unknown>)[segment] : undefined;
    if (!isObject(container) && !Array.isArray(container)) throw refused();
  }
  const last = segments.at(-1)!;
  const holder = container as Record<string, unknown>;
  if (Array.isArray(holder) && !(/^\d+$/.test(last) && Number(last) < holder.length)) throw refused();
  if (Object.hasOwn(holder, last) ? holder[last] !== null : Array.isArray(holder)) throw refused();
  holder[last] = upload;
}

/**
 * Reads a multipart request up to the start of its last mapped file; rejects with the 400 of a
 * malformed shape. The files' bytes are left to whoever opens their `Upload`.
 */
export function readMultipartRequest(raw: { readonly body: Readable; header(name: string): string | undefined }): Promise<MultipartRequest> {
  return new Promise((resolve, reject) => {
    let stage: 'operations' | 'map' | 'files' = 'operations';
    let operations: Record<string, unknown> = {};
    const uploads = new Map<string, Upload>();
    let failure: Error | null = null;
    let ready = false;
    const request: MultipartRequest = {
      get body() {
        return operations;
      },
      get files() {
        return uploads.size;
      },
      failure: () => failure,
      release() {
        for (const upload of uploads.values()) upload.discard();
      },
    };
    const start = () => {
      if (ready || stage !== 'files' || [...uploads.values()].some((upload) => !upload.received)) return;
      ready = true;
      resolve(request);
    };

    const form = readForm(
      raw,
      // One part and field more than a full request has: the one too many is refused by name.
      { files: MAX_FILES, fields: 3, fieldSize: MAX_OPERATIONS_BYTES, parts: 2 + MAX_FILES + 1 },
      {
        field(name, value, truncated) {
          if (stage === 'operations') {
            if (name !== 'operations') throw bad(messages.multipartOperationsFirst);
            operations = checkOperations(parseJson(value, truncated, 'operations'));
            stage = 'map';
            return;
          }
          if (stage === 'map') {
            if (name !== 'map') throw bad(messages.multipartMapSecond);
            for (const [field, path] of checkMap(parseJson(value, truncated, 'map'))) {
              const upload = new Upload(field, complete);
              place(operations, path, upload);
              uploads.set(field, upload);
            }
            stage = 'files';
            start();
            return;
          }
          throw bad(messages.multipartUnexpectedField(name.slice(0, 100)));
        },
        file({ field, stream, filename }) {
          if (stage !== 'files') throw bad(stage === 'operations' ? messages.multipartOperationsFirst : messages.multipartMapSecond);
          const upload = uploads.get(field);
          if (!upload) throw bad(messages.multipartFileNotInMap(field.slice(0, 100)));
          if (upload.received) throw bad(messages.multipartTooManyFiles(MAX_FILES));
          upload.receive({ stream, filename });
          start();
        },
        tooManyFiles: () => bad(messages.multipartTooManyFiles(MAX_FILES)),
      },
    );
    // The whole body read: every mapped file must have come, and the form must have reached them.
    const complete = form.done.then(() => {
      if (stage !== 'files') throw bad(stage === 'operations' ? messages.multipartOperationsFirst : messages.multipartMapSecond);
      for (const upload of uploads.values()) if (!upload.received) throw bad(messages.multipartFileMissing(upload.field.slice(0, 100)));
    });
    complete.catch((error: Error) => {
      failure = error;
      for (const upload of uploads.values()) if (!upload.received) upload.fail(error);
      if (!ready) reject(error);
    });
  });
}
