/**
 * Shared answers: values that one read hands to many callers (a kept hot read,
 * src/infra/db/hot-read.ts), immutable by contract. Whatever is computed from such a value and a
 * few plain arguments alone (the page a service maps from kept rows, the bytes of the response
 * that renders it) is computed once and kept beside it, for as long as the value itself is kept:
 * the memos are weak, so nothing here outlives the read's own cache, and their bytes count against
 * the process's kept-bytes budget (src/infra/kept.ts), which drops them first when it must. Must
 * never be given a value that anyone mutates.
 */
import { estimateBytes, forgetBeside, keepBeside, touchBeside } from './kept';

const sharedValues = new WeakSet<object>();

/** Marks an answer as shared (immutable from now on); answers it. */
export function markShared<T>(value: T): T {
  if (typeof value === 'object' && value !== null) sharedValues.add(value);
  return value;
}

export function isShared(value: unknown): value is object {
  return typeof value === 'object' && value !== null && sharedValues.has(value);
}

/** Derivations kept per shared value: a handful of argument keys each (the oldest goes first). */
const MAX_PER_VALUE = 16;

/**
 * `derive(value, ...args)`, computed once per shared value and argument key (`keyOf(...args)`
 * must name everything `derive` reads besides the value) and itself marked shared; for a value
 * that is not shared, computed on every call.
 */
export function keptBeside<K, A extends unknown[], V>(derive: (value: K, ...args: A) => V, keyOf: (...args: A) => string): (value: K, ...args: A) => V {
  const memo = new WeakMap<object, Map<string, { derived: V; token: object }>>();
  return (value, ...args) => {
    if (!isShared(value)) return derive(value, ...args);
    const key = keyOf(...args);
    let byKey = memo.get(value);
    const known = byKey?.get(key);
    if (known !== undefined) {
      touchBeside(known.token);
      return known.derived;
    }
    const derived = markShared(derive(value, ...args));
    if (!byKey) memo.set(value, (byKey = new Map()));
    if (byKey.size >= MAX_PER_VALUE) {
      const oldest = byKey.keys().next().value!;
      forgetBeside(byKey.get(oldest)!.token);
      byKey.delete(oldest);
    }
    const entry = { derived, token: {} };
    byKey.set(key, entry);
    const kept = byKey;
    keepBeside(entry.token, estimateBytes(derived) + key.length, () => {
      if (kept.get(key) === entry) kept.delete(key);
    });
    return derived;
  };
}
