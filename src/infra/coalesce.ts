/**
 * Read coalescing: concurrent reads of one key share one load, and no caller ever gets an answer
 * older than its own call. A call that finds no load of its key running starts one; a call that
 * arrives while one is running waits for the next load, which starts as soon as the running one
 * ends and serves every call that arrived meanwhile. So each answer comes from a load that began
 * after the call was made: it sees every write committed before the call, as a read of its own
 * would. Under load, a hot key (one account's page, one session, one member's grants) costs one
 * load per round trip instead of one per request; a lone request costs exactly what it did.
 *
 * Answers are shared between the callers of one load: callers must not mutate them.
 */
interface Round<V> {
  readonly promise: Promise<V>;
  resolve(value: V): void;
  reject(error: unknown): void;
}

function round<V>(): Round<V> {
  let resolve!: (value: V) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<V>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export function coalesced<A extends unknown[], V>(load: (...args: A) => PromiseLike<V>, keyOf: (...args: A) => string): (...args: A) => Promise<V> {
  /** Per key: whether a load is running, and the round of the calls that wait for the next one. */
  const keys = new Map<string, { next: Round<V> | null }>();

  const run = (key: string, args: A, state: { next: Round<V> | null }): Promise<V> => {
    // Promise.resolve takes a thenable's result once: a knex query builder runs its query again on
    // every `then`, and the callers and `settle` below would each run it.
    const loading = Promise.resolve(load(...args));
    const settle = () => {
      const waiting = state.next;
      if (!waiting) {
        keys.delete(key);
        return;
      }
      state.next = null;
      run(key, args, state).then(waiting.resolve, waiting.reject);
    };
    loading.then(settle, settle);
    return loading;
  };

  return (...args: A) => {
    const key = keyOf(...args);
    const state = keys.get(key);
    if (!state) {
      const fresh = { next: null };
      keys.set(key, fresh);
      return run(key, args, fresh);
    }
    state.next ??= round<V>();
    return state.next.promise;
  };
}
