/**
 * The platforms' inbound contracts at run time (src/modules/platforms/contracts.ts and the
 * readers over it): an unknown or malformed frame is counted every time and logged once per
 * platform, reason and kind, and no value a platform can send makes a reader throw.
 */
import fc from 'fast-check';
import { createContracts } from '../../src/modules/platforms/contracts';
import { musicItemInput } from '../../src/modules/platforms/music_platform/poller';
import { platformAInput } from '../../src/modules/platforms/platform_a/frames';
import { platformBItemInput } from '../../src/modules/platforms/platform_b/items';
import { readWebSub } from '../../src/modules/platforms/platform_b/websub';
import { platformCInput } from '../../src/modules/platforms/platform_c/receiver';
import { signedInput } from '../../src/modules/platforms/signed/receiver';
import { captureLog } from '../helpers/log-capture';
import { contractFrame } from '../helpers/fake-platform';

test('an unknown or malformed frame is counted each time and logged once per kind', () => {
  const { lines, log } = captureLog('warn');
  const contracts = createContracts(log);
  for (let i = 0; i < 3; i += 1) expect(platformAInput(contracts, { type: 'notification', id: `u-${i}`, event: 'hype_party' }, 'chan')).toBeNull();
  for (let i = 0; i < 2; i += 1) expect(platformAInput(contracts, { type: 'notification', id: `m-${i}`, event: 'cheer', bits: 'many' }, 'chan')).toBeNull();
  expect(platformAInput(contracts, 'not an object', 'chan')).toBeNull();
  expect(contracts.rejected()).toEqual({ 'platform_a:unknown': 3, 'platform_a:malformed': 3 });
  expect(lines.map((l) => [l.msg, l.reason, l.kind])).toEqual([
    ['platform frame rejected (logged once per kind)', 'unknown', 'notification/hype_party'],
    ['platform frame rejected (logged once per kind)', 'malformed', 'notification_cheer'],
    ['platform frame rejected (logged once per kind)', 'malformed', 'not-an-object'],
  ]);
  expect(lines[1]).toMatchObject({ platform: 'platform_a', detail: expect.stringContaining('/bits') });
  // A declared frame passes and says how it is ingested.
  const follow = contractFrame('platform_a', 'notification_follow', { id: 'f-1' });
  expect(platformAInput(contracts, follow, 'chan')).toEqual({ kind: 'event', platform: 'platform_a', type: 'platform_a:follower', raw: follow, externalId: 'platform_a:f-1' });
});

test('no value a platform sends makes a reader throw', () => {
  const contracts = createContracts(captureLog('fatal').log);
  const frames = fc.oneof(
    fc.anything(),
    fc.record({ type: fc.constantFrom('notification', 'chat.message', 'moderation', 'user.treatment', 'text', 'superchat', 'track', 'tip', 'boost'), event: fc.string(), id: fc.anything(), author: fc.anything(), broadcaster: fc.anything() }, { requiredKeys: ['type'] }),
  );
  fc.assert(
    fc.property(frames, fc.string(), (frame, text) => {
      platformAInput(contracts, frame, 'chan');
      platformBItemInput(contracts, frame, 'live', 'chan');
      musicItemInput(contracts, frame);
      if (typeof frame === 'object' && frame !== null && !Array.isArray(frame)) {
        const body = frame as Record<string, unknown>;
        platformCInput(contracts, 'channel.followed', body, 'key');
        platformCInput(contracts, 'livestream.status.updated', body, 'key');
        signedInput(contracts, 'tips_platform', body);
        signedInput(contracts, 'discord', body);
      }
      readWebSub(contracts, text);
    }),
    { numRuns: 300 },
  );
});
