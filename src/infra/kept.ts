/**
 * Kept results: what this process keeps for later requests, and on what terms (ADR 006).
 *
 * - What: a read's answer (src/infra/db/hot-read.ts: a session, a key's row, a member's grants, an
 *   event page) kept under its key and the version of the data it was read at; parsed GraphQL
 *   documents and their checked operations (src/http/graphql/endpoint.ts). What is derived from a
 *   kept value is derived by each request, except a rendering memoised against the value itself
 *   (`keptRendering`: the REST response bytes of a kept page, src/http/rest.ts; a personal key's
 *   auth context against its owner's kept grants, src/auth/verifiers.ts).
 * - Immutability: a kept value is deep-frozen when it is kept (`keep`), so a caller that mutates
 *   one fails at once (a TypeError in strict mode) instead of changing what other requests see.
 * - Bound: each cache has its own entry count, and together they hold at most `budget` bytes
 *   (config `memory.kept_bytes`, 64 MiB by default), estimated per entry when it is kept. Over
 *   the budget, the cache holding the most bytes drops its least recently used entries first.
 * - Invalidation belongs to the reader: version counters bumped in the writing transaction, the
 *   embedded store's write count (hot-read.ts).
 */
import { LRUCache } from 'lru-cache';

function refuse(): never {
  throw new TypeError('a kept value cannot be changed (src/infra/kept.ts)');
}

export const DEFAULT_KEPT_BYTES = 64 * 1024 * 1024;

let budget = DEFAULT_KEPT_BYTES;
/** Every kept cache of the process (weakly: an app that was closed takes its caches with it). */
const caches = new Set<WeakRef<LRUCache<object, object>>>();

/** The process-wide budget (createApp sets it from config; the heap is the process's). */
export function setKeptBudget(bytes: number): void {
  budget = bytes;
  enforce();
}

export function keptBudget(): number {
  return budget;
}

function live(): LRUCache<object, object>[] {
  const out: LRUCache<object, object>[] = [];
  for (const ref of caches) {
    const cache = ref.deref();
    if (cache) out.push(cache);
    else caches.delete(ref);
  }
  return out;
}

/** The estimated bytes every kept cache holds now. */
export function keptBytes(): number {
  let total = 0;
  for (const cache of live()) total += cache.calculatedSize;
  return total;
}

/** Drops least recently used entries, from the cache holding the most bytes, until under budget. */
function enforce(): void {
  const all = live();
  let total = all.reduce((sum, cache) => sum + cache.calculatedSize, 0);
  while (total > budget) {
    let largest: LRUCache<object, object> | undefined;
    for (const cache of all) if (cache.size > 0 && (!largest || cache.calculatedSize > largest.calculatedSize)) largest = cache;
    if (!largest) return;
    const before = largest.calculatedSize;
    largest.pop();
    total -= before - largest.calculatedSize;
  }
}

/**
 * An LRU cache under the process budget: at most `max` entries, each counted at `sizeOf` bytes
 * (at least 1). A value larger than the whole budget is not kept.
 */
export function keptCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(options: {
  max: number;
  sizeOf: (value: V, key: K) => number;
  dispose?: (value: V, key: K) => void;
  ttl?: number;
  ttlAutopurge?: boolean;
}): LRUCache<K, V> {
  const cache = new LRUCache<K, V>({
    max: options.max,
    ...(options.ttl !== undefined ? { ttl: options.ttl } : {}),
    ...(options.ttlAutopurge !== undefined ? { ttlAutopurge: options.ttlAutopurge } : {}),
    maxSize: Number.MAX_SAFE_INTEGER,
    sizeCalculation: (value, key) => Math.max(1, Math.ceil(options.sizeOf(value, key))),
    ...(options.dispose ? { dispose: options.dispose } : {}),
  });
  const set = cache.set.bind(cache);
  // Sized once per entry (the estimate walks the value), then the budget is enforced.
  cache.set = (key, value, setOptions) => {
    if (value === undefined) return set(key, value, setOptions);
    const size = Math.max(1, Math.ceil(options.sizeOf(value, key)));
    if (size > budget) {
      cache.delete(key);
      return cache;
    }
    set(key, value, { ...setOptions, size });
    enforce();
    return cache;
  };
  caches.add(new WeakRef(cache as unknown as LRUCache<object, object>));
  return cache;
}

/**
 * Makes `value` a kept value: deep-frozen (objects, arrays, maps' entries; byte arrays and dates
 * cannot be frozen and are left as they are), and answers it with its estimated size in bytes,
 * in one walk. Use once, when a value is kept; the value must be the caller's own (a value some
 * other code still holds and changes would fail there).
 */
export function keep<T>(value: T): { value: T; bytes: number } {
  return { value, bytes: walk(value, true) };
}

/**
 * The kept values that are immutable all the way down (keep froze them and found nothing below
 * that cannot be frozen: no Date, no byte array), and their direct members: what a rendering is
 * memoised against is a kept value itself (a row, a principal's grants) or a page's `items`.
 * Deeper objects are frozen but not marked: a mark is a WeakSet entry, and marking every row
 * and payload of an event page was half the cost of keeping it. A deeper object asked
 * about is answered `false`, which only means its renderings are made each time.
 */
const immutable = new WeakSet<object>();

/** Whether `value` is a kept value, or a direct member of one, immutable all the way down. */
export function isKept(value: unknown): value is object {
  return typeof value === 'object' && value !== null && immutable.has(value);
}

/** Renderings kept per kept value (distinct `key`s: request URLs); a further one replaces them. */
const RENDERINGS_PER_VALUE = 4;
const renderings = new WeakMap<object, Map<string, unknown>>();

/**
 * A rendering of a kept value (its response bytes and ETag, say), made by `render` once per `key`
 * and given again while the value lives: it cannot change, so neither can what is derived from it
 * and `key` alone. `key` must name every other input of `render`. Held weakly by the value, so it
 * goes when the kept value is dropped, and at most a few per value; a value that is not kept is
 * rendered every time.
 */
export function keptRendering<R>(value: object, key: string, render: () => R): R {
  if (!immutable.has(value)) return render();
  let byKey = renderings.get(value);
  if (byKey?.has(key)) return byKey.get(key) as R;
  const rendered = render();
  if (!byKey) renderings.set(value, (byKey = new Map()));
  else if (byKey.size >= RENDERINGS_PER_VALUE) byKey.clear();
  byKey.set(key, rendered);
  return rendered;
}

/**
 * An estimate of the heap a value takes: strings by length, numbers and booleans by slot, byte
 * arrays by length, objects and arrays by their slots plus their contents. Walks the value once
 * (when it is kept, not when it is served).
 */
export function estimateBytes(value: unknown): number {
  return walk(value, false);
}

/**
 * Makes a Map's or Set's writes throw and freezes it; true when it refuses them now (also when an
 * earlier `keep` did it: values kept apart may share one, such as an empty grant set). One frozen
 * by someone else with its writes in place cannot be made to refuse: false.
 */
function refusing(collection: Map<unknown, unknown> | Set<unknown>, writes: Record<string, () => never>): boolean {
  const methods = collection as unknown as Record<string, unknown>;
  if (Object.keys(writes).every((name) => methods[name] === refuse)) return true;
  if (Object.isFrozen(collection)) return false;
  Object.freeze(Object.assign(collection, writes));
  return true;
}

function walk(value: unknown, freeze: boolean): number {
  let total = 0;
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  let whole = true;
  while (stack.length > 0) {
    const v = stack.pop();
    switch (typeof v) {
      case 'string':
        total += 16 + v.length;
        continue;
      case 'number':
      case 'boolean':
      case 'bigint':
        total += 8;
        continue;
      case 'object':
        break;
      default:
        continue;
    }
    if (v === null || seen.has(v as object)) continue;
    seen.add(v as object);
    if (ArrayBuffer.isView(v)) {
      total += 64 + v.byteLength;
      whole = false;
    } else if (v instanceof Date) {
      total += 32;
      whole = false;
    } else if (Array.isArray(v)) {
      total += 16 + 8 * v.length;
      for (const item of v) stack.push(item);
      if (freeze) Object.freeze(v);
    } else if (v instanceof Map) {
      total += 32 + 16 * v.size;
      for (const [k, item] of v) stack.push(k, item);
      // A frozen Map still changes through set and delete: those are made to throw.
      if (freeze && !refusing(v, { set: refuse, delete: refuse, clear: refuse })) whole = false;
    } else if (v instanceof Set) {
      total += 32 + 16 * v.size;
      for (const item of v) stack.push(item);
      // So does a frozen Set, through add and delete (an auth context's grant sets).
      if (freeze && !refusing(v, { add: refuse, delete: refuse, clear: refuse })) whole = false;
    } else {
      total += 32;
      for (const key in v as Record<string, unknown>) {
        total += 8 + key.length;
        stack.push((v as Record<string, unknown>)[key]);
      }
      if (freeze) Object.freeze(v);
    }
  }
  if (freeze && whole) mark(value);
  return total;
}

/** Marks a kept value and its direct members (objects, arrays, maps' and sets' entries) as `isKept`. */
function mark(value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  immutable.add(value);
  const members = value instanceof Map ? [...value.keys(), ...value.values()] : value instanceof Set ? [...value] : Array.isArray(value) ? value : Object.values(value);
  for (const member of members) if (typeof member === 'object' && member !== null) immutable.add(member);
}
