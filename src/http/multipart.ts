/**
 * A `multipart/form-data` body read part by part as it streams (busboy): the one reader of the
 * REST sound upload (src/modules/sounds/service.ts) and of GraphQL multipart requests
 * (graphql/multipart.ts). It owns what both must get right the same way: a missing or wrong
 * boundary, a part without a field name, a body cut short or a client gone, too many parts or
 * fields are all `Malformed multipart body` (400 BAD_REQUEST); the first refusal stops the form,
 * destroys the file streams still open (so whoever stores one learns it at once) and drains the
 * rest of the body unread. What a field or file means is the caller's: its handlers may throw an
 * AppError, which refuses the form the same way.
 */
import type { Readable } from 'node:stream';
import path from 'node:path';
import busboy from 'busboy';
import { AppError, messages } from '../errors';
import { guardFor } from '../infra/listeners';
import type { RawRequest } from './context';

export interface FormLimits {
  /** Files the form may carry; one more is `tooManyFiles`. */
  files: number;
  /** Text fields; one more is malformed. */
  fields: number;
  /** Bytes of one text field's value; a longer one reaches `field` with `truncated`. */
  fieldSize: number;
  /** Parts of any kind: busboy signals the limit when the last part counted ends, so a form reaching it is malformed. */
  parts: number;
}

/** A file part as it starts: its bytes follow on `stream`, which the handler must consume or resume. */
export interface FormFile {
  readonly field: string;
  readonly stream: Readable;
  /** The part's file name, its base name only (at most 255 characters); '' when it gave none. */
  readonly filename: string;
}

export interface FormHandlers {
  /** A text field, in the order sent. Throw an AppError to refuse the form. */
  field(name: string, value: string, truncated: boolean): void;
  /** A file part, in the order sent. Throw an AppError to refuse the form (the stream is then drained). */
  file(file: FormFile): void;
  /** The refusal of a file beyond `limits.files`. */
  tooManyFiles(): AppError;
}

export interface FormReader {
  /** Settles once the whole body is parsed: resolves for a well-formed form, rejects with the first refusal. */
  readonly done: Promise<void>;
  /** Refuses the form with `error` (the first refusal wins): the rest of the body is drained unread. */
  fail(error: Error): void;
}

export const malformedMultipart = () => new AppError('BAD_REQUEST', messages.malformedMultipart);

/** The base name of a part's file name, as stored: no folders (either slash), at most 255 characters. */
const baseName = (filename: string | undefined) => path.basename(String(filename ?? '').replace(/\\/g, '/')).slice(0, 255);

export function readForm(raw: RawRequest, limits: FormLimits, handlers: FormHandlers): FormReader {
  let settle!: (error: Error | null) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (error) => (error ? reject(error) : resolve());
  });
  // Marked as handled here; whoever awaits `done` still gets its rejection.
  done.catch(() => undefined);
  let failure: Error | null = null;
  let settled = false;
  const open = new Set<Readable>();
  let parser: busboy.Busboy | null = null;

  const finish = () => {
    if (settled) return;
    settled = true;
    raw.body.off('close', onClose);
    raw.body.off('error', onClose);
    settle(failure);
  };
  const fail = (error: Error) => {
    if (settled) return;
    failure ??= error;
    for (const stream of open) stream.destroy(failure);
    open.clear();
    if (parser) raw.body.unpipe(parser);
    raw.body.resume();
    finish();
  };
  // Every callback below runs inside busboy's or the socket's events: a throw in one is this form's
  // failure (a 500 unless it is an AppError), never the process's (src/infra/listeners.ts).
  const guard = guardFor((error) => fail(error instanceof Error ? error : new Error(String(error))));
  // A client that goes away mid-upload: the body closes without having ended (maybe before we got here).
  const onClose = guard(() => {
    if (!raw.body.readableEnded) fail(malformedMultipart());
  });

  try {
    parser = busboy({
      headers: { 'content-type': raw.header('content-type') ?? '' },
      limits: { files: limits.files, fields: limits.fields, fieldSize: limits.fieldSize, fieldNameSize: 100, parts: limits.parts },
    });
  } catch {
    fail(malformedMultipart());
    return { done, fail };
  }
  if (raw.body.destroyed) {
    onClose();
    return { done, fail };
  }
  raw.body.on('close', onClose);
  raw.body.on('error', onClose);

  parser.on(
    'file',
    guard((field: string | undefined, stream: Readable, info: busboy.FileInfo) => {
      // A part without a name (busboy hands `undefined` for a missing or empty one) is not form data.
      if (!field || settled) {
        stream.resume();
        if (!field) fail(malformedMultipart());
        return;
      }
      open.add(stream);
      stream.once('end', () => open.delete(stream));
      // A body that breaks off inside the file is the form's failure (busboy's own error follows).
      stream.on('error', guard(() => fail(malformedMultipart())));
      try {
        handlers.file({ field, stream, filename: baseName(info.filename) });
      } catch (error) {
        open.delete(stream);
        stream.resume();
        throw error;
      }
    }),
  );
  parser.on(
    'field',
    guard((field: string | undefined, value: string, info: busboy.FieldInfo) => {
      if (settled) return;
      if (!field) throw malformedMultipart();
      handlers.field(field, value, info.valueTruncated);
    }),
  );
  parser.on('filesLimit', guard(() => fail(handlers.tooManyFiles())));
  parser.on('fieldsLimit', guard(() => fail(malformedMultipart())));
  parser.on('partsLimit', guard(() => fail(malformedMultipart())));
  parser.on('error', guard(() => fail(malformedMultipart())));
  parser.on('close', guard(() => finish()));
  raw.body.pipe(parser);
  return { done, fail };
}
