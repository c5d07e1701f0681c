/**
 * Reads made on every request (the session behind a JWT, a member's grants, a key's row, a list a
 * dashboard polls), served without loading them again where that is exact:
 *
 * - Embedded PGlite: one process owns the data and one connection runs every statement in turn,
 *   so a result stays true until this process writes anything. Results are kept per key and
 *   dropped by the next statement that is not a plain `select` (insert, update, delete, DDL, a
 *   transaction's begin and end), whoever issued it; a read that overlapped a write is not kept.
 * - PostgreSQL, guarded read: other nodes write too. The read names a version counter that every
 *   write to its data bumps in the writing transaction (src/auth/access-version.ts, the events
 *   module's per-account version). Each call reads the counter, in a query that starts after the
 *   call (coalesced across concurrent calls); a result kept under the same count is still exact,
 *   any other is loaded again, after the counter was read.
 * - PostgreSQL, unguarded read: nothing is kept; concurrent reads of one key share one query that
 *   starts after each of them (coalesce.ts).
 *
 * Either way no caller gets an answer older than its call. Answers are shared: callers must not
 * mutate them. Only reads whose result depends on their arguments and the stored rows alone (no
 * `now()`) belong here. Misses (`undefined` or `null`) are never kept.
 */
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import { coalesced } from '../coalesce';

/** A version counter: `read` answers (as `knex.raw` on PostgreSQL does) a row holding its value in the first column, read fresh. */
export interface Guard {
  /** Names the counter (reads of one id share their queries). */
  readonly id: string;
  read(): PromiseLike<{ rows: Record<string, unknown>[] }>;
}

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

/** Per PostgreSQL handle: fresh reads of each counter, shared by concurrent calls. */
const counters = new WeakMap<Knex, (guard: Guard) => Promise<string>>();

function counterReader(knex: Knex): (guard: Guard) => Promise<string> {
  let reader = counters.get(knex);
  if (!reader) {
    const read = coalesced(
      async (guard: Guard): Promise<string> => {
        const row = (await guard.read()).rows[0];
        return row ? String(Object.values(row)[0]) : '0';
      },
      (guard) => guard.id,
      { gather: true },
    );
    counters.set(knex, (reader = read));
  }
  return reader;
}

/**
 * Distinct keys kept per read, unless the read names its own bound (a read of large results, such
 * as event pages, keeps fewer: the service runs with a bounded heap, see package.json's start).
 */
const MAX_KEPT = 10_000;

export function hotRead<A extends unknown[], V>(
  knex: Knex,
  load: (...args: A) => PromiseLike<V>,
  keyOf: (...args: A) => string,
  guard?: (...args: A) => Guard,
  options: { max?: number } = {},
): (...args: A) => Promise<V> {
  // The version a kept result is checked against: this process's write count on the embedded
  // store, the guard's counter on PostgreSQL. It is read before the load, so a result that a
  // concurrent write made older is kept under the older version and loaded again by the next call.
  const embedded = writes.get(knex);
  let versionOf: (...args: A) => number | Promise<string>;
  if (embedded) versionOf = () => embedded.count;
  else if (guard) {
    const counter = counterReader(knex);
    versionOf = (...args) => counter(guard(...args));
  } else return coalesced(load, keyOf);
  // One connection runs every embedded statement in turn: nothing to gain from sharing a load there.
  const loadOnce = embedded ? load : coalesced(load, keyOf);
  const kept = new LRUCache<string, { version: number | string; value: V & {} }>({ max: options.max ?? MAX_KEPT });
  return async (...args: A) => {
    const key = keyOf(...args);
    const version = await versionOf(...args);
    const hit = kept.get(key);
    if (hit && hit.version === version) return hit.value;
    const value = await loadOnce(...args);
    if (value !== undefined && value !== null) kept.set(key, { version, value });
    return value;
  };
}
