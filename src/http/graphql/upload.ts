/**
 * The `Upload` scalar: a file of a multipart GraphQL request (multipart.ts). The reader puts one
 * `Upload` per file of the `map` where the map points (a variable that was null in `operations`);
 * coercion takes nothing else, so a JSON request cannot pass a value for it. A resolver opens the
 * file once and streams it (its bytes are never buffered); `complete` settles when the whole
 * request body has been read, rejecting with the request's refusal (a file too many, a body cut
 * short), so that an upload is recorded only from a well-formed request.
 */
import type { Readable } from 'node:stream';
import { GraphQLError, GraphQLScalarType } from 'graphql';
import { AppError, messages } from '../../errors';

export interface UploadPart {
  readonly stream: Readable;
  /** Its base name (at most 255 characters); '' when the part gave none. */
  readonly filename: string;
}

export class Upload {
  readonly #field: string;
  readonly #complete: Promise<void>;
  readonly #part: Promise<UploadPart>;
  #resolve!: (part: UploadPart) => void;
  #reject!: (error: Error) => void;
  #received = false;
  #opened = false;

  /** `field`: the form field the map names for it; `complete`: the end of the whole request body. */
  constructor(field: string, complete: Promise<void>) {
    this.#field = field;
    this.#complete = complete;
    this.#part = new Promise<UploadPart>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Marked as handled: a file no resolver opened must not fail the process when its request does.
    this.#part.catch(() => undefined);
  }

  /** The form field of the file. */
  get field(): string {
    return this.#field;
  }

  /** Whether its part has started. */
  get received(): boolean {
    return this.#received;
  }

  /** Settles once the whole request body is read; rejects with the request's refusal. */
  get complete(): Promise<void> {
    return this.#complete;
  }

  /** The reader: the file's part has started. */
  receive(part: UploadPart): void {
    this.#received = true;
    this.#resolve(part);
  }

  /** The reader: the request failed (or ended) before the part started. */
  fail(error: Error): void {
    this.#reject(error);
  }

  /**
   * The file's part, for the one resolver that stores it: a stream read as it arrives cannot be
   * read twice, so a second opening (the same variable given to two fields) is refused.
   */
  open(): Promise<UploadPart> {
    if (this.#opened) return Promise.reject(new AppError('BAD_REQUEST', messages.multipartFileReused));
    this.#opened = true;
    return this.#part;
  }

  /** The reader: the request is answered; a file no resolver opened is drained unread. */
  discard(): void {
    if (this.#opened) return;
    this.#opened = true;
    this.#part.then((part) => part.stream.resume(), () => undefined);
  }

  /** What the request's variables say of it where they are written out (logs, keys). */
  toJSON(): { upload: string } {
    return { upload: this.#field };
  }
}

function upload(value: unknown): Upload {
  if (!(value instanceof Upload)) throw new GraphQLError('Upload cannot represent a value that is not a file of a multipart request');
  return value;
}

export const UploadScalar = new GraphQLScalarType({
  name: 'Upload',
  description: 'A file of a multipart request.',
  serialize: () => {
    throw new GraphQLError('Upload cannot be answered');
  },
  parseValue: upload,
  parseLiteral: () => upload(undefined),
});
