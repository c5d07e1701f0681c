/**
 * Idempotency keys (the Stripe convention): the first request with a key under one credential is
 * recorded as pending, its answer stored when it completes; a repeat with the same request answers
 * that stored result, one with another request or while the first runs is refused. Rows live in
 * the relational store, so they survive a restart and every node sees them; they last 24 hours.
 * A pending row whose node died is taken over after `PENDING_TAKEOVER_MS`. Owns the
 * `idempotency_keys` table of the idempotency module (src/modules/idempotency, which migrates and
 * purges it); knows nothing of HTTP (src/http/idempotency.ts renders its verdicts).
 */
import type { Knex } from 'knex';

/** How long a key answers its first result. */
export const KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;
/** A pending first attempt older than this is taken to have died with its node. */
export const PENDING_TAKEOVER_MS = 60_000;

export interface StoredAnswer {
  status: number;
  contentType: string | null;
  body: string;
}

export type Claim =
  /** The first request with this key: run it, then `complete` or `release`. */
  | { kind: 'first' }
  /** A repeat of a completed request: answer this. */
  | { kind: 'replay'; answer: StoredAnswer }
  /** The key was used with another request. */
  | { kind: 'mismatch' }
  /** The first request with this key is still running. */
  | { kind: 'in-progress' };

export interface IdempotencyStore {
  claim(scope: string, key: string, requestHash: string): Promise<Claim>;
  complete(scope: string, key: string, answer: StoredAnswer): Promise<void>;
  /** Forgets a first attempt that failed, so its retry runs again. */
  release(scope: string, key: string): Promise<void>;
  /** Deletes rows past their lifetime; answers how many. */
  purge(): Promise<number>;
}

interface Row {
  request_hash: string;
  state: string;
  status: number | null;
  content_type: string | null;
  body: string | null;
  created_at: Date | string;
}

export function createIdempotencyStore(knex: Knex): IdempotencyStore {
  const table = () => knex('idempotency_keys');
  const age = (row: Row) => Date.now() - new Date(row.created_at).getTime();
  return {
    async claim(scope, key, requestHash) {
      for (let attempt = 0; attempt < 3; attempt++) {
        // idempotency.claim
        const inserted = (await table().insert({ scope, key, request_hash: requestHash, state: 'pending' }).onConflict(['scope', 'key']).ignore().returning('key')) as unknown[];
        if (inserted.length > 0) return { kind: 'first' };
        // idempotency.read
        const row = (await table().where({ scope, key }).first('request_hash', 'state', 'status', 'content_type', 'body', 'created_at')) as Row | undefined;
        if (!row) continue; // released or purged meanwhile: claim again
        const stale = age(row) > KEY_LIFETIME_MS || (row.state === 'pending' && age(row) > PENDING_TAKEOVER_MS);
        if (stale) {
          // idempotency.take-over: only the one who sees the same stale row wins it.
          const taken = await table().where({ scope, key, state: row.state, created_at: row.created_at }).update({ request_hash: requestHash, state: 'pending', status: null, content_type: null, body: null, created_at: knex.fn.now() });
          if (taken > 0) return { kind: 'first' };
          continue;
        }
        if (row.request_hash !== requestHash) return { kind: 'mismatch' };
        if (row.state !== 'done') return { kind: 'in-progress' };
        return { kind: 'replay', answer: { status: row.status!, contentType: row.content_type, body: row.body ?? '' } };
      }
      return { kind: 'in-progress' };
    },
    async complete(scope, key, answer) {
      // idempotency.complete
      await table().where({ scope, key, state: 'pending' }).update({ state: 'done', status: answer.status, content_type: answer.contentType, body: answer.body });
    },
    async release(scope, key) {
      // idempotency.release
      await table().where({ scope, key, state: 'pending' }).delete();
    },
    async purge() {
      // idempotency.purge
      return table().where('created_at', '<', new Date(Date.now() - KEY_LIFETIME_MS)).delete();
    },
  };
}
