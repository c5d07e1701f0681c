/**
 * Presence across two nodes on one Redis, at the unit: a node's answer to a newcomer's `sync`
 * that arrives after the newcomer's wait still reaches the newcomer's sessions, as a join.
 */
import { randomBytes } from 'node:crypto';
import { createRedisBus, type Bus } from '../../src/infra/bus';
import { createLogger } from '../../src/infra/logger';
import { createPresence, type PresenceMember } from '../../src/realtime/presence';
import type { WsServerMessage } from '../../generated/ws';
import { services } from '../helpers/app';

const quiet = createLogger({ level: 'silent', service: 'test', env: 'test', version: 'test' });
const member = (id: string): PresenceMember => ({ session_id: id, user_id: `user-${id}`, account_id: 'acc', display_name: id, avatar_url: null });

/** The real Redis bus, with this node's `members` answers held back: a node slower than the newcomer's wait. */
function slowAnswers(bus: Bus, delayMs: number): Bus {
  return Object.assign(Object.create(bus) as Bus, {
    publish: async (channel: string, message: string) => {
      if (message.includes('"op":"members"')) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return bus.publish(channel, message);
    },
  });
}

function inbox() {
  const got: WsServerMessage[] = [];
  const waiters: (() => void)[] = [];
  return {
    got,
    deliver: (message: WsServerMessage) => {
      got.push(message);
      waiters.splice(0).forEach((wake) => wake());
    },
    async until(count: number, ms = 3000): Promise<WsServerMessage[]> {
      const deadline = Date.now() + ms;
      while (got.length < count && Date.now() < deadline) await new Promise<void>((resolve) => { waiters.push(resolve); setTimeout(resolve, 50); });
      return got;
    },
  };
}

(services.redis ? describe : describe.skip)('presence on two nodes', () => {
  test('a members answer later than the sync wait reaches the newcomer as a join; the bootstrap listed only itself', async () => {
    const prefix = `test:${randomBytes(6).toString('hex')}:`;
    const busA = createRedisBus(process.env.REDIS_URL!, prefix, { log: quiet });
    const busB = createRedisBus(process.env.REDIS_URL!, prefix, { log: quiet });
    try {
      const nodeA = createPresence({ bus: slowAnswers(busA, 300), log: quiet, nodeId: 'A' });
      const nodeB = createPresence({ bus: busB, log: quiet, nodeId: 'B', syncWaitMs: 20 });
      const channel = 'presence:events:acc';
      const onA = inbox();
      await nodeA.join(channel, member('a1'), onA.deliver);
      const onB = inbox();
      await nodeB.join(channel, member('b1'), onB.deliver);

      const [boot, late] = await onB.until(2);
      expect(boot).toEqual({ type: 'event', channel, event_type: 'bootstrap', data: { connections: [member('b1')] } });
      expect(late).toEqual({ type: 'event', channel, event_type: 'presence:join', data: member('a1') });
      // A heard B's join once; a repeated answer adds nobody twice.
      expect((await onA.until(2)).slice(1)).toEqual([{ type: 'event', channel, event_type: 'presence:join', data: member('b1') }]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(onB.got).toHaveLength(2);

      await nodeA.leave(channel, 'a1');
      expect((await onB.until(3))[2]).toEqual({ type: 'event', channel, event_type: 'presence:leave', data: member('a1') });
      await nodeB.leave(channel, 'b1');
    } finally {
      await Promise.all([busA.close(), busB.close()]);
    }
  });
});
