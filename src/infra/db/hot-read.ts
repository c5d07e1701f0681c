/**
 * Reads made on every request (the session behind a JWT, a member's grants, a key's row, a list a
 * dashboard polls), served without a query where that is exact:
 *
 * - Embedded PGlite: one process owns the data and one connection runs every statement in turn,
 *   so a result stays true until this process writes anything. Results are kept per key and
 *   dropped by the next statement that is not a plain `select` (insert, update, delete, DDL, a
 *   transaction's begin and end), whoever issued it; a read that overlapped a write is not kept.
 * - PostgreSQL: other nodes write too, so nothing is kept; concurrent reads of one key share one
 *   query that starts after each of them (coalesce.ts).
 *
 * Either way no caller gets an answer older than its call. Answers are shared: callers must not
 * mutate them. Only reads whose result depends on their arguments and the stored rows alone (no
 * `now()`) belong here.
 */
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import { coalesced } from '../coalesce';

const READ = /^\s*select\b/i;

/** Per embedded database handle: how many writes it has run. */
const writes = new WeakMap<Knex, { count: number }>();

/** Called once for an embedded handle (database.ts): every statement that is not a read counts. */
export function trackWrites(knex: Knex): void {
  const state = { count: 0 };
  writes.set(knex, state);
  knex.on('query', (query: { sql?: string }) => {
    if (!READ.test(query.sql ?? '')) state.count += 1;
  });
}

/** Distinct keys kept per read on the embedded store. */
const MAX_KEPT = 10_000;

export function hotRead<A extends unknown[], V>(knex: Knex, load: (...args: A) => PromiseLike<V>, keyOf: (...args: A) => string): (...args: A) => Promise<V> {
  const state = writes.get(knex);
  if (!state) return coalesced(load, keyOf);
  const kept = new LRUCache<string, { writes: number; value: V }>({ max: MAX_KEPT });
  return async (...args: A) => {
    const key = keyOf(...args);
    const hit = kept.get(key);
    if (hit && hit.writes === state.count) return hit.value;
    const before = state.count;
    const value = await load(...args);
    if (state.count === before) kept.set(key, { writes: before, value });
    return value;
  };
}
