/**
 * Reads made on every request (the session behind a JWT, a member's grants, a key's row, a list a
 * dashboard polls), served without loading them again where that is exact:
 *
 * - Embedded PGlite: one process owns the data and one connection runs every statement in turn,
 *   so a result stays true until this process writes anything. Results are kept per key and
 *   dropped by the next statement that is not a plain `select` (insert, update, delete, DDL, a
 *   transaction's begin and end), whoever issued it; a read that overlapped a write is not kept.
 *   One exception mirrors PostgreSQL: a write marked `bumpsNoGuard` (statement.ts; it fires no
 *   counter's trigger, as a key's `last_used_at` touch) leaves the results of guarded reads, which
 *   on PostgreSQL it would leave in place too; it still drops those of unguarded reads.
 * - PostgreSQL, guarded read: other nodes write too. The read names a version counter that every
 *   write to its data bumps in the writing transaction (src/auth/access-version.ts, the events
 *   module's per-account version). Each call reads the counter, in a query that starts after the
 *   call (one query reads every counter asked for meanwhile); a result kept under the same count
 *   is still exact, any other is loaded again, after the counter was read.
 * - PostgreSQL, unguarded read: nothing is kept; concurrent reads of one key share one query that
 *   starts after each of them (coalesce.ts).
 *
 * Either way no caller gets an answer older than its call. A kept answer is shared by every
 * request it serves: it is deep-frozen when kept (src/infra/kept.ts, `keep`), so a caller that
 * would mutate it fails at once. Only reads whose result depends on their arguments and the
 * stored rows alone (no `now()`) belong here. Misses (`undefined` or `null`) are never kept.
 */
import type { Knex } from 'knex';
import { coalesced } from '../coalesce';
import { keep, keptCache } from '../kept';
import { statement } from './statement';

/**
 * A version counter: `sql` selects its value (one row, one column; no row reads as 0), with
 * `bindings` for its placeholders.
 */
export interface Guard {
  /** Names the counter (calls in one round that name it share its value). */
  readonly id: string;
  readonly sql: string;
  readonly bindings: readonly Knex.Value[];
}

/**
 * A plain `select`, after any leading comments: statements name themselves in one
 * (`/* events.page *\/ select ...`), and such a read must not count as a write (the events page once
 * did, so every cold page dropped every kept read).
 */
const READ = /^(?:\s|\/\*[\s\S]*?\*\/|--[^\n]*(?:\n|$))*select\b/i;

/**
 * Per embedded database handle: how many writes it has run (`count`), and how many of them may
 * have changed what a version counter covers (`guarded`: all but those marked `bumpsNoGuard`).
 */
const writes = new WeakMap<Knex, { count: number; guarded: number }>();

/** Called once for an embedded handle (database.ts): every statement that is not a read counts. */
export function trackWrites(knex: Knex): void {
  const state = { count: 0, guarded: 0 };
  writes.set(knex, state);
  knex.on('query', (query: { sql?: string; options?: { bumpsNoGuard?: boolean } }) => {
    if (READ.test(query.sql ?? '')) return;
    state.count += 1;
    if (query.options?.bumpsNoGuard !== true) state.guarded += 1;
  });
}

/** Per PostgreSQL handle: fresh reads of every counter, batched (counterReader). */
const counters = new WeakMap<Knex, CounterReader>();

/**
 * Reads a counter, by the next round. (Earlier, a request's reads could also take
 * a value from a round that began after the request arrived, an instant an AsyncLocalStorage
 * carried: its promise hooks cost every request more than the rounds it saved; ADR 004.)
 */
type CounterReader = (guard: Guard) => Promise<string>;

interface Waiting {
  readonly guard: Guard;
  readonly value: Promise<string>;
  resolve(value: string): void;
  reject(error: unknown): void;
}

/** Rounds of at most this many counters run as prepared statements (their texts are few). */
const PREPARED_UP_TO = 3;

/**
 * Reads counters in rounds of one query each: every counter asked for while a round is on its
 * way (the access version of requests still authenticating, the event versions of requests
 * further on) is read by the next round, which starts when the running one ends; a first call
 * waits one turn of the event loop, so the requests whose bytes arrived together share it. Each
 * value thus comes from a query that began after the call, as a read of its own would: a request
 * sees every write committed before it made the read.
 */
function counterReader(knex: Knex): CounterReader {
  let next: Map<string, Waiting> | null = null;
  let running = false;
  const start = (): void => {
    const round = [...next!.values()];
    next = null;
    running = true;
    const sql = `select ${round.map((w, i) => `(${w.guard.sql}) as v${i}`).join(', ')}`;
    // Rounds of a few counters repeat the same text: each connection prepares it once.
    statement<Record<string, unknown>>(knex, sql, round.flatMap((w) => w.guard.bindings), { prepare: round.length <= PREPARED_UP_TO })
      .then(
        (rows) => {
          const row = rows[0] ?? {};
          round.forEach((w, i) => {
            const value = String(row[`v${i}`] ?? '0');
            w.resolve(value);
          });
        },
        (error: unknown) => {
          for (const w of round) w.reject(error);
        },
      )
      .finally(() => {
        running = false;
        if (next) start();
      });
  };
  return (guard) => {
    if (!next) {
      next = new Map();
      if (!running) setImmediate(start);
    }
    let waiting = next.get(guard.id);
    if (!waiting) {
      let resolve!: (value: string) => void;
      let reject!: (error: unknown) => void;
      const value = new Promise<string>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      next.set(guard.id, (waiting = { guard, value, resolve, reject }));
    }
    return waiting.value;
  };
}

function counterReaderOf(knex: Knex): CounterReader {
  let reader = counters.get(knex);
  if (!reader) counters.set(knex, (reader = counterReader(knex)));
  return reader;
}

/**
 * Keys seen once, in two generations of at most `generation` keys each: a full generation becomes
 * the old one and the oldest is dropped whole, so between `generation` and twice that many of the
 * latest keys are remembered. A cold page records its key on every request: two Sets cost it a
 * hash insert, where an LRU list also relinked and evicted entry by entry.
 */
function seenKeys(generation: number): { take(key: string): boolean; add(key: string): void } {
  let recent = new Set<string>();
  let older = new Set<string>();
  return {
    take: (key) => recent.delete(key) || older.delete(key),
    add(key) {
      if (recent.size >= generation) {
        older = recent;
        recent = new Set();
      }
      recent.add(key);
    },
  };
}

/** Calls answered by a kept result, per named read (`options.name`; metrics.ts: svc_kept_answers_total). */
const answered = new Map<string, { n: number }>();

/** How many calls of each named read a kept result answered, since the process started. */
export function keptAnswers(): Record<string, number> {
  return Object.fromEntries([...answered].map(([name, count]) => [name, count.n]));
}

/**
 * Distinct keys kept per read, unless the read names its own bound (a read of large results, such
 * as event pages, keeps fewer: the service runs with a bounded heap, see package.json's start).
 */
const MAX_KEPT = 10_000;

/**
 * A hot read: called, it answers the kept result when it is current and loads otherwise.
 * `beforeLoad(step, ...args)` is the same call that runs `step` (the caller's own, awaited) only
 * when it is about to load or wait on a load, not when a kept result answers it: the events page
 * holds its byte budget for what a load may cost, and a kept page only for what it does cost.
 */
export type HotRead<A extends unknown[], V> = ((...args: A) => Promise<V>) & {
  beforeLoad(step: () => Promise<unknown>, ...args: A): Promise<V>;
};

export function hotRead<A extends unknown[], V>(
  knex: Knex,
  load: (...args: A) => PromiseLike<V>,
  keyOf: (...args: A) => string,
  guard?: (...args: A) => Guard,
  options: {
    max?: number;
    /**
     * Counts the calls a kept result answered under this name (svc_kept_answers_total{read}): what
     * tells a measurement of the path without the cache from one the cache answered (the bench).
     */
    name?: string;
    /**
     * The same load, also answering the guard's counter as read by the load's own statement (the
     * same snapshot as the rows). With it, PostgreSQL reads the counter on its own only when a
     * result is kept for the key: a call that finds none (a page nobody asked for yet) costs one
     * statement, and what it keeps is tagged with the exact version of its rows.
     */
    versioned?: (...args: A) => PromiseLike<{ value: V; version: string }>;
    /**
     * Keep a result only when its key is loaded a second time (or replaces a kept one). For reads
     * whose keys are mostly asked once (event pages: other pages, filters, users): keeping
     * freezes and sizes the whole result, which a key nobody asks again never repays.
     * The keys seen once are remembered (keys only), between two and four times `max` of the latest.
     */
    keepOnRepeat?: boolean;
  } = {},
): HotRead<A, V> {
  // The version a kept result is checked against: this process's write count on the embedded
  // store, the guard's counter on PostgreSQL. It is read before the load, so a result that a
  // concurrent write made older is kept under the older version and loaded again by the next call.
  const embedded = writes.get(knex);
  let versionOf: (...args: A) => number | string | Promise<string>;
  // A guarded read depends only on what its counter covers (the ADR 004 contract PostgreSQL relies
  // on): writes that bump no counter leave it, as they leave its counter there.
  if (embedded) versionOf = guard ? () => embedded.guarded : () => embedded.count;
  else if (guard) {
    const counter = counterReaderOf(knex);
    versionOf = (...args) => counter(guard(...args));
  } else {
    const shared = coalesced(load, keyOf);
    const beforeLoad = async (step: () => Promise<unknown>, ...args: A): Promise<V> => {
      await step();
      return shared(...args);
    };
    return Object.assign(shared, { beforeLoad });
  }
  // One connection runs every embedded statement in turn: nothing to gain from sharing a load there.
  const loadOnce = embedded ? load : coalesced(load, keyOf);
  // Bounded by entries here and, with every other kept result, by bytes (src/infra/kept.ts).
  const kept = keptCache<string, { version: number | string; value: V & {}; bytes: number }>({ max: options.max ?? MAX_KEPT, sizeOf: (entry, key) => 64 + key.length + entry.bytes });
  const seenOnce = options.keepOnRepeat ? seenKeys(2 * (options.max ?? MAX_KEPT)) : null;
  let tally: { n: number } | undefined;
  if (options.name !== undefined) {
    tally = answered.get(options.name) ?? { n: 0 };
    answered.set(options.name, tally);
  }
  /** Whether a loaded result for `key` is kept (`stale`: a kept one it replaces). */
  const admit = (key: string, stale: boolean): boolean => {
    if (!seenOnce || stale || seenOnce.take(key)) return true;
    seenOnce.add(key);
    return false;
  };
  // The versioned load, shared as the plain one is: the calls of one key that find no current
  // kept result while a load runs wait for the next load, and what a load keeps it keeps once. (Each
  // call loading on its own made a page read by fifty requests while its account was written to
  // cost fifty statements, fifty freezes and fifty renderings per write instead of one or two.)
  const versionedOnce =
    !embedded && guard && options.versioned
      ? coalesced(async (key: string, ...args: A): Promise<V> => {
          const stale = kept.get(key) !== undefined;
          const loaded = await options.versioned!(...args);
          if (loaded.value !== undefined && loaded.value !== null && admit(key, stale)) kept.set(key, { version: loaded.version, ...keep(loaded.value as V & {}) });
          return loaded.value;
        }, (key: string, ..._args: A) => key)
      : undefined;
  const run = async (step: (() => Promise<unknown>) | undefined, args: A): Promise<V> => {
    const key = keyOf(...args);
    if (versionedOnce) {
      const known = kept.get(key);
      if (known && known.version === (await versionOf(...args))) {
        if (tally) tally.n += 1;
        return known.value;
      }
      if (step) await step();
      return versionedOnce(key, ...args);
    }
    const version = await versionOf(...args);
    const hit = kept.get(key);
    if (hit && hit.version === version) {
      if (tally) tally.n += 1;
      return hit.value;
    }
    if (step) await step();
    const value = await loadOnce(...args);
    if (value !== undefined && value !== null && admit(key, hit !== undefined)) kept.set(key, { version, ...keep(value as V & {}) });
    return value;
  };
  const read = (...args: A) => run(undefined, args);
  return Object.assign(read, { beforeLoad: (step: () => Promise<unknown>, ...args: A) => run(step, args) });
}
