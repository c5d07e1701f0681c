/**
 * The lease fence rises on every change of holder, a graceful release included: a released lease
 * keeps its row (expired) and its fence, so the next holder's fence is higher.
 */
import { createLeases, type OwnedWork } from '../../src/modules/workers/leases';
import { useTestApp } from '../helpers/app';

const t = useTestApp();

const work = (): OwnedWork => ({ kind: 'fence_test', list: async () => ['unit-1'], start: () => undefined, stop: async () => undefined });
const log = { warn: () => undefined, info: () => undefined, debug: () => undefined } as never;

test('a lease released gracefully and taken by another node has a higher fence', async () => {
  const fences: number[] = [];
  for (const node of ['node-a', 'node-b', 'node-a']) {
    const leases = createLeases({ knex: t.app.db.knex, log, nodeId: node, ttlMs: 20_000, renewMs: 60_000 });
    leases.own(work());
    await leases.start();
    const { leases: held } = await leases.snapshot();
    const mine = held.find((l) => l.unit === 'unit-1');
    expect(mine?.nodeId).toBe(node);
    fences.push(mine!.fence);
    await leases.stop();
    // Released: not shown as held by anyone.
    expect((await leases.snapshot()).leases.find((l) => l.unit === 'unit-1')).toBeUndefined();
  }
  expect(fences).toEqual([1, 2, 3]);
});
