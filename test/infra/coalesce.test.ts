/**
 * Read coalescing (src/infra/coalesce.ts): concurrent reads of one key share a load, and no caller
 * gets an answer from a load that began before its call.
 */
import { coalesced } from '../../src/infra/coalesce';

/** A store whose value is a version number; each load reports the version it began at, later. */
function versionedStore() {
  let version = 0;
  let loads = 0;
  const load = async (key: string) => {
    loads += 1;
    const seen = version;
    await new Promise((resolve) => setTimeout(resolve, 5));
    return `${key}@${seen}`;
  };
  return {
    load,
    write: () => (version += 1),
    get loads() {
      return loads;
    },
  };
}

describe('coalesced reads', () => {
  test('a lone call loads on its own, one after another', async () => {
    const store = versionedStore();
    const read = coalesced(store.load, (key) => key);
    expect(await read('a')).toBe('a@0');
    store.write();
    expect(await read('a')).toBe('a@1');
    expect(store.loads).toBe(2);
  });

  test('concurrent calls of one key share one load; other keys load on their own', async () => {
    const store = versionedStore();
    const read = coalesced(store.load, (key) => key);
    const first = read('a');
    const rest = await Promise.all([read('a'), read('a'), read('b')]);
    expect(await first).toBe('a@0');
    expect(rest).toEqual(['a@0', 'a@0', 'b@0']);
    // 'a' twice (the first call, then one load for the two that arrived while it ran), 'b' once.
    expect(store.loads).toBe(3);
  });

  test('a call made after a write never gets a load that began before it', async () => {
    const store = versionedStore();
    const read = coalesced(store.load, (key) => key);
    const before = read('a');
    store.write();
    const after = read('a');
    expect(await before).toBe('a@0');
    expect(await after).toBe('a@1');
  });

  test('a failed load fails its own callers only; the next round loads again', async () => {
    let calls = 0;
    const read = coalesced(async (key: string) => {
      calls += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (calls === 1) throw new Error('first load failed');
      return key;
    }, (key) => key);
    const failed = read('a');
    const next = read('a');
    await expect(failed).rejects.toThrow('first load failed');
    await expect(next).resolves.toBe('a');
    await expect(read('a')).resolves.toBe('a');
    expect(calls).toBe(3);
  });
});
