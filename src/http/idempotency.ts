/**
 * `Idempotency-Key` on REST changes and GraphQL mutations (the header is declared on every eligible
 * operation by codegen; the store is src/modules/idempotency). A request with a key runs once per
 * credential and key: the first attempt's answer is recorded and a repeat of the same request gets
 * it again with `Idempotent-Replayed: true`; another request under the key, or a repeat while the
 * first runs, is 409 CONFLICT. Only answers below 500 that fit `MAX_STORED_BYTES` are kept: a
 * failed attempt keeps nothing, so its retry runs again. Anonymous requests have no scope and are
 * never recorded.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { AuthContext } from '../auth/context';
import { AppError, messages } from '../errors';
import type { IdempotencyStore, StoredAnswer } from '../infra/idempotency';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** A larger answer is sent but not kept; its repeat runs again. */
const MAX_STORED_BYTES = 1024 * 1024;

/** The key's scope: the credential's kind and stable, non-secret identity; null for anonymous callers. */
export function idempotencyScope(auth: AuthContext): string | null {
  const id = auth.credentialId ?? auth.userId;
  return auth.kind === 'anonymous' || !id ? null : `${auth.kind}:${id}`;
}

/** What makes two requests "the same": their method, target and body. */
export function requestHash(...parts: readonly string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\u0000');
  return hash.digest('hex');
}

/** Collects what a response writes, up to the bound; `body()` is null past it. */
function capture(res: ServerResponse): { body(): string | null } {
  const chunks: Buffer[] = [];
  let size = 0;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > MAX_STORED_BYTES) return;
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    size += buffer.length;
    if (size <= MAX_STORED_BYTES) chunks.push(buffer);
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    keep(chunk, rest[0]);
    return write(chunk, ...rest);
  }) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    keep(chunk, rest[0]);
    return end(chunk, ...rest);
  }) as typeof res.end;
  return { body: () => (size > MAX_STORED_BYTES ? null : Buffer.concat(chunks).toString('utf8')) };
}

/** Writes a stored answer again. */
export function replay(res: ServerResponse, answer: StoredAnswer): void {
  res.statusCode = answer.status;
  if (answer.contentType) res.setHeader('Content-Type', answer.contentType);
  res.setHeader(REPLAYED_HEADER, 'true');
  res.setHeader('Content-Length', Buffer.byteLength(answer.body));
  res.end(answer.body);
}

/**
 * Runs `work` at most once for (scope, key): the first attempt runs and its answer is kept; a
 * repeat is answered from the store; a refusal throws the 409. `work` writes its own answer.
 */
export async function onceByKey(store: IdempotencyStore, scope: string, key: string, hash: string, res: ServerResponse, work: () => Promise<void>): Promise<void> {
  const claim = await store.claim(scope, key, hash);
  switch (claim.kind) {
    case 'replay':
      return replay(res, claim.answer);
    case 'mismatch':
      throw new AppError('CONFLICT', messages.idempotencyKeyReused);
    case 'in-progress':
      throw new AppError('CONFLICT', messages.idempotencyKeyInProgress);
    case 'first':
      break;
  }
  const written = capture(res);
  try {
    await work();
  } catch (error) {
    await store.release(scope, key).catch(() => undefined);
    throw error;
  }
  const body = written.body();
  if (res.statusCode >= 500 || body === null) await store.release(scope, key);
  else await store.complete(scope, key, { status: res.statusCode, contentType: (res.getHeader('content-type') as string | undefined) ?? null, body });
}
